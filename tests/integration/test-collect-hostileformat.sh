#!/bin/sh
# Proves (issue 37, item 2): a guest whose sched:sched_switch format puts
# prev_comm at offset 100000000, and whose irq:softirq_raise prints
# __print_hex(REC->vec, 100000000), cannot crash `record --live` nor the
# user's trace-cmd report of the file written. Beside a good guest, with --live:
#  - the collector ends by itself (no signal; it died of SIGSEGV in
#    libtraceevent's sched_switch plugin before, and in libtraceevent's
#    __print_hex() with no plugin), exit 3 (a guest's problem);
#  - one error names the guest, the systems and the events;
#  - the good guest's file is exact, and the live view showed its sched_switch
#    lines as trace-cmd report prints them (its plugin's text), times aside;
#  - the hostile guest's file keeps every page (its events counted by trace-cmd
#    report, which exits 0 on it), its sched_switch events print as unknown.
echo "collect: guest formats with a field at offset 100000000 or a 100 MB __print_hex() are refused (named once); record --live and trace-cmd report survive them"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
T=/sys/kernel/tracing
if [ ! -w $T/instances ]; then
	echo "SKIP: no writable $T/instances (record --live records the host too; not root?)"
	exit 77
fi

pe=$WORK/pe pg=$WORK/pg out=$WORK/out
mkdir -p "$pe" "$pg"
fake evil --fifo "$pe" --fixture "$DATA/cap-guest" --repeat 2 --retime --hostile-format --hostile-print
EVIL=$FAKE_PID
grep -q "prev_comm at offset 100000000" "$WORK/evil.fake" && grep -q "softirq_raise prints __print_hex" "$WORK/evil.fake" ||
	{ show "$WORK/evil.fake"; fail "the fake agent did not make the hostile formats"; }
fake good --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
GOOD=$FAKE_PID
"$COLLECT" record --chardev-dir "$pe" --name evil --chardev-dir "$pg" --name good -o "$out" -d 3 \
	--live=300 >"$WORK/live.txt" 2>"$WORK/rec.log" &
COLLECT_PID=$!
track $COLLECT_PID
T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
_cl=$WORK/rec.log
collect_wait 60
fake_end $EVIL
fake_end $GOOD
echo "collector exit $RC; live view: $(grep -c '^ *guest-good.dat: ' "$WORK/live.txt") good, $(grep -c '^ *guest-evil.dat: ' "$WORK/live.txt") evil lines"
[ $RC -lt 128 ] || { show "$WORK/rec.log"; fail "the collector died of signal $((RC - 128))"; }
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (the evil guest's format is a problem)"; }

# One error, naming the guest, the systems and the events.
n=$(grep -c "guest evil: event formats irq:softirq_raise, sched:sched_switch refused: a field lies outside" "$WORK/rec.log")
[ "$n" = 1 ] || { show "$WORK/rec.log"; fail "$n errors naming guest evil, irq:softirq_raise and sched:sched_switch, want 1"; }
grep -q "guest good: event format" "$WORK/rec.log" && fail "the good guest's formats were refused too"
[ "$(guest_json "$out" evil .formats_refused)" = 2 ] || fail "manifest: evil's formats_refused is $(guest_json "$out" evil .formats_refused), want 2"

# The good guest: exact, and its sched_switch lines shown live as trace-cmd shows them.
check_exact "$out" good "$DATA/cap-guest" 2
# (Timestamps aside: the view maps them with the clock it had, the file with the final one.)
grep 'guest-good.dat: .* sched_switch: ' "$WORK/live.txt" | sed -E 's/^ *guest-good.dat: *//; s/ [0-9]+\.[0-9]+: / T: /' |
	sort >"$WORK/live-ss.txt"
grep ' sched_switch: ' "$out/good.txt" | sed -E 's/^ *//; s/ [0-9]+\.[0-9]+: / T: /' | sort >"$WORK/want-ss.txt"
[ -s "$WORK/want-ss.txt" ] || fail "the fixture has no sched_switch events: the test tests little"
cmp -s "$WORK/live-ss.txt" "$WORK/want-ss.txt" ||
	{ diff "$WORK/want-ss.txt" "$WORK/live-ss.txt" | head -5; fail "the live sched_switch lines of the good guest are not trace-cmd report's"; }

# The evil guest's file: trace-cmd report survives it, with and without plugins, and counts
# every event.
trace-cmd report -N -i "$out/guest-evil.dat" >"$WORK/evil-n.txt" 2>"$WORK/evil-n.err"
trc=$?
[ $trc = 0 ] || { show "$WORK/evil-n.err"; fail "trace-cmd report -N of guest-evil.dat exited $trc"; }
trace-cmd report -i "$out/guest-evil.dat" >"$WORK/evil.txt" 2>"$WORK/evil.err"
trc=$?
[ $trc = 0 ] || { show "$WORK/evil.err"; fail "trace-cmd report of guest-evil.dat exited $trc"; }
oracle "$DATA/cap-guest" 2
# Its sched_switch and softirq_raise events print as "[UNKNOWN EVENT]", without a CPU: counted in all.
got=$(grep -v -e '^cpus=' -e '^$' "$WORK/evil.txt" | grep -c '')
unknown=$(grep -c '^\[UNKNOWN EVENT\]' "$WORK/evil.txt")
[ "$got" = $((ORACLE_CPU0 + ORACLE_CPU1)) ] ||
	fail "guest evil: trace-cmd report shows $got events, the fixture x2 has $((ORACLE_CPU0 + ORACLE_CPU1))"
[ "$unknown" -gt 0 ] || fail "guest evil: no event printed as unknown: its sched_switch format was used"
for c in 0 1; do
	eval "want=\$ORACLE_CPU$c"
	[ "$(guest_json "$out" evil ".cpus[] | select(.cpu == $c) | .events")" = "$want" ] ||
		fail "guest evil cpu$c: manifest events $(guest_json "$out" evil ".cpus[] | select(.cpu == $c) | .events"), want $want"
done
grep -q 'prev_comm=\|==>' "$WORK/evil.txt" && fail "guest evil's sched_switch events were printed with its hostile format"
echo "guest evil: $got events in trace-cmd report ($unknown unknown: its sched_switch and softirq_raise); good guest exact, $(wc -l <"$WORK/want-ss.txt") sched_switch lines shown live as the report's"
echo "PASS"
