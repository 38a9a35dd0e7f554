#!/bin/bash
# vt-suite: e2e
# test-migrate.sh: a guest traced across a live migration, under TCG (thread=single). Two QEMU
# processes on this machine (migrate-lib.sh): the source boots the collector e2e image, the
# destination waits with the same devices on ports of its own and -incoming unix:WORK/mig.sock.
# `record --qmp` records the source; `record --incoming --qmp` waits on the destination's ports.
# While vt-e2e-guest writes VT_MIGRATE_MARKERS (8000) numbered markers per vCPU at
# VT_MIGRATE_RATE (800) per second on both vCPUs (10 s), the test migrates the guest over the unix
# socket with QMP `migrate`. The source's record ends by itself (QMP MIGRATION completed, its
# ports drained); the destination's is stopped once the flood answered (on the destination's
# port; an answer on the source's port means the flood ended before the switchover, which
# fails as that: with 4000 markers (5 s) the migration, asked 2 s in, took 3.1 s and more). `join SRC DST -o OUT` makes one guest file. Checks:
#  - both records exit 0; the source's manifest marks the guest "migrated out" at a time, with
#    its last page per CPU; the destination's took the session over (resume marks on every CPU);
#  - the joined file holds every marker exactly once, in order, on its own vCPU, none lost; the
#    guest's ring buffer lost nothing (overrun 0), and join dropped or lost no byte it did not
#    count; per CPU, events in the joined file = the guest's read_events (its final stats);
#  - causality, on each side: the source's host.dat + the joined file before the switchover
#    (0 inversions), the destination's after it (no inversion wider than the destination's
#    stated clock bound: its first probes run on a cold guest whose control port answers late);
#  - the joined manifest records the blackout (> 0, and QEMU's downtime), an epoch per side;
#  - `trace-cmd report -i SRC/host.dat -i DST/host.dat -i OUT/guest-e2e.dat` reads all three in
#    time order; the lines around the switchover are printed;
#  - the guest trigger lives on after the takeover (issue 40): both records watch
#    sched:sched_process_exec of /run/vt-mig-trig (--trigger-guest-filter); the destination says
#    it watches again after the takeover, and one exec of it there is exactly one trigger taken
#    and no TRIGGER ignored.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_MIGRATE_MARKERS, VT_MIGRATE_RATE.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-migrate: a TCG guest migrated live between two QEMUs while it writes markers: one joined trace, every marker once and in order, no inversions, the blackout recorded"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/migrate-lib.sh"
VT_LOG_PREFIX=test-migrate
ME=test-migrate
N=${VT_MIGRATE_MARKERS:-8000}
RATE=${VT_MIGRATE_RATE:-800}

mig_begin
mig_boot_src
TRIG=sched:sched_process_exec
REC=(--verbose -e sched -e irq --host-events sched:sched_switch --sync-interval 0.5 --stop-timeout 30
     --trigger-guest-filter "$TRIG if filename ~ \"*/vt-mig-trig\"")
mig_record src --chardev-dir "$SRC/ports" --name e2e --qmp "$SRC/ports/qmp.sock" -o "$SRC/out" "${REC[@]}"
vt_test_say "$SRC/ports" "waiton 60" 70 || bad "the source's agent did not start recording"
echo "$ME: the source records ($ANSWER)"
sleep 1.5
mig_boot_dst
mig_record dst --chardev-dir "$DST/ports" --name e2e --incoming --qmp "$DST/ports/qmp.sock" -o "$DST/out" "${REC[@]}"

# The flood: asked on the source's port, answered on the destination's.
mig_flood "$N" "$RATE"
sleep 2
mig_migrate
mig_wait completed 90 || bad "the migration did not complete"
mig_yield_src
echo "$ME: migration took $(vt_secs "$MIG_T1" "$MIG_T2") s (asked to seen completed)"
mig_flood_answer

mig_wait_record src 60
[ "${REC_RC_src:-1}" = 0 ] || { sed 's/^/    src| /' "$WORK/record-src.log"; bad "record on the source exited ${REC_RC_src:-?}, want 0"; }
# The agent answers the destination once it has sent what it owed the source (a metadata
# bundle under way at the switchover goes out first, into the destination's port).
mig_wait_log dst 'recording again, on this host' 120 || bad "the destination did not take the session over in 120 s"
# Its metadata (once its clock has an epoch), then a few of its periodic probe bursts (every
# 0.5 s), as on the source: the first ran right after the takeover, on a guest whose TCG
# translations were all new.
mig_wait_log dst 'META_REQ answered' 180 || bad "the destination did not fetch the metadata in 180 s"
grep -q "guest e2e: watching $TRIG again after the takeover" "$WORK/record-dst.log" ||
    bad "the destination did not say it watches $TRIG again after the takeover"
