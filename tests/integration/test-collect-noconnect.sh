#!/bin/sh
# Proves (issue 13): with --listen, a guest whose QEMU never connects delays only itself: the
# collector waits for that connection in its event loop, not in a blocking accept. Next to it a
# good guest gets START within $START_MAX s of the collector's start and STOP by -d 3 +
# $START_MAX s, its file is exact; the collector is gone within 12 s, exits 3 and names the
# unconnected guest's socket. A collector that blocks in accept() would start the good guest
# only after its 120 s accept timeout: it is SIGKILLed after $HARD_LIMIT s (a failure).
echo "collect: a --listen guest that nobody connects to delays only itself"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
START_MAX=${START_MAX:-3}
HARD_LIMIT=30

pn=$WORK/pn pg=$WORK/pg out=$WORK/out
mkdir -p "$pn" "$pg"
slow_fake good --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
GOOD=$FAKE_PID
# The unconnected guest first: a collector that blocks on it never reaches the good one.
record_bg rec --chardev-dir "$pn" --listen --name nobody --chardev-dir "$pg" --name good -o "$out" \
	-d 3 --stop-timeout 3
wait_gone $HARD_LIMIT
fake_end $GOOD
st=$(tl good start) sp=$(tl good stop)
echo "measured: good guest START at $(at "$st" $T_RUN0), STOP at $(at "$sp" $T_RUN0);" \
	"collector gone at $(secs $((T_GONE - T_RUN0))) s, exit $RC$([ $KILLED = 1 ] && echo ' (SIGKILLed by the test)')"
on_time "$st" "$sp"
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (a guest had problems)"; }
jq -e '.guests[] | select(.name == "nobody") | .problems | test("setup")' "$out/manifest.json" >/dev/null ||
	{ show "$out/manifest.json"; fail "the manifest does not say the unconnected guest never finished its setup"; }
[ ! -e "$pn/agent-ctl-path" ] || fail "the listening socket $pn/agent-ctl-path was left behind"
good_exact "$out"
echo PASS
