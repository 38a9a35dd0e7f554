#!/bin/sh
# Proves (issue 42): the real trace-agent grows a CPU's ring buffer from the drain it measures,
# within its budget, on this host's real tracefs through stand-in ports. A burst of $N numbered
# markers goes into the agent's instance on CPU 0 at about $RATE a second, while a throttled
# reader between the agent's data port and the collector takes $SLOW KiB a second, until the
# burst is over (then it reads at full speed, so the port could carry the burst on average).
# Each CPU's buffer starts at 256 KiB (--buffer-size 256). Three recordings of the same burst:
# - fixed (no --buffer-budget anywhere: the growth is off by default): the ring overruns; the
#   markers received and the kernel's overrun (manifest stats.overrun) add up to $N exactly, and
#   no buffer changed size (tracefs after the burst, the stats, the agent's log);
# - adaptive (trace-agent --buffer-budget 65536): every one of the $N markers arrives, in order, none
#   overrun; cpu0's buffer grew (buffer_grows, buffer_why "burst"), within the budget, and the
#   agent's log says each growth;
# - capped (record --buffer-budget 1024, the agent without the option): cpu0 grows no further
#   than the budget leaves it (1024 less cpu1's 256 KiB), buffer_capped is true, the agent warns
#   (a NOTICE the collector prints), and the markers received and the overrun add up to $N exactly.
# The instance's sizes are put back afterwards. Figures go to the test's log (doc/benchmarks.md).
echo "agent: the ring buffer grows with a burst the port drains slowly, within the budget; loss counted"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_agent
command -v taskset >/dev/null 2>&1 && command -v perl >/dev/null 2>&1 ||
	{ echo "SKIP: no taskset or perl"; exit 77; }
ncpu=$(ls -d $T/per_cpu/cpu* | wc -l)
[ "$ncpu" -ge 2 ] || { echo "SKIP: one CPU: the agent and the burst need two"; exit 77; }
N=${VT_RING_MARKERS:-100000} RATE=${VT_RING_RATE:-50000} SLOW=${VT_RING_SLOW_KB:-128}

