#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-migrate.sh: a guest under real KVM traced across a live migration. Inside L1 (nested
# SVM under TCG, see test-kvm-collect.sh) two QEMUs run the guest under KVM, the destination
# started with -incoming; a collector records each side with --sync kvm (the source's offsets
# from its VM's debugfs and kvm_write_tsc_offset, the destination's from its own), the source's
# HMP migrates the guest over a unix socket while vt-e2e-guest writes VT_MIGRATE_MARKERS (4000)
# numbered markers per vCPU at VT_MIGRATE_RATE (300) per second on both vCPUs
# (tests/e2e/l1/scenario-kvm-migrate.sh); `join SRC DST -o OUT` makes one guest file (in L1,
# where the spools are).
# Checks, the TCG test's (test-migrate.sh) and the clock's under KVM:
#  1. both records exit 0, no problems; the source marks the guest migrated out, the destination
#     took the session over (resume marks on both vCPUs); the flood ended ok on the destination;
#  2. both sides: clock method kvm, changes from kvm:kvm_write_tsc_offset, none lost or unseen,
#     debugfs agreed at the stop, bound 0, --sync-check's probes all inside; the destination's
#     offsets are its own VM's: the guest TSC at the destination's RESUME (by its first epoch)
#     is within the blackout and 500 ms of the guest TSC at the source's STOP (by the
#     source's): QEMU carries the guest TSC over;
#  3. join: a blackout > 0, epochs of both sides on each vCPU, no byte lost;
#  4. every marker exactly once, in order, on its vCPU; nothing overrun; counts agree;
#  5. the three files convert the host TSC alike; 0 causality inversions on either side;
#     `trace-cmd report -i SRC/host.dat -i DST/host.dat -i OUT/guest-e2e.dat` in time order;
#     markers on both sides of the switchover on each vCPU.
# Env: VT_KEEP=1 keeps the work dir, VT_KVM_REC_ARGS adds record options. Exit: 0, 1, 77 skip.
echo "test-kvm-migrate: a KVM guest migrated live between two QEMUs while it writes markers: both sides' clocks exact from KVM, one joined trace, every marker once and in order"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/migrate-lib.sh"
ME=test-kvm-migrate
VT_LOG_PREFIX=$ME
N=${VT_MIGRATE_MARKERS:-4000}
RATE=${VT_MIGRATE_RATE:-300}

vt_kvm_begin
VT_L1_TIMEOUT=${VT_L1_TIMEOUT:-900}
VT_L1_ENV="MIG_MARKERS=$N
MIG_RATE=$RATE
REC_ARGS=\"${VT_KVM_REC_ARGS:-}\"
${VT_L1_ENV:-}"
vt_kvm_scenario "$HERE/l1/scenario-kvm-migrate.sh"; rc=$?
[ $rc = 0 ] || { bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; mig_result; }

S=$OUT/src D=$OUT/dst J=$OUT/join
MS() { jq -r "$1" "$S/manifest.json"; }
MD() { jq -r "$1" "$D/manifest.json"; }
MJ() { jq -r "$1" "$J/manifest.json"; }
left=$(grep -c '^virtio-trace-collect' "$OUT/tracefs-instances.after" 2>/dev/null)
[ "${left:-1}" = 0 ] || bad "tracefs instances left in L1: $(tr '\n' ' ' <"$OUT/tracefs-instances.after")"
for c in "$OUT"/l2-*-console.log; do
    kbad=$(tr -d '\r' <"$c" | grep -anE 'BUG:|WARNING:|Kernel panic|Oops|general protection fault|soft lockup|hung_task|VT-INIT: error' |
           grep -vE "$VT_L1_LOG_IGNORE" | head -n 5)
    [ -z "$kbad" ] || bad "$(basename "$c"): $(tr '\n' ' ' <<<"$kbad")"
done

# 1. The two recordings.
for side in src dst; do
    r=$(cat "$OUT/record-$side.rc" 2>/dev/null || echo none)
    echo "$ME: check 1: record on the $side exited $r"
    [ "$r" = 0 ] || { sed "s/^/    $side| /" "$OUT/record-$side.log" | tail -n 30; bad "record on the $side exited $r, want 0"; }
done
[ -s "$S/manifest.json" ] && [ -s "$D/manifest.json" ] || { bad "a record wrote no manifest"; mig_result; }
echo "$ME: check 1: flood: $(cat "$OUT/flood.answer")"
grep -q '^ok' "$OUT/flood.answer" || bad "the flood did not answer ok on the destination"
echo "$ME: check 1: $(grep -a '^Migration status\|^total time\|^downtime' "$OUT/migrate.txt" | tail -n 3 | tr -d '\r' | tr '\n' ' ')"
echo "$ME: check 1: source: $(MS '.guests[0].migration | "\(.direction) \(.status), at \(.migrated_out_at_ns) ns, QEMU downtime \(.qemu_downtime_ms) ms"')"
[ "$(MS '.guests[0].migration.direction')" = out ] || bad "the source's manifest does not mark the guest migrated out"
[ "$(MS '.guests[0].problems')" = "" ] || bad "the source's manifest has problems: $(MS '.guests[0].problems')"
echo "$ME: check 1: destination: $(MD '.guests[0].migration | "\(.direction) \(.status), taken over at \(.taken_over_at_ns) ns"')"
[ "$(MD '[.guests[0].migration.cpus[] | select(.resume_mark)] | length')" = 2 ] || bad "the destination did not see a resume mark on both CPUs"
[ "$(MD '.guests[0].problems')" = "" ] || bad "the destination's manifest has problems: $(MD '.guests[0].problems')"

