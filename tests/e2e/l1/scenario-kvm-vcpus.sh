# shellcheck shell=sh
# scenario-kvm-vcpus.sh: run by vt_l1_run inside L1 for test-kvm-vcpus.sh. L2 under KVM with 2
# vCPUs and an agent that serves one session after another (vt.agent_keep=1); once vt-e2e-guest
# answers, four recordings, each
#     taskset MASK virtio-trace-collect record --chardev-dir PORTS --name e2e --qemu-pid L2PID \
#         --kvm-exits -e sched -o OUT/NAME --quiet -- sh /tmp/NAME.sh
# bounded by REC_BOUND (150) s, while NAME.sh injects one known cause of vCPU time:
#   storm  in L2, `vt-e2e-guest load port 1 MS vt-port 0x80` (port I/O in a loop on vCPU 1,
#          each inb an io exit to QEMU), recorded with --sync probe (below);
#   hog    in L1, vCPU 0's thread alone on L1's CPU 0 (every other task that may move, the
#          collector too, on CPU 1) for the whole recording, and a busy loop named vt-hog pinned there too while
#          L2 busy-loops on vCPU 0 (`load burn 0 HOG_MS vt-burn`, 5000: L1's kernel threads
#          that cannot leave CPU 0, its migration stopper and kworkers, took 100-120 ms of each
#          recording, and vt-hog's share must be 95%);
#   contend in L2, two busy loops and a sleeper (10 ms at a time, nice 19) pinned to vCPU 1;
#          in L1, vCPU 1's thread alone on CPU 1 (the rest on CPU 0);
# (the tasks that may move get back the mask vCPU 0's thread had at first after each)
#   idle   nothing: L2 idles for IDLE_SECS (4) s (last: kallsyms is cached by then, so the
#          agent does not read it in this recording).
# After each, L2's threads get their affinity back. MS is LOAD_MS (2500). OUT gets NAME/ (the
# recording), NAME.rc, NAME.log, l2pid, l2-threads ("TID COMM"), vcpu0-affinity.after,
# tracefs-instances.after, l2-l2-console.log. Env (VT_L1_ENV): LOAD_MS, HOG_MS, IDLE_SECS, REC_BOUND,
# VCPU_SCENARIOS, L2_*. Exit: 1 only when L2 did not come up or power off, or a record had to
# be stopped.
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
MS=${LOAD_MS:-2500}
L2_APPEND="${L2_APPEND:-} vt.agent_keep=1"
l1_l2_up l2 || exit 1
vcpu0=$(awk '$2 == "CPU" && $3 == "0/KVM" { print $1 }' "$OUT/l2-threads")
vcpu1=$(awk '$2 == "CPU" && $3 == "1/KVM" { print $1 }' "$OUT/l2-threads")
aff0=$(taskset -p "$vcpu0" | sed 's/.*: *//')
l1_log "vCPU threads $vcpu0 $vcpu1, affinity mask $aff0"

# Each script runs as record's COMMAND: l1_say needs l1-lib.sh and the ports.
head="
. /etc/vt/l1-lib.sh
L2_PORTS=$L2_PORTS"
echo "sleep ${IDLE_SECS:-4}" >/tmp/idle.sh
cat >/tmp/storm.sh <<EOF
$head
l1_say 'sh vt-e2e-guest load port 1 $MS vt-port 0x80' 120
EOF
cat >/tmp/hog.sh <<EOF
$head
taskset 1 sh -c 'printf vt-hog >/proc/self/comm; while :; do :; done' &
hog=\$!
l1_say 'sh vt-e2e-guest load burn 0 ${HOG_MS:-5000} vt-burn' 120
kill \$hog
EOF
cat >/tmp/contend.sh <<EOF
$head
l1_say 'sh vt-e2e-guest load burn 1 $MS vt-burn1 & vt-e2e-guest load burn 1 $MS vt-burn2 & vt-e2e-guest load sleep 1 $MS vt-sleeper 10000; wait' 120
EOF

# pin MASK [VCPU_TID VCPU_MASK]: every task of L1 that may move (L2's threads, the keeper VM's,
# the heartbeat's shell, kernel threads that are not per CPU) on MASK, then one vCPU thread on
# VCPU_MASK: that CPU is left to the vCPU, vt-hog and the per-CPU kernel threads.
pin() {
    for t in /proc/[0-9]*/task/[0-9]*; do taskset -p "$1" "${t##*/}" >/dev/null 2>&1; done
    [ -z "${2:-}" ] || taskset -p "$3" "$2" >/dev/null
}

for s in ${VCPU_SCENARIOS:-storm hog contend idle}; do
    cmask=$aff0 sync=
    case $s in
    # Each io exit to QEMU reloads the vCPU, and KVM rewrites its TSC offset at each load on
    # L1's unstable TSC: more than the 16384 changes that --sync kvm follows in one recording
    # (record exits 3). The storm's checks use the host's events alone.
    storm) sync="--sync probe" ;;
    hog) pin 2 "$vcpu0" 1; cmask=2 ;;
    contend) pin 1 "$vcpu1" 2; cmask=1 ;;
    esac
    # shellcheck disable=SC2086
    l1_bounded "${REC_BOUND:-150}" "rec-$s" taskset "$cmask" virtio-trace-collect record --chardev-dir "$L2_PORTS" \
        --name e2e --qemu-pid "$L2_PID" --kvm-exits -e sched $sync -o "$OUT/$s" --quiet -- sh "/tmp/$s.sh" \
        >"$OUT/$s.log" 2>&1
    echo $? >"$OUT/$s.rc"
    pin "$aff0"
    l1_log "record $s exited $(cat "$OUT/$s.rc")"
    sed "s/^/    $s: /" "$OUT/$s.log" | head -n 40
    if [ -n "$L1_STOPPED" ]; then
        l1_log "FAIL: record $s had to be stopped ($L1_STOPPED)"
        rc=1
        break
    fi
done
taskset -p "$vcpu0" >"$OUT/vcpu0-affinity.after" 2>&1
ls /sys/kernel/tracing/instances >"$OUT/tracefs-instances.after"
l1_say quit 60 || rc=1
l1_l2_wait_off "$([ "$rc" = 0 ] && echo 90 || echo 10)" || rc=1
exit $rc
