#!/bin/sh
# Proves: a guest the collector drops is told BYE (best effort), so that its agent puts tracefs
# back and ends its session instead of tracing on. The guest never answers STOP; after
# --stop-timeout it is dropped as a problem (exit 3), and its agent gets BYE.
echo "collect: a dropped guest's agent is told BYE"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
HARD_LIMIT=30

ps=$WORK/ps out=$WORK/out
mkdir -p "$ps"
slow_fake stall --fifo "$ps" --fixture "$DATA/cap-guest" --retime --stall-stop
STALL=$FAKE_PID
record_bg rec --chardev-dir "$ps" --name stall -o "$out" -d 2 --stop-timeout 2 --sync-probes 8
wait_gone $HARD_LIMIT
sleep 0.5
fake_end $STALL
echo "measured: STOP at $(at "$(tl stall stop)" $T_RUN0), BYE at $(at "$(tl stall bye)" $T_RUN0);" \
	"collector gone at $(secs $((T_GONE - T_RUN0))) s, exit $RC"
[ $KILLED = 0 ] || { show "$WORK/rec.log"; fail "the collector did not end within $HARD_LIMIT s"; }
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (the guest was dropped)"; }
[ -n "$(tl stall stop)" ] || fail "the guest never got STOP"
[ -n "$(tl stall bye)" ] || { show "$WORK/rec.log" "$WORK/stall.fake"; fail "the dropped guest was not told BYE"; }
echo PASS
