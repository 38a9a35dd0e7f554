#!/bin/sh
# Proves (issue 37, item 6): a guest that never answers the META_REQ after
# START cannot hold one Ctrl-C. With the default --stop-timeout (60 s), one
# SIGINT 2 s after the start, beside a good guest:
#  - the collector is gone within $GONE_MAX s of the signal (the deferred stop
#    waits 3 s for the bundle, as the final sync does; it held the stop 60 s
#    before);
#  - the log says the bundle was abandoned, for which guest;
#  - both guests' files hold every page their agents sent (the withholding
#    guest's is written with the setup's bundle), exit 0.
# Times are taken from the test's side (date +%s%N).
echo "collect: a guest that withholds its metadata cannot hold a stop (abandoned after 3 s, data kept)"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
GONE_MAX=${GONE_MAX:-5}
HARD_LIMIT=40

ps=$WORK/ps pg=$WORK/pg out=$WORK/out
mkdir -p "$ps" "$pg"
slow_fake mute --fifo "$ps" --fixture "$DATA/cap-guest" --repeat 2 --retime --withhold-meta
MUTE=$FAKE_PID
slow_fake good --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
GOOD=$FAKE_PID
record_bg rec --chardev-dir "$ps" --name mute --chardev-dir "$pg" --name good -o "$out"
wait_log "$WORK/mute.fake" "META_REQ withheld" 20 "the collector never asked the guest for its bundle after START"
sleep_until $((T_RUN0 + 2000000000))
T_INT=$(now_ns)
kill -INT $COLLECT_PID 2>/dev/null
wait_gone $HARD_LIMIT
fake_end $MUTE
fake_end $GOOD
echo "measured: collector gone $(secs $((T_GONE - T_INT))) s after SIGINT, exit $RC$([ $KILLED = 1 ] && echo ' (SIGKILLed by the test)')"
[ $KILLED = 0 ] || { show "$WORK/rec.log"; fail "the collector did not end within $HARD_LIMIT s of its start"; }
ns_le "$T_GONE" $((T_INT + GONE_MAX * 1000000000)) ||
	{ show "$WORK/rec.log"; fail "the collector was gone $(secs $((T_GONE - T_INT))) s after SIGINT, want <= $GONE_MAX s"; }
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }
n=$(grep -c "guest mute: the metadata bundle asked for after the start .* did not come within 3 s of the stop: abandoned" "$WORK/rec.log")
[ "$n" = 1 ] || { show "$WORK/rec.log"; fail "$n lines say guest mute's bundle was abandoned, want 1"; }
grep -q "guest good: .*abandoned" "$WORK/rec.log" && fail "the good guest's bundle was abandoned too"
check_exact "$out" good "$DATA/cap-guest" 2
check_exact "$out" mute "$DATA/cap-guest" 2
echo "PASS"
