#!/bin/sh
# Proves (issue 13): a guest whose META bundle trickles out at one byte per
# second (25 KB: hours) delays only itself. Next to it a good guest gets
# START within $START_MAX s of the collector's start (measured by its fake
# agent), gets STOP by -d 3 + $START_MAX s, and its file is exact; the
# collector is gone within 12 s of its start (-d 3, --stop-timeout 3, room
# for setup and output), exits 3 and names the slow guest as a problem. A
# collector that does not end by itself is SIGKILLed after $HARD_LIMIT s (a
# failure).
echo "collect: a guest whose metadata trickles at 1 byte/s delays only itself (the good guest starts on time, exact)"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
START_MAX=${START_MAX:-3}
HARD_LIMIT=25

ps=$WORK/ps pg=$WORK/pg out=$WORK/out
mkdir -p "$ps" "$pg"
# The slow guest first: today it is set up first.
slow_fake slow --listen "$ps" --fixture "$DATA/cap-guest" --repeat 2 --retime --meta-rate "${META_RATE:-1}"
SLOW=$FAKE_PID
slow_fake good --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
GOOD=$FAKE_PID
record_bg rec --chardev-dir "$ps" --name slow --chardev-dir "$pg" --name good -o "$out" -d 3 --stop-timeout 3
wait_gone $HARD_LIMIT
fake_end $SLOW
fake_end $GOOD
st=$(tl good start) sp=$(tl good stop) mq=$(tl slow meta)
echo "measured: good guest START at $(at "$st" $T_RUN0)," \
	"STOP at $(at "$sp" $T_RUN0);" \
	"collector gone at $(secs $((T_GONE - T_RUN0))) s, exit $RC$([ $KILLED = 1 ] && echo ' (SIGKILLed by the test)')"
grep -q "META of .* trickles out" "$WORK/slow.fake" || { show "$WORK/slow.fake"; fail "the slow guest was never asked for its metadata"; }
[ -z "$mq" ] || fail "the slow guest's metadata went out completely: the test did not test a slow guest"
on_time "$st" "$sp"
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (the slow guest is a problem)"; }
problem_named "$out" slow "$WORK/rec.log"
good_exact "$out"
echo "PASS"
