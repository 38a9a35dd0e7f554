# shellcheck shell=sh
# scenario-guest.sh: an e2e collector scenario run inside L1, the guest (L2) under KVM; the
# L1 counterpart of scenario-lib.sh's scn_boot/scn_record/scn_end. vt_l1_guest_run (lib.sh)
# runs it: its generated head writes the vt-e2e-guest lines of the three phases to
# /tmp/scn-pre, /tmp/scn-work and /tmp/scn-post (one per line; absent: none), then this body:
#   - with SCN_SETUP_AUTO=1, `virtio-trace-collect setup` with its default --accel auto first:
#     OUT/setup-auto.args, .err, .rc (what a user on this KVM host gets);
#   - L2 NAME (SCN_NAME, default e2e) with the ports `setup` prints (l1_l2_start: L2_*), and
#     vt-e2e-guest's hello;
#   - the pre lines, each answered "ok..." (OUT/pre.answers);
#   - virtio-trace-collect record --chardev-dir PORTS --name NAME --qemu-pid L2PID $REC_ARGS
#         -o OUT/rec --quiet -- sh WORK.sh
#     WORK.sh sends the work lines (OUT/work.answers; it fails unless every answer is "ok...");
#     without work lines, -d REC_SECS (5) instead; bounded by REC_BOUND (120) s; its exit status
#     in OUT/record.rc, its output in OUT/record.log;
#   - the post lines (OUT/post.answers), quit, L2's power-off (its console copied to OUT).
# Exits 1 when the frame failed (L2 never answered, record had to be stopped, a line was not
# answered "ok", L2 did not power off); record's own status is the outer test's to judge.
. /etc/vt/l1-lib.sh
OUT=$1
NAME=${SCN_NAME:-e2e}
rc=0

# scn_lines FILE LABEL: each line of FILE to vt-e2e-guest; the answers to OUT/LABEL.answers.
scn_lines() {
    [ -s "$1" ] || return 0
    _ok=0
    while IFS= read -r _line; do
        if l1_say "$_line" 120; then
            echo "$_line -> $ANSWER" >>"$OUT/$2.answers"
            case "$ANSWER" in ok*) ;; *) _ok=1 ;; esac
        else
            echo "$_line -> no answer" >>"$OUT/$2.answers"
            _ok=1
        fi
    done <"$1"
    return $_ok
}

if [ "${SCN_SETUP_AUTO:-0}" = 1 ]; then
    virtio-trace-collect setup --vcpus 2 --dir /run/vt/auto --name auto >"$OUT/setup-auto.args" 2>"$OUT/setup-auto.err"
    echo $? >"$OUT/setup-auto.rc"
    l1_log "setup with --accel auto: first line '$(head -n1 "$OUT/setup-auto.args")', $(wc -l <"$OUT/setup-auto.err") lines on stderr"
fi

l1_l2_start "$NAME" || exit 1
echo "$L2_PID" >"$OUT/l2pid"
if ! l1_say hello 150; then
    l1_log "L2 did not answer; its console:"
    tail -n 20 "$L2_CONSOLE" | sed 's/^/    /'
    l1_stacks "$L2_PID" "L2's QEMU"
    l1_l2_wait_off 1
    exit 1
fi
scn_lines /tmp/scn-pre pre || { l1_log "FAIL: a pre line was not answered ok"; rc=1; }

set --
if [ -s /tmp/scn-work ]; then
    cat >/tmp/scn-work.sh <<WORK
exec 7<>"$L2_PORTS/vt-test.in" 8<>"$L2_PORTS/vt-test.out"
rc=0
while IFS= read -r line; do
    echo "\$line" >&7
    read -r -t 120 answer <&8 || answer="no answer"
    echo "\$line -> \$answer" >>"$OUT/work.answers"
    case "\$answer" in ok*) ;; *) rc=1 ;; esac
done </tmp/scn-work
exit \$rc
WORK
    set -- -- sh /tmp/scn-work.sh
else
    set -- -d "${REC_SECS:-5}"
fi
# shellcheck disable=SC2086
l1_bounded "${REC_BOUND:-120}" record virtio-trace-collect record --chardev-dir "$L2_PORTS" --name "$NAME" \
    --qemu-pid "$L2_PID" ${REC_ARGS:-} -o "$OUT/rec" --quiet "$@" >"$OUT/record.log" 2>&1
echo $? >"$OUT/record.rc"
if [ -n "$L1_STOPPED" ]; then
    l1_log "FAIL: record had to be stopped ($L1_STOPPED)"
    rc=1
fi
sed 's/^/    record: /' "$OUT/record.log" | head -n 100
[ ! -s "$OUT/work.answers" ] || sed 's/^/    work: /' "$OUT/work.answers"
l1_kvm_offsets >"$OUT/kvm-offsets.after"

scn_lines /tmp/scn-post post || { l1_log "FAIL: a post line was not answered ok"; rc=1; }
l1_say quit 60 || rc=1
# L2 powers off once its agent has had the collector's BYE.
l1_l2_wait_off "$([ "$rc" = 0 ] && echo 90 || echo 10)" || rc=1
exit $rc