# 2. The clocks: KVM's on both sides.
Sy='.guests[0].sync'
for side in src dst; do
    m=$S
    [ $side = dst ] && m=$D
    M() { jq -r "$1" "$m/manifest.json"; }
    echo "$ME: check 2: $side: method $(M "$Sy.method"), changes from $(M "$Sy.kvm.changes_from"): $(M "$Sy.kvm.changes") changes," \
         "$(M "$Sy.epochs | length") epochs, $(M "$Sy.kvm.events_lost") lost, $(M "$Sy.kvm.changes_not_seen") unseen," \
         "$(M "$Sy.kvm.reordered") reordered, debugfs disagreed on $(M "$Sy.kvm.debugfs_disagreed"), bound $(M "$Sy.bound_ns") ns;" \
         "check: $(M "$Sy.check.replies") replies, $(M "$Sy.check.outside") outside"
    [ "$(M "$Sy.method")" = kvm ] || bad "$side: the clock method is '$(M "$Sy.method")', want kvm"
    [ "$(M "$Sy.kvm.changes_from")" = kvm:kvm_write_tsc_offset ] || bad "$side: offset changes from '$(M "$Sy.kvm.changes_from")'"
    [ "$(M "$Sy.kvm.events_lost")" = 0 ] && [ "$(M "$Sy.kvm.changes_not_seen")" = 0 ] &&
        [ "$(M "$Sy.kvm.debugfs_disagreed")" = 0 ] || bad "$side: offset changes lost or unseen: $(M "$Sy.kvm.note")"
    case "$(M "$Sy.bound_ns")" in 0|0.0) ;; *) bad "$side: bound $(M "$Sy.bound_ns") ns, want 0" ;; esac
    [ "$(M "$Sy.check.outside")" = 0 ] && [ "$(M "$Sy.check.replies")" -gt 0 ] 2>/dev/null ||
        bad "$side: --sync-check: $(M "$Sy.check.outside") of $(M "$Sy.check.replies") replies outside"
done
# The guest TSC across the move: at the source's STOP (QMP, host TSC) by the source's epochs,
# at the destination's RESUME by the destination's. QEMU carries the guest TSC over; an offset
# taken from the wrong VM (or none taken at the switchover) makes the two differ by seconds or
# anything. The STOP and RESUME stamps are the collectors' receipt of QMP's events, late by up to
# 150 ms in L1 (five runs: the guest TSC moved -145 to +2 ms over blackouts of 185-351 ms), so
# the bound is the blackout and 500 ms.
stop=$(MS '.guests[0].migration.host_tsc.stop') resume=$(MD '.guests[0].migration.host_tsc.resume')
KHZ=$(MS '.host_tsc.khz')
for cpu in 0 1; do
    so=$(MS "[$Sy.epochs[] | select(.cpu == $cpu and .host_tsc_from <= $stop)] | last | .offset")
    # The destination's mapping begins at its takeover, its first epoch holding from before.
    dof=$(MD "[$Sy.epochs[] | select(.cpu == $cpu)] | min_by(.host_tsc_from) | .offset")
    read -r held moved < <(awk -v s="$stop" -v r="$resume" -v a="$so" -v b="$dof" -v k="$KHZ" \
        'BEGIN { printf "%.3f %.3f\n", (r - s) / k, ((r + b) - (s + a)) / k }')
    echo "$ME: check 2: cpu$cpu: offset $so at the source's STOP, $dof at the destination's RESUME" \
         "$held ms later: the guest TSC moved $moved ms"
    awk -v h="$held" -v m="$moved" 'BEGIN { exit !(h > 0 && m < h + 500 && m > -h - 500) }' ||
        bad "cpu$cpu: the guest TSC moved $moved ms over a blackout of $held ms (QEMU carries it over: want less than the blackout and 500 ms)"
done
echo "$ME: check 2: KVM's debugfs: source $(tr '\n' ' ' <"$OUT/kvm-offsets-src"), destination $(tr '\n' ' ' <"$OUT/kvm-offsets-dst")"

cp "$OUT/join.log" "$WORK/join.log" 2>/dev/null
# 3-5. The join (run in L1), every marker once and in order, one timeline.
mig_check_joined "$S" "$D" "$J" "$N" "$(cat "$OUT/join.rc" 2>/dev/null || echo none)"
# Markers on both sides of the switchover (in the three-file report: host time).
from=$(MJ '.join.blackout.from_ns') to=$(MJ '.join.blackout.to_ns')
for cpu in 0 1; do
    read -r before after < <(awk -v c="$cpu" -v from="$from" -v to="$to" '/guest-e2e\.dat:.* mig cpu[0-9]+ [0-9]+/ {
            if (index($0, sprintf("[%03d]", c)) == 0) next
            for (j = 2; j < NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) break
            t = substr($j, 1, length($j) - 1) * 1e9
            if (t < from) b++; else if (t > to) a++ }
        END { printf "%d %d\n", b, a }' "$WORK/story.txt")
    echo "$ME: check 5: cpu$cpu: $before markers before the blackout, $after after it"
    [ "$before" -gt 0 ] && [ "$after" -gt 0 ] || bad "cpu$cpu: the markers do not straddle the switchover ($before before, $after after)"
done

echo "$ME: timings: image $T_IMAGE s, L1 run $VT_L1_SECS s"
mig_result
