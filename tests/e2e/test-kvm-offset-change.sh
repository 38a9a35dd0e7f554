#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-offset-change.sh: KVM changes a guest's TSC offsets while virtio-trace-collect records
# it, and the collector opens each new epoch at the moment of the change. Inside L1 (nested SVM
# under TCG, see test-kvm-collect.sh), L2 runs under KVM with 2 vCPUs; the collector records it
# with --sync kvm --sync-check --qmp and host events while its command
# (tests/e2e/l1/scenario-kvm-offset.sh) does, 3 s apart, each between two markers in host.dat:
#   wrtsc  the guest writes vCPU 1's own TSC (IA32_TSC, MSR 0x10, /dev/cpu/1/msr) + 200000000;
#   stop   QMP stop (through a second monitor, HMP), 1 s, cont: KVM, which distrusts L1's TSC,
#          holds each vCPU's TSC while it is not loaded and writes the offset again when it
#          runs, then catches up (on a host with a stable TSC a stop/cont changes no offset);
#   reset  QMP system_reset: QEMU writes every vCPU's TSC (0: KVM either restarts the guest's
#          TSC from 0 or, taking it for a vCPU's initialisation, keeps it going; both were seen
#          here), L2 reboots. The agent's session is gone
#          with the old boot: the collector ends that guest's recording at the QMP RESET (a
#          problem, exit status 3) and keeps what it had; the guest file's clock mapping ends
#          at QEMU's stamp of the RESET (the epochs after it are listed, "applied": false: the
#          reset guest's TSC may restart from 0, and trace-cmd picks the mapping by guest time).
# Checks:
#   1. record exits 3 for the reset alone; method kvm, changes from kvm:kvm_write_tsc_offset,
#      none lost or unseen, bound 0; probes (--sync-check) all inside;
#   2. wrtsc: vCPU 1 has an exact epoch inside the VM exit in which KVM handled the write (between
#      host.dat's kvm_msr read and write of MSR 0x10 on that vCPU's thread) that starts the guest
#      TSC at the value written (within 1 ms); the guest's own markers "wrtsc cpu1 before|after"
#      (on CPU 1, around the write) fall between the host's;
#   3. stop/cont: no guest event is placed while L2 was paused; each vCPU has an exact epoch
#      from the cont on whose offset is lower than before the stop by at least half the
#      stopped time (its TSC held while stopped);
#   4. reset: reset_host_tsc (QEMU's stamp of the RESET, which it sends just before it writes
#      the vCPUs' TSC) comes after the reset was asked for; each vCPU has an exact epoch within
#      1 s after it (the reset's write), and no epoch after it is applied; no guest event is
#      placed after it;
#   5. causality: every control message's tx precedes its rx in the merged report, over at
#      least VT_KVM_MIN_PAIRS (60) pairs, the changes included;
#   6. no tracefs instance left in L1; L1's console is clean, L2's has no kernel report and shows
#      the second boot.
# The epochs opened by each change are printed (the whole list is in the manifest: KVM, which
# distrusts L1's TSC, writes each vCPU's offset tens of times a second).
# Env: as test-kvm-collect.sh (VT_KEEP=1 keeps the work dir with the recording under out/,
# VT_KVM_REC_ARGS adds record options, e.g. --no-kvm-events). Exit: 0 pass, 1 fail, 77 skip.
echo "test-kvm-offset-change: a guest TSC write, a QMP stop/cont and a system_reset while recording under real KVM: each change an exact epoch at its moment, no inversion across them"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
ME=test-kvm-offset-change
VT_LOG_PREFIX=$ME
MIN_PAIRS=${VT_KVM_MIN_PAIRS:-60}
DELTA=200000000

vt_kvm_begin
bad() { echo "$ME: FAIL: $*"; fail=1; }
REC=$OUT/rec
VT_L1_ENV="WRTSC_DELTA=$DELTA
REC_ARGS=\"${VT_KVM_REC_ARGS:-}\"
${VT_L1_ENV:-}"
vt_kvm_scenario "$HERE/l1/scenario-kvm-offset.sh"; rc=$?
[ $rc = 0 ] || { bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; KEEP=1; echo "$ME: FAIL"; exit 1; }

