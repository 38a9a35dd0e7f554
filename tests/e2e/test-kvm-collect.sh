#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-collect.sh: virtio-trace-collect records a 2-vCPU guest under real KVM with the exact
# clock, and probes check it. This machine's QEMU runs an L1 guest under TCG with -cpu EPYC
# (AMD SVM emulated, nested paging); L1 loads kvm_amd and runs the e2e collector image as L2
# with -accel kvm -smp 2 and the ports `setup --vcpus 2 --create` prints, and records it from
# inside L1 (tests/e2e/l1/scenario-kvm-collect.sh, run by vt_l1_run of lib.sh):
#     virtio-trace-collect record --chardev-dir PORTS --name l2 --qemu-pid L2PID --sync kvm \
#         --sync-check --sync-interval 0.3 --sync-probes 24 --kvm-exits -e sched -e irq -e timer \
#         -- (8 s once the guest's whole metadata, kallsyms included, is in)
# The output comes back over 9p and this side checks it with its own tools:
#   1. the clock: method kvm from KVM's debugfs, each change from kvm:kvm_write_tsc_offset, bound
#      0, no change unseen, debugfs agreeing at the end; the two vCPUs' offsets differ (in
#      L1's debugfs before the recording, and in the manifest's epochs at one host time);
#   2. the probes beside it (--sync-check): bursts on both vCPUs, no reply outside, and each
#      vCPU's probe intervals [lo, hi] contain the exact offset of the epoch they fall in
#      (recomputed here from lo, hi and the epoch list, not taken from "inside");
#   3. causality: in `trace-cmd report -i host.dat -i guest-l2.dat` every control message's tx
#      precedes its rx, over at least VT_KVM_MIN_PAIRS (150) pairs;
#   4. the host file's GUEST option maps each vCPU to the one thread on which host.dat's
#      kvm_exit events report that vcpu_id (and that is QEMU's "CPU N/KVM" thread);
#   5. the guest's events: per CPU as many in the merged report as the manifest counts, with
#      sched_switch, irq_handler_entry and hrtimer_start among them;
#   6. record exits 0, leaves no tracefs instance in L1; L1's and L2's consoles are clean, the
#      agent ends after BYE, L2 powers off.
# (This test took over test-kvm-smoke's checks.)
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_COLLECT (as the other e2e tests), VT_KEEP=1 keeps the
# work dir with the recording under out/, VT_KVM_REC_ARGS (more record options, e.g. "--sync
# probe" to take the exact clock away), VT_KVM_MIN_PAIRS, VT_L1_* (lib.sh). Exit: 0 pass, 1 fail,
# 77 skip (no SVM in this QEMU, kvm_amd does not load, no /dev/kvm in L1, no kernel to be had).
echo "test-kvm-collect: record a 2-vCPU guest under real KVM (nested SVM in a TCG L1): kvm clock exact per vCPU and checked by probes, causality over >= 150 control messages, vCPU threads as kvm_exit reports them"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
ME=test-kvm-collect
VT_LOG_PREFIX=$ME
MIN_PAIRS=${VT_KVM_MIN_PAIRS:-150}

vt_kvm_begin
bad() { echo "$ME: FAIL: $*"; fail=1; }
REC=$OUT/rec
VT_L1_ENV="REC_SECS=8
REC_ARGS=\"--sync-probes 24 ${VT_KVM_REC_ARGS:-}\"
${VT_L1_ENV:-}"
vt_kvm_scenario "$HERE/l1/scenario-kvm-collect.sh"; rc=$?
[ $rc = 0 ] || { bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; KEEP=1; echo "$ME: FAIL"; exit 1; }

# 6. record's status and what it left; L2's console and end.
rrc=$(cat "$OUT/record.rc" 2>/dev/null || echo none)
echo "$ME: record exited $rrc"
[ "$rrc" = 0 ] || { sed 's/^/    | /' "$OUT/record.log" | tail -n 30; bad "record exited $rrc, want 0"; }
left=$(grep -c '^virtio-trace-collect' "$OUT/tracefs-instances.after" 2>/dev/null)
[ "${left:-1}" = 0 ] || bad "tracefs instances left in L1: $(tr '\n' ' ' <"$OUT/tracefs-instances.after")"
if [ -f "$OUT/l2-l2-console.log" ]; then
    VT_LOG_IGNORE=$VT_L1_LOG_IGNORE vt_check_console "$OUT/l2-l2-console.log" 2>"$WORK/l2-check.txt" ||
        bad "L2's console: $(head -n 5 "$WORK/l2-check.txt" | tr '\n' ' ')"
    grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after BYE' "$OUT/l2-l2-console.log" ||
        bad "L2's agent did not end cleanly after BYE"
else
    bad "no L2 console came out"
fi
[ -s "$REC/manifest.json" ] && [ -s "$REC/guest-l2.dat" ] && [ -s "$REC/host.dat" ] ||
    { ls -la "$REC" 2>&1 | sed 's/^/    /'; bad "record wrote no manifest, guest-l2.dat or host.dat"; KEEP=1; echo "$ME: FAIL"; exit 1; }
