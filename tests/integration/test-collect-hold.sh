#!/bin/sh
# Proves (issue 40): record --hold is a flight recorder. The fake agent makes 5 passes of the
# fixture (10 pages per CPU) into a ring of 3 pages: while recording nothing reaches the data
# ports (the spool holds no byte, seconds after START), and at the stop (SIGINT, as the daemon
# sends it) the last 3 pages of each CPU arrive: trace-cmd report of guest-NAME.dat shows
# exactly the last events of a whole recording of the same pages, in order, the manifest says
# held, with the overwritten events (the stats' overrun and the first page's lost count) and
# the window the kept events cover; the summary says "overwritten", not "lost". An agent
# without the HOLD capability (an older trace-agent) is refused with a message naming the
# guest, exit status 2 (nothing kept), as for an event no guest has; --hold with --live, and with
# --incoming (a migration's destination), is a
# usage error. The host's ring (--host-events) holds its last markers the same way.
echo "collect: --hold keeps only the ring's last pages, sent at the stop; an agent without HOLD is refused"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

K=5 R=3
p=$WORK/ports-full
mkdir -p "$p"
# The whole recording of the same pages (no --retime: their timestamps are the same each run).
fake vm-full --fifo "$p" --fixture "$DATA/cap-guest" --repeat $K
pid=$FAKE_PID
collect full --chardev-dir "$p" --name vm-full -o "$WORK/out-full" --duration 1 --sync none --quiet
fake_end $pid
[ $RC = 0 ] || { show "$WORK/full.log"; fail "the whole recording exited $RC"; }
report "$WORK/full.txt" --raw-ts -i "$WORK/out-full/guest-vm-full.dat"

p=$WORK/ports-hold out=$WORK/out-hold
mkdir -p "$p"
fake vm-hold --fifo "$p" --fixture "$DATA/cap-guest" --repeat $K --ring-pages $R
pid=$FAKE_PID
"$COLLECT" record --hold --chardev-dir "$p" --name vm-hold -o "$out" --sync none >"$WORK/hold.log" 2>&1 &
COLLECT_PID=$!
track $COLLECT_PID
wait_log "$WORK/vm-hold.fake" "START: holding" 20 "the agent was not asked to hold"
sleep 2
grep -q "START: holding" "$WORK/vm-hold.fake" || fail "no START with HOLD"
for c in 0 1; do
	n=$(spool_pages "$out/.spool/guest-vm-hold" $c | wc -c)
	[ "$n" = 0 ] || fail "cpu$c: $n bytes reached the spool while holding"
done
echo "ok: nothing on the data ports 2 s into the held recording"
kill -INT $COLLECT_PID
collect_wait 60
fake_end $pid
[ $RC = 0 ] || { show "$WORK/hold.log" "$WORK/vm-hold.fake"; fail "held recording: exit $RC, want 0"; }
# Its spool is gone whole, the span files (cpuN.window) too.
! grep -q 'not made by the collector\|not removed' "$WORK/hold.log" && [ ! -e "$out/.spool" ] ||
	{ show "$WORK/hold.log"; fail "the held recording's spool is left: $(ls -R "$out/.spool" 2>&1 | tr '\n' ' ')"; }
echo "ok: the held recording's spool is removed whole (cpuN.window too)"
report "$WORK/hold.txt" --raw-ts -i "$out/guest-vm-hold.dat"
total_over=0
for c in 0 1; do
	line=$(grep "cpu$c: held" "$WORK/vm-hold.fake")
	held=$(echo "$line" | awk '{print $4}') over=$(echo "$line" | awk '{print $8}')
	[ "$held" = $R ] || fail "cpu$c: the fake held '$held' pages: $line"
	total_over=$((total_over + over))
	sent=$(fake_total vm-hold $c events)
	cpat="\[$(printf %03d $c)\]"
	grep -E -- "-[0-9]+ +$cpat" "$WORK/hold.txt" >"$WORK/hold-$c.ev"
	grep -E -- "-[0-9]+ +$cpat" "$WORK/full.txt" >"$WORK/full-$c.ev"
	got=$(wc -l <"$WORK/hold-$c.ev") all=$(wc -l <"$WORK/full-$c.ev")
	[ "$got" = "$sent" ] || fail "cpu$c: report shows $got events, the agent sent $sent"
	[ "$got" -gt 0 ] && [ "$got" -lt "$all" ] || fail "cpu$c: $got of $all events kept"
	[ $((all - got)) = "$over" ] || fail "cpu$c: $all - $got events, the agent overwrote $over"
	tail -n "$got" "$WORK/full-$c.ev" | cmp -s - "$WORK/hold-$c.ev" ||
		{ diff "$WORK/hold-$c.ev" "$WORK/full-$c.ev" | head; fail "cpu$c: the kept events are not the last $got of the whole recording"; }
	mo=$(guest_json "$out" vm-hold ".cpus[] | select(.cpu == $c) | .stats.overrun")
	[ "$mo" = "$over" ] || fail "cpu$c: manifest overrun $mo, want $over"
	echo "ok: cpu$c: the last $got of $all events, in order; $over overwritten"
