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
#   mig_flood N RATE          ask vt-e2e-guest (on the source's port) for N markers "mig cpuK I"
#                             per vCPU at RATE per second
#   mig_flood_answer [SECS]   after the switchover: its answer (FLOOD), on the destination's port
#                             within SECS (150)
#                             (one on the source's means it ended before the switchover: a failure)
#   mig_yield_src             the source's record at nice 19 (its end: after the switchover)
#   mig_markers FILE PREFIX N CPUS  check FILE (trace-cmd report text) holds markers PREFIX cpuK
#                             0..N-1 on [00K], each once, in order (or the losses of MISSING_OK)
# The checks of a migration traced on both sides and joined (SRC, DST: the two recordings, J:
# join's output; the guest is "e2e", its markers "mig cpuK I", on vCPUs 0 and 1):
#   mig_check_joined SRC DST J N RC  all of the below, after join's log (WORK/join.log) and its
#                             exit status RC: 0, and J/guest-e2e.dat written (else the result)
#   mig_check_join J          join's figures (blackout, each side's pages per CPU, epochs); a
#                             blackout > 0, no byte lost, epochs of both sides on each vCPU
#   mig_check_markers J N [FILE]  every marker once, in order, on its vCPU; nothing overrun;
#                             the joined file's events = the manifest's = the guest's read_events
#                             (FILE: the joined file's name in J, guest-e2e.dat)
#   mig_check_tsc2nsec SRC DST J   the three files convert the host TSC alike
#   mig_check_causality SRC DST J  0 inversions on the source's side of the blackout, none
#                             wider than the destination's stated bound on its side
#   mig_check_story SRC DST J trace-cmd report of both host.dat and the joined file, in time
#                             order; the lines around the switchover printed
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

mig_flood() {
    exec 7<>"$SRC/ports/vt-test.in"
    echo "flood mig $1 $2 64" >&7
    exec 7>&-
}

