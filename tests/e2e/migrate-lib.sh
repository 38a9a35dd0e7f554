# shellcheck shell=bash
# tests/e2e/migrate-lib.sh: the frame of the live-migration tests (test-migrate*.sh). Two QEMU
# processes on this machine: the source boots the collector e2e image (vt_collect_image) with the
# ports `virtio-trace-collect setup` makes, the destination is started with the same devices on
# ports of its own and `-incoming unix:WORK/mig.sock`. Each QEMU has two QMP sockets, as QMP takes
# one client per socket: the collector's (RUN/ports/qmp.sock, the one setup prints) and the
# test's (RUN/qmp.sock, lib.sh's). Source lib.sh, agent-lib.sh, set ME, then:
#   mig_begin                 build, image, WORK (SRC=WORK/src, DST=WORK/dst), cleanup on exit
#   mig_boot_src              boot the source and wait for vt-e2e-guest
#   mig_boot_dst              start the destination QEMU (-incoming)
#   mig_qmp SIDE CODE         vt_qmp_py on SIDE's test socket (SIDE: src or dst)
#   mig_migrate [BW]          QMP migrate from the source (BW: max-bandwidth in bytes/s)
#   mig_wait STATUS SECS      until the source's query-migrate says STATUS (completed, failed)
#   mig_record SIDE ARG...    virtio-trace-collect record ... in the background; sets REC_PID_SIDE
#   mig_stop_record SIDE      SIGINT it (if running) and wait; sets REC_RC_SIDE
#   mig_wait_record SIDE SECS wait for a record that ends by itself; sets REC_RC_SIDE
#   mig_wait_log SIDE RE SECS until SIDE's record log (-v) says RE
#   mig_yield_src             the source's record at nice 19 (its end: after the switchover)
#   mig_markers FILE PREFIX N CPUS  check FILE (trace-cmd report text) holds markers PREFIX cpuK
#                             0..N-1 on [00K], each once, in order (or the losses of MISSING_OK)
# Every check failure goes through bad(), which prints "ME: FAIL: ..." and fails the test.