done
[ "$(man "$out" .held)" = true ] || fail "manifest: held is $(man "$out" .held)"
[ "$(guest_json "$out" vm-hold .held.overwritten)" = $total_over ] ||
	fail "manifest: held.overwritten $(guest_json "$out" vm-hold .held.overwritten), want $total_over"
[ "$(guest_json "$out" vm-hold .lost_events.in_pages)" = $total_over ] ||
	fail "manifest: lost_events.in_pages $(guest_json "$out" vm-hold .lost_events.in_pages), want $total_over"
first=$(guest_json "$out" vm-hold .held.first_ts) last=$(guest_json "$out" vm-hold .held.last_ts)
# The window: the first kept event's and the last one's raw timestamps, as report prints them.
cat "$WORK"/hold-*.ev | sed -E 's/.*-[0-9]+ +\[[0-9]{3}\] *([0-9]+): .*/\1/' | sort -n >"$WORK/ts"
rf=$(head -1 "$WORK/ts") rl=$(tail -1 "$WORK/ts")
[ "$last" = "$rl" ] || fail "manifest: held.last_ts $last, report's last event $rl"
[ "$first" -le "$rf" ] || fail "manifest: held.first_ts $first after the first event $rf"
w=$(guest_json "$out" vm-hold .held.window_ns)
[ "$w" != null ] && [ "$w" -gt 0 ] || fail "manifest: held.window_ns $w"
[ "$(man "$WORK/out-full" .held)" = false ] && [ "$(guest_json "$WORK/out-full" vm-full .held)" = null ] ||
	fail "the whole recording's manifest says held"
grep -q "vm-hold .*held, $total_over older overwritten" "$WORK/hold.log" ||
	{ show "$WORK/hold.log"; fail "the summary does not say the held events were overwritten"; }
echo "ok: manifest held: $total_over overwritten, window $first..$last ($w ns)"
"$COLLECT" report "$out" >"$WORK/report.txt" 2>&1 || { show "$WORK/report.txt"; fail "report exited $?"; }
grep -q "^  held (record --hold): $total_over older events overwritten, the kept events span " \
	"$WORK/report.txt" || { show "$WORK/report.txt"; fail "report does not say the trace was held"; }
if command -v python3 >/dev/null 2>&1 && python3 -c 'import jsonschema' 2>/dev/null; then
	python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/manifest.schema.json" \
		"$out/manifest.json" >"$WORK/schema.v" 2>&1 ||
		{ cat "$WORK/schema.v"; fail "the held recording's manifest.json does not match the schema"; }
	echo "ok: the held manifest matches doc/manifest.schema.json"
fi

