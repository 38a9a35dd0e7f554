#!/bin/sh
# Proves: `record --sync kvm --qemu-pid PID --debugfs DIR` takes the guest's
# clock mapping from KVM's per-vCPU debugfs files, exactly: the manifest says
# method "kvm" with one kvm-debugfs epoch per vCPU whose offset is the
# tsc-offset file's -N (no scaling, bound 0); the guest file's TIME_SHIFT
# holds offset +N (host - guest) for every sample of every CPU; and
# trace-cmd report places every event at exactly TSC2NSEC(raw + N), while
# --raw-ts shows the fixture's page timestamps moved only by the fake agent's
# retiming. With a pid that has no debugfs entry, the recording still
# succeeds (exit 0, the file is exact) with method "none", no TIME_SHIFT
# samples and an error naming the pid.
#
# This machine has no KVM (no /sys/kernel/debug/kvm): the debugfs tree is a
# temporary copy of the FIXTURE tests/data/kvm-debugfs/intel48 (see its
# README), with vcpu0/vcpu1 of VM 4242-11 rewritten to tsc-offset -N and
# their scaling files removed; the fixture's traps (42420-5, 4243-12, vcpu01,
# pages_4k) stay in the copy. The guest is vt-fake-agent with
# --retime --tsc-offset -N, so its page timestamps are host TSC - N, which is
# what KVM's guest = host + offset gives for offset -N.
echo "collect: --sync kvm reads exact per-vCPU TSC offsets from KVM debugfs into the manifest and TIME_SHIFT"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
tracefs=/sys/kernel/tracing
if [ ! -w $tracefs/instances ]; then
	echo "SKIP: $tracefs/instances is not writable (not root?)"
	exit 77
fi
command -v bc >/dev/null 2>&1 || fail "bc is needed for exact 128-bit arithmetic"

N=5000000	# the vCPUs' tsc-offset is -N
OFF=$((0 - N))
PID=4242	# the fixture VM's QEMU pid
NOPID=424	# no VM of this pid (a prefix of 4242 and 42420: a trap)

# The debugfs copy: no scaling, offset -N on the traced vCPUs.
dbg=$WORK/debugfs
vm=$dbg/kvm/$PID-11
mkdir -p "$dbg"
cp -r "$DATA/kvm-debugfs/intel48/kvm" "$dbg/" || fail "copying the KVM fixture"
chmod -R u+w "$dbg"
for v in 0 1 3; do
	[ -f "$vm/vcpu$v/tsc-offset" ] || fail "fixture has no $PID-11/vcpu$v"
	rm -f "$vm/vcpu$v/tsc-scaling-ratio" "$vm/vcpu$v/tsc-scaling-ratio-frac-bits"
	echo "$OFF" >"$vm/vcpu$v/tsc-offset"
done
ls "$vm/vcpu0" "$vm/vcpu1" | grep -q scaling && fail "scaling files left in the copy"

# oracle: the fixture's own raw timestamps, "CPU TS" per event in report order
orc=$WORK/oracle.dat
"$TOOLS/vt-mkdat" -i "$DATA/cap-guest" -o "$orc" >/dev/null || fail "vt-mkdat -i cap-guest"
report "$WORK/oracle.raw" --raw-ts -i "$orc"

# cpu_ts REPORT: "CPU TS" of every event line (TS as printed: raw or sec.nsec)
cpu_ts() {
	sed -nE 's/^.*-[0-9]+ +\[([0-9]{3})\] *([0-9]+(\.[0-9]+)?): .*/\1 \2/p' "$1"
}

# ---- 1: the VM exists: exact KVM mapping ----
p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake kvm --fifo "$p" --fixture "$DATA/cap-guest" --retime --tsc-offset "$OFF"
a=$FAKE_PID
collect rec --chardev-dir "$p" --name kvm --qemu-pid $PID --debugfs "$dbg" --sync kvm \
	-o "$out" --duration 2
fake_end $a
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/kvm.fake"; fail "collector exited $RC, want 0"; }
check_exact "$out" kvm "$DATA/cap-guest" 1

# manifest: method kvm, one exact unscaled epoch of offset -N per vCPU
m=$(guest_json "$out" kvm '.sync.method')
[ "$m" = kvm ] || fail "manifest sync.method is '$m', want kvm ($(guest_json "$out" kvm '.sync.why'))"
[ "$(man "$out" '.guests[0].sync.method')" = kvm ] || fail ".guests[0].sync.method is not kvm"
[ "$(guest_json "$out" kvm '.sync.epochs | length')" = 2 ] ||
	fail "manifest has $(guest_json "$out" kvm '.sync.epochs | length') epochs, want 2 (one per vCPU)"
