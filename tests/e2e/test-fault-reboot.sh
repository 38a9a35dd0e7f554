#!/bin/bash
# vt-suite: e2e
# test-fault-reboot.sh: the guest is reset (QMP system_reset) mid-recording and boots again.
# A 2-vCPU TCG guest (booted without -no-reboot, the agent serving one collector after
# another: vt.agent_keep=1) writes N markers per CPU; then the test resets it through QEMU's
# monitor, waits for it to come back (vt-e2e-guest answers again) and ends the run. The
# collector follows the guest's QMP socket (--qmp). A bystander guest (vt-fake-agent, see
# fault-lib.sh) records alongside.
#   - record exits 3; the manifest's problems for e2e say the guest was reset, and
#     `virtio-trace-collect report` prints them; the bystander has none;
#   - what reached the host before the reset is a valid file: per CPU, trace-cmd report =
#     manifest events, markers 0..n-1 with no gap, at least one per CPU;
#   - the bystander's file is exact;
#   - the guest boots again cleanly (no BUG/WARNING/lockup), its new agent ends on SIGTERM.
# VT_FAULT_NO_QMP=1: record without --qmp; then the restarted agent's refusal of the stop
# ("send HELLO first") is the problem named.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-fault-reboot: the guest reset mid-recording: what it sent is a valid file, the manifest and report name the reset, a second guest is exact"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
. "$HERE/fault-lib.sh"
VT_LOG_PREFIX=test-fault-reboot
ME=test-fault-reboot
N=20000

fl_begin
scn_ports pipe
VT_NO_REBOOT=0 VT_APPEND="vt.agent_keep=1"
scn_boot
fl_bystander bys 8 48K || scn_result

scn_script "$WORK/cmd" "flood vt-boot $N 0 64" "!sleep 1" \
    "!perl '$WORK/qmp.pl' '$RUN/qmp.sock' '{\"execute\":\"system_reset\"}' >>'$WORK/qmp.log'" \
    "!sleep 2" "hello" "!sleep 1"
QMP_ARGS=(--qmp "$PORTS/qmp.sock") WANT=reset
[ "${VT_FAULT_NO_QMP:-0}" = 1 ] && QMP_ARGS=() WANT="refused the stop"
scn_record --chardev-dir "$PORTS" --name e2e "${QMP_ARGS[@]}" "${BYS_ARGS[@]}" --stop-timeout 30 -- "$WORK/cmd"
# The reset is named at once (QMP), or the new agent refuses the stop: no stop timeout.
[ "${T_REC%.*}" -lt 30 ] || bad "record took $T_REC s: it waited for the stop timeout"
sed 's/^/    | /' "$WORK/cmd.answers"
grep -q '"return"' "$WORK/qmp.log" || bad "system_reset failed: $(cat "$WORK/qmp.log")"
[ $CRC = 3 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 3"; }
boots=$(tr -d '\r' <"$RUN/console.log" | grep -ac 'VT-INIT: ready')
[ "$boots" = 2 ] || bad "the guest booted $boots times, want 2"
fl_end 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after SIGTERM'

fl_counts e2e "0 1" vt-boot
for cpu in 0 1; do
    eval "seen=\$SEEN_cpu$cpu"
    [ "$seen" -ge 1 ] && [ "$seen" -le $N ] || bad "cpu$cpu: $seen markers reached the host, want 1..$N"
done
prob=$(fl_g e2e .problems)
echo "$ME: e2e problems: $prob"
[[ $prob == *"$WANT"* ]] || bad "the manifest's problems for e2e do not say '$WANT': '$prob'"
fl_report
grep -F -q "problems: $prob" "$WORK/report.txt" || bad "report does not print e2e's problems"
fl_bystander_check bys 8
scn_result