MIG_QEMU_PIDS=() MIG_TIMEOUT_PIDS=() MIG_REC_PIDS=()
mig_cleanup() {
    local p
    for p in "${MIG_REC_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    for p in "${MIG_QEMU_PIDS[@]}"; do
        [ -r "/proc/$p/cmdline" ] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF -- "$WORK" &&
            kill -KILL "$p" 2>/dev/null
    done
    for p in "${MIG_TIMEOUT_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    if [ "${KEEP:-0}" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}

fail=0
bad() { echo "$ME: FAIL: $*"; fail=1; }

mig_begin() {
    local t rc
    for t in qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq python3; do
        command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
    done
    T0=$(vt_now)
    WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
    KEEP=${VT_KEEP:-0}
    trap mig_cleanup EXIT
    trap 'exit 1' INT TERM HUP
    vt_collect_build; rc=$?
    [ $rc = 0 ] || exit $rc
    vt_collect_image "$WORK" collect-guest; rc=$?
    [ $rc = 0 ] || exit $rc
    SRC=$WORK/src DST=$WORK/dst
    mkdir -p "$SRC" "$DST"
    # The same devices on both sides (ids, bus, port numbers), each on ports of its own.
    vt_collect_ports "$COLLECT" "$SRC/ports" || exit 1
    SRC_ARGS=("${SETUP_ARGS[@]}")
    vt_collect_ports "$COLLECT" "$DST/ports" || exit 1
    DST_ARGS=("${SETUP_ARGS[@]}")
    if [ -n "${MIG_SERIAL_OPTS:-}" ]; then
        SRC_ARGS=("${SRC_ARGS[@]/virtio-serial-pci,/virtio-serial-pci,$MIG_SERIAL_OPTS,}")
        DST_ARGS=("${DST_ARGS[@]/virtio-serial-pci,/virtio-serial-pci,$MIG_SERIAL_OPTS,}")
    fi
}

# mig_start DIR ARGS...: QEMU with the given extra arguments (the ports').
mig_start() {
    local dir=$1
    shift
    VT_RUNDIR=$dir VT_SMP=${VT_SMP:-2} VT_TCG_SINGLE=1 VT_PORTS=0 VT_GUEST_RUN=/etc/vt/agent-run
    VT_APPEND="vt.ports=$((VT_SMP + 2)) ${MIG_APPEND:-}" VT_TIMEOUT=${VT_TIMEOUT:-240}
    VT_QEMU_EXTRA=("$@")
    vt_guest_start || { echo "$ME: FAIL: QEMU did not start in $dir"; exit 1; }
    MIG_QEMU_PIDS+=("$VT_QEMU_PID") MIG_TIMEOUT_PIDS+=("$VT_TIMEOUT_PID")
}

mig_boot_src() {
    local t
    t=$(vt_now)
    mig_start "$SRC" "${SRC_ARGS[@]}"
    SRC_QEMU=$VT_QEMU_PID SRC_TPID=$VT_TIMEOUT_PID
    if ! vt_test_say "$SRC/ports" hello 60; then
        tr -d '\r' <"$SRC/console.log" | tail -20
        echo "$ME: FAIL: vt-e2e-guest did not answer hello in 60 s"; exit 1
    fi
    T_BOOT=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: source QEMU $SRC_QEMU, guest says: $ANSWER (boot ${T_BOOT} s)"
}

mig_boot_dst() {
    mig_start "$DST" "${DST_ARGS[@]}" -incoming "unix:$WORK/mig.sock"
    DST_QEMU=$VT_QEMU_PID DST_TPID=$VT_TIMEOUT_PID
    echo "$ME: destination QEMU $DST_QEMU waits for the guest on unix:$WORK/mig.sock"
}

mig_qmp() {
    local side=$1
    vt_qmp_py "$WORK/$side/qmp.sock" 20 "$2"
}

# mig_migrate [BW]: start the migration; MIG_T1 is when it was asked for.
mig_migrate() {
    local bw=${1:-0}
    MIG_T1=$(vt_now)
    mig_qmp src "
if $bw:
    cmd('migrate-set-parameters', {'max-bandwidth': $bw})
r = cmd('migrate', {'uri': 'unix:$WORK/mig.sock'})
print('migrate:', r)" | sed "s/^/$ME: /"
}

# mig_wait STATUS SECS: poll the source's query-migrate; prints its figures at the end.
mig_wait() {
    mig_qmp src "
import time
end = time.time() + $2
while True:
    r = cmd('query-migrate').get('return', {})
    if r.get('status') in ('$1', 'failed', 'cancelled', 'completed') or time.time() > end:
        break
    time.sleep(0.05)
print('status=%s downtime_ms=%s total_ms=%s' % (r.get('status'), r.get('downtime'), r.get('total-time')))
" >"$WORK/mig-status.txt"
    MIG_T2=$(vt_now)
    sed "s/^/$ME: query-migrate: /" "$WORK/mig-status.txt"
    grep -q "^status=$1 " "$WORK/mig-status.txt"
}

mig_record() {
    local side=$1 pid
    shift
    timeout -k 60 "${MIG_RECORD_TIMEOUT:-200}" "$COLLECT" record "$@" >"$WORK/record-$side.log" 2>&1 &
    pid=$!
    MIG_REC_PIDS+=("$pid")
    eval "REC_PID_$side=$pid"
}

mig_stop_record() {
    local side=$1 pid rc c
    eval "pid=\$REC_PID_$side"
    # To the collector itself: `timeout` passes a signal on to its child and to its process
    # group, so the collector could get two, and a second SIGINT keeps only what is on disk.
    for c in $(pgrep -P "$pid" 2>/dev/null); do kill -INT "$c" 2>/dev/null; done
    wait "$pid"
    rc=$?
    eval "REC_RC_$side=$rc"
    echo "$ME: record on the $side exited $rc"
}

# mig_yield_src: once the guest has left, the source's record writes its files (zstd on every
# core) just as the destination takes the session over; on one machine that starves the
# destination's QEMU and record (which two hosts would not share): it goes on at nice 19.
mig_yield_src() {
    local p
    for p in $(pgrep -P "${REC_PID_src:-0}" 2>/dev/null); do renice -n 19 -p "$p" >/dev/null 2>&1; done
}

# mig_wait_log SIDE REGEX SECS: until SIDE's record log (record -v) matches REGEX.
mig_wait_log() {
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -qE "$2" "$WORK/record-$1.log" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# mig_wait_record SIDE SECS: wait for a record that ends by itself; sets REC_RC_SIDE (124: killed).
mig_wait_record() {
    local side=$1 pid i rc c
    eval "pid=\$REC_PID_$side"
    for ((i = 0; i < $2 * 10; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        for c in $(pgrep -P "$pid" 2>/dev/null); do kill -INT "$c" 2>/dev/null; done
        bad "record on the $side did not end by itself within $2 s"
    fi
    wait "$pid"
    rc=$?
    eval "REC_RC_$side=$rc"
    echo "$ME: record on the $side exited $rc"
}

# mig_markers FILE PREFIX N CPUS: the markers "PREFIX cpuK I" in FILE (trace-cmd report text):
# per CPU, the indices in file order on [00K]. Sets MK_FOUND_K, MK_DUP_K, MK_ORDER_K (steps
# that are not +1: gaps and steps back), MK_BACK_K (steps back), MK_MISSING_K, MK_ELSEWHERE_K
# and prints a line per CPU.
mig_markers() {
    local file=$1 prefix=$2 n=$3 cpu line
    for cpu in $4; do
        line=$(awk -v p="$prefix" -v cpu="$cpu" -v n="$n" '
            { for (i = 1; i < NF; i++) if ($i == p && $(i + 1) ~ /^cpu[0-9]+$/) break
              if (i >= NF) next
              c = substr($(i + 1), 4) + 0; k = $(i + 2) + 0
              if (c != cpu) next
              if (index($0, sprintf("[%03d]", cpu)) == 0) { elsewhere++; next }
              if (seen[k]++) dup++
              if (found && k != last + 1) order++
              if (found && k <= last) back++
              last = k; found++ }
            END { miss = 0; for (k = 0; k < n; k++) if (!(k in seen)) miss++
                  printf "%d %d %d %d %d %d\n", found, dup, order, miss, elsewhere, back }' "$file")
        read -r f d o m e b <<<"$line"
        eval "MK_FOUND_$cpu=$f MK_DUP_$cpu=$d MK_ORDER_$cpu=$o MK_MISSING_$cpu=$m MK_ELSEWHERE_$cpu=$e MK_BACK_$cpu=$b"
        echo "$ME: cpu$cpu: $f markers, $d duplicates, $o steps out of order ($b backwards), $m missing, $e on another CPU"
    done
}

# mig_console: the guest's consoles on both sides (the destination's has its end).
mig_console() {
    echo "  guest console (source, then destination):"
    tr -d '\r' <"$SRC/console.log" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    src| /'
    tr -d '\r' <"$DST/console.log" 2>/dev/null | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    dst| /'
    if tr -d '\r' <"$SRC/console.log" | grep -aqE 'BUG:|WARNING:|Kernel panic|Oops|soft lockup'; then
        bad "the source's console has kernel errors"
    fi
}

mig_result() {
    echo "$ME: whole test $(vt_secs "$T0" "$(vt_now)") s"
    if [ "$fail" = 0 ]; then echo "$ME: PASS"; exit 0; fi
    KEEP=1
    echo "$ME: FAIL"
    exit 1
}
