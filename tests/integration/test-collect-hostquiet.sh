#!/bin/sh
# Proves: a quiet host cannot stop the collector's engine. Each host CPU's thread waits for the
# ring buffer to fill (buffer_percent) in poll(), never inside splice(): a splice that waits
# holds its pipe's lock, and the engine's read of that pipe then slept on the lock (state D)
# until the buffer filled again, with every guest, timer and signal of the run behind it (seen
# inside a nested-KVM L1: a 5 s recording still running 187 s after SIGTERM).
# Five bursts of 150 one-kilobyte markers go into the collector's own host instance (256 KiB
# per CPU: each burst crosses the half the splice waited for, and after it the host is
# silent). The run must end when --duration says, with every marker in host.dat exactly once
# and the guest's pages exact.
echo "collect: a quiet host after a burst of host events does not stall the engine"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_process_exec
tracefs=/sys/kernel/tracing
command -v taskset >/dev/null || { echo "SKIP: taskset not found"; exit 77; }

BURSTS=5 PER=150
p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vmq --fifo "$p" --fixture "$DATA/cap-guest"
fpid=$FAKE_PID
t0=$(date +%s.%N)
"$COLLECT" record --chardev-dir "$p" --name vmq -o "$out" --duration 6 --buffer-size 256 \
	--host-events sched:sched_process_exec --sync probe >"$WORK/rec.log" 2>&1 &
COLLECT_PID=$!
track $COLLECT_PID
T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
inst=$tracefs/instances/virtio-trace-collect-$COLLECT_PID
i=0
until [ -w "$inst/trace_marker" ] && [ "$(cat "$inst/tracing_on" 2>/dev/null)" = 1 ]; do
	[ $i -lt 100 ] || { show "$WORK/rec.log"; fail "no host instance $inst after 10 s"; }
	sleep 0.1
	i=$((i + 1))
done
pad=$(printf '%0990d' 0)
b=0
while [ $b -lt $BURSTS ]; do
	taskset -c 0 sh -c 'i=0; while [ $i -lt '$PER' ]; do
		printf "vt-quiet-%d-%d %s" '$b' $i "$1" >"$2" || exit 1; i=$((i + 1)); done' \
		sh "$pad" "$inst/trace_marker" || fail "cannot write markers into $inst"
	b=$((b + 1))
	sleep 0.3
done
collect_wait 40
t1=$(date +%s.%N)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
fake_end $fpid
echo "the 6 s recording ended after $secs s (exit $RC)"
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/vmq.fake"; fail "collector exited $RC, want 0 (it was stopped: its engine stalled)"; }
awk -v s="$secs" 'BEGIN { exit !(s < 20) }' || fail "the recording took $secs s, want < 20"
check_exact "$out" vmq "$DATA/cap-guest" 1

report "$WORK/host.txt" -i "$out/host.dat"
n=$(grep -c 'vt-quiet-[0-9]*-[0-9]* ' "$WORK/host.txt")
u=$(grep -o 'vt-quiet-[0-9]*-[0-9]* ' "$WORK/host.txt" | sort -u | wc -l)
echo "host.dat: $n markers, $u distinct, of $((BURSTS * PER)) written"
[ "$n" = $((BURSTS * PER)) ] && [ "$u" = "$n" ] ||
	fail "host.dat has $n markers ($u distinct), want each of the $((BURSTS * PER)) once"
echo "PASS"
