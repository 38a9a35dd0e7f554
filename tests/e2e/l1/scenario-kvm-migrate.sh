# shellcheck shell=sh
# scenario-kvm-migrate.sh: run by vt_l1_run inside L1 for test-kvm-migrate.sh. A guest under
# KVM migrated live between two QEMUs in L1, traced on both sides:
#   - the source: L2 "e2e" (dir src) with setup's ports and a second monitor (HMP; the
#     collector's --qmp holds QMP);
#       virtio-trace-collect record --chardev-dir SRC/ports --name e2e --qemu-pid SRCPID
#           --qmp SRC/ports/qmp.sock $REC -o OUT/src
#   - once its agent records: the destination (dir dst), the same devices on ports of its own,
#     -incoming unix:/run/vt/mig.sock, and
#       virtio-trace-collect record --chardev-dir DST/ports --name e2e --incoming
#           --qemu-pid DSTPID --qmp DST/ports/qmp.sock $REC -o OUT/dst
#     where REC is --sync kvm --sync-check --sync-interval 0.5 --sync-probes 24 -e sched -e irq
#     --host-events sched:sched_process_exit --verbose --stop-timeout 30 $REC_ARGS;
#   - vt-e2e-guest floods MIG_MARKERS markers per vCPU at MIG_RATE per second ("flood mig"),
#     asked on the source's port; 2 s later the source's HMP `migrate -d`, then `info migrate`
#     until it completes; the flood's answer comes on the destination's port;
#   - the source's record ends by itself (QMP MIGRATION completed); the destination's, once it
#     took the session over and fetched the metadata, at SIGINT;
#   - `virtio-trace-collect join OUT/src OUT/dst -o OUT/join` (here: the spools stay in L1);
#   - vt-e2e-guest quits on the destination, the source's QEMU (postmigrate) is quit.
# OUT gets src/ and dst/ (the recordings), join/, join.log and .rc, record-src|dst.log and .rc,
# kvm-offsets-src|dst,
# migrate.txt (`info migrate` at the end), flood.answer, the consoles, hmp logs.
# Env (VT_L1_ENV): MIG_MARKERS (4000), MIG_RATE (300), MIG_BOUND (120 s for the migration),
# REC_ARGS. Exit: 1 when the frame failed
# (an L2 did not come up or answer, the migration did not complete, a record had to be killed).
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
L2_HMP=1
L2_MEM=${L2_MEM:-384}
N=${MIG_MARKERS:-4000}
RATE=${MIG_RATE:-300}
REC="--sync kvm --sync-check --sync-interval 0.5 --sync-probes 24 -e sched -e irq --host-events sched:sched_process_exit --verbose --stop-timeout 30 ${REC_ARGS:-}"

# side src|dst: point L2_* (l1_say, l1_hmp, l1_l2_wait_off) at that QEMU.
side() {
    eval "L2_DIR=\$${1}_DIR L2_PORTS=\$${1}_PORTS L2_PID=\$${1}_PID L2_TPID=\$${1}_TPID L2_CONSOLE=\$${1}_CONSOLE L2_STDERR=\$${1}_STDERR"
}
keep() {
    eval "${1}_DIR=\$L2_DIR ${1}_PORTS=\$L2_PORTS ${1}_PID=\$L2_PID ${1}_TPID=\$L2_TPID ${1}_CONSOLE=\$L2_CONSOLE ${1}_STDERR=\$L2_STDERR"
}
# record_bg SIDE ARGS...: record in the background, bounded; its status in OUT/record-SIDE.rc
record_bg() {
    _s=$1
    shift
    # shellcheck disable=SC2086
    ( l1_bounded 300 "record-$_s" virtio-trace-collect record "$@" $REC -o "$OUT/$_s" >"$OUT/record-$_s.log" 2>&1
      echo $? >"$OUT/record-$_s.rc"
      echo "$L1_STOPPED" >"$OUT/record-$_s.stopped" ) &
}
# wait_log SIDE REGEX SECS
wait_log() {
    _n=0
    while [ $_n -lt $(($3 * 10)) ]; do
        grep -qE "$2" "$OUT/record-$1.log" 2>/dev/null && return 0
        usleep 100000
        _n=$((_n + 1))
    done
    l1_log "record on the $1 did not say /$2/ in $3 s"
    return 1
}
# wait_rc SIDE SECS: until that record ended
wait_rc() {
    _n=0
    while [ ! -s "$OUT/record-$1.rc" ] && [ $_n -lt $(($2 * 10)) ]; do
        usleep 100000
        _n=$((_n + 1))
    done
    [ -s "$OUT/record-$1.rc" ] || { l1_log "record on the $1 still runs after $2 s"; return 1; }
    l1_log "record on the $1 exited $(cat "$OUT/record-$1.rc") ($(cat "$OUT/record-$1.stopped"))"
}
# rec_pids [PORTS]: the collectors running (on PORTS), from /proc (busybox has no pgrep here)
rec_pids() {
    for _d in /proc/[0-9]*; do
        [ "$(cat "$_d/comm" 2>/dev/null)" = virtio-trace-co ] || continue
        tr '\0' ' ' <"$_d/cmdline" 2>/dev/null | grep -q -- "--chardev-dir ${1:-}" && echo "${_d#/proc/}"
    done
}
# hmp SIDE LINE: to that QEMU's HMP, given up after 2 s (a QEMU whose main loop is stuck
# does not read its monitor, and the FIFO's writer would wait for ever)
hmp() {
    eval "_d=\$${1}_DIR"
    timeout 2 sh -c "echo '$2' >'$_d/hmp.in'" || l1_log "the $1's HMP did not take '$2' in 2 s"
}
bail() {
    l1_log "FAIL: $*"
    for _s in src dst; do
        eval "_q=\${${_s}_PID:-} _c=\${${_s}_CONSOLE:-}"
        [ -n "$_q" ] || continue
        l1_stacks "$_q" "the $_s QEMU"
        l1_log "the $_s L2's console, its last lines:"
        tail -n 8 "$_c" 2>/dev/null | sed 's/^/    /'
    done
    for _p in $(rec_pids); do kill -TERM "$_p" 2>/dev/null; done
    for _s in dst src; do
        eval "_q=\${${_s}_PID:-}"
        [ -n "$_q" ] || continue
        side $_s
        hmp $_s quit
        l1_l2_wait_off 20
    done
    exit 1
}

