#!/bin/sh
# Proves: loss the guest reports reaches the user. A page whose commit word
# says "events lost before this page" with a stored count shows up in
# trace-cmd report as "CPU:N [COUNT EVENTS DROPPED]" (without a count as
# "CPU:N [EVENTS DROPPED]"), once each, and no event is lost or invented;
# manifest.json counts the flagged pages and the stored counts, and carries
# the guest's per_cpu "overrun" figures from its final STATS.
echo "collect: lost-event flags in pages and the guest's overrun reach the report and the manifest"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
# cpu1 has 6 pages per repetition; only the last one (5) has room after its
# data for a stored count. Flag page 5 with a count and page 11 (the second
# repetition's page 5) without one; cpu0's page 1 without one.
fake lossy --fifo "$p" --fixture "$DATA/cap-guest" --repeat 2 --retime \
	--missed 1:5:1234 --missed 1:11 --missed 0:1 --overrun 1:55 --overrun 0:7
pid=$FAKE_PID
collect rec --chardev-dir "$p" --name lossy -o "$out" --duration 2 --quiet
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0 (loss is reported, not a failure)"; }
grep -q 'cpu1 page 5: flagged missed, 1234 events lost' "$WORK/lossy.fake" ||
	{ show "$WORK/lossy.fake"; fail "the fake agent did not flag cpu1 page 5"; }
check_exact "$out" lossy "$DATA/cap-guest" 2

txt=$out/lossy.txt
n=$(grep -c 'EVENTS DROPPED' "$txt")
[ "$n" = 3 ] || fail "$n DROPPED lines in the report, want 3"
grep -qx 'CPU:1 \[1234 EVENTS DROPPED\]' "$txt" || fail "no 'CPU:1 [1234 EVENTS DROPPED]' line"
[ "$(grep -cx 'CPU:1 \[EVENTS DROPPED\]' "$txt")" = 1 ] || fail "no single 'CPU:1 [EVENTS DROPPED]' line"
[ "$(grep -cx 'CPU:0 \[EVENTS DROPPED\]' "$txt")" = 1 ] || fail "no single 'CPU:0 [EVENTS DROPPED]' line"
grep -A1 -x 'CPU:1 \[1234 EVENTS DROPPED\]' "$txt" | tail -1 | grep -q ' \[001\]' ||
	fail "the DROPPED line is not followed by a cpu1 event"

j() { guest_json "$out" lossy "$1"; }
[ "$(j '.cpus[] | select(.cpu == 1) | .pages_after_loss')" = 2 ] ||
	fail "manifest cpu1 pages_after_loss = $(j '.cpus[] | select(.cpu == 1) | .pages_after_loss'), want 2"
[ "$(j '.cpus[] | select(.cpu == 0) | .pages_after_loss')" = 1 ] ||
	fail "manifest cpu0 pages_after_loss = $(j '.cpus[] | select(.cpu == 0) | .pages_after_loss'), want 1"
[ "$(j '.cpus[] | select(.cpu == 1) | .lost_events_in_pages')" = 1234 ] ||
	fail "manifest cpu1 lost_events_in_pages = $(j '.cpus[] | select(.cpu == 1) | .lost_events_in_pages'), want 1234"
[ "$(j '.cpus[] | select(.cpu == 1) | .stats.overrun')" = 55 ] ||
	fail "manifest cpu1 stats.overrun = $(j '.cpus[] | select(.cpu == 1) | .stats.overrun'), want 55"
[ "$(j '.cpus[] | select(.cpu == 0) | .stats.overrun')" = 7 ] ||
	fail "manifest cpu0 stats.overrun = $(j '.cpus[] | select(.cpu == 0) | .stats.overrun'), want 7"
[ "$(j '.lost_events.in_pages')" = 1234 ] || fail "manifest lost_events.in_pages = $(j '.lost_events.in_pages'), want 1234"
[ "$(j '.lost_events.overrun')" = 62 ] || fail "manifest lost_events.overrun = $(j '.lost_events.overrun'), want 62"
# The stats text otherwise arrives verbatim: read events of the fixture.
want=$(awk '$1 == "read" { print $3 }' "$DATA/cap-guest/cpu1.stats")
[ "$(j '.cpus[] | select(.cpu == 1) | .stats.read_events')" = "$want" ] ||
	fail "manifest cpu1 stats.read_events = $(j '.cpus[] | select(.cpu == 1) | .stats.read_events'), want $want"
echo "PASS"
