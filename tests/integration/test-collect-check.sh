#!/bin/sh
# Proves: `virtio-trace-collect check` gives each verdict line from what it finds, and its last
# line says "exact clock: yes" (exit 0) only when all of it holds, else "no" with the first
# reason (exit 4). Each line, yes and no:
#   tracefs       yes on this host's tracefs; no for a path that is not there, and for a plain
#                 directory (not a tracefs mount);
#   kvm device    no with a fixture sysfs that has no kvm_intel/kvm_amd (and cpuinfo no vmx/svm);
#   kvm debugfs   yes naming the VM directory and tsc-offset; no naming the file when a vCPU's
#                 tsc-offset is missing, a symlink, or not a number; no when the pid has no VM
#                 (TCG) and when there is no DEBUGFS/kvm; skipped without a pid;
#   host tsc      yes (constant_tsc nonstop_tsc, tsc); warn for an hpet clocksource with tsc
#                 marked unstable, and without constant_tsc (neither makes the clock inexact:
#                 KVM's offsets are in the TSC's own ticks);
#   kvm events    yes naming the three events; no naming the two a fixture tracefs lacks;
#   vcpu threads  yes listing "CPU n/KVM" with their tids; no for "CPU n/TCG"; warn for none;
#   agent         yes naming vt-fake-agent; no for a QEMU whose agent never answers;
#   recording     yes when the fake agent's TSC offset is KVM's (debugfs); no, naming the
#                 offsets, when debugfs says another; skipped when the agent does not answer.
# --json of a yes and of a no validate against doc/check.schema.json, with the same facts, and
# a renamed key is rejected. --domain (libvirt's test driver) asks the domain's agent and says
# that libvirt gave no QEMU pid; a domain that is not there skips what needs it, naming it.
# Nothing is left behind: no tracefs instance, no temporary dir.
#
# The guests are vt-fake-agent (a root-owned copy named qemu-system-x86_64, so that --qemu-pid
# alone finds its ports as `list` does) and vt-fake-qemu (ports, no agent). KVM's debugfs,
# /proc's cpuinfo and the QEMU's threads, and sysfs's clocksource are fixture trees made here
# (--debugfs, --procfs, --sysfs): this machine has no KVM that runs a stock guest.
echo "collect check: one verdict per line, each yes and no from what it finds; exact clock yes only when all holds"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
[ -x "$TOOLS/vt-fake-qemu" ] || fail "$TOOLS/vt-fake-qemu is not built"
T=/sys/kernel/tracing
if [ ! -w $T/instances ]; then
	echo "SKIP: $T/instances is not writable (not root?)"
	exit 77
fi
for e in kvm_exit kvm_entry kvm_write_tsc_offset; do
	[ -r $T/events/kvm/$e/format ] || { echo "SKIP: no kvm:$e in $T/events (no kvm module)"; exit 77; }
done
VALIDATE="$VT_SRCDIR/scripts/validate-json.py"
SCHEMA=$VT_SRCDIR/doc/check.schema.json
have_validator=1
python3 -c 'import jsonschema' 2>/dev/null || { have_validator=; echo "note: no python3 jsonschema: --json checked with jq only"; }

N=5000000		# the fake agents' guest TSC is host TSC - N
OFF=$((0 - N))
mkdir -p "$WORK/bin" "$WORK/dead-bin" "$WORK/tmp"
cp "$FAKE" "$WORK/bin/qemu-system-x86_64"
cp "$TOOLS/vt-fake-qemu" "$WORK/dead-bin/qemu-system-x86_64"
chmod 0755 "$WORK/bin/qemu-system-x86_64" "$WORK/dead-bin/qemu-system-x86_64" "$WORK/bin" "$WORK/dead-bin"
export TMPDIR=$WORK/tmp		# check's private recording directory goes here

