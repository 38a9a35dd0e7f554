#!/bin/bash
# vt-suite: e2e
# test-fault-agent-kill.sh: the agent is SIGKILLed in the guest mid-recording. A 2-vCPU TCG
# guest (256 KiB ring buffers, so that pages flow before the kill) writes N paced 256-byte
# markers per CPU; once they are written the test kills trace-agent with
# SIGKILL (from the guest's shell), writes N more markers nobody reads, and ends the run.
# A bystander guest (vt-fake-agent, see fault-lib.sh) records alongside.
#   - record exits 3; the manifest's problems for e2e name the unanswered stop, and
#     `virtio-trace-collect report` prints them; the bystander has none;
#   - what reached the host is a valid file: per CPU, trace-cmd report = manifest events, and
#     the markers seen are in order, none missing (every full page the agent sent before it
#     died);
#     at least one marker per CPU, none of the second batch's;
#   - the bystander's file is exact;
#   - the guest kernel stays healthy (no BUG/WARNING/lockup) and powers off; the killed
#     agent's exit status is 137.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-fault-agent-kill: trace-agent SIGKILLed in the guest: what it sent is a valid file, the manifest and report name the failure, a second guest is exact"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
. "$HERE/fault-lib.sh"
VT_LOG_PREFIX=test-fault-agent-kill
ME=test-fault-agent-kill
N=3000

fl_begin
scn_ports pipe
scn_boot
fl_bystander bys 8 48K || scn_result

scn_script "$WORK/cmd" "flood vt-kill $N 3000 256" "!sleep 1" \
    "sh kill -KILL \$(pidof trace-agent)" "flood vt-late $N 0 64" "!sleep 1"
scn_record --chardev-dir "$PORTS" --name e2e "${BYS_ARGS[@]}" --buffer-size 256 --stop-timeout 4 -- "$WORK/cmd"
sed 's/^/    | /' "$WORK/cmd.answers"
[ $CRC = 3 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 3"; }
fl_end 'E2E: vt-e2e-guest rc=0, trace-agent exit status 137 '

fl_counts e2e "0 1" vt-kill
for cpu in 0 1; do
    eval "seen=\$SEEN_cpu$cpu"
    [ "$seen" -ge 1 ] && [ "$seen" -le $N ] || bad "cpu$cpu: $seen markers reached the host, want 1..$N"
done
grep -q 'vt-late' "$WORK/e2e.txt" && bad "markers written after the kill are in the file"
prob=$(fl_g e2e .problems)
echo "$ME: e2e problems: $prob"
[[ $prob == *stop* ]] || bad "the manifest's problems for e2e do not name the stop: '$prob'"
fl_report
grep -F -q "problems: $prob" "$WORK/report.txt" || bad "report does not print e2e's problems"
fl_bystander_check bys 8
scn_result
