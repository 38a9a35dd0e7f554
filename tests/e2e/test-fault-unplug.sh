#!/bin/bash
# vt-suite: e2e
# test-fault-unplug.sh: a data port is hot-unplugged mid-recording (QMP device_del of the
# virtserialport trace-path-cpu1). A 2-vCPU TCG guest (256 KiB ring buffers, so that pages
# flow before the unplug) writes N paced markers per CPU; then the test unplugs cpu1's port,
# the guest writes N more per CPU, and the run ends. A bystander guest (vt-fake-agent, see
# fault-lib.sh) records alongside. The agent (vt.agent_keep=1) gets a SIGTERM at the end.
#   - record exits 3; the manifest's problems for e2e name what happened (the agent reports,
#     unasked, that cpu1's data path failed; its count of bytes sent stops at what the port
#     took, so it is never below what arrived), `virtio-trace-collect report` prints
#     them; the bystander has none;
#   - what reached the host is a valid file: per CPU, trace-cmd report = manifest events;
#     cpu1's markers before the unplug have no gap, and some arrived; cpu0, whose port
#     stayed, has both batches exactly (N each, in order);
#   - the bystander's file is exact; the guest kernel stays healthy and powers off.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-fault-unplug: cpu1's data port hot-unplugged mid-recording: what arrived is a valid file, the manifest and report name it, a second guest is exact"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
. "$HERE/fault-lib.sh"
VT_LOG_PREFIX=test-fault-unplug
ME=test-fault-unplug
N=3000

fl_begin
scn_ports pipe
# Give cpu1's port an id for device_del.
for i in "${!SETUP_ARGS[@]}"; do
    [[ ${SETUP_ARGS[$i]} == virtserialport,*name=trace-path-cpu1 ]] && SETUP_ARGS[$i]+=",id=vtport1"
done
[[ " ${SETUP_ARGS[*]} " == *id=vtport1* ]] || { bad "no trace-path-cpu1 port in setup's arguments"; scn_result; }
VT_APPEND="vt.agent_keep=1"
scn_boot
fl_bystander bys 8 48K || scn_result

scn_script "$WORK/cmd" "flood vt-a $N 3000 256" "!sleep 1" \
    "!perl '$WORK/qmp.pl' '$RUN/qmp.sock' '{\"execute\":\"device_del\",\"arguments\":{\"id\":\"vtport1\"}}' >>'$WORK/qmp.log'" \
    "!sleep 1" "flood vt-b $N 0 64" "!sleep 1"
scn_record --chardev-dir "$PORTS" --name e2e "${BYS_ARGS[@]}" --buffer-size 256 --stop-timeout 5 -- "$WORK/cmd"
sed 's/^/    | /' "$WORK/cmd.answers"
grep -q '"return"' "$WORK/qmp.log" || bad "device_del failed: $(cat "$WORK/qmp.log")"
echo "$ME: record log:"; sed 's/^/    | /' "$WORK/record.log"
[ $CRC = 3 ] || bad "record exited $CRC, want 3"
fl_end 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after SIGTERM'

fl_counts e2e "0 1" vt-b
[ "$SEEN_cpu0" = $N ] || bad "cpu0: $SEEN_cpu0 markers after the unplug, want $N"
fl_counts e2e "0 1" vt-a
[ "$SEEN_cpu0" = $N ] || bad "cpu0: $SEEN_cpu0 markers before the unplug, want $N"
[ "$SEEN_cpu1" -ge 1 ] || bad "cpu1: no marker from before the unplug reached the host"
prob=$(fl_g e2e .problems)
echo "$ME: e2e problems: $prob"
[ -n "$prob" ] || bad "the manifest names no problem for e2e"
# The agent says which data path failed (unasked), and its count stops at what the port took.
[[ $prob == *"the agent reported: cpu1: data path failed after "* ]] ||
    bad "the problems do not quote the agent's report of cpu1's failed data path"
ab=$(fl_g e2e '.cpus[] | select(.cpu == 1) | .agent_bytes') hb=$(fl_g e2e '.cpus[] | select(.cpu == 1) | .bytes')
echo "$ME: cpu1: the agent sent $ab bytes, $hb arrived"
[ -n "$ab" ] && [ -n "$hb" ] && [ "$ab" -ge "$hb" ] || bad "cpu1: the agent's count ($ab bytes) is below what arrived ($hb)"
fl_report
grep -F -q "problems: $prob" "$WORK/report.txt" || bad "report does not print e2e's problems"
fl_bystander_check bys 8
scn_result