for c in 0 1; do
	ep=".sync.epochs[] | select(.cpu == $c)"
	got=$(guest_json "$out" kvm "[$ep] | length")
	[ "$got" = 1 ] || fail "cpu$c: $got epochs, want 1"
	got=$(guest_json "$out" kvm "$ep | \"\(.source) \(.offset) \(.ratio) \(.frac_bits) \(.bound_ns) \(.drift)\"")
	[ "$got" = "kvm-debugfs $OFF 1 0 0 false" ] ||
		fail "cpu$c epoch: source offset ratio frac_bits bound_ns drift = '$got', want 'kvm-debugfs $OFF 1 0 0 false'"
done
[ "$(guest_json "$out" kvm '.sync.bound_ns')" = 0 ] || fail "sync.bound_ns is $(guest_json "$out" kvm '.sync.bound_ns'), want 0"
guest_json "$out" kvm '.sync.why' | grep -q "$PID-11" ||
	fail "sync.why does not name the VM directory: $(guest_json "$out" kvm '.sync.why')"

# TIME_SHIFT: every sample of both CPUs is offset +N, scaling 1, fraction 0
f=$out/guest-kvm.dat
trace-cmd dump --options "$f" >"$WORK/options.txt" 2>&1 || { show "$WORK/options.txt"; fail "trace-cmd dump --options"; }
awk '/\[Option / { on = /TimeShift/ } on' "$WORK/options.txt" >"$WORK/tshift.txt"
[ -s "$WORK/tshift.txt" ] || { show "$WORK/options.txt"; fail "no TimeShift option in $f"; }
grep -q '^0x2 \[peer.s CPU count\]' "$WORK/tshift.txt" || { show "$WORK/tshift.txt"; fail "TimeShift CPU count is not 2"; }
for c in 0 1; do
	n=$(sed -nE "s/^([0-9]+) \[samples count for CPU $c\]/\1/p" "$WORK/tshift.txt")
	[ -n "$n" ] && [ "$n" -ge 1 ] || { show "$WORK/tshift.txt"; fail "TimeShift: no samples for CPU $c"; }
done
awk -v n=$N '/\[offset \* scaling >> fraction @ time\]/ {
		s++; if ($1 != n || $2 != 1 || $3 != 0) bad++ }
	END { exit !(s >= 2 && bad == 0) }' "$WORK/tshift.txt" ||
	{ show "$WORK/tshift.txt"; fail "TimeShift samples are not all 'offset $N, scaling 1, fraction 0'"; }