# The host's instance holds too: 20000 numbered markers written into it on CPU 0 while the
# recording holds (64 KiB per CPU); none reaches the spool before the stop, and host.dat has
# the last of them, in order, up to the last one; the overrun counts the others.
tracefs=/sys/kernel/tracing
if [ -w $tracefs/instances ] && command -v taskset >/dev/null 2>&1; then
	p=$WORK/ports-host out=$WORK/out-host N=20000
	mkdir -p "$p"
	fake vm-host --fifo "$p" --fixture "$DATA/cap-guest" --ring-pages 1
	pid=$FAKE_PID
	"$COLLECT" record --hold --host-events sched:sched_process_exec --buffer-size 64 \
		--chardev-dir "$p" --name vm-host -o "$out" >"$WORK/host.log" 2>&1 &
	COLLECT_PID=$!
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
	wait_log "$WORK/vm-host.fake" "START: holding" 20 "the agent was not asked to hold"
	taskset -c 0 perl -e 'open(my $f, ">", $ARGV[0]) or die "$ARGV[0]: $!";
		syswrite($f, "vt-hold-host $_") for 0 .. $ARGV[1] - 1' \
		$tracefs/instances/virtio-trace-collect-$COLLECT_PID/trace_marker $N ||
		fail "cannot write the host markers"
	for c in 0 1; do
		n=$(spool_pages "$out/.spool/host" $c | wc -c)
		[ "$n" = 0 ] || fail "host cpu$c: $n bytes reached the spool while holding"
	done
	kill -INT $COLLECT_PID
	collect_wait 60
	fake_end $pid
	[ $RC = 0 ] || { show "$WORK/host.log"; fail "held host recording: exit $RC, want 0"; }
	report "$WORK/host.txt" -i "$out/host.dat"
	grep -o 'vt-hold-host [0-9]*' "$WORK/host.txt" | awk '{print $2}' >"$WORK/host.seq"
	k=$(wc -l <"$WORK/host.seq")
	[ "$k" -gt 100 ] && [ "$k" -lt $((N / 2)) ] || fail "host: $k of $N markers kept"
	seq $((N - k)) $((N - 1)) | cmp -s - "$WORK/host.seq" ||
		fail "host: the $k markers kept are not $((N - k))..$((N - 1)) in order"
	ho=$(man "$out" '.host.held.overwritten') o0=$(man "$out" '.host.cpus[0].stats.overrun')
	[ "$o0" -ge $((N - k)) ] && [ "$ho" -ge "$o0" ] ||
		fail "host: overrun $o0 (held.overwritten $ho), $((N - k)) markers overwritten"
	report "$WORK/both.txt" -i "$out/host.dat" -i "$out/guest-vm-host.dat"
	echo "ok: host: the last $k of $N markers, in order; overrun $o0; report -i host.dat -i guest.dat reads"
else
	echo "note: no writable $tracefs/instances (or no taskset): the host part is not run"
fi

# An agent without HOLD: refused, naming the guest; exit 2, nothing kept.
p=$WORK/ports-old
mkdir -p "$p"
fake vm-old --fifo "$p" --fixture "$DATA/cap-guest" --no-hold
pid=$FAKE_PID
collect old --hold --chardev-dir "$p" --name vm-old -o "$WORK/out-old" --duration 2
fake_end $pid
[ $RC = 2 ] || { show "$WORK/old.log"; fail "--hold, agent without HOLD: exit $RC, want 2"; }
grep -q "guest vm-old: --hold: its agent cannot hold" "$WORK/old.log" ||
	{ show "$WORK/old.log"; fail "--hold, agent without HOLD: no clear message"; }
[ ! -e "$WORK/out-old/manifest.json" ] || fail "--hold refused: a manifest was written"
grep -q "START" "$WORK/vm-old.fake" && fail "--hold refused: START was sent anyway"
echo "ok: refused: $(grep -m1 'cannot hold' "$WORK/old.log" | cut -c1-160)"

"$COLLECT" record --hold --live --chardev-dir "$p" -o "$WORK/out-live" >"$WORK/live.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- "--hold sends nothing until the recording stops" "$WORK/live.log" ||
	{ show "$WORK/live.log"; fail "--hold --live: exit $rc"; }
echo "ok: --hold --live refused"

"$COLLECT" record --hold --chardev-dir "$p" --incoming -o "$WORK/out-incoming" >"$WORK/incoming.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- "--hold does not follow a migration: it does not go with --incoming" "$WORK/incoming.log" ||
	{ show "$WORK/incoming.log"; fail "--hold --incoming: exit $rc"; }
[ ! -e "$WORK/out-incoming" ] || fail "--hold --incoming refused: the output directory was made"
echo "ok: --hold --incoming refused"
echo "PASS"