# The fixtures: sysfs (clocksource tsc, no KVM vendor module), procfs (cpuinfo), debugfs.
SYS=$WORK/sys PROC=$WORK/proc DBG=$WORK/dbg
mkdir -p "$SYS/devices/system/clocksource/clocksource0" "$PROC" "$DBG/kvm"
echo tsc >"$SYS/devices/system/clocksource/clocksource0/current_clocksource"
echo "tsc hpet acpi_pm " >"$SYS/devices/system/clocksource/clocksource0/available_clocksource"
printf 'processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae constant_tsc nonstop_tsc rep_good\n\n' >"$PROC/cpuinfo"

# pipe_args NAME DIR: a QEMU command line with pipe ports DIR/PORT for 2 vCPUs
pipe_args() {
	echo "-name $1,debug-threads=on -device virtio-serial-pci,id=vser0" \
		"-chardev pipe,id=c0,path=$2/trace-path-cpu0 -device virtserialport,bus=vser0.0,nr=1,chardev=c0,name=trace-path-cpu0" \
		"-chardev pipe,id=c1,path=$2/trace-path-cpu1 -device virtserialport,bus=vser0.0,nr=2,chardev=c1,name=trace-path-cpu1" \
		"-chardev pipe,id=c2,path=$2/agent-ctl-path -device virtserialport,bus=vser0.0,nr=3,chardev=c2,name=agent-ctl-path"
}

# vm PID ACCEL OFFSET: PID's threads in the procfs fixture (CPU 0/ACCEL, CPU 1/ACCEL; tids
# PID*10+1, +2), and with OFFSET its VM PID-11 in the debugfs fixture, both vCPUs at OFFSET
vm() {
	mkdir -p "$PROC/$1/task/$1"
	echo qemu-system-x86 >"$PROC/$1/task/$1/comm"
	for c in 0 1; do
		mkdir -p "$PROC/$1/task/$(($1 * 10 + c + 1))"
		echo "CPU $c/$2" >"$PROC/$1/task/$(($1 * 10 + c + 1))/comm"
		[ -n "$3" ] || continue
		mkdir -p "$DBG/kvm/$1-11/vcpu$c"
		echo "$3" >"$DBG/kvm/$1-11/vcpu$c/tsc-offset"
	done
}

# guest NAME: a fake agent that looks like QEMU, ports in $WORK/NAME, TSC offset -N; $GP its pid
guest() {
	mkdir -p "$WORK/$1"
	# shellcheck disable=SC2046
	fake_as "$WORK/bin/qemu-system-x86_64" "$1" --fifo "$WORK/$1" --fixture "$DATA/cap-guest" \
		--retime --tsc-offset "$OFF" -- $(pipe_args "$1" "$WORK/$1")
	GP=$FAKE_PID
}

# check NAME ARGS...: run check with the fixtures; output $WORK/NAME.out, exit status $RC
check() {
	_cn=$1
	shift
	timeout 60 "$COLLECT" check --sysfs "$SYS" --procfs "$PROC" --debugfs "$DBG" "$@" \
		>"$WORK/$_cn.out" 2>"$WORK/$_cn.err"
	RC=$?
	echo "ran: check $_cn: exit $RC, $(tail -n 1 "$WORK/$_cn.out" | cut -c1-110)"
}
# line NAME LABEL: the text after "LABEL: " in NAME's output
line() {
	sed -n "s/^$2: //p" "$WORK/$1.out"
}
# want NAME LABEL TEXT: LABEL's line of NAME is exactly TEXT
want() {
	[ "$(line "$1" "$2")" = "$3" ] || { show "$WORK/$1.out" "$WORK/$1.err"; fail "$1: '$2' line is '$(line "$1" "$2")', want '$3'"; }
}
# want_re NAME LABEL ERE: LABEL's line of NAME matches ERE (anchored)
want_re() {
	line "$1" "$2" | grep -Eqx -- "$3" || { show "$WORK/$1.out" "$WORK/$1.err"; fail "$1: '$2' line is '$(line "$1" "$2")', want /$3/"; }
}
LABELS="tracefs|kvm device|kvm debugfs|host tsc|kvm events|vcpu threads|agent|recording|exact clock"
# shape NAME RC: NAME exited RC and printed the nine lines, in order
shape() {
	[ "$RC" = "$2" ] || { show "$WORK/$1.out" "$WORK/$1.err"; fail "$1: check exited $RC, want $2"; }
	_got=$(sed 's/: .*//' "$WORK/$1.out" | tr '\n' '|')
	[ "$_got" = "$LABELS|" ] || fail "$1: the lines are '$_got', want '$LABELS|'"
}
re_esc() { printf '%s' "$1" | sed 's/[][\.*^$/()+?{}|]/\\&/g'; }