# --raw-ts: the fixture's timestamps, moved only by the fake agent's retiming
set -- $(sed -nE 's/.*pages retimed: fixture ts ([0-9]+) is guest TSC ([0-9]+).*/\1 \2/p' "$WORK/kvm.fake")
[ $# = 2 ] || { show "$WORK/kvm.fake"; fail "the fake agent did not say how it retimed the pages"; }
delta=$(echo "$2 - $1" | bc)
report "$WORK/raw.txt" --raw-ts -i "$f"
cpu_ts "$WORK/oracle.raw" >"$WORK/oracle.ts"
cpu_ts "$WORK/raw.txt" >"$WORK/raw.ts"
[ -s "$WORK/raw.ts" ] || fail "no events in trace-cmd report --raw-ts"
[ "$(wc -l <"$WORK/raw.ts")" = "$(wc -l <"$WORK/oracle.ts")" ] || fail "--raw-ts and the fixture differ in event count"
paste -d ' ' "$WORK/oracle.ts" "$WORK/raw.ts" | awk -v d="$delta" '
	$1 != $3 || $4 - $2 != d { bad++ } END { exit bad > 0 }' ||
	fail "--raw-ts timestamps are not the fixture's + $delta (the agent's retiming)"

# report: every event at TSC2NSEC(raw + N), exactly (trace-cmd's 128-bit
# mul_u64_u32_shr, then the TSC2NSEC offset)
set -- $(sed -nE 's/^([0-9]+) ([0-9]+) (-?[0-9]+) \[multiplier, shift, offset\]/\1 \2 \3/p' "$WORK/options.txt")
[ $# = 3 ] || { show "$WORK/options.txt"; fail "no TSC2NSEC option in $f"; }
mult=$1 shift_=$2 nsoff=$3
report "$WORK/ns.txt" -t -i "$f"
cpu_ts "$WORK/ns.txt" | awk '{ sub(/\./, "", $2); sub(/^0+/, "", $2); print $1, $2 }' >"$WORK/ns.ts"
awk -v n=$N -v m=$mult -v s=$shift_ -v o=$nsoff '{ printf "(%s + %s) * %s / 2^%s + %s\n", $2, n, m, s, o }' \
	"$WORK/raw.ts" | BC_LINE_LENGTH=0 bc >"$WORK/want.ns" || fail "bc"
cut -d ' ' -f 1 "$WORK/raw.ts" | paste -d ' ' - "$WORK/want.ns" >"$WORK/want.ts"
[ "$(wc -l <"$WORK/ns.ts")" = "$(wc -l <"$WORK/want.ts")" ] || fail "report and --raw-ts differ in event count"
cmp -s "$WORK/want.ts" "$WORK/ns.ts" || {
	paste -d ' ' "$WORK/want.ts" "$WORK/ns.ts" | awk '$1 != $3 || $2 != $4' | head -n 5
	fail "trace-cmd report timestamps are not TSC2NSEC(raw + $N) (want cpu ns, got cpu ns above)"
}

# ---- 2: no VM of that pid: method none, error names the pid, recording intact ----
p2=$WORK/ports2 out2=$WORK/out2
mkdir -p "$p2"
fake kvm --fifo "$p2" --fixture "$DATA/cap-guest" --retime --tsc-offset "$OFF"
b=$FAKE_PID
collect rec2 --chardev-dir "$p2" --name kvm --qemu-pid $NOPID --debugfs "$dbg" --sync kvm \
	-o "$out2" --duration 2
fake_end $b
[ $RC = 0 ] || { show "$WORK/rec2.log" "$WORK/kvm.fake"; fail "no-VM pid: collector exited $RC, want 0"; }
check_exact "$out2" kvm "$DATA/cap-guest" 1
m=$(guest_json "$out2" kvm '.sync.method')
[ "$m" = none ] || fail "no-VM pid: manifest sync.method is '$m', want none"
[ "$(guest_json "$out2" kvm '.sync.epochs | length')" = 0 ] || fail "no-VM pid: manifest has epochs"
grep -E "error: .*--sync kvm.*pid $NOPID( |$)" "$WORK/rec2.log" >/dev/null ||
	{ show "$WORK/rec2.log"; fail "no-VM pid: no error naming --sync kvm and pid $NOPID"; }
trace-cmd dump --options "$out2/guest-kvm.dat" >"$WORK/options2.txt" 2>&1 || fail "trace-cmd dump --options (no-VM pid)"
grep -Eq '^[1-9][0-9]* \[samples count for CPU|offset \* scaling' "$WORK/options2.txt" &&
	{ show "$WORK/options2.txt"; fail "no-VM pid: the guest file has TIME_SHIFT samples"; }

# ---- 3: KVM changes the offset mid-trace (a guest TSC write, a migration):
# the collector re-reads debugfs every second and opens a new epoch ----
p3=$WORK/ports3 out3=$WORK/out3
mkdir -p "$p3"
for v in 0 1 3; do echo "$OFF" >"$vm/vcpu$v/tsc-offset"; done
fake kvm --fifo "$p3" --fixture "$DATA/cap-guest" --retime --tsc-offset "$OFF"
c=$FAKE_PID
NEW=$((OFF - 123456789))
(sleep 1.5; for v in 0 1 3; do echo "$NEW" >"$vm/vcpu$v/tsc-offset"; done) &
track $!
collect rec3 --chardev-dir "$p3" --name kvm --qemu-pid $PID --debugfs "$dbg" --sync kvm \
	-o "$out3" --duration 4
fake_end $c
[ $RC = 0 ] || { show "$WORK/rec3.log"; fail "offset change: collector exited $RC, want 0"; }
for cpu in 0 1; do
	offs=$(guest_json "$out3" kvm "[.sync.epochs[] | select(.cpu == $cpu) | .offset] | join(\" \")")
	[ "$offs" = "$OFF $NEW" ] ||
		fail "offset change: cpu$cpu epochs have offsets '$offs', want '$OFF $NEW'"
done
echo "PASS"
