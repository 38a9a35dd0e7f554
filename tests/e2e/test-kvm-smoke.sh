#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-smoke.sh: virtio-trace-collect records a guest under real KVM. This machine's QEMU
# runs an L1 guest under TCG with -cpu EPYC (AMD SVM emulated, nested paging); L1 loads kvm_amd
# and runs the e2e collector image as L2 with -accel kvm -cpu host,-xsave -smp 2 and the ports
# `virtio-trace-collect setup --vcpus 2 --create` prints, and records it from inside L1:
#     virtio-trace-collect record --chardev-dir PORTS --name l2 --qemu-pid L2PID \
#         -e sched -e irq -e timer -d 5 --host-events HOST_EVENTS
# (tests/e2e/l1/scenario-record.sh, run by vt_l1_run of lib.sh; the L1 image is mkl1.sh's).
# The output comes back over 9p, and this side checks it with its own tools:
#   - the manifest's clock method is kvm, from KVM's debugfs, with a bound of 0;
#   - the two vCPUs' TSC offsets differ, in the manifest's epochs and in KVM's debugfs as read
#     inside L1 before the recording;
#   - `trace-cmd report -i host.dat -i guest-l2.dat` shows the guest's sched/irq/timer events
#     (per CPU as many as the manifest counts) and the host's events (HOST_EVENTS:
#     VT_KVM_HOST_EVENTS, default sched:sched_process_fork,sched:sched_process_exit; "none":
#     no host events, and `trace-cmd report -i guest-l2.dat` alone);
#   - L1's and L2's consoles are clean (no BUG/WARNING/lockup), both power off.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_COLLECT (as the other e2e tests), VT_KEEP=1 keeps the
# work dir, VT_L1_* (lib.sh). Exit: 0 pass, 1 fail, 77 skip (no SVM in this QEMU, kvm_amd does
# not load, no /dev/kvm in L1, no kernel to be had).
echo "test-kvm-smoke: record a 2-vCPU guest under real KVM (inside a TCG L1 with nested SVM): clock method kvm, per-vCPU TSC offsets, guest events in the merged report"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
ME=test-kvm-smoke
VT_LOG_PREFIX=$ME
# Host events of a low rate (L1's heartbeat forks a sleep every 3 s; the collector's control
# messages are marked in the host trace too). Any host events can stop the collector's engine
# (blocked in read() on its host pipe while the host thread sleeps in splice: 4 runs of 9 with
# sched:sched_switch, 3 of 12 with these; tests/e2e/l1/README.md). VT_KVM_HOST_EVENTS=none
# records no host events (no host.dat: the guest file is reported alone).
HOST_EVENTS=${VT_KVM_HOST_EVENTS:-sched:sched_process_fork,sched:sched_process_exit}
REC_HOST=
[ "$HOST_EVENTS" = none ] || REC_HOST="--host-events $HOST_EVENTS"

for t in qemu-system-x86_64 busybox cpio depmod timeout trace-cmd jq python3 ldd; do
    command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
