#!/bin/sh
# Proves: `record --kvm-exits --qemu-pid PID` records host sched_switch and sched_wakeup of the
# vCPU threads only (the kernel filters them on prev_pid/next_pid and pid once the threads are
# known), and `report --vcpus` splits that thread's wall time from real host events without KVM's
# (as under TCG): running, halted (asleep) and preempted by the task that had its CPU, adding up
# to the wall time exactly, and saying which states need KVM's events. The "vCPU" is a perl
# thread named "CPU 0/TCG" sleeping 10 ms at a time, pinned to one CPU with a busy loop named
# vt-hog; a shell loops beside them and must not appear. With --host-events of other sched events the filter
# stays; with sched_switch asked for itself (the sched system) every switch is recorded.
# The fake agent's stats text carries the steal lines a newer agent appends (/proc/stat's steal
# over the recording): the manifest keeps them, and report --vcpus sets the guest's steal beside
# the preempted time it measured and flags a disagreement (over 5% or 2 ticks); cpu1 has no vCPU.
echo "collect: record --kvm-exits filters host sched events to the vCPU threads; report --vcpus splits their time (TCG)"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch kvm:kvm_userspace_exit
command -v taskset >/dev/null 2>&1 || { echo "SKIP: taskset is not installed"; exit 77; }

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
cp -R "$DATA/cap-guest" "$WORK/fix"
steal=10000000000
printf 'steal_ns: %s\nsteal_ticks: %s\nuser_hz: 100\n' $steal $((steal / 10000000)) >>"$WORK/fix/cpu0.stats"
printf 'steal_ns: 70000000\nsteal_ticks: 7\nuser_hz: 100\n' >>"$WORK/fix/cpu1.stats"
fake vmp --fifo "$p" --fixture "$WORK/fix"
pid=$FAKE_PID
cpu=$(taskset -cp $$ | sed 's/.*: *//; s/[-,].*//')
# The "vCPU": one thread that sleeps 10 ms at a time and forks nothing (a shell's sleep children
# would run on its CPU between the switches the filter keeps, and be charged instead of vt-hog).
# Run in the background, it is the process $! names (exec: no subshell in between).
fake_vcpu() {
	exec taskset -c "$cpu" perl -e 'open(my $f, ">", "/proc/self/comm") or die; print $f "CPU 0/TCG";
		close $f; select(undef, undef, undef, 0.01) while 1'
}
fake_vcpu &
vcpu=$!
track $vcpu
taskset -c "$cpu" sh -c 'printf vt-hog >/proc/self/comm; while :; do :; done' &
hog=$!
track $hog
(while :; do sleep 0.01; done) &
other=$!
track $other
sleep 0.2
[ "$(cat /proc/$vcpu/comm)" = "CPU 0/TCG" ] || fail "the fake vCPU thread is named '$(cat /proc/$vcpu/comm)'"
collect rec --chardev-dir "$p" --name vmp --qemu-pid $vcpu -o "$out" --duration 2 --kvm-exits --sync probe
kill $vcpu $hog $other
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/vmp.fake"; fail "collector exited $RC, want 0"; }

report "$WORK/host.txt" -i "$out/host.dat"
# Every sched_switch ("PREV:PID [PRIO] S ==> NEXT:PID [PRIO]") has the vCPU thread on one side,
# every sched_wakeup ("COMM:PID [PRIO] CPU:NNN") is of it (a comm may hold spaces: "CPU 0/TCG").
awk -v v=$vcpu '
/ sched_switch: / { n++; if (!index($0, ":" v " [")) { bad++; print "foreign: " $0 >"/dev/stderr" } }
/ sched_wakeup: / { w++; if (!index($0, ":" v " [")) { bad++; print "foreign: " $0 >"/dev/stderr" } }
END { printf "%d %d %d\n", n, w, bad }' "$WORK/host.txt" >"$WORK/sum"
read -r n w bad <"$WORK/sum"
echo "host sched_switch $n, sched_wakeup $w, not of the vCPU thread $bad"
[ "$n" -ge 40 ] && [ "$w" -ge 20 ] || fail "only $n switches and $w wakeups of the vCPU thread in 2 s"
[ "$bad" = 0 ] || fail "$bad sched events without the vCPU thread"

"$COLLECT" report --vcpus "$out" >"$WORK/vcpus.txt" || fail "report --vcpus exited $?"
sed -n '/^vCPU time/,$p' "$WORK/vcpus.txt"
grep -q 'no kvm_entry/kvm_exit events (TCG.*need `record --kvm-exits`' "$WORK/vcpus.txt" ||
	fail "the report does not say which states need --kvm-exits"
"$COLLECT" report --vcpus --json "$out" >"$WORK/r.json" || fail "report --vcpus --json exited $?"
if python3 -c 'import jsonschema' 2>/dev/null; then
	python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/report.schema.json" "$WORK/r.json" ||
		fail "report --vcpus --json does not match doc/report.schema.json"
