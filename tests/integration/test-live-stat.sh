#!/bin/sh
# Proves: `record --kvm-exits --live-stat` prints, once a second of host time, a row per guest and
# vCPU (its thread's id) whose states (running, halted, preempted, exits, unknown) add up to 100%
# of that second within rounding, from real host sched events of a fake vCPU thread ("CPU 0/TCG",
# asleep 10 ms at a time, sharing its CPU with a busy loop); without KVM's events it says which
# columns need --kvm-exits on a KVM host, and prints no event lines (the table replaces them).
echo "collect: record --live-stat prints a per-second vCPU table whose states add up to 100%"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch kvm:kvm_userspace_exit
command -v taskset >/dev/null 2>&1 || { echo "SKIP: taskset is not installed"; exit 77; }

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vmp --fifo "$p" --fixture "$DATA/cap-guest"
pid=$FAKE_PID
cpu=$(taskset -cp $$ | sed 's/.*: *//; s/[-,].*//')
taskset -c "$cpu" perl -e 'open(my $f, ">", "/proc/self/comm") or die; print $f "CPU 0/TCG";
	close $f; select(undef, undef, undef, 0.01) while 1' &
vcpu=$!
track $vcpu
taskset -c "$cpu" sh -c 'printf vt-hog >/proc/self/comm; while :; do :; done' &
hog=$!
track $hog
sleep 0.2
[ "$(cat /proc/$vcpu/comm)" = "CPU 0/TCG" ] || fail "the fake vCPU thread is named '$(cat /proc/$vcpu/comm)'"
collect rec --chardev-dir "$p" --name vmp --qemu-pid $vcpu -o "$out" --duration 4 --kvm-exits \
	--sync probe --live-stat
kill $vcpu $hog
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/vmp.fake"; fail "collector exited $RC, want 0"; }
grep '^#' "$WORK/rec.log" | head -12
grep -q '^# vcpu-stat: no kvm_entry/kvm_exit events.*need `record --kvm-exits`' "$WORK/rec.log" ||
	fail "the table does not say which columns need --kvm-exits"
if grep -q '^ *host.dat: ' "$WORK/rec.log"; then
	fail "event lines printed with --live-stat alone"
fi
# Whole seconds: every block but the first covers exactly one second (the last partial one is
# not printed); each has one row, of vCPU 0 of vmp, its thread's id, states adding up to 100%.
awk -v tid=$vcpu '
/^# vcpu-stat [0-9]/ { blocks++; if ($4 == "+1.000000") whole++ }
/^# vmp / {
	rows++
	if ($3 != 0 || $4 != tid) { bad++; print "wrong vCPU: " $0 >"/dev/stderr" }
	s = 0; for (i = 5; i <= 9; i++) { v = $i; sub("%", "", v); s += v }
	if (s < 99.7 || s > 100.3) { bad++; print "sum " s ": " $0 >"/dev/stderr" }
	v = $6; sub("%", "", v); if (v + 0 > 0) halted++
	v = $7; sub("%", "", v); if (v + 0 > 0) pre++
}
END { printf "%d %d %d %d %d %d\n", blocks, whole, rows, bad, halted, pre }' "$WORK/rec.log" >"$WORK/sum"
read -r blocks whole rows bad halted pre <"$WORK/sum"
echo "blocks $blocks (whole seconds $whole), rows $rows, bad $bad, halted in $halted, preempted in $pre"
[ "$blocks" -ge 3 ] && [ "$whole" -ge 3 ] || fail "$blocks blocks ($whole of a whole second) in 4 s"
[ "$rows" = "$blocks" ] || fail "$rows rows in $blocks blocks, want one each"
[ "$bad" = 0 ] || fail "$bad rows of the wrong vCPU or not adding up to 100%"
[ "$halted" = "$rows" ] && [ "$pre" -ge 1 ] || fail "halted in $halted rows, preempted in $pre of $rows"
# With --live too, the event lines and the table both, the table's lines apart (they begin with #).
fake vmp2 --fifo "$p" --fixture "$DATA/cap-guest"
pid=$FAKE_PID
taskset -c "$cpu" perl -e 'open(my $f, ">", "/proc/self/comm") or die; print $f "CPU 0/TCG";
	close $f; select(undef, undef, undef, 0.01) while 1' &
vcpu=$!
track $vcpu
sleep 0.2
collect rec2 --chardev-dir "$p" --name vmp2 --qemu-pid $vcpu -o "$WORK/out2" --duration 3 \
	--kvm-exits --sync probe --live --live-stat
kill $vcpu
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec2.log" "$WORK/vmp2.fake"; fail "collector with --live exited $RC, want 0"; }
ev=$(grep -c "^ *host.dat: .*sched_switch: .*:$vcpu \[" "$WORK/rec2.log")
rows=$(grep -c "^# vmp2  *0  *$vcpu " "$WORK/rec2.log")
echo "with --live: $ev sched_switch lines of the vCPU thread, $rows table rows"
[ "$ev" -ge 20 ] && [ "$rows" -ge 2 ] || fail "with --live: $ev event lines, $rows rows"
# Without host events there is nothing to count: refused, saying what to give.
"$COLLECT" record --chardev-dir "$p" --name vmp3 -o "$WORK/out3" --live-stat >"$WORK/rec3.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q -- '--live-stat reads the host.*--kvm-exits' "$WORK/rec3.log" ||
	{ cat "$WORK/rec3.log"; fail "--live-stat without host events exited $rc"; }
echo PASS