# ---- 1: KVM's offsets are the agent's: every line yes (the fixture sysfs has no KVM module) ----
guest k1
K1=$GP
vm $K1 KVM "$OFF"
check k1 --chardev-dir "$WORK/k1" --qemu-pid $K1
shape k1 0
want k1 tracefs "yes: $T is mounted and writable: a private instance was made and removed"
want_re k1 "kvm device" "no: .+"
want k1 "kvm debugfs" "yes: $DBG/kvm/$K1-11: vcpu0..vcpu1 (2) tsc-offset readable (vcpu0: $OFF); no tsc-scaling-ratio (the guest's TSC runs at the host's rate)"
want k1 "host tsc" "yes: constant_tsc nonstop_tsc; clocksource tsc"
want k1 "kvm events" "yes: kvm:kvm_exit, kvm:kvm_entry, kvm:kvm_write_tsc_offset in $T/events"
want k1 "vcpu threads" "yes: 2 vCPU threads: CPU 0/KVM tid $((K1 * 10 + 1)), CPU 1/KVM tid $((K1 * 10 + 2))"
want_re k1 agent "yes: vt-fake-agent [0-9.]+ \\(Linux [^)]+\\) answers on $(re_esc "$WORK/k1/agent-ctl-path") \\(2 CPUs\\)"
want_re k1 recording "yes: 1 s recorded, sync kvm \\(changes from kvm:kvm_write_tsc_offset\\): [1-9][0-9]* probe replies on 2 vCPUs, each within KVM's offsets \\(narrowest probe interval [0-9]+ ticks\\)"
want_re k1 "exact clock" "yes, because KVM gives each vCPU's TSC offset \\($(re_esc "$DBG/kvm/$K1-11")\\), kvm:kvm_write_tsc_offset each change at its moment, the guest traces with x86-tsc, and [1-9][0-9]* probe replies of a 1 s recording agree with the offsets"
# The probes were the fake agent's answers, at its offset.
for c in 0 1; do
	grep -q "sync burst on cpu$c: [1-9][0-9]* probes answered (guest TSC = host TSC $OFF)" "$WORK/k1.fake" ||
		{ show "$WORK/k1.fake"; fail "k1: the fake agent answered no probe on cpu$c"; }
done
fake_end $K1

# ---- 2: the same as --json: the schema, and the facts ----
guest k2
K2=$GP
vm $K2 KVM "$OFF"
check k2 --chardev-dir "$WORK/k2" --qemu-pid $K2 --json
fake_end $K2
[ $RC = 0 ] || { show "$WORK/k2.out" "$WORK/k2.err"; fail "k2: check --json exited $RC, want 0"; }
j() { jq -r "$2" "$WORK/$1.out"; }
[ "$(j k2 '[.checks[].verdict] | join(" ")')" = "yes no yes yes yes yes yes yes" ] ||
	fail "k2: verdicts '$(j k2 '[.checks[].verdict] | join(" ")')'"
