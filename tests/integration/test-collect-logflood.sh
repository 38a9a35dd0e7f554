#!/bin/sh
# Proves: a guest cannot flood the collector's log. 100,000 unsolicited ERROR
# frames print the first 5 (COLLECT_LOG_BURST), then one summary line with
# the count; with -q the whole log stays a handful of lines; the manifest's
# problems name the count and the exit status is 3. The guest's pages are
# still recorded exactly. A single report is quoted in the problems.
echo "collect: 100000 ERROR frames print 5 lines + 1 summary, the manifest names the count"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/p out=$WORK/out
mkdir -p "$p"
flood=100000
fake noisy --fifo "$p" --fixture "$DATA/cap-guest" --repeat 2 --retime --error-flood $flood
pid=$FAKE_PID
collect rec --chardev-dir "$p" --name noisy -o "$out" --duration 3 -q
fake_end $pid
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3"; }
grep -q "sent $flood unsolicited ERROR frames" "$WORK/noisy.fake" || fail "the fake agent did not send $flood frames"
lines=$(wc -l <"$WORK/rec.log")
[ "$lines" -le 12 ] || { head -20 "$WORK/rec.log"; fail "$lines lines of log for $flood ERROR frames, want at most 12"; }
n=$(grep -c "guest noisy: agent reports: flooding error" "$WORK/rec.log")
[ "$n" = 5 ] || fail "$n agent-report lines printed, want 5"
grep -q "guest noisy: $flood error reports from the agent in all, $((flood - 5)) not shown" "$WORK/rec.log" ||
	{ show "$WORK/rec.log"; fail "no summary line with the count"; }
guest_json "$out" noisy .problems | grep -q "$flood error reports from the agent" ||
	fail "manifest problems do not name the count: $(guest_json "$out" noisy .problems)"
guest_json "$out" noisy .problems | grep -q "the agent reported: flooding error" ||
	fail "manifest problems do not quote the agent's first report: $(guest_json "$out" noisy .problems)"
check_exact "$out" noisy "$DATA/cap-guest" 2

# One unasked report (an agent whose data path failed says so once) is not
# lost below the summary's threshold: the manifest quotes it, the exit is 3.
out1=$WORK/out1
fake once --fifo "$p" --fixture "$DATA/cap-guest" --repeat 2 --retime --error-flood 1
pid=$FAKE_PID
collect rec1 --chardev-dir "$p" --name once -o "$out1" --duration 2 -q
fake_end $pid
[ $RC = 3 ] || { show "$WORK/rec1.log"; fail "one agent report: collector exited $RC, want 3"; }
[ "$(guest_json "$out1" once .problems)" = "the agent reported: flooding error" ] ||
	fail "one agent report: problems are '$(guest_json "$out1" once .problems)'"
check_exact "$out1" once "$DATA/cap-guest" 2
echo "$flood ERROR frames: $lines lines of log (-q); problems: $(guest_json "$out" noisy .problems)"
echo "PASS"
