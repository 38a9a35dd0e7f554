#!/bin/sh
# Proves (issue 40): record --trigger-guest-filter. The real trace-agent, on this host's real
# tracefs through stand-in ports, watches sched:sched_process_exec with a filter on a file name
# of the test's own: 3 execs of it 1.5 s apart are exactly 3 triggers on --trigger-fd; a burst
# of 5 within a second is 1 (the agent's rate limit), and the next one, 1.3 s later, says the 4
# matches held back; no exec of another name triggers; the agent's watch instance is gone
# after. An event the guest has not, or a filter its kernel refuses, is a usage error (exit 2),
# as for -e. A hostile fake agent's 5000 TRIGGERs at once are 1 trigger taken and 4999 counted
# and ignored, and its recording goes on (exit 0); TRIGGERs nobody asked for are ignored; an
# agent without the WATCH capability is recorded without triggers, with a warning.
echo "collect: --trigger-guest-filter: the agent's kernel filter triggers, rate-limited on both sides"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
AGENT=$VT_BUILDDIR/guest-agent/trace-agent
T=/sys/kernel/tracing

# fifos DIR NCPU: stand-in ports for a guest of NCPU CPUs
fifos() {
	mkdir -p "$1"
	_i=0
	for _n in agent-ctl-path $(while [ $_i -lt "$2" ]; do echo trace-path-cpu$_i; _i=$((_i + 1)); done); do
		mkfifo "$1/$_n.in" "$1/$_n.out" || fail "mkfifo $1/$_n"
	done
}