# run_case NAME AGENT_OPTS COLLECT_OPTS: one recording of the burst; its figures in $WORK/NAME.*
run_case() {
	name=$1 inst=vt-ring-$$-$1 pa=$WORK/$1-agent pc=$WORK/$1-ports out=$WORK/$1-out
	fast=$WORK/$1.fast
	mkdir -p "$pa" "$pc"
	i=0
	for n in agent-ctl-path $(while [ $i -lt "$ncpu" ]; do echo trace-path-cpu$i; i=$((i + 1)); done); do
		mkfifo "$pc/$n.in" "$pc/$n.out" || fail "mkfifo $pc/$n"
		ln -s "$pc/$n.in" "$pa/$n.in"
		case $n in
		agent-ctl-path) ln -s "$pc/$n.out" "$pa/$n.out" ;;
		*)
			# The throttled reader: 4 KiB, then a pause, until the burst is over.
			mkfifo "$pa/$n.out"
			perl -e 'use Time::HiRes qw(sleep);
				open(my $i, "<", $ARGV[0]) or die "$ARGV[0]: $!";
				open(my $o, ">", $ARGV[1]) or die "$ARGV[1]: $!";
				while (my $n = sysread($i, my $b, 4096)) {
					my $off = 0;
					while ($off < $n) {
						my $w = syswrite($o, $b, $n - $off, $off);
						defined $w or die "write: $!";
						$off += $w;
					}
					sleep(4 / $ARGV[3]) unless -e $ARGV[2];
				}' "$pa/$n.out" "$pc/$n.out" "$fast" "$SLOW" &
			track $!
			;;
		esac
	done
	# The agent's control thread on CPU 1: nothing but the burst on CPU 0 (no sync, no marks there).
	# shellcheck disable=SC2086
	taskset -c 1 "$AGENT" --port-dir "$pa" --instance "$inst" --once --wait 20 --no-kallsyms \
		--keep-instance 0 $2 2>"$WORK/$name.agent" &
	apid=$!
	track $apid
	# shellcheck disable=SC2086
	"$COLLECT" record --chardev-dir "$pc" --name ringvm --sync none --buffer-size 256 \
		-e sched:sched_process_exec -f 'common_pid < 0' $3 -o "$out" >"$WORK/$name.log" 2>&1 &
	COLLECT_PID=$!
	track $COLLECT_PID
	_cl=$WORK/$name.log
	wait_log "$WORK/$name.agent" "streaming" 30 "$name: the agent did not start streaming"
	sleep 0.5
	taskset -c 0 perl -e 'use Time::HiRes qw(time sleep);
		open(my $f, ">", $ARGV[0]) or die "$ARGV[0]: $!";
		my ($n, $rate, $t0, $refused) = ($ARGV[1], $ARGV[2], time, 0);
		for my $i (0 .. $n - 1) {
			# EBADF: the kernel refused it, its buffer stopped for a resize.
			syswrite($f, "vt-ring $i") or $!{EBADF} ? $refused++ : die "write: $!";
			next if $i % 100;
			my $ahead = $i / $rate - (time - $t0);
			sleep($ahead) if $ahead > 0;
		}
		printf "%.3f %d\n", time - $t0, $refused;' "$T/instances/$inst/trace_marker" "$N" "$RATE" \
		>"$WORK/$name.burst" || fail "$name: cannot write the markers"
	# Each CPU's size as the kernel has it once the burst is written.
	cat "$T/instances/$inst/per_cpu"/cpu*/buffer_size_kb >"$WORK/$name.sizes" ||
		fail "$name: cannot read the instance's buffer sizes"
	touch "$fast"
	sleep 1
	kill -INT $COLLECT_PID
	collect_wait 60
	wait $apid
	arc=$?
	[ $RC = 0 ] || { show "$WORK/$name.log" "$WORK/$name.agent"; fail "$name: collector exited $RC"; }
	[ $arc = 0 ] || { show "$WORK/$name.agent"; fail "$name: the agent exited $arc"; }
	[ ! -d "$T/instances/$inst" ] || fail "$name: the agent left its instance $inst"
	report "$WORK/$name.txt" -i "$out/$(guest_json "$out" ringvm .file)"
	grep -o 'vt-ring [0-9]*' "$WORK/$name.txt" | awk '{print $2}' >"$WORK/$name.seq"
	got=$(wc -l <"$WORK/$name.seq")
	c0() { guest_json "$out" ringvm ".cpus[] | select(.cpu == 0) | .stats.$1"; }
	over=$(c0 overrun) kb=$(c0 buffer_kb) grows=$(c0 buffer_grows) capped=$(c0 buffer_capped)
	budget=$(c0 buffer_budget_kb) start=$(c0 buffer_start_kb)
	total=$(guest_json "$out" ringvm '[.cpus[].stats.buffer_kb] | add')
	read -r secs refused <"$WORK/$name.burst"
	paused=$(c0 buffer_paused_us)
	echo "$name: $got of $N markers in $secs s, overrun $over, refused $refused; cpu0 buffer" \
		"$start -> $kb KiB ($grows grows, paused $paused us, capped $capped), every CPU" \
		"$total KiB, budget $budget KiB"
	# 256 KiB in whole pages of 4080 data bytes: the kernel says 258.
	[ "$start" -ge 256 ] && [ "$start" -lt 512 ] || fail "$name: cpu0 buffer_start_kb $start, want 256"
	# The instance holds nothing else (the agent's own control thread is on CPU 1).
	n=$(grep -c '\[000\]' "$WORK/$name.txt")
	[ "$n" = "$got" ] || fail "$name: $n events on cpu0, $got markers"
	# Exactly: what arrived, what the kernel says it overwrote and what it refused while it
	# resized (the writer saw EBADF) are the burst.
	[ $((got + over + refused)) = "$N" ] ||
		fail "$name: $got markers received + $over overrun + $refused refused != $N"
	sort -n -c -u "$WORK/$name.seq" || fail "$name: the markers are not in order"
	if command -v python3 >/dev/null 2>&1 && python3 -c 'import jsonschema' 2>/dev/null; then
		python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/manifest.schema.json" \
			"$out/manifest.json" >"$WORK/$name.v" 2>&1 ||
			{ cat "$WORK/$name.v"; fail "$name: manifest.json does not match the schema"; }
	fi
}