fi
v='.vcpus.guests[0].vcpus[0]'
read -r tid wall sum running halted hog pre unknown <<EOF
$(jq -r "$v | [.tid, .wall_ns, ([.states | .. | numbers] | add), .states.running, .states.halted,
	([.states.preempted | to_entries[] | select(.key | startswith(\"vt-hog[\")) | .value] | add // 0),
	([.states.preempted[]] | add // 0), .states.unknown] | @tsv" "$WORK/r.json")
EOF
echo "tid $tid wall $wall sum $sum running $running halted $halted preempted $pre (vt-hog $hog) unknown $unknown"
[ "$tid" = "$vcpu" ] || fail "vCPU 0's thread is $tid, want $vcpu"
[ "$(jq -r '[.vcpus.kvm_events, .vcpus.sched_events] | @tsv' "$WORK/r.json")" = "false	true" ] ||
	fail "kvm_events/sched_events are not false/true"
[ "$sum" = "$wall" ] || fail "the states add up to $sum, wall $wall"
[ "$wall" -ge 1500000000 ] || fail "wall $wall ns for a 2 s recording"
# A thread that sleeps 10 ms per loop is asleep most of the time, runs a little, waits for vt-hog
# (and, on a loaded machine, for the tasks that run on its CPU besides).
[ "$halted" -ge $((wall / 4)) ] && [ $((halted + pre)) -ge $((wall / 10 * 9)) ] ||
	fail "halted $halted, preempted $pre of $wall"
[ "$running" -gt 0 ] && [ "$hog" -gt 0 ] || fail "running $running, preempted by vt-hog $hog"
# Steal: the manifest has the agent's lines; the report sets them beside the preempted time.
if python3 -c 'import jsonschema' 2>/dev/null; then
	python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/manifest.schema.json" "$out/manifest.json" ||
		fail "the manifest with steal lines does not match doc/manifest.schema.json"
fi
[ "$(jq -r '[.guests[0].cpus[] | .stats.steal_ns] | map(tostring) | join(" ")' "$out/manifest.json")" = \
	"$steal 70000000" ] || fail "the manifest's steal_ns: $(jq -c '[.guests[0].cpus[].stats]' "$out/manifest.json")"
[ "$(jq -c "$v.steal" "$WORK/r.json")" = \
	"{\"guest_ns\":$steal,\"preempted_ns\":$pre,\"diff_ns\":$((steal - pre)),\"bound_ns\":$((steal / 20)),\"agree\":false}" ] ||
	fail "vCPU 0's steal against preempted $pre: $(jq -c "$v.steal" "$WORK/r.json")"
grep -q "steal (the guest's /proc/stat) *$steal ns, preempted $pre ns: DISAGREE" "$WORK/vcpus.txt" ||
	fail "the text report does not flag steal $steal against preempted $pre"
# The same guest's steal within 5% of the preempted time (or 2 ticks, 20 ms) agrees.
near=$((pre + pre / 25 + 1))
bound=$((near / 20))
[ $bound -ge 20000000 ] || bound=20000000
jq ".guests[0].cpus[0].stats.steal_ns = $near" "$out/manifest.json" >"$WORK/m.json" &&
	mv "$WORK/m.json" "$out/manifest.json"
"$COLLECT" report --vcpus --json "$out" >"$WORK/r2.json" || fail "report --vcpus --json exited $?"
[ "$(jq -c "$v.steal | [.guest_ns, .bound_ns, .agree]" "$WORK/r2.json")" = "[$near,$bound,true]" ] ||
	fail "steal $near against preempted $pre: $(jq -c "$v.steal" "$WORK/r2.json")"
# --host-events of other sched events keeps the filter; asking for sched_switch itself (here the
# whole sched system) records every switch.
for ev in sched:sched_process_fork sched; do
	fake vmp2 --fifo "$p" --fixture "$DATA/cap-guest"
	pid=$FAKE_PID
	fake_vcpu &
	vcpu=$!
	track $vcpu
	(while :; do sleep 0.01; done) &
	forker=$!
	track $forker
	sleep 0.2
	rm -rf "$out"
	collect rec2 --chardev-dir "$p" --name vmp --qemu-pid $vcpu -o "$out" --duration 1 --kvm-exits \
		--host-events $ev --sync probe
	kill $vcpu $forker
	fake_end $pid
	[ $RC = 0 ] || { show "$WORK/rec2.log"; fail "--host-events $ev: collector exited $RC"; }
	report "$WORK/host2.txt" -i "$out/host.dat"
	n=$(grep -c ' sched_switch: ' "$WORK/host2.txt")
	other=$(grep ' sched_switch: ' "$WORK/host2.txt" | grep -cv ":$vcpu \[")
	forks=$(grep -c ' sched_process_fork: ' "$WORK/host2.txt")
	echo "--kvm-exits --host-events $ev: $n switches, $other without the vCPU thread, $forks forks"
	[ "$n" -ge 20 ] && [ "$forks" -ge 10 ] || fail "--host-events $ev: $n switches, $forks forks"
	case $ev in
	sched) [ "$other" -gt 0 ] || fail "--host-events sched: the switches are filtered" ;;
	*) [ "$other" = 0 ] || fail "--host-events $ev: $other switches without the vCPU thread" ;;
	esac
done
echo "PASS"