if [ -w $T/instances ] && [ -x "$AGENT" ]; then
	inst=vt-trig-$$ p=$WORK/ports
	ncpu=$(ls -d $T/per_cpu/cpu* | wc -l)
	fifos "$p" "$ncpu"
	prog=$WORK/vt-trig-exec-$$ other=$WORK/vt-other-exec-$$
	cp /bin/true "$prog" && cp /bin/true "$other" || fail "cannot copy /bin/true"
	"$AGENT" --port-dir "$p" --instance $inst --once --wait 20 --no-kallsyms 2>"$WORK/agent.log" &
	apid=$!
	track $apid
	"$COLLECT" record --chardev-dir "$p" --name hostvm -e sched:sched_switch -o "$WORK/out" \
		--trigger-guest-filter "sched:sched_process_exec if filename ~ \"*vt-trig-exec-$$\"" \
		--trigger-fd 3 3>"$WORK/trig.txt" >"$WORK/rec.log" 2>&1 &
	COLLECT_PID=$!
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
	wait_log "$WORK/agent.log" "watching sched:sched_process_exec" 30 "the agent was not asked to watch"
	[ -d $T/instances/$inst-watch ] || fail "no watch instance $inst-watch"
	sleep 1
	for i in 1 2 3; do
		"$prog"
		"$other"
		sleep 1.5
	done
	n=$(wc -l <"$WORK/trig.txt")
	[ "$n" = 3 ] || { show "$WORK/rec.log" "$WORK/trig.txt"; fail "3 matches 1.5 s apart: $n triggers"; }
	echo "ok: 3 matches 1.5 s apart, 3 other execs: 3 triggers"
	for i in 1 2 3 4 5; do "$prog"; done
	sleep 1.3
	"$prog"
	sleep 1
	kill -INT $COLLECT_PID
	collect_wait 60
	wait $apid
	[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/agent.log"; fail "record exited $RC, want 0"; }
	n=$(wc -l <"$WORK/trig.txt")
	[ "$n" = 5 ] || { show "$WORK/rec.log" "$WORK/trig.txt"; fail "then a burst of 5 and one more: $((n - 3)) triggers, want 2"; }
	[ "$(grep -c "^trigger-guest hostvm sched:sched_process_exec [0-9][0-9]*$" "$WORK/trig.txt")" = 5 ] ||
		{ cat "$WORK/trig.txt"; fail "--trigger-fd's lines are not 'trigger-guest NAME EVENT TS'"; }
	sort -n -k4 "$WORK/trig.txt" | cmp -s - "$WORK/trig.txt" || fail "the triggers' guest times go back"
	grep -q "guest hostvm: trigger: sched:sched_process_exec at guest time [0-9]* (4 more matches held back" \
		"$WORK/rec.log" || { show "$WORK/rec.log"; fail "the last trigger does not carry the 4 held back"; }
	grep -q "ignored" "$WORK/rec.log" && { show "$WORK/rec.log"; fail "record ignored a real agent's TRIGGER"; }
	[ ! -d $T/instances/$inst-watch ] || fail "the watch instance $inst-watch is still there"
	echo "ok: a burst of 5 is 1 trigger, the next carries the 4 held back; the watch instance is gone"

	for spec in "sched:vt_no_such_event" "sched:sched_process_exec if no_such_field == 1"; do
		"$AGENT" --port-dir "$p" --instance $inst --once --wait 20 --no-kallsyms 2>"$WORK/agent2.log" &
		apid=$!
		track $apid
		collect bad --chardev-dir "$p" --name hostvm -o "$WORK/out-bad" --duration 2 \
			--trigger-guest-filter "$spec"
		wait $apid
		[ $RC = 2 ] && grep -q "guest hostvm.*--trigger-guest-filter" "$WORK/bad.log" ||
			{ show "$WORK/bad.log"; fail "'$spec': exit $RC, want 2 naming the option"; }
		[ ! -d $T/instances/$inst-watch ] || fail "'$spec': the watch instance is left"
		echo "ok: '$spec' refused: $(grep -m1 -- "--trigger-guest-filter" "$WORK/bad.log" | cut -c1-150)"
	done
else
	echo "note: no writable $T/instances (needs root) or no trace-agent: the real agent's part is not run"
fi

# A hostile agent: 5000 TRIGGERs at START. One is taken, the rest counted and ignored; the
# recording is not cut off.
p=$WORK/ports-flood
mkdir -p "$p"
fake vm-flood --fifo "$p" --fixture "$DATA/cap-guest" --triggers 5000
pid=$FAKE_PID
collect flood --chardev-dir "$p" --name vm-flood -o "$WORK/out-flood" --duration 3 --sync none \
	--trigger-guest-filter "fake:ev if x == 1" --trigger-fd 3 3>"$WORK/flood.txt"
fake_end $pid
[ $RC = 0 ] || { show "$WORK/flood.log" "$WORK/vm-flood.fake"; fail "flood: exit $RC, want 0"; }
grep -q "sent 5000 TRIGGER frames for fake:ev" "$WORK/vm-flood.fake" ||
	{ show "$WORK/vm-flood.fake"; fail "the fake did not send its 5000 TRIGGERs"; }
n=$(wc -l <"$WORK/flood.txt")
[ "$n" = 1 ] || { show "$WORK/flood.log"; fail "flood: $n triggers taken, want 1"; }
grep -q "guest vm-flood: TRIGGER fake:ev ignored: over the rate (4096 ignored so far)" "$WORK/flood.log" ||
	{ show "$WORK/flood.log"; fail "flood: the ignored TRIGGERs are not counted"; }
l=$(grep -c "ignored so far" "$WORK/flood.log")
[ "$l" = 13 ] || fail "flood: $l log lines about ignored TRIGGERs, want 13 (1, 2, 4 .. 4096)"
[ -s "$WORK/out-flood/guest-vm-flood.dat" ] || fail "flood: no recording of the guest"
[ -z "$(guest_json "$WORK/out-flood" vm-flood '.problems // empty')" ] ||
	fail "flood: the manifest reports problems: $(guest_json "$WORK/out-flood" vm-flood .problems)"
echo "ok: 5000 TRIGGERs at once: 1 taken, 4999 ignored in $l log lines, the recording kept"

# TRIGGERs without a WATCH: ignored. An agent without WATCH: recorded, with a warning.
p=$WORK/ports-unasked
mkdir -p "$p"
fake vm-un --fifo "$p" --fixture "$DATA/cap-guest" --triggers 3
pid=$FAKE_PID
collect unasked --chardev-dir "$p" --name vm-un -o "$WORK/out-un" --duration 2 --sync none
fake_end $pid
[ $RC = 0 ] || { show "$WORK/unasked.log"; fail "unasked: exit $RC, want 0"; }
grep -q "WATCH" "$WORK/vm-un.fake" && fail "unasked: WATCH sent without --trigger-guest-filter"
grep -q "guest vm-un: TRIGGER fake:unwatched ignored: no WATCH asked for it (2 ignored so far)" \
	"$WORK/unasked.log" || { show "$WORK/unasked.log"; fail "unasked TRIGGERs not ignored"; }
p=$WORK/ports-old
mkdir -p "$p"
fake vm-old --fifo "$p" --fixture "$DATA/cap-guest"
pid=$FAKE_PID
collect old --chardev-dir "$p" --name vm-old -o "$WORK/out-old" --duration 2 --sync none \
	--trigger-guest-filter "fake:ev"
fake_end $pid
[ $RC = 0 ] || { show "$WORK/old.log"; fail "old agent: exit $RC, want 0"; }
grep -q "guest vm-old: its agent cannot watch a guest event (no WATCH capability" "$WORK/old.log" ||
	{ show "$WORK/old.log"; fail "old agent: no warning"; }
echo "ok: unasked TRIGGERs ignored; an agent without WATCH recorded, with a warning"

"$COLLECT" record --chardev-dir "$p" --trigger-guest-filter "sched:*" -o "$WORK/x" >"$WORK/u.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- "--trigger-guest-filter 'sched:\*': SYSTEM:EVENT" "$WORK/u.log" ||
	{ show "$WORK/u.log"; fail "a glob: exit $rc, want 2"; }
echo "ok: a glob refused on the command line"
echo "PASS"