done
T0=$(vt_now)
WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
KEEP=${VT_KEEP:-0}
cleanup() {
    vt_guest_stop 2>/dev/null
    if [ "$KEEP" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail=0
bad() { echo "$ME: FAIL: $*"; fail=1; }

t=$(vt_now)
vt_l1_image >"$WORK/image.out"; rc=$?
if [ $rc != 0 ]; then
    sed "s/^/$ME: /" "$WORK/image.out"
    exit $rc
fi
T_IMAGE=$(vt_secs "$t" "$(vt_now)")
echo "$ME: L1 image $VT_L1_IMAGE"

OUT=$WORK/out
REC=$OUT/rec
mkdir -p "$OUT"
VT_RUNDIR=$WORK/l1
VT_L1_ENV="REC_SECS=5
REC_ARGS=\"$REC_HOST\"
${VT_L1_ENV:-}"
vt_l1_run "$HERE/l1/scenario-record.sh" "$OUT"; rc=$?
echo "$ME: L1 run: $VT_L1_RESULT in $VT_L1_SECS s (L1 uptime at the scenario's start and end: $VT_L1_UP)"
if [ $rc = 77 ]; then
    echo "$ME: SKIP: $VT_L1_REASON"
    exit 77
fi
echo "  L1 and L2 said:"
tr -d '\r' <"$VT_RUNDIR/console.log" | grep -aE '^(VT-INIT|VT-L1|L1):' | grep -v 'VT-L1: beat' | sed 's/^/    /'
[ $rc = 0 ] || { bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; KEEP=1; echo "$ME: FAIL"; exit 1; }

# L2's console: its boot, the agent's end, no kernel report.
if [ -f "$OUT/l2-l2-console.log" ]; then
    VT_LOG_IGNORE=$VT_L1_LOG_IGNORE vt_check_console "$OUT/l2-l2-console.log" 2>"$WORK/l2-check.txt" ||
        bad "L2's console: $(head -n 5 "$WORK/l2-check.txt" | tr '\n' ' ')"
    grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after BYE' "$OUT/l2-l2-console.log" ||
        bad "L2's agent did not end cleanly after BYE"
else
    bad "no L2 console came out"
fi

[ -s "$REC/manifest.json" ] && [ -s "$REC/guest-l2.dat" ] && { [ -z "$REC_HOST" ] || [ -s "$REC/host.dat" ]; } ||
    { ls -la "$REC" 2>&1 | sed 's/^/    /'; bad "record wrote no manifest, guest-l2.dat or host.dat"; KEEP=1; echo "$ME: FAIL"; exit 1; }
m() { jq -r "$1" "$REC/manifest.json"; }

# The clock: exact, from KVM.
method=$(m '.guests[0].sync.method')
why=$(m '.guests[0].sync.why')
bound=$(m '.guests[0].sync.bound_ns')
echo "$ME: sync method $method ($why), bound $bound ns"
[ "$method" = kvm ] || bad "the clock method is '$method', want kvm"
[ "$bound" = 0 ] || [ "$bound" = 0.0 ] || bad "the kvm method's bound is $bound ns, want 0"

# Per-vCPU offsets: the manifest's first epoch of each vCPU, and KVM's debugfs before recording.
o0=$(m '[.guests[0].sync.epochs[] | select(.cpu == 0)][0].offset')
o1=$(m '[.guests[0].sync.epochs[] | select(.cpu == 1)][0].offset')
n_ep=$(m '.guests[0].sync.epochs | length')
echo "$ME: manifest: $n_ep epochs, first offsets cpu0 $o0, cpu1 $o1"
[ "$o0" != null ] && [ "$o1" != null ] || bad "the manifest has no epoch for cpu0 or cpu1"
differ=$(m '[.guests[0].sync.epochs[] | select(.cpu == 0) | .offset] as $a
    | [.guests[0].sync.epochs[] | select(.cpu == 1) | .offset] as $b
    | [range(0; [($a | length), ($b | length)] | min) | select($a[.] != $b[.])] | length')
echo "$ME: epochs where the two vCPUs' offsets differ: $differ"
[ "${differ:-0}" -ge 1 ] || bad "cpu0 and cpu1 have the same offset in every epoch"
read -r _ d0 < <(grep '^vcpu0 ' "$OUT/kvm-offsets.before")
read -r _ d1 < <(grep '^vcpu1 ' "$OUT/kvm-offsets.before")
echo "$ME: KVM debugfs in L1 before the recording: vcpu0 ${d0:-none}, vcpu1 ${d1:-none}"
[ -n "${d0:-}" ] && [ -n "${d1:-}" ] || bad "no tsc-offset in KVM's debugfs for vcpu0 and vcpu1"
[ "${d0:-x}" != "${d1:-x}" ] || bad "KVM's debugfs gives both vCPUs the offset $d0"

# The merged report: the guest's events (per CPU as many as the manifest says) and the host's.
if [ -n "$REC_HOST" ]; then
    trace-cmd report -i "$REC/host.dat" -i "$REC/guest-l2.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
        bad "trace-cmd report -i host.dat -i guest-l2.dat failed: $(head -n 3 "$WORK/merged.err")"
else
    # Alone, trace-cmd prints no file name: the lines get the one the merged report would have.
    trace-cmd report -i "$REC/guest-l2.dat" 2>"$WORK/merged.err" | sed 's/^/guest-l2.dat: /' >"$WORK/merged.txt" ||
        bad "trace-cmd report -i guest-l2.dat failed: $(head -n 3 "$WORK/merged.err")"
fi
for cpu in 0 1; do
    n=$(grep -cE "^ *guest-l2\.dat: .* \[00$cpu\] " "$WORK/merged.txt")
    man=$(m ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
    echo "$ME: cpu$cpu: $n guest events in the merged report, manifest $man"
    [ "$n" -gt 0 ] || bad "no guest event on cpu$cpu in the merged report"
    [ "$n" = "$man" ] || bad "cpu$cpu: the merged report has $n guest events, the manifest $man"
done
for ev in sched_switch irq_handler_entry hrtimer_start; do
    grep -qE "^ *guest-l2\.dat: .* $ev: " "$WORK/merged.txt" || bad "no guest $ev in the merged report"
done
if [ -n "$REC_HOST" ]; then
    nh=$(grep -cE '^ *host\.dat: ' "$WORK/merged.txt")
    echo "$ME: $nh host events ($HOST_EVENTS and the collector's markers) in the merged report"
    [ "$nh" -gt 0 ] || bad "no host event in the merged report"
fi

echo "$ME: timings: image $T_IMAGE s, L1 run $VT_L1_SECS s, whole test $(vt_secs "$T0" "$(vt_now)") s"
if [ $fail = 0 ]; then echo "$ME: PASS"; exit 0; fi
KEEP=1
echo "$ME: FAIL"
exit 1