rrc=$(cat "$OUT/record.rc" 2>/dev/null || echo none)
echo "$ME: record exited $rrc"
left=$(grep -c '^virtio-trace-collect' "$OUT/tracefs-instances.after" 2>/dev/null)
[ "${left:-1}" = 0 ] || bad "tracefs instances left in L1: $(tr '\n' ' ' <"$OUT/tracefs-instances.after")"
if [ -f "$OUT/l2-l2-console.log" ]; then
    # Two boots, the second quit in its course: kernel reports only, no end marker to wait for.
    kbad=$(tr -d '\r' <"$OUT/l2-l2-console.log" |
           grep -anE 'BUG:|WARNING:|Kernel panic|Oops|general protection fault|soft lockup|hung_task|VT-INIT: error' |
           grep -vE "$VT_L1_LOG_IGNORE" | head -n 5)
    [ -z "$kbad" ] || bad "L2's console: $(tr '\n' ' ' <<<"$kbad")"
    boots=$(tr -d '\r' <"$OUT/l2-l2-console.log" | grep -ac '^VT-INIT: start')
    echo "$ME: L2 booted $boots times"
    [ "$boots" -ge 2 ] || bad "L2 did not boot again after the reset"
else
    bad "no L2 console came out"
fi
[ -s "$REC/manifest.json" ] && [ -s "$REC/guest-l2.dat" ] && [ -s "$REC/host.dat" ] ||
    { sed 's/^/    | /' "$OUT/record.log" | tail -n 30; bad "record wrote no manifest, guest-l2.dat or host.dat"; KEEP=1; echo "$ME: FAIL"; exit 1; }
m() { jq -r "$1" "$REC/manifest.json"; }
S='.guests[0].sync'
MULT=$(m '.host_tsc.tsc2nsec_mult') SHIFT=$(m '.host_tsc.tsc2nsec_shift') KHZ=$(m '.host_tsc.khz')
# host TSC -> the seconds trace-cmd prints (TSC2NSEC), and seconds -> ticks
secs() { awk -v t="$1" -v m="$MULT" -v s="$SHIFT" 'BEGIN { printf "%.6f", t * m / 2 ^ s / 1e9 }'; }
ticks() { awk -v d="$1" -v k="$KHZ" 'BEGIN { printf "%.0f", d * k * 1000 }'; }

trace-cmd report -i "$REC/host.dat" -i "$REC/guest-l2.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "trace-cmd report -i host.dat -i guest-l2.dat failed: $(head -n 3 "$WORK/merged.err")"
ts_of() { grep -m1 -F "$1" "$WORK/merged.txt" | grep -oE ' [0-9]+\.[0-9]+: ' | head -n1 | tr -d ' :'; }
for step in wrtsc stop cont reset; do
    for e in begin end; do
        v=$(ts_of "vt-kvm-offset: $step $e")
        [ -n "$v" ] || bad "no host marker \"$step $e\" in the merged report"
        eval "M_${step}_$e=${v:-0}"
    done
done
echo "$ME: markers (s): wrtsc $M_wrtsc_begin..$M_wrtsc_end, stop $M_stop_begin..$M_stop_end, cont $M_cont_begin..$M_cont_end, reset $M_reset_begin..$M_reset_end"
sed "s/^/$ME: /" "$OUT/actions.log"

# The epochs as lines "cpu host_tsc_from seconds offset source moment applied", by cpu and time.
m "$S.epochs[] | \"\(.cpu) \(.host_tsc_from) \(.offset) \(.source) \(.moment // \"-\") \(if .applied == false then \"false\" else \"true\" end)\"" |
    awk -v m="$MULT" -v s="$SHIFT" '{ printf "%s %s %.6f %s %s %s %s\n", $1, $2, $2 * m / 2 ^ s / 1e9, $3, $4, $5, $6 }' >"$WORK/epochs.txt"
# epochs_in CPU FROM_S TO_S: that vCPU's epochs starting in [FROM_S, TO_S], with the offset before each
epochs_in() {
    awk -v c="$1" -v a="$2" -v b="$3" '$1 == c { if ($3 + 0 >= a + 0 && $3 + 0 <= b + 0) print $0, prev; prev = $4 }' "$WORK/epochs.txt"
}
show() { awk '{ printf "      cpu%s from %s (%s s) offset %s (%+.0f) %s %s%s\n", $1, $2, $3, $4, $4 - $8, $5, $6, $7 == "false" ? " not applied" : "" }'; }

# 1. The method and what the recording became.
echo "$ME: check 1: method $(m "$S.method"), changes from $(m "$S.kvm.changes_from"): $(m "$S.kvm.changes") changes," \
     "$(wc -l <"$WORK/epochs.txt") epochs (cpu0 $(grep -c '^0 ' "$WORK/epochs.txt"), cpu1 $(grep -c '^1 ' "$WORK/epochs.txt")), $(m "$S.kvm.events_lost") lost," \
     "$(m "$S.kvm.changes_not_seen") unseen, bound $(m "$S.bound_ns") ns; check: $(m "$S.check.replies") replies, $(m "$S.check.outside") outside"
