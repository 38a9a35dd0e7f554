#!/bin/sh
# Proves: a guest cannot flood the collector's log. 100,000 unsolicited ERROR
# frames print the first 5 (COLLECT_LOG_BURST), then one summary line with
# the count; with -q the whole log stays a handful of lines; the manifest's
# problems name the count and the exit status is 3. The guest's pages are
# still recorded exactly. A single report is quoted in the problems. The
# agent's warnings (NOTICE) are limited alike, counted in the manifest, and
# are not problems.
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

# The agent's warnings (NOTICE): printed with the guest's name and made safe, limited like
# the error reports (5 and one summary line), counted and the first quoted in the manifest,
# and not problems: the exit status stays 0.
out2=$WORK/out2 nf=1000
fake warn --fifo "$p" --fixture "$DATA/cap-guest" --repeat 2 --retime --notice-flood $nf
pid=$FAKE_PID
collect rec2 --chardev-dir "$p" --name warn -o "$out2" --duration 2 -q
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec2.log"; fail "$nf warnings: collector exited $RC, want 0"; }
grep -q "sent $nf NOTICE frames" "$WORK/warn.fake" || fail "the fake agent did not send $nf NOTICE frames"
n=$(grep -c "guest warn: agent: warning [0-4] ?\[31mred tab\$" "$WORK/rec2.log")
[ "$n" = 5 ] || { show "$WORK/rec2.log"; fail "$n warning lines 0-4 printed, made safe, want 5"; }
n=$(grep -c "agent: warning" "$WORK/rec2.log")
[ "$n" = 5 ] || fail "$n warning lines printed, want 5"
grep -q "guest warn: $nf warnings from the agent in all, $((nf - 5)) not shown" "$WORK/rec2.log" ||
	{ show "$WORK/rec2.log"; fail "no summary line with the warnings' count"; }
[ "$(guest_json "$out2" warn .agent_warnings)" = $nf ] ||
	fail "manifest agent_warnings is '$(guest_json "$out2" warn .agent_warnings)', want $nf"
[ "$(guest_json "$out2" warn .agent_first_warning)" = "warning 0 ?[31mred tab" ] ||
	fail "manifest agent_first_warning is '$(guest_json "$out2" warn .agent_first_warning)'"
[ -z "$(guest_json "$out2" warn .problems)" ] ||
	fail "warnings made problems: '$(guest_json "$out2" warn .problems)'"
[ "$(guest_json "$out1" once .agent_warnings)|$(guest_json "$out1" once .agent_first_warning)" = "0|null" ] ||
	fail "a guest without warnings: '$(guest_json "$out1" once .agent_warnings)|$(guest_json "$out1" once .agent_first_warning)'"
check_exact "$out2" warn "$DATA/cap-guest" 2
echo "$flood ERROR frames: $lines lines of log (-q); problems: $(guest_json "$out" noisy .problems)"
echo "$nf NOTICE frames: $(wc -l <"$WORK/rec2.log") lines of log (-q), exit status 0"
echo "PASS"
