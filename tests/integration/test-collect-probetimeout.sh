#!/bin/sh
# Proves: a clock probe that gets no reply within the probe timeout (2 s) ends that vCPU's burst
# with the samples it has; the guest still records. A guest that answers every probe after
# 2.5 s is recorded exactly, without a clock mapping (its manifest says so, method none, exit 3),
# and the good guest next to it is untouched. Before, the first late probe dropped the guest.
echo "collect: probes without a reply cost the clock mapping, not the recording"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
HARD_LIMIT=40

pl=$WORK/pl pg=$WORK/pg out=$WORK/out
mkdir -p "$pl" "$pg"
slow_fake late --fifo "$pl" --fixture "$DATA/cap-guest" --repeat 2 --retime --probe-delay 2500
LATE=$FAKE_PID
slow_fake good --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
GOOD=$FAKE_PID
record_bg rec --chardev-dir "$pl" --name late --chardev-dir "$pg" --name good -o "$out" -d 8 \
	--stop-timeout 12 --sync-probes 4
wait_gone $HARD_LIMIT
fake_end $LATE
fake_end $GOOD
echo "measured: late guest START at $(at "$(tl late start)" $T_RUN0); collector gone at" \
	"$(secs $((T_GONE - T_RUN0))) s, exit $RC$([ $KILLED = 1 ] && echo ' (SIGKILLed by the test)')"
[ $KILLED = 0 ] || { show "$WORK/rec.log"; fail "the collector did not end within $HARD_LIMIT s"; }
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (the late guest has no clock mapping)"; }
[ -n "$(tl late start)" ] || { show "$WORK/rec.log" "$WORK/late.fake"; fail "the late guest never got START"; }
[ "$(guest_json "$out" late .sync.method)" = none ] ||
	fail "the late guest's sync method is $(guest_json "$out" late .sync.method), want none"
guest_json "$out" late .problems | grep -q "clock" || fail "the late guest's problems do not name the clock: $(guest_json "$out" late .problems)"
grep -q "no reply within 2 s" "$WORK/rec.log" || { show "$WORK/rec.log"; fail "no message about the unanswered probe"; }
check_exact "$out" late "$DATA/cap-guest" 2
check_exact "$out" good "$DATA/cap-guest" 2
[ -z "$(guest_json "$out" good '.problems // empty')" ] ||
	fail "the good guest got problems: $(guest_json "$out" good .problems)"
echo PASS