m() { jq -r "$1" "$REC/manifest.json"; }
S='.guests[0].sync'

# 1. The clock: exact, from KVM, each change at its moment.
echo "$ME: check 1: sync method $(m "$S.method") ($(m "$S.why")), bound $(m "$S.bound_ns") ns"
echo "$ME: check 1: changes from $(m "$S.kvm.changes_from"): $(m "$S.kvm.changes") changes," \
     "$(m "$S.epochs | length") epochs, $(m "$S.kvm.events_lost") events lost," \
     "$(m "$S.kvm.changes_not_seen") not seen, $(m "$S.kvm.reordered") reordered, debugfs disagreed on $(m "$S.kvm.debugfs_disagreed") vCPU(s)"
[ "$(m "$S.method")" = kvm ] || bad "the clock method is '$(m "$S.method")', want kvm"
m "$S.why" | grep -q '^KVM debugfs /sys/kernel/debug/kvm/[0-9]*-[0-9]* (exact)' || bad "the method's why does not name KVM's debugfs"
[ "$(m "$S.kvm.changes_from")" = kvm:kvm_write_tsc_offset ] || bad "offset changes from '$(m "$S.kvm.changes_from")', want kvm:kvm_write_tsc_offset"
case "$(m "$S.bound_ns")" in 0|0.0) ;; *) bad "the kvm method's bound is $(m "$S.bound_ns") ns, want 0" ;; esac
[ "$(m "$S.kvm.changes_not_seen")" = 0 ] && [ "$(m "$S.kvm.events_lost")" = 0 ] &&
    [ "$(m "$S.kvm.debugfs_disagreed")" = 0 ] || bad "offset changes lost or unseen: $(m "$S.kvm.note")"