# An exec the watch's filter takes (busybox, by another name: the exec is what matches).
vt_test_say "$DST/ports" "sh ln -sf /bin/sh /run/vt-mig-trig && /run/vt-mig-trig -c :" 30 ||
    bad "vt-e2e-guest did not answer sh on the destination"
mig_wait_log dst "trigger: $TRIG at guest time" 30 || bad "no trigger on the destination within 30 s of the exec"
sleep 3
mig_stop_record dst
[ "${REC_RC_dst:-1}" = 0 ] || { sed 's/^/    dst| /' "$WORK/record-dst.log"; bad "record on the destination exited ${REC_RC_dst:-?}, want 0"; }
t_taken=$(grep -c "trigger: $TRIG at guest time" "$WORK/record-dst.log")
t_ignored=$(grep -c "TRIGGER .* ignored" "$WORK/record-dst.log")
echo "$ME: destination: $t_taken trigger(s) taken, $t_ignored TRIGGER warning(s)"
[ "$t_taken" = 1 ] && [ "$t_ignored" = 0 ] ||
    { grep -E 'trigger|TRIGGER|watch' "$WORK/record-dst.log" | sed 's/^/    dst| /'; bad "the destination took $t_taken triggers ($t_ignored ignored), want 1 (0)"; }

vt_test_say "$DST/ports" quit 30 || bad "vt-e2e-guest did not answer quit on the destination"
VT_QEMU_PID=$DST_QEMU VT_TIMEOUT_PID=$DST_TPID VT_RUNDIR=$DST
vt_agent_wait_off 60 || fail=1
mig_qmp src "cmd('quit')" >/dev/null 2>&1
mig_console
grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after BYE' "$DST/console.log" ||
    bad "the guest side did not end cleanly on the destination"

S=$SRC/out D=$DST/out J=$WORK/join
MS() { jq -r "$1" "$S/manifest.json"; }
MD() { jq -r "$1" "$D/manifest.json"; }
MJ() { jq -r "$1" "$J/manifest.json"; }
[ -s "$S/manifest.json" ] && [ -s "$D/manifest.json" ] || { bad "a record wrote no manifest"; mig_result; }
echo "$ME: source: $(MS '.guests[0].migration | "\(.direction) \(.status), at \(.migrated_out_at_ns) ns, QEMU downtime \(.qemu_downtime_ms) ms"')"
echo "$ME: source: last page per CPU: $(MS '[.guests[0].migration.cpus[] | "cpu\(.cpu) \(.pages) pages, last at \(.last_page_ts)"] | join("; ")')"
[ "$(MS '.guests[0].migration.direction')" = out ] || bad "the source's manifest does not mark the guest migrated out"
[ "$(MS '.guests[0].migration.migrated_out_at_ns')" -gt 0 ] 2>/dev/null || bad "the source's manifest has no time of the migration"
[ "$(MS '.guests[0].problems')" = "" ] || bad "the source's manifest has problems: $(MS '.guests[0].problems')"
echo "$ME: destination: $(MD '.guests[0].migration | "\(.direction) \(.status), resumed at \(.resumed_at_ns) ns, taken over at \(.taken_over_at_ns) ns, \(.stale_messages) stale messages"')"
echo "$ME: destination: marks: $(MD '[.guests[0].migration.cpus[] | "cpu\(.cpu) at \(.mark_position) (\(.bytes_before_mark) bytes before)"] | join("; ")')"
[ "$(MD '[.guests[0].migration.cpus[] | select(.resume_mark)] | length')" = 2 ] || bad "the destination did not see a resume mark on both CPUs"
[ "$(MD '.guests[0].problems')" = "" ] || bad "the destination's manifest has problems: $(MD '.guests[0].problems')"
for m in "$S" "$D"; do
    echo "$ME: epochs ($(basename "$(dirname "$m")")): $(jq -r '[.guests[0].sync.epochs[] | "cpu\(.cpu) offset \(.offset) from \(.host_tsc_from) (\(.source), bound \(.bound_ns) ns)"] | join("; ")' "$m/manifest.json")"
done

"$COLLECT" join "$S" "$D" -o "$J" >"$WORK/join.log" 2>&1
mig_check_joined "$S" "$D" "$J" "$N" $?
mig_result
