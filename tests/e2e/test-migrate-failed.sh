#!/bin/bash
# vt-suite: e2e
# test-migrate-failed.sh: a live migration that fails leaves the recording whole. As
# test-migrate.sh (migrate-lib.sh: two QEMU processes, TCG thread=single), but the destination
# QEMU is killed (SIGKILL) while the migration is under way (its bandwidth held at 4 MiB/s so
# that it lasts), with no collector on the destination. vt-e2e-guest writes VT_MIGRATE_MARKERS
# (3000) markers per vCPU at VT_MIGRATE_RATE (600) per second meanwhile; the source's record
# (--qmp) is stopped with SIGINT once the flood answered. Checks: QMP says failed; record exits
# 0 and its manifest counts one failed migration (direction "none") and has no problem; its
# spool is removed as after any recording; guest-e2e.dat holds every marker exactly once, in
# order, on its own vCPU; overrun 0; events = the guest's read_events; 0 causality inversions.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_MIGRATE_MARKERS, VT_MIGRATE_RATE.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-migrate-failed: a live migration whose destination dies mid-way: the source's recording goes on, every marker once, nothing lost"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/migrate-lib.sh"
VT_LOG_PREFIX=test-migrate-failed
ME=test-migrate-failed
N=${VT_MIGRATE_MARKERS:-3000}
RATE=${VT_MIGRATE_RATE:-600}

mig_begin
mig_boot_src
mig_record src --chardev-dir "$SRC/ports" --name e2e --qmp "$SRC/ports/qmp.sock" -o "$SRC/out" \
    --verbose -e sched -e irq --host-events sched:sched_switch --sync-interval 0.5 --stop-timeout 30
vt_test_say "$SRC/ports" "waiton 60" 70 || bad "the source's agent did not start recording"
echo "$ME: the source records ($ANSWER)"
sleep 1.5
mig_boot_dst
mig_flood "$N" "$RATE"
sleep 1.5
mig_migrate 4194304
mig_wait active 20 || bad "the migration did not become active"
sleep 1
kill -KILL "$DST_QEMU"
echo "$ME: killed the destination QEMU $DST_QEMU mid-way"
mig_wait failed 30 || bad "QMP does not say the migration failed"
exec 8<>"$SRC/ports/vt-test.out"
read -r -t 120 FLOOD <&8 || FLOOD="no answer"
exec 8<&-
echo "$ME: flood: $FLOOD"
[[ $FLOOD == ok* ]] || bad "the flood did not answer ok on the source: $FLOOD"
kill -0 "$REC_PID_src" 2>/dev/null || bad "record on the source ended by itself"
sleep 1
mig_stop_record src
[ "${REC_RC_src:-1}" = 0 ] || { sed 's/^/    src| /' "$WORK/record-src.log"; bad "record exited ${REC_RC_src:-?}, want 0"; }
grep -E 'migration|migrat' "$WORK/record-src.log" | sed "s/^/$ME: record: /" | head -8

vt_test_say "$SRC/ports" quit 30 || bad "vt-e2e-guest did not answer quit"
VT_QEMU_PID=$SRC_QEMU VT_TIMEOUT_PID=$SRC_TPID VT_RUNDIR=$SRC
vt_agent_wait_off 60 || fail=1
mig_console
grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after BYE' "$SRC/console.log" ||
    bad "the guest side did not end cleanly"

S=$SRC/out
MS() { jq -r "$1" "$S/manifest.json"; }
[ -s "$S/manifest.json" ] && [ -s "$S/guest-e2e.dat" ] || { bad "record wrote no files"; mig_result; }
echo "$ME: manifest: $(MS '.guests[0].migration | "direction \(.direction), status \(.status), \(.failures) failed"')"
[ "$(MS '.guests[0].migration.failures')" = 1 ] || bad "the manifest does not count the failed migration"
[ "$(MS '.guests[0].migration.direction')" = none ] || bad "the manifest says the guest migrated"
[ "$(MS '.guests[0].problems')" = "" ] || bad "the manifest has problems: $(MS '.guests[0].problems')"
[ ! -e "$S/.spool" ] || bad "the spool was kept, though no guest migrated"
echo "$ME: epochs: $(MS '[.guests[0].sync.epochs[] | "cpu\(.cpu) offset \(.offset) from \(.host_tsc_from)"] | join("; ")')"

trace-cmd report -i "$S/guest-e2e.dat" >"$WORK/guest.txt" 2>"$WORK/guest.err" ||
    bad "trace-cmd report failed: $(head -3 "$WORK/guest.err")"
mig_markers "$WORK/guest.txt" mig "$N" "0 1"
for cpu in 0 1; do
    eval "f=\$MK_FOUND_$cpu d=\$MK_DUP_$cpu o=\$MK_ORDER_$cpu m=\$MK_MISSING_$cpu e=\$MK_ELSEWHERE_$cpu"
    ov=$(MS ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.overrun + .stats.commit_overrun + .stats.dropped_events")
    rd=$(MS ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.read_events")
    ev=$(MS ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
    echo "$ME: cpu$cpu: $ev events (guest read_events $rd), overrun $ov"
    [ "$f" = "$N" ] && [ "$d" = 0 ] && [ "$o" = 0 ] && [ "$e" = 0 ] ||
        bad "cpu$cpu: $f markers of $N, $d duplicates, $o out of order, $e elsewhere"
    [ "$ov" = 0 ] || bad "cpu$cpu: overrun $ov"
    [ "$rd" = "$ev" ] || bad "cpu$cpu: the guest handed out $rd events, the file has $ev"
done
trace-cmd report -i "$S/host.dat" -i "$S/guest-e2e.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "the merged report failed: $(head -3 "$WORK/merged.err")"
vt_causality "$WORK/merged.txt" "$WORK/causality.txt" '^SYNC_(PROBE|REPLY)$'
sed "s/^/$ME: /" "$WORK/causality.txt" | head -n 8
[ "${PAIRS:-0}" -ge 4 ] || bad "only ${PAIRS:-0} control message pairs"
[ "${INVERSIONS:-1}" = 0 ] || bad "${INVERSIONS:-?} causality inversions"
mig_result