l1_l2_start e2e src || exit 1
keep src
echo "$src_PID" >"$OUT/l2pid-src"
l1_say hello 150 || bail "the source's vt-e2e-guest did not answer"
record_bg src --chardev-dir "$src_PORTS" --name e2e --qemu-pid "$src_PID" --qmp "$src_PORTS/qmp.sock"
l1_say "waiton 120" 130 || bail "the source's agent did not start recording"
case "$ANSWER" in ok*) ;; *) bail "waiton: $ANSWER" ;; esac
l1_kvm_offsets >"$OUT/kvm-offsets-src"

L2_QEMU_EXTRA="-incoming unix:/run/vt/mig.sock"
l1_l2_start e2e dst || bail "the destination's QEMU did not start"
L2_QEMU_EXTRA=
keep dst
echo "$dst_PID" >"$OUT/l2pid-dst"
record_bg dst --chardev-dir "$dst_PORTS" --name e2e --incoming --qemu-pid "$dst_PID" --qmp "$dst_PORTS/qmp.sock"
# Its QMP and its kvm_write_tsc_offset instance on (the TCG test gives it 2 s; L1 is slower).
sleep 3

# The flood, asked on the source's port (answered on the destination's, read below).
side src
echo "flood mig $N $RATE 64" >"$src_PORTS/vt-test.in"
l1_log "flood mig $N $RATE 64 asked (up=$(l1_up))"
sleep 2
l1_log "the source's HMP: migrate -d unix:/run/vt/mig.sock (up=$(l1_up))"
hmp src "migrate -d unix:/run/vt/mig.sock"
_t0=$(l1_up) _st= _secs=0
while [ "$_secs" -lt "${MIG_BOUND:-120}" ]; do
    hmp src "info migrate"
    usleep 200000
    _st=$(tail -n 40 "$src_DIR/hmp.log" | sed -n 's/^Migration status: *\([a-z-]*\).*/\1/p' | tail -n 1 | tr -d '\r')
    case "$_st" in completed|failed|cancelled) break ;; esac
    _secs=$(awk -v a="$_t0" -v b="$(l1_up)" 'BEGIN { printf "%d", b - a }')
done
l1_log "migration ${_st:-without a status} after $(awk -v a="$_t0" -v b="$(l1_up)" 'BEGIN { printf "%.1f", b - a }') s (up=$(l1_up))"
cp "$src_DIR/hmp.log" "$OUT/migrate.txt"
[ "$_st" = completed ] || bail "the migration did not complete: ${_st:-no status}"
l1_kvm_offsets >/dev/null
side dst
l1_kvm_offsets >"$OUT/kvm-offsets-dst"

exec 8<>"$dst_PORTS/vt-test.out"
read -r -t 240 FLOOD <&8 || FLOOD="no answer in 240 s"
exec 8<&-
echo "$FLOOD" >"$OUT/flood.answer"
l1_log "flood on the destination: $FLOOD (up=$(l1_up))"

wait_rc src 90 || rc=1
wait_log dst 'recording again, on this host' 180 || rc=1
wait_log dst 'META_REQ answered' 240 || rc=1
sleep 3
_p=$(rec_pids "$dst_PORTS ")
[ -n "$_p" ] || l1_log "FAIL: no collector found on $dst_PORTS"
kill -INT $_p 2>/dev/null
wait_rc dst 90 || rc=1
for _s in src dst; do
    [ "$(cat "$OUT/record-$_s.stopped" 2>/dev/null)" = "" ] || { l1_log "FAIL: the $_s record had to be stopped"; rc=1; }
done

# join here: the recordings' spools (.spool/) stay in L1 (l1/run copies no spool out).
virtio-trace-collect join "$OUT/src" "$OUT/dst" -o "$OUT/join" >"$OUT/join.log" 2>&1
echo $? >"$OUT/join.rc"
l1_log "join exited $(cat "$OUT/join.rc")"

side dst
l1_say quit 60 || rc=1
l1_l2_wait_off 60 || rc=1
cp "$dst_DIR/hmp.log" "$OUT/hmp-dst.log" 2>/dev/null
side src
hmp src quit
l1_l2_wait_off 30 || rc=1
ls /sys/kernel/tracing/instances >"$OUT/tracefs-instances.after"
exit $rc
