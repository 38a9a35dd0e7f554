#!/bin/bash
# vt-suite: e2e
# test-fault-cpuhp.sh: a vCPU goes offline and online again and again during a normal
# recording (events, not mmiotrace). A 2-vCPU TCG guest writes N markers per CPU, then takes
# cpu1 offline and back online CYCLES times (the agent's cpu1 reader sees its CPU vanish and
# return), then writes N more markers per CPU. A bystander guest (vt-fake-agent, see
# fault-lib.sh) records alongside.
#   - record exits 0, no problems for either guest;
#   - per CPU: trace-cmd report = manifest events = the guest's read_events, nothing lost;
#     both batches' markers exactly 0..N-1 on their own CPU, in order;
#   - the guest recorded the hotplugs: cpu1's hotplug thread (cpuhp/1) was switched to at least
#     2 * CYCLES times on cpu1 (the events are sched_switch: the bystander's fixture has no
#     cpuhp events, and a run's events apply to every guest);
#   - the bystander's file is exact; the agent ends after BYE, clean console.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
echo "test-fault-cpuhp: cpu1 offline and online repeatedly while recording: exact counts on both CPUs before and after, every hotplug recorded, a second guest exact"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
. "$HERE/fault-lib.sh"
VT_LOG_PREFIX=test-fault-cpuhp
ME=test-fault-cpuhp
N=2000 CYCLES=6

fl_begin
scn_ports pipe
scn_boot
fl_bystander bys 8 48K || scn_result

online=/sys/devices/system/cpu/cpu1/online
scn_script "$WORK/cmd" "flood vt-pre $N 0 64" \
    "sh i=0; while [ \$i -lt $CYCLES ]; do echo 0 >$online || exit 1; sleep 0.3; echo 1 >$online || exit 1; sleep 0.3; i=\$((i + 1)); done; grep -q 1 $online" \
    "flood vt-post $N 0 64" "!sleep 1"
scn_record --chardev-dir "$PORTS" --name e2e "${BYS_ARGS[@]}" -e sched:sched_switch -- "$WORK/cmd"
sed 's/^/    | /' "$WORK/cmd.answers"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
grep -q 'rc=0' <(sed -n 2p "$WORK/cmd.answers") || bad "the hotplug loop failed"
scn_end

fl_counts e2e "0 1" vt-pre
for cpu in 0 1; do
    eval "seen=\$SEEN_cpu$cpu"
    [ "$seen" = $N ] || bad "cpu$cpu: $seen vt-pre markers, want $N"
    mk=$(grep -cE "\[00$cpu\] .*vt-post cpu$cpu " "$WORK/e2e.txt")
    order=$(grep -oE "vt-post cpu$cpu [0-9]+" "$WORK/e2e.txt" | awk '$3 != NR - 1 { b++ } END { print b + 0 }')
    echo "$ME: e2e cpu$cpu: $mk vt-post markers on cpu$cpu, $order out of place"
    [ "$mk" = $N ] && [ "$order" = 0 ] || bad "cpu$cpu: $mk vt-post markers ($order out of place), want $N"
done
fl_stats e2e "0 1"
hp=$(grep -cE '\[001\] .*sched_switch: .*==> cpuhp/1:' "$WORK/e2e.txt")
echo "$ME: cpu1 switched to cpuhp/1 $hp times"
[ "$hp" -ge $((2 * CYCLES)) ] || bad "cpu1 switched to cpuhp/1 only $hp times for $CYCLES offline/online cycles"
[ -z "$(fl_g e2e '.problems // empty')" ] || bad "e2e has problems: $(fl_g e2e .problems)"
fl_bystander_check bys 8
scn_result
