#!/bin/sh
# Proves (issue 29): record --live prints the host's and the guests' events
# while it records, and they are the lines `trace-cmd report -i host.dat -i
# guest-NAME.dat` prints for the files the same run wrote:
#  1. a fake guest (fixture pages, its TSC 5e9 ticks ahead, --sync offset so
#     that the mapping is exact) and the host's events (the collector's
#     control markers, and the execs of a process that execs itself every
#     50 ms once the guest records): lines printed while it records, host
#     and guest; at the end the same lines as trace-cmd report, as a set
#     exactly, and in the same order apart from the window's edges (the
#     first and last window of the timeline; nothing shown out of order);
#  2. the real trace-agent on this host's tracefs (stand-in FIFO ports,
#     FLUSH: partial pages): a marker written once, 1 s into the recording,
#     shows within a second (the time it took printed), long before a page
#     fills; a marker with escape
#     sequences and a bell shows with '?' for them (the file keeps them raw);
#     the lines are report's apart from the task names (the files have the
#     end's), counted and compared with the comm column left out.
echo "collect: record --live prints the events as they arrive, equal to trace-cmd report of the files it writes"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
AGENT=$VT_BUILDDIR/guest-agent/trace-agent
need_host_tracefs sched:sched_switch
T=/sys/kernel/tracing
[ -x "$AGENT" ] || fail "$AGENT is not built"
W_MS=300

# events FILE: the event lines of a report or a live output (not "cpus=", no blank lines)
events() {
	grep -v -e 'cpus=[0-9]*$' -e '^$' "$1"
}

# tsof LINE-FILE: the timestamp column of each line ("[CCC] SECONDS.USECS:"), one per line
tsof() {
	sed -nE 's/.*\[[0-9]{3}\] +([0-9]+\.[0-9]+):.*/\1/p' "$1"
}

# 1. A fake guest and the host's markers.
p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vmx --fifo "$p" --fixture "$DATA/cap-guest" --repeat 6 --retime --tsc-offset 5000000000
pid=$FAKE_PID
# The host events: the collector's markers, and sched_process_exec of one process that
# execs itself every 50 ms (its pid stays; the rest of this machine is kept out), so
# that host pages keep coming while the view reads the host's kallsyms (0.2 s here,
# seconds under ASan or on a busy machine: the window counts from when a batch was
# taken, or those pages' events showed late, out of order, as in CI's run under ASan).
# It starts once the guest records (the file "go"), so that the host's first page, whose
# kallsyms the view reads then, comes while the guest's pages do. (No child: a
# short-lived child's name would differ, /proc's at once, the files' none.)
cat >"$WORK/reexec.pl" <<'EOF'
my ($go, $n) = @ARGV;
select(undef, undef, undef, 0.02) until -e $go;
exit 0 if $n >= 200;
select(undef, undef, undef, 0.05);
exec $^X, $0, $go, $n + 1;
EOF
perl "$WORK/reexec.pl" "$WORK/go" 0 &
execs=$!
track $execs
"$COLLECT" record --chardev-dir "$p" --name vmx -o "$out" -d 5 --live=$W_MS \
	--host-events sched:sched_process_exec --host-pid $execs --sync offset --tsc-offset 5000000000 \
	>"$WORK/live.txt" 2>"$WORK/rec.log" &
COLLECT_PID=$!
track $COLLECT_PID
T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
wait_log "$WORK/rec.log" 'guest vmx: recording' 30 "the guest did not record"
: >"$WORK/go"
# Lines shown while it records: before it says "stopping" (polled, so that a loaded
# machine is given the whole 5 s).
while kill -0 $COLLECT_PID 2>/dev/null && ! grep -q '^virtio-trace-collect record: stopping' "$WORK/rec.log"; do
	cp "$WORK/live.txt" "$WORK/early.txt"
	grep -q '^ *host.dat: ' "$WORK/early.txt" && grep -q '^ *guest-vmx.dat: ' "$WORK/early.txt" && break
	sleep 0.1
done
collect_wait 60
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }
nh=$(grep -c '^ *host.dat: ' "$WORK/early.txt")
ng=$(grep -c '^ *guest-vmx.dat: ' "$WORK/early.txt")
echo "while recording: $nh host and $ng guest lines shown"
[ "$nh" -gt 0 ] && [ "$ng" -gt 0 ] || fail "nothing of the host or the guest was shown while recording"

report "$WORK/report.txt" -i "$out/host.dat" -i "$out/guest-vmx.dat"
events "$WORK/report.txt" >"$WORK/want.txt"
events "$WORK/live.txt" >"$WORK/got.txt"
nw=$(wc -l <"$WORK/want.txt") ngot=$(wc -l <"$WORK/got.txt")
echo "trace-cmd report: $nw lines; live: $ngot lines"
[ "$nw" -gt 100 ] || fail "only $nw lines in the report: the test tests little"
grep -q '^ *guest-vmx.dat: ' "$WORK/want.txt" && grep -q '^ *host.dat: .*virtio-trace: tx ' "$WORK/want.txt" ||
	fail "the report lacks guest lines or host markers"
