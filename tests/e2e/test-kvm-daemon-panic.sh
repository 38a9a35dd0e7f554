#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-daemon-panic.sh: test-daemon-panic's scenario with the guest under real KVM and no
# libvirt. Inside L1 (nested SVM under TCG, see test-kvm-collect.sh) L2 runs under -accel kvm
# with 2 vCPUs, an ISA pvpanic device (its pvpanic-mmio driver loaded), a QMP socket on its
# command line and the ports `setup` prints; `virtio-trace-collect daemon` (libvirt = no,
# domains = l2, mode stream, guest sched_switch, host kvm_exit, kvm_pio and sched_switch) finds
# its QEMU as `record --all` does; L2 writes VT_E2E_MARKERS (200) markers per CPU and filler,
# then panics (tests/e2e/l1/scenario-kvm-daemon-panic.sh). QEMU's GUEST_PANICKED reaches the
# daemon through its child's QMP. What comes back over 9p is checked here:
#   1. the daemon logs the crash (QMP GUEST_PANICKED, action poweroff) within 120 s of the sysrq
#      write and seals one snapshot, reason panic-qmp, within 180 s; snapshot.json, --status
#      (the snapshot, "panic-trigger: QMP only (libvirt = no)"); one child all along; no error
#      in the daemon's log before the panic (L1 has no libvirt, which libvirt = no leaves
#      unasked), and after it no second look at L2's exiting QEMU; the daemon exits 0 on SIGTERM and leaves no tracefs instance; L2's console has
#      the panic;
#   2. the snapshot's clock: method kvm, offset changes from kvm:kvm_write_tsc_offset, bound 0,
#      every epoch KVM's with bound 0 (the kvm-event ones at their exact moment), none lost
#      (sync.kvm.events_lost = 0) or unseen;
#   3. guest-l2.dat holds exactly N markers per CPU, numbered 0..N-1 in order, none other than
#      those; merged with host.dat (de_check_snap, daemon-e2e-lib.sh): N per CPU, no timestamp
#      backwards, host sched_switch in it;
#   4. the trigger in the host's events: exactly one kvm_pio write to the pvpanic port (0x505)
#      in host.dat; in the merged report every marker is before it and within the snapshot's
#      before window of it, and host events come before the first marker, between the last
#      marker and the write, and after the write;
#   5. no causality inversion of the control messages in the merged report (vt_causality).
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1 keeps the work dir (the state dir under out/),
# VT_E2E_MARKERS (200), VT_L1_* (lib.sh). Exit: 0 pass, 1 fail, 77 skip (no SVM in this QEMU,
# kvm_amd does not load, no /dev/kvm in L1, no kernel to be had).
echo "test-kvm-daemon-panic: a guest under real KVM (nested in a TCG L1) panics with pvpanic, no libvirt: the daemon seals a panic-qmp snapshot with exact KVM offsets, the guest's last markers and the host's events around the trigger"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/daemon-e2e-lib.sh"
ME=test-kvm-daemon-panic
VT_LOG_PREFIX=$ME
N=${VT_E2E_MARKERS:-200}
# The panic reaches pvpanic only once L2's kernel has printed it on its serial console (panic()
# makes the console verbose: its 45 lines and backtrace, about 3000 characters, each an I/O exit
# through nested TCG): 7 to 38 s after the last marker in the runs of tests/e2e/l1/README.md,
# on a machine whose load average reached 110; and the snapshot is sealed once L2's QEMU has
# ended (up to 21 s after the crash line). Hence a 120 s window and 120 s and 180 s bounds.
BEFORE=120
DOM=l2

vt_kvm_begin
VT_L1_ENV="PANIC_N=$N
PANIC_BEFORE=$BEFORE
${VT_L1_ENV:-}"
vt_kvm_scenario "$HERE/l1/scenario-kvm-daemon-panic.sh"; rc=$?
[ $rc = 0 ] || { bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; vt_kvm_end; }

# 1. The daemon, the snapshot, L2's end.
L=$OUT/daemon.log
read -r _ t_crash < <(grep '^crash ' "$OUT/times.txt")
read -r _ t_seal < <(grep '^sealed ' "$OUT/times.txt")
echo "$ME: check 1: crash logged ${t_crash:-never} s and snapshot sealed ${t_seal:-never} s after the sysrq write; daemon exit $(cat "$OUT/daemon.rc")"
awk -v c="${t_crash:-never}" -v s="${t_seal:-never}" 'BEGIN { exit !(c != "never" && s != "never" && c <= 120 && s <= 180) }' ||
    bad "crash logged after ${t_crash:-never} s (want <= 120), sealed after ${t_seal:-never} s (want <= 180)"