[ "$(m "[$S.epochs[] | select(.source != \"kvm-debugfs\" and .source != \"kvm-event\")] | length")" = 0 ] ||
    bad "epochs of another source than KVM's"
[ "$(m "[$S.epochs[] | select(.source == \"kvm-event\" and .moment != \"exact\")] | length")" = 0 ] ||
    bad "kvm-event epochs whose moment is not exact"
for cpu in 0 1; do
    n=$(m "[$S.epochs[] | select(.cpu == $cpu)] | length")
    [ "$n" -ge 2 ] 2>/dev/null || bad "cpu$cpu has $n epoch(s): KVM moves an L2 vCPU's offset at every load in L1"
done
read -r _ d0 < <(grep '^vcpu0 ' "$OUT/kvm-offsets.before")
read -r _ d1 < <(grep '^vcpu1 ' "$OUT/kvm-offsets.before")
echo "$ME: check 1: KVM debugfs in L1 before the recording: vcpu0 ${d0:-none}, vcpu1 ${d1:-none}"
[ -n "${d0:-}" ] && [ -n "${d1:-}" ] || bad "no tsc-offset in KVM's debugfs for vcpu0 and vcpu1"
[ "${d0:-x}" != "${d1:-x}" ] || bad "KVM's debugfs gives both vCPUs the offset $d0"
# Each vCPU's offset in force at the first moment both have an epoch (the first debugfs read).
at=$(m "[$S.epochs[] | select(.cpu == 0) | .host_tsc_from][0] as \$a | [$S.epochs[] | select(.cpu == 1) | .host_tsc_from][0] as \$b | [\$a, \$b] | max")
o0=$(m "[$S.epochs[] | select(.cpu == 0 and .host_tsc_from <= $at)] | last | .offset")
o1=$(m "[$S.epochs[] | select(.cpu == 1 and .host_tsc_from <= $at)] | last | .offset")
echo "$ME: check 1: offsets at host TSC $at: cpu0 $o0, cpu1 $o1"
[ "$o0" != "$o1" ] || bad "the manifest gives both vCPUs offset $o0 at host TSC $at"

# 2. The probes beside the exact method.
C="$S.check"
echo "$ME: check 2: --sync-check: $(m "$C.bursts") bursts, $(m "$C.replies") replies, $(m "$C.outside") outside," \
     "$(m "$C.straddling") spanning an offset change, $(m "$C.intervals | length") intervals"
[ "$(m "$C.outside")" = 0 ] || bad "$(m "$C.outside") probe replies outside KVM's offsets"
[ "$(m "$C.bursts")" -ge 3 ] 2>/dev/null || bad "only $(m "$C.bursts") check bursts"
# Recomputed: each interval's offset is its epoch's, and lies in [lo, hi].
m "$S as \$s | $C.intervals[] | . as \$i | ([\$s.epochs[] | select(.cpu == \$i.cpu and .host_tsc_from == \$i.epoch_host_tsc_from)] | first | .offset) as \$e
    | \"\(.cpu) \(.offset) \(\$e) \(.lo) \(.hi) \(.replies)\"" >"$WORK/intervals.txt"
for cpu in 0 1; do
    awk -v c="$cpu" '$1 == c {
        n++; r += $6; w = $5 - $4
        if (n == 1 || w < wmin) wmin = w
        if (n == 1 || w > wmax) wmax = w
        if (n == 1 || $2 + 0 < omin + 0) omin = $2
        if (n == 1 || $2 + 0 > omax + 0) omax = $2
        if ($2 != $3) { bad++; print "    interval offset " $2 " is not its epoch'"'"'s " $3 }
        else if (!($4 + 0 <= $2 + 0 && $2 + 0 <= $5 + 0)) { bad++; print "    offset " $2 " outside [" $4 ", " $5 "]" }
    }
    END { printf "cpu%s: %d intervals (%d replies), all offsets in their epoch and inside: %s; offsets %s..%s, interval widths %s..%s ticks\n",
                 c, n, r, bad ? "NO (" bad ")" : "yes", omin, omax, wmin, wmax; exit !(n > 0 && !bad) }' \
        "$WORK/intervals.txt" >"$WORK/iv-$cpu.txt"
    ok=$?
    sed "s/^/$ME: check 2: /" "$WORK/iv-$cpu.txt"
    [ $ok = 0 ] || bad "cpu$cpu: probe intervals missing or not containing the exact offset"
done
m "$C.intervals[:4][] | \"cpu\(.cpu) burst \(.burst): offset \(.offset) in [\(.lo), \(.hi)] (\(.replies) replies)\"" |
    sed "s/^/$ME: check 2:   e.g. /"

# 3. Causality over the merged report (SYNC_PROBE/SYNC_REPLY are not marked).
trace-cmd report -i "$REC/host.dat" -i "$REC/guest-l2.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "trace-cmd report -i host.dat -i guest-l2.dat failed: $(head -n 3 "$WORK/merged.err")"
vt_causality "$WORK/merged.txt" "$WORK/causality.txt"
sed "s/^/$ME: check 3: /" "$WORK/causality.txt" | head -n 20
echo "$ME: check 3: ${PAIRS:-0} control message pairs (want >= $MIN_PAIRS), ${INVERSIONS:-?} inversions (want 0)"
[ "${PAIRS:-0}" -ge "$MIN_PAIRS" ] || bad "only ${PAIRS:-0} control message pairs, want >= $MIN_PAIRS"
[ "${INVERSIONS:-1}" = 0 ] || bad "${INVERSIONS:-?} causality inversions"

# 4. The GUEST option's vCPU -> thread against kvm_exit's vcpu_id and thread.
trace-cmd dump --options "$REC/host.dat" 2>/dev/null | sed -n 's/^ *\([0-9]*\) \([0-9]*\) \[guest cpu, host pid\]$/\1 \2/p' |
    sort -n >"$WORK/guest-option.txt"
trace-cmd report -R -i "$REC/host.dat" 2>/dev/null |
    sed -nE 's/.*-([0-9]+) +\[[0-9]+\] +[0-9.]+: kvm_exit: .*vcpu_id=([0-9]+).*/\2 \1/p' | sort -n | uniq -c >"$WORK/exit-threads.txt"
echo "$ME: check 4: GUEST option: $(tr '\n' ';' <"$WORK/guest-option.txt"); kvm_exit per vcpu_id and thread: $(tr -s ' ' <"$WORK/exit-threads.txt" | tr '\n' ';')"
[ "$(wc -l <"$WORK/guest-option.txt")" = 2 ] || bad "the GUEST option does not list 2 vCPUs"
for cpu in 0 1; do
    gt=$(awk -v c="$cpu" '$1 == c { print $2 }' "$WORK/guest-option.txt")
    et=$(awk -v c="$cpu" '$2 == c { print $3 }' "$WORK/exit-threads.txt" | tr '\n' ' ' | sed 's/ $//')
    qt=$(awk -v c="CPU $cpu/KVM" '{ t = $1; $1 = ""; sub(/^ /, ""); if ($0 == c) print t }' "$OUT/l2-threads")
    [ -n "$gt" ] && [ "$gt" = "$et" ] ||
        bad "cpu$cpu: the GUEST option says thread ${gt:-none}, kvm_exit reports it on thread(s) ${et:-none}"
    [ "${gt:-x}" = "${qt:-y}" ] || bad "cpu$cpu: the GUEST option says thread ${gt:-none}, QEMU's CPU $cpu/KVM is ${qt:-none}"
done

# 5. The guest's events in the merged report.
for cpu in 0 1; do
    n=$(grep -cE "^ *guest-l2\.dat: .* \[00$cpu\] " "$WORK/merged.txt")
    man=$(m ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
    echo "$ME: check 5: cpu$cpu: $n guest events in the merged report, manifest $man"
    [ "$n" -gt 0 ] && [ "$n" = "$man" ] || bad "cpu$cpu: the merged report has $n guest events, the manifest $man"
done
for ev in sched_switch irq_handler_entry hrtimer_start; do
    grep -qE "^ *guest-l2\.dat: .* $ev: " "$WORK/merged.txt" || bad "no guest $ev in the merged report"
done

vt_kvm_end