[ "$(j k2 '"\(.exact_clock) \(.guest.qemu_pid) \(.kvm.vm_dir) \(.kvm.vcpus | length)"')" = "true $K2 $DBG/kvm/$K2-11 2" ] ||
	fail "k2: exact_clock, qemu_pid, vm_dir, vcpus: '$(j k2 '"\(.exact_clock) \(.guest.qemu_pid) \(.kvm.vm_dir) \(.kvm.vcpus | length)"')'"
[ "$(j k2 '[.kvm.vcpus[] | "\(.vcpu):\(.tsc_offset):\(.ratio):\(.frac_bits)"] | join(" ")')" = "0:$OFF:1:0 1:$OFF:1:0" ] ||
	fail "k2: kvm.vcpus '$(j k2 '.kvm.vcpus')'"
[ "$(j k2 '[.vcpu_threads[] | "\(.cpu)/\(.accel)/\(.tid)"] | join(" ")')" = "0/KVM/$((K2 * 10 + 1)) 1/KVM/$((K2 * 10 + 2))" ] ||
	fail "k2: vcpu_threads '$(j k2 '.vcpu_threads')'"
[ "$(j k2 '"\(.recording.clock) \(.recording.sync_method) \(.recording.replies_outside) \(.recording.vcpus_checked) \(.recording.probe_replies > 0)"')" = "x86-tsc kvm 0 2 true" ] ||
	fail "k2: recording '$(j k2 '.recording')'"
if [ -n "$have_validator" ]; then
	python3 "$VALIDATE" "$SCHEMA" "$WORK/k2.out" >"$WORK/k2.v" 2>&1 || { cat "$WORK/k2.v"; fail "k2: --json does not match $SCHEMA"; }
	sed 's/"replies_outside"/"outside_replies"/' "$WORK/k2.out" >"$WORK/k2-renamed.json"
	python3 "$VALIDATE" "$SCHEMA" "$WORK/k2-renamed.json" >"$WORK/k2r.v" 2>&1
	[ $? = 1 ] && grep -q outside_replies "$WORK/k2r.v" || { cat "$WORK/k2r.v"; fail "k2: a renamed key was not rejected"; }
	echo "ok: --json matches the schema; a renamed key is rejected"
fi