grep -q "l2: the guest crashed (QMP GUEST_PANICKED, action poweroff): snapshot asked for (panic-qmp; before $BEFORE.0 s, after 3.0 s)" "$L" ||
    bad "the daemon did not log l2's GUEST_PANICKED (action poweroff) as asking for its snapshot"
# Until the panic, no error: libvirt = no asks no libvirt, which L1 does not have (the children
# run as record --all=l2 --no-libvirt; before that each logged that it could not load it).
errs=$(sed '/QEMU says it panicked/,$d' "$L" | grep -c 'error:')
echo "$ME: check 1: errors in the daemon's log before the panic: $errs"
[ "$errs" = 0 ] || bad "the daemon's log has errors before the panic: $(sed '/QEMU says it panicked/,$d' "$L" | grep 'error:' | head -n 2)"
# QEMU powers off on the panic: the first look that misses it finds it exiting or gone, and
# stops the child without looking again (a live QEMU missed once gets a second look).
again=$(sed -n '/QEMU says it panicked/,$p' "$L" | grep -c "l2: not found, but its QEMU (pid [0-9]*) runs")
echo "$ME: check 1: looks again after the panic: $again; before it: $(sed '/QEMU says it panicked/,$d' "$L" | grep -c 'not found, but its QEMU')"
[ "$again" = 0 ] || bad "the daemon took L2's exiting QEMU for a running one and looked again"
[ "$(cat "$OUT/daemon.rc" 2>/dev/null)" = 0 ] || bad "the daemon exited $(cat "$OUT/daemon.rc" 2>/dev/null) on SIGTERM, want 0"
snaps=$(ls "$OUT/state/snapshots" 2>/dev/null | grep -v '^\.')
echo "$ME: check 1: snapshots: $(echo $snaps)"
[ "$(echo "$snaps" | grep -c .)" = 1 ] && echo "$snaps" | grep -q '^l2-.*-panic-qmp$' ||
    { sed 's/^/    daemon| /' "$L" | tail -n 30; bad "snapshots '$(echo $snaps)', want one of l2, reason panic-qmp"; vt_kvm_end; }
SNAP=$OUT/state/snapshots/$snaps
SNAP_REASON=panic-qmp
[ "$(jq -r .reason "$SNAP/snapshot.json")" = panic-qmp ] || bad "snapshot.json reason $(jq -r .reason "$SNAP/snapshot.json")"
grep -q "^l2 .*$snaps (panic-qmp)" "$OUT/status.txt" || bad "--status does not name the snapshot: $(tr '\n' ';' <"$OUT/status.txt")"
grep -qx "panic-trigger: QMP only (libvirt = no)" "$OUT/status.txt" || bad "--status does not say panics come from QMP only"
read -r _ c_mk c_mkpid < <(grep '^markers ' "$OUT/child.txt")
read -r _ c_pn c_pnpid < <(grep '^panic ' "$OUT/child.txt")
echo "$ME: check 1: l2's child: $c_mk ${c_mkpid:-} before the markers, $c_pn ${c_pnpid:-} before the panic"
[ "${c_mk:-}" = attached ] && [ -n "${c_mkpid:-}" ] && [ "${c_mkpid:-}" = "${c_pnpid:-}" ] && [ "$c_pn" = attached ] ||
    bad "l2's child changed or was not attached between the markers and the panic"
left=$(grep -c '^virtio-trace-collect' "$OUT/tracefs-instances.after" 2>/dev/null)
[ "${left:-1}" = 0 ] || bad "tracefs instances left in L1: $(tr '\n' ' ' <"$OUT/tracefs-instances.after")"
grep -aq 'Kernel panic - not syncing: sysrq triggered crash' "$OUT/l2-l2-console.log" 2>/dev/null ||
    bad "L2's console has no sysrq panic"

# 2. The clock: KVM's offsets, exact.
m() { jq -r "$1" "$SNAP/manifest.json"; }
Sy='.guests[0].sync'
echo "$ME: check 2: method $(m "$Sy.method") ($(m "$Sy.why")), bound $(m "$Sy.bound_ns") ns; changes from $(m "$Sy.kvm.changes_from"):" \
     "$(m "$Sy.kvm.changes") changes, $(m "$Sy.epochs | length") epochs ($(m "[$Sy.epochs[] | select(.bound_ns != 0)] | length") bounded)," \
     "$(m "$Sy.kvm.events_lost") events lost, $(m "$Sy.kvm.changes_not_seen") not seen, debugfs disagreed on $(m "$Sy.kvm.debugfs_disagreed") vCPU(s)"
