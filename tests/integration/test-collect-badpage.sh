#!/bin/sh
# Proves: a corrupt page from a guest (commit length beyond the page) is
# contained: it is absent from the trace (trace-cmd report shows every other
# event and exactly that page's events fewer), counted as a bad page in the
# manifest, reported with the guest's name, and the exit status is 3.
echo "collect: a bad page is left out, counted in the manifest, named, exit 3; the rest is intact"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
# cap-guest's cpu0 has one page per repetition: page 1 is the second copy.
fake vmbad --fifo "$p" --fixture "$DATA/cap-guest" --repeat 3 --retime --bad-page 1
pid=$FAKE_PID
collect rec --chardev-dir "$p" --name vmbad -o "$out" --duration 2
fake_end $pid
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3"; }
lost=$(sed -n 's/.*cpu0 page 1: commit length .*held \([0-9]*\) events.*/\1/p' "$WORK/vmbad.fake")
oracle "$DATA/cap-guest" 1
[ "$lost" = "$ORACLE_CPU0" ] || fail "fake agent says the bad page held '$lost' events, fixture cpu0 has $ORACLE_CPU0"
oracle "$DATA/cap-guest" 3
[ -f "$out/guest-vmbad.dat" ] || fail "no guest-vmbad.dat"
report "$WORK/r.txt" -i "$out/guest-vmbad.dat"
got=$(cpu_events "$WORK/r.txt" 0)
[ "$got" = $((ORACLE_CPU0 - lost)) ] || fail "cpu0: report shows $got events, want $((ORACLE_CPU0 - lost))"
got=$(cpu_events "$WORK/r.txt" 1)
[ "$got" = "$ORACLE_CPU1" ] || fail "cpu1: report shows $got events, want $ORACLE_CPU1"
j() { guest_json "$out" vmbad "$1"; }
[ "$(j '.cpus[] | select(.cpu == 0) | .bad_pages')" = 1 ] || fail "manifest cpu0 bad_pages = $(j '.cpus[] | select(.cpu == 0) | .bad_pages')"
[ "$(j '.cpus[] | select(.cpu == 1) | .bad_pages')" = 0 ] || fail "manifest cpu1 bad_pages = $(j '.cpus[] | select(.cpu == 1) | .bad_pages')"
[ "$(j '.cpus[] | select(.cpu == 0) | .pages')" = 2 ] || fail "manifest cpu0 pages = $(j '.cpus[] | select(.cpu == 0) | .pages'), want 2 good ones"
[ "$(j '.cpus[] | select(.cpu == 0) | .bytes')" = 12288 ] || fail "manifest cpu0 bytes = $(j '.cpus[] | select(.cpu == 0) | .bytes'), want 12288 received"
[ "$(j '.cpus[] | select(.cpu == 0) | .events')" = $((ORACLE_CPU0 - lost)) ] || fail "manifest cpu0 events = $(j '.cpus[] | select(.cpu == 0) | .events')"
[ -n "$(j '.problems // empty')" ] || fail "manifest lists no problem for vmbad"
grep -q 'vmbad' "$WORK/rec.log" || { show "$WORK/rec.log"; fail "no message names the guest"; }
grep -qi 'bad' "$WORK/rec.log" || { show "$WORK/rec.log"; fail "no message mentions the bad page"; }
echo "PASS"