echo "$ME: check 1: problems: $(m '.guests[0].problems')"
[ "$rrc" = 3 ] || { sed 's/^/    | /' "$OUT/record.log" | tail -n 20; bad "record exited $rrc, want 3 (the reset drops the guest)"; }
m '.guests[0].problems' | grep -q 'QEMU reset the guest (QMP RESET' || bad "the manifest does not say the reset ended the recording"
[ "$(m "$S.method")" = kvm ] || bad "the clock method is '$(m "$S.method")', want kvm"
[ "$(m "$S.kvm.changes_from")" = kvm:kvm_write_tsc_offset ] || bad "offset changes from '$(m "$S.kvm.changes_from")', want kvm:kvm_write_tsc_offset"
[ "$(m "$S.kvm.events_lost")" = 0 ] && [ "$(m "$S.kvm.changes_not_seen")" = 0 ] || bad "changes lost or unseen: $(m "$S.kvm.note")"
case "$(m "$S.bound_ns")" in 0|0.0) ;; *) bad "bound $(m "$S.bound_ns") ns, want 0" ;; esac
[ "$(m "$S.check.outside")" = 0 ] && [ "$(m "$S.check.replies")" -gt 0 ] 2>/dev/null ||
    bad "--sync-check: $(m "$S.check.outside") of $(m "$S.check.replies") replies outside"

# 2. The guest's TSC write: KVM's kvm_msr events (host.dat) say when it read and wrote MSR 0x10.
echo "$ME: check 2: $(grep '^wrtsc ' "$OUT/actions.log")"
written=$(sed -n 's/^wrtsc ok before=[0-9]* written=\([0-9]*\)$/\1/p' "$OUT/actions.log")
[ -n "$written" ] || bad "the guest's TSC write did not happen"
msr=$(awk -v a="$M_wrtsc_begin" '/^ *host\.dat: +CPU 1\/KVM-[0-9]+ .* kvm_msr: +msr_(read|write) 10 = / {
        for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) t = substr($i, 1, length($i) - 1)
        if (t + 0 < a + 0) next
        if (/msr_read/) r = t; else { print r, t; exit } }' "$WORK/merged.txt")
read -r msr_r msr_w <<<"$msr"
echo "$ME: check 2: KVM handled cpu1's rdmsr 0x10 at ${msr_r:-none} s, its wrmsr 0x10 at ${msr_w:-none} s"
epochs_in 1 "$M_wrtsc_begin" "$M_wrtsc_end" >"$WORK/wrtsc.txt"
if [ -n "${msr_w:-}" ] && [ -n "${msr_r:-}" ] && [ -n "$written" ]; then
    awk -v a="$msr_r" -v b="$msr_w" -v w="$written" '$5 == "kvm-event" && $3 + 0 >= a - 0.000001 && $3 + 0 <= b + 0.000001 {
        printf "%s %.0f\n", $0, $2 + $4 - w }' "$WORK/wrtsc.txt" >"$WORK/wrtsc-epoch.txt"
    echo "$ME: check 2: cpu1's epochs in that exit (last field: the guest TSC at its start - the value written):"
    awk '{ printf "      cpu%s from %s (%s s) offset %s (%+.0f) %s %s, guest TSC at its start %+.0f from the write\n", $1, $2, $3, $4, $4 - $8, $5, $6, $9 }' "$WORK/wrtsc-epoch.txt"
    awk -v k="$(ticks 0.001)" '$9 >= 0 && $9 <= k { ok = 1 } END { exit !ok }' "$WORK/wrtsc-epoch.txt" ||
        bad "cpu1 has no exact epoch in the exit that wrote its TSC, starting the guest TSC at the value written"
else
    bad "no kvm_msr read and write of MSR 0x10 by cpu1 in host.dat after the wrtsc marker"
fi
gb=$(ts_of 'vt-e2e: wrtsc cpu1 before') ga=$(ts_of 'vt-e2e: wrtsc cpu1 after')
echo "$ME: check 2: guest markers on cpu1: before at ${gb:-none}, after at ${ga:-none} s (host: $M_wrtsc_begin..$M_wrtsc_end)"
grep -F 'vt-e2e: wrtsc cpu1 after' "$WORK/merged.txt" | grep -q '\[001\]' || bad "the guest's 'after' marker is not on CPU 1"
awk -v a="$M_wrtsc_begin" -v b="${gb:-0}" -v c="${ga:-0}" -v d="$M_wrtsc_end" 'BEGIN { exit !(a < b && b < c && c < d) }' ||
    bad "the guest's wrtsc markers (${gb:-none}, ${ga:-none}) are not between the host's ($M_wrtsc_begin, $M_wrtsc_end)"