[ "$(m "$Sy.method")" = kvm ] || bad "the clock method is '$(m "$Sy.method")', want kvm"
[ "$(m "$Sy.kvm.changes_from")" = kvm:kvm_write_tsc_offset ] || bad "offset changes from '$(m "$Sy.kvm.changes_from")'"
case "$(m "$Sy.bound_ns")" in 0|0.0) ;; *) bad "the bound is $(m "$Sy.bound_ns") ns, want 0" ;; esac
[ "$(m "$Sy.epochs | length")" -ge 2 ] 2>/dev/null || bad "$(m "$Sy.epochs | length") epochs, want one per vCPU at least"
[ "$(m "[$Sy.epochs[] | select(.bound_ns != 0 or (.source != \"kvm-debugfs\" and .source != \"kvm-event\")
       or (.source == \"kvm-event\" and .moment != \"exact\"))] | length")" = 0 ] ||
    bad "epochs not exact: $(m "[$Sy.epochs[] | select(.bound_ns != 0 or (.source != \"kvm-debugfs\" and .source != \"kvm-event\"))] | .[:3]" | tr -d '\n ')"
[ "$(m "$Sy.kvm.events_lost")" = 0 ] && [ "$(m "$Sy.kvm.changes_not_seen")" = 0 ] ||
    bad "offset changes lost or unseen: $(m "$Sy.kvm.note")"

# 3. The markers, exactly, and the merged report's order.
de_check_snap "$SNAP" panic-before ""
for cpu in 0 1; do
    seq=$(grep -oE "\[00$cpu\] .* panic-before cpu$cpu [0-9]+ " "$WORK/guest-$SNAP_REASON.txt" | awk '{ print $(NF) }' |
          awk '$1 != NR - 1 { bad++ } END { print NR, bad + 0 }')
    echo "$ME: check 3: cpu$cpu: markers, out of order: $seq"
    [ "$seq" = "$N 0" ] || bad "cpu$cpu: the markers are not 0..$((N - 1)) in order ($seq)"
done

# 4. The trigger, the pvpanic port's write, among the host's events.
R=$WORK/report-$SNAP_REASON.txt
pio=$(grep -nE '^ *host\.dat: .* kvm_pio: +pio_write at 0x505 ' "$R")
np=$(grep -c . <<<"$pio")
echo "$ME: check 4: pvpanic writes in host.dat: $np: $(cut -c1-160 <<<"$pio")"
if [ -n "$pio" ] && [ "$np" = 1 ]; then
    lp=${pio%%:*}
    tp=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { print substr($i, 1, length($i) - 1); exit } }' <<<"${pio#*:}")
    first=$(grep -n 'panic-before cpu' "$R" | head -n1 | cut -d: -f1)
    last=$(grep -n 'panic-before cpu' "$R" | tail -n1 | cut -d: -f1)
    tl=$(sed -n "${last}p" "$R" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { print substr($i, 1, length($i) - 1); exit } }')
    tf=$(sed -n "${first}p" "$R" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { print substr($i, 1, length($i) - 1); exit } }')
    hb=$(head -n "$first" "$R" | grep -c '^ *host\.dat: ')
    hm=$(sed -n "${last},${lp}p" "$R" | grep -c '^ *host\.dat: ')
    ha=$(tail -n +"$((lp + 1))" "$R" | grep -c '^ *host\.dat: ')
    echo "$ME: check 4: markers from $tf to $tl s, the pvpanic write at $tp s ($(awk -v a="$tl" -v b="$tp" 'BEGIN { printf "%.3f", b - a }') s after the last);" \
         "host events: $hb before the first marker, $((hm - 1)) between the last and the write, $ha after it"
    [ "$last" -lt "$lp" ] || bad "a marker comes after the pvpanic write in the merged report (line $last, the write $lp)"
    awk -v f="$tf" -v p="$tp" -v b="$BEFORE" 'BEGIN { exit !(f + 0 <= p + 0 && p - f <= b) }' ||
        bad "the markers ($tf s) are not within the $BEFORE s before the pvpanic write ($tp s)"
    [ "$hb" -gt 0 ] && [ "$hm" -gt 1 ] && [ "$ha" -gt 0 ] || bad "the host's events do not surround the markers and the trigger"
else
    bad "host.dat has $np pvpanic writes (kvm_pio at 0x505), want 1"
fi

# 5. Causality of the control messages.
vt_causality "$R" "$WORK/causality.txt"
echo "$ME: check 5: $(tail -n1 "$WORK/causality.txt")"
head -n 3 "$WORK/causality.txt" | grep '^inversion' | sed "s/^/$ME: check 5: /"
[ "${PAIRS:-0}" -gt 0 ] || bad "no control message pairs in the merged report"
[ "${INVERSIONS:-1}" = 0 ] || bad "${INVERSIONS:-?} causality inversions"

vt_kvm_end