# ---- 3: debugfs says another offset than the agent's TSC: the recording says no, naming both;
# --qemu-pid alone (its ports found in /proc as list finds them) ----
guest k3
K3=$GP
BAD=$((OFF - 1000000000))
vm $K3 KVM "$BAD"
check k3 --qemu-pid $K3
fake_end $K3
shape k3 4
want k3 "kvm debugfs" "yes: $DBG/kvm/$K3-11: vcpu0..vcpu1 (2) tsc-offset readable (vcpu0: $BAD); no tsc-scaling-ratio (the guest's TSC runs at the host's rate)"
want_re k3 agent "yes: vt-fake-agent .* answers on $(re_esc "$WORK/k3/agent-ctl-path") \\(2 CPUs\\)"
want_re k3 recording "no: [1-9][0-9]* of [1-9][0-9]* probe replies fall outside KVM's offsets \\(vCPU [01]: the probes allow offsets -?[0-9]+\\.\\.-?[0-9]+, KVM's is $BAD\\)"
# The probes' interval holds the agent's true offset, -N.
set -- $(line k3 recording | sed -nE 's/.*allow offsets (-?[0-9]+)\.\.(-?[0-9]+),.*/\1 \2/p')
[ $# = 2 ] && [ "$1" -le $OFF ] && [ "$2" -ge $OFF ] || fail "k3: the probes' interval '$*' does not hold the agent's offset $OFF"
want_re k3 "exact clock" "no, because the short recording disagrees: .* outside KVM's offsets .*"

# ---- 4 (and 7): a QEMU whose agent never answers; then debugfs made unreadable, file by file;
# then the host TSC and the thread names, on the same pid (no recording runs: nothing to end) ----
"$COLLECT" setup --vcpus 2 --dir "$WORK/qd" --create >/dev/null 2>&1 ||
	fail "setup --create exited $?"
"$WORK/dead-bin/qemu-system-x86_64" $(pipe_args qd "$WORK/qd") 2>"$WORK/qd.fake" &
QD=$!
track $QD
_i=0
until grep -qs 'ready 3' "$WORK/qd.fake"; do
	[ $_i -lt 50 ] || fail "vt-fake-qemu did not open its ports: $(cat "$WORK/qd.fake")"
	sleep 0.1
	_i=$((_i + 1))
done
vm $QD KVM "$OFF"
check qd --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5
shape qd 4
want qd agent "no: $WORK/qd/agent-ctl-path: no answer within 0.5 s: is trace-agent running in the guest?"
want qd recording "skipped: the agent did not answer"
want qd "exact clock" "no, because the agent did not answer ($WORK/qd/agent-ctl-path: no answer within 0.5 s: is trace-agent running in the guest?): the guest's trace clock cannot be checked"

V1=$DBG/kvm/$QD-11/vcpu1
rm "$V1/tsc-offset"
check gone --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5
shape gone 4
want gone "kvm debugfs" "no: $V1/tsc-offset: No such file or directory (No such file or directory): record cannot read this vCPU's TSC offset"
want gone recording "skipped: no KVM offsets to check the probes against"
want gone "exact clock" "no, because KVM's offsets cannot be read: $V1/tsc-offset: No such file or directory (No such file or directory): record cannot read this vCPU's TSC offset; and this host's KVM: $(line gone "kvm device" | sed 's/^no: //')"
echo "$OFF" >"$WORK/elsewhere"
ln -s "$WORK/elsewhere" "$V1/tsc-offset"
check link --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5
shape link 4
want link "kvm debugfs" "no: $V1/tsc-offset: Too many levels of symbolic links (Too many levels of symbolic links): record cannot read this vCPU's TSC offset"
want_re link "exact clock" "no, because KVM's offsets cannot be read: $(re_esc "$V1/tsc-offset"): Too many levels of symbolic links .*"
rm "$V1/tsc-offset"
echo "12abc" >"$V1/tsc-offset"
check nan --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5
shape nan 4
want nan "kvm debugfs" "no: $V1/tsc-offset (or its scaling files) does not hold a number record takes (Bad message): record cannot read this vCPU's TSC offset"
echo "$OFF" >"$V1/tsc-offset"
echo 281474976710656 >"$V1/tsc-scaling-ratio"
check half --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5
want half "kvm debugfs" "no: $V1/tsc-scaling-ratio is there without tsc-scaling-ratio-frac-bits (Bad message): record cannot read this vCPU's TSC offset"
rm "$V1/tsc-scaling-ratio"

# the host TSC: an hpet clocksource with tsc marked unstable is a warning, and so is no constant_tsc
SYS2=$WORK/sys2 PROC2=$WORK/proc2
mkdir -p "$SYS2/devices/system/clocksource/clocksource0"
echo hpet >"$SYS2/devices/system/clocksource/clocksource0/current_clocksource"
echo "hpet acpi_pm " >"$SYS2/devices/system/clocksource/clocksource0/available_clocksource"
check hpet --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5 --sysfs "$SYS2"
want hpet "host tsc" "warn: constant_tsc nonstop_tsc; the kernel keeps time with hpet (tsc is not among the available clocksources: marked unstable): KVM then moves each vCPU's offset at every vCPU load, which only kvm:kvm_write_tsc_offset follows exactly"
cp -r "$PROC" "$PROC2"
printf 'processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae rep_good\n\n' >"$PROC2/cpuinfo"
check noconst --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5 --procfs "$PROC2"
shape noconst 4
want noconst "host tsc" "warn: no constant_tsc in $PROC2/cpuinfo (clocksource tsc): the TSC's rate may follow the CPU's frequency; guest events still fall exactly among the host's (both count this TSC), but the seconds trace-cmd shows (one rate, TSC2NSEC) may be off"
want_re noconst "exact clock" "no, because the agent did not answer .*"
# no thread named CPU n/...: a warning
for t in "$PROC2/$QD/task"/*; do echo qemu-system-x86 >"$t/comm"; done
check unnamed --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5 --procfs "$PROC2"
want unnamed "vcpu threads" "warn: no thread of QEMU pid $QD is named \"CPU n/KVM\": QEMU names them only with -name NAME,debug-threads=on (libvirt sets it); without, host.dat has no vCPU map"

# tracefs and the kvm events: a path that is not there, a plain directory with one event
check notfs --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5 --tracefs "$WORK/no-tracefs"
want notfs tracefs "no: $WORK/no-tracefs: No such file or directory: \`mount -t tracefs nodev $WORK/no-tracefs\`"
mkdir -p "$WORK/tfs/instances" "$WORK/tfs/events/kvm/kvm_exit"
echo "name: kvm_exit" >"$WORK/tfs/events/kvm/kvm_exit/format"
check plain --chardev-dir "$WORK/qd" --qemu-pid $QD --timeout 0.5 --tracefs "$WORK/tfs"
shape plain 4
want plain tracefs "no: $WORK/tfs is not a tracefs mount: \`mount -t tracefs nodev $WORK/tfs\`"
want plain "kvm events" "no: kvm:kvm_entry, kvm:kvm_write_tsc_offset not in $WORK/tfs/events (No such file or directory): without kvm_write_tsc_offset, record finds KVM's offset changes by re-reading debugfs every second (bounded, not exact)"
want_re plain "exact clock" "no, because KVM's offset changes cannot be followed at their moments \\($(re_esc "$WORK/tfs") is not a tracefs mount.*\\): record would re-read debugfs every second, which bounds the mapping and no more"
[ -z "$(ls "$WORK/tfs/instances")" ] || fail "plain: check left $(ls "$WORK/tfs/instances") in the fixture's instances"

# ---- 5: TCG: the threads say TCG and the pid has no VM in debugfs ----
TP=$((QD + 7))
vm $TP TCG
check tcg --chardev-dir "$WORK/qd" --qemu-pid $TP --timeout 0.5
shape tcg 4
want tcg "vcpu threads" "no: QEMU pid $TP runs its vCPUs under TCG (CPU 0/TCG tid $((TP * 10 + 1)), CPU 1/TCG tid $((TP * 10 + 2))): the CPUs are emulated, and KVM keeps no offsets for them"
want tcg "kvm debugfs" "no: $DBG/kvm has no $TP-* directory: QEMU pid $TP runs no KVM VM (TCG, or not this host's KVM)"
want_re tcg "exact clock" "no, because QEMU pid $TP runs its vCPUs under TCG \\(CPU 0/TCG tid [0-9]+, CPU 1/TCG tid [0-9]+\\): the CPUs are emulated, and KVM keeps no offsets for them.*"
check tcg-json --chardev-dir "$WORK/qd" --qemu-pid $TP --timeout 0.5 --json
[ $RC = 4 ] || fail "tcg --json exited $RC, want 4"
[ "$(jq -r '"\(.exact_clock) \(.checks.vcpu_threads.verdict) \(.recording)"' "$WORK/tcg-json.out")" = "false no null" ] ||
	fail "tcg --json: '$(jq -c '[.exact_clock, .checks.vcpu_threads, .recording]' "$WORK/tcg-json.out")'"
if [ -n "$have_validator" ]; then
	python3 "$VALIDATE" "$SCHEMA" "$WORK/tcg-json.out" >"$WORK/tcg.v" 2>&1 || { cat "$WORK/tcg.v"; fail "tcg: --json does not match $SCHEMA"; }
fi
# no debugfs at all, and no pid at all
check nodbg --chardev-dir "$WORK/qd" --qemu-pid $TP --timeout 0.5 --debugfs "$WORK/no-debugfs"
want nodbg "kvm debugfs" "no: $WORK/no-debugfs/kvm: No such file or directory: debugfs is not mounted at $WORK/no-debugfs (\`mount -t debugfs none $WORK/no-debugfs\`), or no KVM module is loaded"
check nopid --chardev-dir "$WORK/qd" --timeout 0.5
shape nopid 4
want nopid "kvm debugfs" "skipped: no QEMU pid (--qemu-pid, or --domain): KVM's offsets are found by it"
want nopid "vcpu threads" "skipped: no QEMU pid (--qemu-pid, or --domain)"
want nopid "exact clock" "no, because no QEMU pid (--qemu-pid, or --domain): KVM's offsets are found by it"

# ---- --domain: libvirt's test driver (no daemon); it runs no QEMU, so it gives no pid ----
if [ -f "$VT_BUILDDIR/host-collector/virtio-trace-collect-libvirt.so" ]; then
	mkdir -p "$WORK/lv"
	sed "s|@DIR@|$WORK|g" >"$WORK/node.xml" <<'XML'
<node>
  <domain type='test'>
    <name>lv-check</name>
    <memory>524288</memory>
    <vcpu>2</vcpu>
    <os><type>hvm</type></os>
    <devices>
      <channel type='pipe'><source path='@DIR@/lv/trace-path-cpu0'/><target type='virtio' name='trace-path-cpu0'/></channel>
      <channel type='pipe'><source path='@DIR@/lv/trace-path-cpu1'/><target type='virtio' name='trace-path-cpu1'/></channel>
      <channel type='pipe'><source path='@DIR@/lv/agent-ctl-path'/><target type='virtio' name='agent-ctl-path'/></channel>
    </devices>
  </domain>
</node>
XML
	: >"$WORK/lv.fake"
	"$WORK/bin/qemu-system-x86_64" --name lv --fifo "$WORK/lv" --fixture "$DATA/cap-guest" --retime \
		-- -name guest=lv-check 2>"$WORK/lv.fake" &
	LV=$!
	track $LV
	_i=0
	while ! grep -q 'ports ready' "$WORK/lv.fake"; do
		[ $_i -lt 100 ] || fail "fake agent lv: no ports after 10 s"
		sleep 0.1
		_i=$((_i + 1))
	done
	check dom --domain lv-check --connect "test://$WORK/node.xml"
	shape dom 4
	want_re dom agent "yes: vt-fake-agent .* answers on $(re_esc "$WORK/lv/agent-ctl-path") \\(2 CPUs\\)"
	want dom "kvm debugfs" "skipped: libvirt gave no QEMU pid for domain lv-check: KVM's offsets are found by it"
	want dom "exact clock" "no, because libvirt gave no QEMU pid for domain lv-check: KVM's offsets are found by it"
	check nodom --domain no-such --connect "test://$WORK/node.xml"
	shape nodom 4
	for l in "kvm debugfs" "vcpu threads" agent; do
		want nodom "$l" "skipped: libvirt has no domain no-such with trace ports (\`virtio-trace-collect list\` shows the guests)"
	done
	want nodom "exact clock" "no, because libvirt has no domain no-such with trace ports (\`virtio-trace-collect list\` shows the guests)"
else
	echo "note: no libvirt module built: --domain not checked"
fi

# ---- usage, and nothing left behind ----
"$COLLECT" check >/dev/null 2>"$WORK/u1.err"
[ $? = 2 ] && grep -q "name one guest" "$WORK/u1.err" || fail "check without a guest: not a usage error: $(cat "$WORK/u1.err")"
"$COLLECT" check --domain x --chardev-dir "$WORK/qd" >/dev/null 2>&1
[ $? = 2 ] || fail "check with two guests: not a usage error"
left=$(ls "$WORK/tmp")
[ -z "$left" ] || fail "check left its temporary directory: $left"
ls -d $T/instances/vt-check-* 2>/dev/null && fail "check left a tracefs instance"
echo "PASS"