run_case fixed "" ""
[ "$over" -gt 0 ] || fail "fixed: no overrun: the burst did not overrun 256 KiB (make it larger)"
[ "$refused" = 0 ] || fail "fixed: $refused markers refused with no resize"
[ "$kb" = "$start" ] && [ "$grows" = 0 ] && [ "$budget" = 0 ] ||
	fail "fixed: cpu0 buffer $kb KiB after $grows grows, budget $budget"
grep -q "ring buffer .* -> " "$WORK/fixed.agent" && fail "fixed: the agent grew a buffer"
# Without the option no buffer changes size: the kernel's, and every CPU's stats.
sizes=$(sort -u "$WORK/fixed.sizes" | tr '\n' ' ')
[ "$sizes" = "$start " ] || fail "fixed: the kernel's sizes after the burst are '$sizes', want $start"
n=$(guest_json "$out" ringvm \
	"[.cpus[] | select(.stats.buffer_kb != $start or .stats.buffer_grows != 0)] | length")
[ "$n" = 0 ] || fail "fixed: $n CPUs' buffers changed size"
fixed_lost=$over

run_case adaptive "--buffer-budget 65536" ""
[ "$budget" = 65536 ] || fail "adaptive: budget $budget, want 65536"
# Nothing overrun: every marker the kernel took arrived.
[ "$over" = 0 ] && [ $((got + refused)) = "$N" ] ||
	fail "adaptive: $got of $N markers, $over overrun, $refused refused"
[ "$grows" -ge 1 ] && [ "$kb" -gt "$start" ] || fail "adaptive: cpu0 buffer $kb KiB after $grows grows"
[ "$total" -le "$budget" ] || fail "adaptive: $total KiB over the budget $budget"
case $(c0 buffer_why) in burst*) ;; *) fail "adaptive: buffer_why '$(c0 buffer_why)'" ;; esac
[ "$capped" = false ] || fail "adaptive: capped"
n=$(grep -c "cpu0: ring buffer [0-9]* -> [0-9]* KiB (burst" "$WORK/adaptive.agent")
[ "$n" = "$grows" ] || { show "$WORK/adaptive.agent"; fail "adaptive: the agent logged $n growths of $grows"; }
adaptive_kb=$kb adaptive_refused=$refused

run_case capped "" "--buffer-budget 1024"
[ "$budget" = 1024 ] || fail "capped: budget $budget, want 1024"
c1=$(guest_json "$out" ringvm '.cpus[] | select(.cpu == 1) | .stats.buffer_kb')
[ "$kb" -gt "$start" ] && [ "$kb" -le $((1024 - c1)) ] ||
	fail "capped: cpu0 buffer $kb KiB, want $start..$((1024 - c1)) (cpu1 holds $c1)"
[ "$total" -le 1024 ] || fail "capped: every CPU $total KiB, over 1024"
[ "$capped" = true ] || fail "capped: buffer_capped $capped"
[ "$over" -gt 0 ] || fail "capped: no overrun at $kb KiB"
grep -q "guest ringvm: agent: cpu0: the ring buffer stops at $kb KiB" "$WORK/capped.log" ||
	{ show "$WORK/capped.log"; fail "capped: the collector did not print the agent's warning"; }
echo "lost: fixed $start KiB $fixed_lost overrun; adaptive $adaptive_kb KiB 0 overrun," \
	"$adaptive_refused refused during its resizes; capped $kb KiB $over overrun"
echo "PASS"