nx=$(grep -c '^ *host.dat: .* sched_process_exec: ' "$WORK/want.txt")
echo "host: $nx execs of the re-executing process"
[ "$nx" -ge 20 ] || fail "only $nx host execs in the report: host pages did not keep coming"
sort "$WORK/want.txt" >"$WORK/want.sorted"
sort "$WORK/got.txt" >"$WORK/got.sorted"
cmp -s "$WORK/want.sorted" "$WORK/got.sorted" || {
	diff "$WORK/want.sorted" "$WORK/got.sorted" | head -10
	fail "the live lines are not the report's lines"
}
# The order: the same apart from the first and last window of the timeline.
first=$(tsof "$WORK/want.txt" | head -1) last=$(tsof "$WORK/want.txt" | tail -1)
middle() {
	awk -v a="$first" -v b="$last" -v w="$W_MS" '{
		if (match($0, /\] +[0-9]+\.[0-9]+:/)) {
			t = substr($0, RSTART + 1, RLENGTH - 2) + 0
			if (t < a + w / 1000 || t > b - w / 1000) next
		}
		print }' "$1"
}
middle "$WORK/want.txt" >"$WORK/want.mid"
middle "$WORK/got.txt" >"$WORK/got.mid"
cmp -s "$WORK/want.mid" "$WORK/got.mid" || {
	diff "$WORK/want.mid" "$WORK/got.mid" | head -10
	fail "the live lines are not in the report's order"
}
echo "same lines as the report ($nw), in the same order over the $(wc -l <"$WORK/want.mid") lines between the edges"
if cmp -s "$WORK/want.txt" "$WORK/got.txt"; then echo "(the edges too)"; fi
grep -q "live view: $nw events shown" "$WORK/rec.log" || { show "$WORK/rec.log"; fail "the collector does not say it showed $nw events"; }
grep -q "out of order" "$WORK/rec.log" && { show "$WORK/rec.log"; fail "events were shown out of order"; }
# The files and the summary are as without --live.
check_exact "$out" vmx "$DATA/cap-guest" 6
kill $execs 2>/dev/null
grep -q "recorded in $out (exit status 0)" "$WORK/rec.log" || fail "no summary"

# 2. The real agent: FLUSH, and text made safe.
p=$WORK/aports out=$WORK/aout inst=vt-live-$$
mkdir -p "$p"
ncpu=$(ls -d $T/per_cpu/cpu* | wc -l)
i=0
for n in agent-ctl-path $(while [ $i -lt "$ncpu" ]; do echo trace-path-cpu$i; i=$((i + 1)); done); do
	mkfifo "$p/$n.in" "$p/$n.out" || fail "mkfifo $p/$n"
done
"$AGENT" --port-dir "$p" --instance $inst --keep-instance 0 --once --wait 20 --no-kallsyms 2>"$WORK/agent.log" &
apid=$!
track $apid
# This host's TSC is the "guest's": offset 0 is exact.
"$COLLECT" record --chardev-dir "$p" --name hv -o "$out" -d 4 --live=$W_MS -e sched:sched_process_exec \
	--sync offset --tsc-offset 0 >"$WORK/alive.txt" 2>"$WORK/arec.log" &
COLLECT_PID=$!
track $COLLECT_PID
_w=0
until [ -d $T/instances/$inst ] && grep -q "recording" "$WORK/arec.log"; do
	[ $_w -lt 100 ] || { show "$WORK/arec.log"; fail "the guest never started recording"; }
	sleep 0.1
	_w=$((_w + 1))
done
sleep 1
printf 'vt-live quiet marker\n' >$T/instances/$inst/trace_marker
wait_log "$WORK/alive.txt" 'vt-live quiet marker' 1 "a lone marker was not shown (no FLUSH?)"
shown_ms=$(( (_wl + 1) * 100 ))
echo "a lone marker shown within $shown_ms ms"
printf 'vt-live evil \033[2J\033[31mred\007 end\n' >$T/instances/$inst/trace_marker
collect_wait 60
wait $apid
[ $RC = 0 ] || { show "$WORK/arec.log" "$WORK/agent.log"; fail "collector exited $RC, want 0"; }
grep -q "partial pages go out after 100 ms" "$WORK/agent.log" || { show "$WORK/agent.log"; fail "the agent got no FLUSH"; }
grep -q 'vt-live evil ?\[2J?\[31mred? end$' "$WORK/alive.txt" ||
	{ grep 'vt-live evil' "$WORK/alive.txt" | od -c | head; fail "the escape sequences were not shown as '?'"; }
! grep -q "$(printf '\033')" "$WORK/alive.txt" || fail "an ESC byte reached the live output"
report "$WORK/areport.txt" -i "$out/guest-hv.dat"
grep -q "$(printf 'vt-live evil \033\\[2J')" "$WORK/areport.txt" || fail "the file does not keep the marker raw"
# Lines equal apart from the task name column (and the control characters made safe).
norm() {
	events "$1" | sed -E 's/^ *guest-hv\.dat: //; s/^ *.{16}-([0-9]+) +\[/TASK-\1 [/' | tr '\033\007' '??'
}
norm "$WORK/areport.txt" >"$WORK/awant.txt"
norm "$WORK/alive.txt" >"$WORK/agot.txt"
cmp -s "$WORK/awant.txt" "$WORK/agot.txt" || {
	diff "$WORK/awant.txt" "$WORK/agot.txt" | head -10
	# Every hunk's place: lines missing on one side, or the same lines elsewhere?
	echo "hunks: $(diff "$WORK/awant.txt" "$WORK/agot.txt" | grep -E '^[0-9]' | head -20 | tr '\n' ' ')"
	sort "$WORK/agot.txt" >"$WORK/agot.sorted"
	echo "as sets: $(sort "$WORK/awant.txt" | comm -3 - "$WORK/agot.sorted" | wc -l) lines differ"
	fail "the real agent's live lines are not the report's"
}
echo "real agent: $(wc -l <"$WORK/awant.txt") lines equal to the report's (task names aside); a lone marker shown within $shown_ms ms; escapes shown as '?'"
echo "PASS"