# The flood must outlast the switchover: had it ended on the source, its answer is there.
mig_flood_answer() {
    exec 8<>"$SRC/ports/vt-test.out"
    if read -r -t 1 FLOOD <&8; then
        bad "the flood ended before the switchover (its answer came on the source's port: $FLOOD); the migration took $(vt_secs "$MIG_T1" "$MIG_T2") s"
    fi
    exec 8<&-
    exec 8<>"$DST/ports/vt-test.out"
    read -r -t "${1:-150}" FLOOD <&8 || FLOOD="no answer"
    exec 8<&-
    echo "$ME: flood: $FLOOD"
    [[ $FLOOD == ok* ]] || bad "the flood did not answer ok on the destination: $FLOOD"
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

# Every marker exactly once, in order, on its own vCPU; nothing overrun.

# mig_jq DIR EXPR: EXPR of DIR/manifest.json
mig_jq() { jq -r "$2" "$1/manifest.json"; }


# Every check of a joined migration (see the top).
mig_check_joined() {
    local S=$1 D=$2 J=$3 N=$4 rc=$5
    sed 's/^/    join| /' "$WORK/join.log"
    [ "$rc" = 0 ] || bad "join exited $rc, want 0"
    [ -s "$J/guest-e2e.dat" ] || { bad "join wrote no guest-e2e.dat"; mig_result; }
    mig_check_join "$J"
    mig_check_markers "$J" "$N"
    mig_check_tsc2nsec "$S" "$D" "$J"
    mig_check_causality "$S" "$D" "$J"
    mig_check_story "$S" "$D" "$J"
}

# join's figures and checks (see the top).
mig_check_join() {
    local J=$1 cpu ne
    echo "$ME: join: blackout $(mig_jq "$J" '.join.blackout | "\(.ms) ms (\(.from_ns) -> \(.to_ns) ns), QEMU downtime \(.qemu_downtime_ms) ms"')"
    echo "$ME: join: $(mig_jq "$J" '[.join.cpus[] | "cpu\(.cpu): source \(.source_pages) pages/\(.source_events) events to byte \(.source_stream_bytes), destination \(.destination_pages)/\(.destination_events) from byte \(.destination_from_byte), \(.duplicate_bytes_dropped) duplicate bytes dropped, \(.lost_bytes) lost"] | join("; ")')"
    echo "$ME: join: epochs: $(mig_jq "$J" '[.guests[0].sync.epochs | group_by(.cpu)[] | "cpu\(.[0].cpu) \(length) (offset \(.[0].offset) from \(.[0].host_tsc_from) ... \(.[-1].offset) from \(.[-1].host_tsc_from))"] | join("; ")')"
    awk -v b="$(mig_jq "$J" '.join.blackout.ms')" 'BEGIN { exit !(b > 0) }' || bad "the joined manifest records no blackout"
    [ "$(mig_jq "$J" '[.join.cpus[].lost_bytes] | add')" = 0 ] || bad "join counts bytes lost at the switchover"
    for cpu in 0 1; do
        ne=$(mig_jq "$J" "[.guests[0].sync.epochs[] | select(.cpu == $cpu)] | length")
        [ "$ne" -ge 2 ] 2>/dev/null || bad "cpu$cpu: the joined file has $ne clock epochs, want one per side at least"
    done
}

mig_check_markers() {
    local J=$1 N=$2 F=${3:-guest-e2e.dat} cpu f d o m e ov rd ev cnt
    trace-cmd report -i "$J/$F" >"$WORK/guest.txt" 2>"$WORK/guest.err" ||
        bad "trace-cmd report of the joined file failed: $(head -3 "$WORK/guest.err")"
    mig_markers "$WORK/guest.txt" mig "$N" "0 1"
    for cpu in 0 1; do
        eval "f=\$MK_FOUND_$cpu d=\$MK_DUP_$cpu o=\$MK_ORDER_$cpu m=\$MK_MISSING_$cpu e=\$MK_ELSEWHERE_$cpu"
        ov=$(mig_jq "$J" ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.overrun + .stats.commit_overrun + .stats.dropped_events")
        rd=$(mig_jq "$J" ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.read_events")
        ev=$(mig_jq "$J" ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
        cnt=$(grep -cE "\[00$cpu\] " "$WORK/guest.txt")
        echo "$ME: cpu$cpu: joined file $cnt events (manifest $ev), guest read_events $rd, overrun $ov"
        [ "$f" = "$N" ] && [ "$d" = 0 ] && [ "$o" = 0 ] && [ "$e" = 0 ] ||
            bad "cpu$cpu: $f markers of $N, $d duplicates, $o out of order, $e elsewhere"
        [ "$ov" = 0 ] || bad "cpu$cpu: the guest's ring buffer overran ($ov events): that loss must equal the $m missing markers"
        [ "$m" = "$ov" ] || bad "cpu$cpu: $m markers missing, $ov events overrun"
        [ "$cnt" = "$ev" ] || bad "cpu$cpu: the report has $cnt events, the manifest $ev"
        [ "$rd" = "$ev" ] || bad "cpu$cpu: the guest handed out $rd events, the joined file has $ev"
    done
}

# One host, one TSC: the three files convert it to ns alike (each recording measured the rate on
# its own before, and the destination's side drifted 0.3-0.4 ms from the joined file).
mig_check_tsc2nsec() {
    local S=$1 D=$2 J=$3 t2n_src t2n_dst t2n_join
    t2n() { trace-cmd dump --options -i "$1" 2>/dev/null | grep -A1 'Option TSC2NSEC' | sed -n 2p; }
    t2n_src=$(t2n "$S/host.dat") t2n_dst=$(t2n "$D/host.dat") t2n_join=$(t2n "$J/guest-e2e.dat")
    echo "$ME: TSC2NSEC: src '$t2n_src', dst '$t2n_dst', joined '$t2n_join'"
    [ -n "$t2n_src" ] && [ "$t2n_src" = "$t2n_dst" ] && [ "$t2n_src" = "$t2n_join" ] ||
        bad "the recordings convert the host TSC differently: src '$t2n_src', dst '$t2n_dst', joined '$t2n_join'"
    ! grep -q "different rates" "$WORK/join.log" || bad "join warned of two TSC rates on one host"
}

# Causality on each side: the source's host file before the switchover, the destination's after.
mig_check_causality() {
    local S=$1 D=$2 J=$3 from to side h dbound beyond
    from=$(mig_jq "$J" '.join.blackout.from_ns') to=$(mig_jq "$J" '.join.blackout.to_ns')
    for side in src dst; do
        h=$S/host.dat
        [ $side = dst ] && h=$D/host.dat
        trace-cmd report -i "$h" -i "$J/guest-e2e.dat" >"$WORK/merged-$side.txt" 2>"$WORK/merged-$side.err" ||
            bad "trace-cmd report -i $side/host.dat -i the joined file failed: $(head -3 "$WORK/merged-$side.err")"
        awk -v side=$side -v from="$from" -v to="$to" '{
            for (j = 2; j < NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) break
            if (j == NF) next
            t = substr($j, 1, length($j) - 1) * 1e9
            if ((side == "src" && t < from) || (side == "dst" && t > to)) print }' \
            "$WORK/merged-$side.txt" >"$WORK/side-$side.txt"
        vt_causality "$WORK/side-$side.txt" "$WORK/causality-$side.txt" '^SYNC_(PROBE|REPLY)$'
        sed "s/^/$ME: $side: /" "$WORK/causality-$side.txt" | head -n 12
        [ "${PAIRS:-0}" -ge 4 ] || bad "$side: only ${PAIRS:-0} control message pairs"
        if [ $side = src ]; then
            [ "${INVERSIONS:-1}" = 0 ] || bad "$side: ${INVERSIONS:-?} causality inversions"
            continue
        fi
        # The destination's clock: its probes start on a guest whose TCG translations are all new
        # and whose control port answers late for a while after the switchover (doc/migration.md),
        # so its bound is wider; an inversion is a wrong mapping when it is wider than that bound.
        dbound=$(mig_jq "$D" '.guests[0].sync.bound_ns')
        beyond=$(sed -n 's/^inversion: .* at \([0-9.]*\), .* rx at \([0-9.]*\)$/\1 \2/p' "$WORK/causality-$side.txt" |
            awk -v b="$dbound" '{ if (($1 - $2) * 1e9 > b) n++ } END { print n + 0 }')
        echo "$ME: $side: ${INVERSIONS:-?} inversions, $beyond of them beyond the destination's bound of $dbound ns"
        [ "$beyond" = 0 ] || bad "$side: $beyond causality inversions beyond the stated bound ($dbound ns)"
    done
}

# The whole story: both hosts and the joined guest, in time order. trace-cmd names each event's
# file by its base name, so the two host.dat files are given under names of their own.
mig_check_story() {
    local S=$1 D=$2 J=$3 from to lines inv files
    from=$(mig_jq "$J" '.join.blackout.from_ns') to=$(mig_jq "$J" '.join.blackout.to_ns')
    ln -s "$S/host.dat" "$WORK/src-host.dat"
    ln -s "$D/host.dat" "$WORK/dst-host.dat"
    trace-cmd report -i "$S/host.dat" -i "$D/host.dat" -i "$J/guest-e2e.dat" >/dev/null 2>"$WORK/story.err" ||
        bad "trace-cmd report -i SRC/host.dat -i DST/host.dat -i OUT/guest-e2e.dat failed: $(head -3 "$WORK/story.err")"
    trace-cmd report -i "$WORK/src-host.dat" -i "$WORK/dst-host.dat" -i "$J/guest-e2e.dat" >"$WORK/story.txt" 2>"$WORK/story.err" ||
        bad "trace-cmd report of the three files failed: $(head -3 "$WORK/story.err")"
    read -r lines inv files < <(awk '$1 ~ /\.dat:$/ {
            for (j = 2; j < NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) break
            if (j == NF) next
            t = substr($j, 1, length($j) - 1) + 0; n++; f[$1]++
            if (n > 1 && t < last) inv++
            last = t }
        END { printf "%d %d %d\n", n, inv, length(f) }' "$WORK/story.txt")
    echo "$ME: the three-file report: $lines events from $files files, $inv steps back in time"
    [ "$files" = 3 ] || bad "the three-file report shows events of $files files, want 3"
    [ "$inv" = 0 ] || bad "the three-file report is not in time order ($inv steps back)"
    echo "$ME: around the switchover (every file):"
    awk -v from="$from" -v to="$to" '$1 ~ /\.dat:$/ {
            for (j = 2; j < NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) break
            t = substr($j, 1, length($j) - 1) * 1e9
            if (t < from) { b[nb++ % 5] = $0 } else if (t > to && na < 5) { a[na++] = $0 } }
        END { for (i = nb > 5 ? nb - 5 : 0; i < nb; i++) print "    " b[i % 5]; print "    ---- blackout ----"
              for (i = 0; i < na; i++) print "    " a[i] }' "$WORK/story.txt" | cut -c1-200
    echo "$ME: around the switchover (guest lines):"
    awk -v from="$from" -v to="$to" '/guest-e2e.dat:/ {
            for (j = 2; j < NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) break
            t = substr($j, 1, length($j) - 1) * 1e9
            if (t < from) { b[nb++ % 4] = $0 } else if (na < 4) { a[na++] = $0 } }
        END { for (i = nb > 4 ? nb - 4 : 0; i < nb; i++) print "    " b[i % 4]; print "    ---- blackout ----"
              for (i = 0; i < na; i++) print "    " a[i] }' "$WORK/story.txt" | cut -c1-200
}
