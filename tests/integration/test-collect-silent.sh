#!/bin/sh
# Proves (issue 13): a guest that never answers HELLO (its ports stay open)
# delays only itself. Next to it a good guest gets START within $START_MAX s
# of the collector's start (measured by its fake agent), gets STOP by -d 3 +
# $START_MAX s, and its file is exact; the collector is gone within 12 s of
# its start (-d 3, --stop-timeout 3), exits 3 and names the silent guest as a
# problem. A collector that does not end by itself is SIGKILLed after
# $HARD_LIMIT s (a failure).
echo "collect: a guest that never answers HELLO delays only itself (the other starts at once, exact)"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
START_MAX=${START_MAX:-3}
HARD_LIMIT=30

ps=$WORK/ps pg=$WORK/pg out=$WORK/out
mkdir -p "$ps" "$pg"
# The silent guest first: today it is set up first.
slow_fake silent --listen "$ps" --fixture "$DATA/cap-guest" --repeat 2 --retime --silent-hello
SILENT=$FAKE_PID
slow_fake good --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
GOOD=$FAKE_PID
record_bg rec --chardev-dir "$ps" --name silent --chardev-dir "$pg" --name good -o "$out" -d 3 --stop-timeout 3
wait_gone $HARD_LIMIT
fake_end $SILENT
fake_end $GOOD
st=$(tl good start) sp=$(tl good stop) sh=$(tl silent hello)
echo "measured: good guest START at $(at "$st" $T_RUN0)," \
	"STOP at $(at "$sp" $T_RUN0);" \
	"collector gone at $(secs $((T_GONE - T_RUN0))) s, exit $RC$([ $KILLED = 1 ] && echo ' (SIGKILLed by the test)')"
[ -n "$sh" ] || { show "$WORK/silent.fake"; fail "the silent guest never got HELLO: the test did not test a silent guest"; }
on_time "$st" "$sp"
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (the silent guest is a problem)"; }
problem_named "$out" silent "$WORK/rec.log"
good_exact "$out"
echo "PASS"