# 3. The stop/cont.
inside=$(grep -E '^ *guest-l2\.dat: ' "$WORK/merged.txt" | grep -oE ' [0-9]+\.[0-9]+: ' | tr -d ' :' |
         awk -v a="$M_stop_end" -v b="$M_cont_begin" '$1 > a && $1 < b' | wc -l)
stopped=$(awk -v a="$M_stop_end" -v b="$M_cont_begin" 'BEGIN { printf "%.3f", b - a }')
echo "$ME: check 3: L2 paused ${stopped} s at least ($M_stop_end..$M_cont_begin): $inside guest events placed there"
[ "$inside" = 0 ] || bad "$inside guest events placed while L2 was paused"
half=$(ticks "$(awk -v s="$stopped" 'BEGIN { print s / 2 }')")
for cpu in 0 1; do
    before=$(awk -v c="$cpu" -v a="$M_stop_begin" '$1 == c && $3 + 0 <= a + 0 { o = $4 } END { print o }' "$WORK/epochs.txt")
    epochs_in "$cpu" "$M_cont_begin" "$(awk -v e="$M_cont_end" 'BEGIN { print e + 0.5 }')" >"$WORK/cont-$cpu.txt"
    echo "$ME: check 3: cpu$cpu: offset ${before:-none} at the stop; its first epochs from the cont on:"
    head -n 4 "$WORK/cont-$cpu.txt" | show
    awk -v o="${before:-0}" -v h="$half" '$5 == "kvm-event" && o - $4 >= h { ok = 1 } END { exit !ok }' "$WORK/cont-$cpu.txt" ||
        bad "cpu$cpu: no exact epoch after the cont whose offset held the stop (lower by >= $half ticks)"
done

# 4. The reset.
R=$(m "$S.reset_host_tsc")
if [ "$R" = null ]; then
    bad "the manifest has no reset_host_tsc"
else
    RS=$(secs "$R")
    echo "$ME: check 4: the mapping ends at QEMU's RESET: host TSC $R ($RS s; reset asked for at $M_reset_begin s)"
    awk -v a="$M_reset_begin" -v r="$RS" 'BEGIN { exit !(a <= r && r <= a + 10) }' ||
        bad "the RESET's moment $RS s is not within 10 s after the reset was asked for ($M_reset_begin s)"
    for cpu in 0 1; do
        after=$(awk -v c="$cpu" -v r="$R" '$1 == c && $2 + 0 > r + 0' "$WORK/epochs.txt" | wc -l)
        notap=$(awk -v c="$cpu" -v r="$R" '$1 == c && $2 + 0 > r + 0 && $7 == "false"' "$WORK/epochs.txt" | wc -l)
        first=$(awk -v c="$cpu" -v r="$R" '$1 == c && $2 + 0 > r + 0 { printf "%s %s (%s s) offset %s, guest TSC %.0f at its start", $5, $2, $3, $4, $2 + $4; exit }' "$WORK/epochs.txt")
        echo "$ME: check 4: cpu$cpu: $after epochs after the RESET ($notap not applied); the first: ${first:-none}"
        [ "$after" -ge 1 ] && [ "$after" = "$notap" ] || bad "cpu$cpu: no epoch after the RESET (QEMU writes the TSC at a reset), or one applied"
        awk -v c="$cpu" -v r="$R" -v w="$(ticks 1)" '$1 == c && $2 + 0 > r + 0 && $2 + 0 <= r + w && $5 == "kvm-event" { ok = 1 } END { exit !ok }' "$WORK/epochs.txt" ||
            bad "cpu$cpu: no exact epoch within 1 s after the RESET"
    done
    last=$(grep -E '^ *guest-l2\.dat: ' "$WORK/merged.txt" | grep -oE ' [0-9]+\.[0-9]+: ' | tr -d ' :' | sort -n | tail -n 1)
    echo "$ME: check 4: the guest's last event at ${last:-none} s"
    awk -v l="${last:-0}" -v r="$RS" 'BEGIN { exit !(l > 0 && l < r) }' || bad "guest events placed after the reset"
fi

# 5. Causality, the changes included.
vt_causality "$WORK/merged.txt" "$WORK/causality.txt"
sed "s/^/$ME: check 5: /" "$WORK/causality.txt" | head -n 20
echo "$ME: check 5: ${PAIRS:-0} control message pairs (want >= $MIN_PAIRS), ${INVERSIONS:-?} inversions (want 0)"
[ "${PAIRS:-0}" -ge "$MIN_PAIRS" ] || bad "only ${PAIRS:-0} control message pairs, want >= $MIN_PAIRS"
[ "${INVERSIONS:-1}" = 0 ] || bad "${INVERSIONS:-?} causality inversions"

vt_kvm_end
