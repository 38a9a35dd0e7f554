#!/bin/sh
# Proves (issue 29): more than the old 64 guests are recorded at once, and the
# collector counts the files they need: 80 fake guests of one vCPU under a
# soft RLIMIT_NOFILE of 300 (and a hard one of 4096) need about 700, so the
# collector raises the soft limit to the hard one and says so; every guest's
# file is exact; the COMMAND run beside the recording gets the limit of 300
# back. Under a hard limit of 300 it says that even that is short and how
# many guests fit: those record whole (exact files), the others are named as
# not recorded (in the log and the manifest), none fails halfway; exit 3.
echo "collect: 80 guests (over the old 64); RLIMIT_NOFILE raised to the hard limit and said, a short hard limit said and survived"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
command -v prlimit >/dev/null 2>&1 || { echo "SKIP: prlimit (util-linux) is not installed"; exit 77; }
N=80
REAL=$COLLECT
args=
i=0
while [ $i -lt $N ]; do
	n=g$i
	mkdir -p "$WORK/p$n"
	fake $n --fifo "$WORK/p$n" --fixture "$DATA/cap-guest" --cpus 1 --repeat 1 --retime
	eval "PID_$n=\$FAKE_PID"
	args="$args --chardev-dir $WORK/p$n --name $n"
	i=$((i + 1))
done

# lim SOFT:HARD: run the collector under that RLIMIT_NOFILE (prlimit execs it: same pid)
lim() {
	printf '#!/bin/sh\nexec prlimit --nofile=%s -- "%s" "$@"\n' "$1" "$REAL" >"$WORK/lim"
	chmod +x "$WORK/lim"
	COLLECT=$WORK/lim
}

# exact_all OUT: the guests with a file hold exactly the fixture's cpu0 events; prints how many
exact_all() {
	oracle "$DATA/cap-guest" 1
	_ok=0
	for _f in "$1"/guest-g*.dat; do
		[ -f "$_f" ] || continue
		trace-cmd report -i "$_f" >"$WORK/one.txt" 2>/dev/null || fail "trace-cmd cannot read $_f"
		_got=$(cpu_events "$WORK/one.txt" 0)
		[ "$_got" = "$ORACLE_CPU0" ] || fail "$_f: $_got events, want $ORACLE_CPU0"
		_ok=$((_ok + 1))
	done
	echo $_ok
}

# 1. Soft 300, hard 4096: raised, all exact, the command sees 300.
lim 300:4096
COLLECT_LIMIT=90 collect raised $args -o "$WORK/out1" -- sh -c "ulimit -Sn >$WORK/cmd-limit; sleep 3"
[ $RC = 0 ] || { show "$WORK/raised.log"; fail "soft limit 300: exit $RC, want 0"; }
grep -qE "$N guests need about [0-9]+ open files: the limit is raised from 300 to the hard limit, 4096" \
	"$WORK/raised.log" || { show "$WORK/raised.log"; fail "the raise is not said"; }
[ "$(cat "$WORK/cmd-limit")" = 300 ] || fail "the command ran with a soft limit of $(cat "$WORK/cmd-limit"), want 300"
ok=$(exact_all "$WORK/out1")
[ "$ok" = $N ] || fail "$ok of $N guest files, want $N"
[ "$(man "$WORK/out1" '.guests | length')" = $N ] || fail "the manifest lists $(man "$WORK/out1" '.guests | length') guests"
echo "soft 300: $(grep -o 'the limit is raised.*' "$WORK/raised.log"); $ok of $N files exact; the command got 300"
i=0
while [ $i -lt $N ]; do
	eval "fake_end \$PID_g$i"
	i=$((i + 1))
done

# 2. Hard 300: said; the guests that fit record whole, the others are named, not half-recorded.
i=0
while [ $i -lt $N ]; do
	fake g$i --fifo "$WORK/pg$i" --fixture "$DATA/cap-guest" --cpus 1 --repeat 1 --retime
	eval "PID_g$i=\$FAKE_PID"
	i=$((i + 1))
done
lim 300:300
COLLECT_LIMIT=90 collect short $args -o "$WORK/out2" -d 3 --stop-timeout 5
[ $RC = 3 ] || { show "$WORK/short.log"; fail "hard limit 300: exit $RC, want 3"; }
fit=$(sed -nE "s/.*$N guests need about [0-9]+ open files, more than the limit of 300 \(the hard limit is 300\): only the first ([0-9]+) are recorded.*/\1/p" \
	"$WORK/short.log")
[ -n "$fit" ] || { show "$WORK/short.log"; fail "the short hard limit is not said"; }
ok=$(exact_all "$WORK/out2")
named=$(grep -c "error: guest g[0-9]*: not recorded: no file descriptor is left for it" "$WORK/short.log")
other=$(grep "error: guest" "$WORK/short.log" | grep -vc "no file descriptor is left")
echo "hard 300: the first $fit guests recorded ($ok files exact), $named named as not recorded, $other other failures"
[ "$fit" -gt 0 ] && [ "$fit" -lt $N ] || fail "$fit guests fit, want some but not all"
[ "$ok" = "$fit" ] || { show "$WORK/short.log"; fail "$ok exact files, want $fit"; }
[ "$named" = $((N - fit)) ] || fail "$named guests named as not recorded, want $((N - fit))"
[ "$other" = 0 ] || { show "$WORK/short.log"; fail "$other guests failed otherwise"; }
[ "$(man "$WORK/out2" '[.guests[] | select(.problems | test("no file descriptor"))] | length')" = $((N - fit)) ] ||
	fail "the manifest does not name the $((N - fit)) guests that were not recorded"
echo "PASS"
