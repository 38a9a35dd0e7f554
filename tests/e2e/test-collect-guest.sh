#!/bin/bash
# vt-suite: e2e
# test-collect-guest.sh: virtio-trace-collect records a real guest end to end. A 2-vCPU TCG guest
# (thread=single, for the clock) boots with the port arguments `virtio-trace-collect setup
# --format qemu` prints (pipe backend), so that snippet is what gets tested; its /init starts
# the static trace-agent as a daemon (--once) and vt-e2e-guest, which answers the host on an
# extra port "vt-test". The host runs `virtio-trace-collect record -e sched -e irq -e timer
# --host-events sched:sched_switch -- FLOOD`, FLOOD asking vt-e2e-guest for N pinned trace_marker
# writes per CPU. Checks: exit 0; `trace-cmd report -i host.dat -i guest-e2e.dat` shows guest
# sched/irq/timer events with their fields and exactly N markers per CPU, each on its own CPU;
# per-CPU events in the guest file = the manifest's events = the guest's own stats
# (read_events - events lost in pages); zero lost/overrun; and causality: every control
# message's tx precedes its rx in the merged timeline (host tx -> guest rx, guest tx -> host rx):
# pairs and inversions are counted and printed, zero inversions required. Clean console,
# the agent exits after BYE, the guest powers off.
# Env: VT_BUILDDIR (default <repo>/build), VT_STATIC_AGENT, VT_E2E_MARKERS (default 2000),
# VT_KEEP=1 keeps the work dir; VT_COLLECT (a collector to run instead of the build's) and
# VT_AGENT_ROOT (a tree such as the unpacked trace-agent .deb, put into the guest image instead
# of the build's agent): scripts/test.sh runs it so with the installed Debian packages.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-guest: virtio-trace-collect records a TCG guest's events through setup-made ports: exact markers, counts equal to manifest and guest stats, causally ordered control messages"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-guest
ME=test-collect-guest
N=${VT_E2E_MARKERS:-2000}

scn_begin
scn_ports pipe
VT_TCG_SINGLE=1
scn_boot

# The workload runs as record's COMMAND: it starts after START and its end stops the recording;
# then a quiet stretch: guest timer/sched events, and a probe burst inside the window.
scn_script "$WORK/flood" "flood vt-e2e $N 0 64" "!sleep 1.2"
scn_record --chardev-dir "$PORTS" --name e2e -e sched -e irq -e timer \
    --host-events sched:sched_switch --sync-interval 0.5 -- "$WORK/flood"
echo "$ME: flood: $(cat "$WORK/flood.answers" 2>/dev/null)"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
scn_end
[ -s "$OUT/manifest.json" ] && [ -s "$OUT/guest-e2e.dat" ] && [ -s "$OUT/host.dat" ] ||
    { bad "record wrote no files"; scn_result; }

# Per-CPU events: report = manifest = guest stats, nothing lost; exactly N markers per CPU.
scn_counts e2e "0 1"
trace-cmd report -i "$OUT/host.dat" -i "$OUT/guest-e2e.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "merged trace-cmd report failed: $(head -3 "$WORK/merged.err")"
for cpu in 0 1; do
    merged=$(grep -cE "^ *guest-e2e\.dat: .* \[00$cpu\] " "$WORK/merged.txt")
    man=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
    echo "$ME: cpu$cpu: $merged guest events in the merged report"
    [ "$merged" = "$man" ] || bad "cpu$cpu: the merged report has $merged guest events, the manifest $man"
    mk=$(grep -cE "\[00$cpu\] .*vt-e2e cpu$cpu " "$WORK/guest.txt")
    mkother=$(grep -E "vt-e2e cpu$cpu " "$WORK/guest.txt" | grep -cvE "\[00$cpu\] ")
    echo "$ME: cpu$cpu: markers $mk on cpu$cpu, $mkother elsewhere"
    [ "$mk" = "$N" ] && [ "$mkother" = 0 ] || bad "cpu$cpu: $mk markers on cpu$cpu and $mkother elsewhere, want $N and 0"
done
for ev in sched_switch sched_wakeup irq_handler_entry hrtimer_start; do
    grep -qE "$ev: " "$WORK/guest.txt" || bad "no guest $ev event"
done
grep -qE 'sched_switch: +.*prev_pid=[0-9]+ .*==> .*next_pid=[0-9]+' "$WORK/guest.txt" ||
    grep -qE 'sched_switch: .*:[0-9]+ \[[0-9]+\] [A-Z+]+ ==> .*:[0-9]+ \[[0-9]+\]' "$WORK/guest.txt" ||
    bad "guest sched_switch has no decoded fields"
grep -qE 'vt-e2e cpu0 ' "$WORK/merged.txt" || bad "the merged report lacks the guest markers"
grep -qE 'sched_switch' <(grep -v 'e2e' "$WORK/merged.txt") || bad "the merged report lacks host sched_switch"

# Causality in the merged timeline. Lines: "FILE: COMM-PID [CCC] TS: print: ... virtio-trace: tx TYPE SEQ",
# FILE being host.dat or guest-e2e.dat. Every message has its own seq: a pair is one (TYPE, SEQ)
# sent by one side and received by the other. The guest traces only between START and STOP, so
# --sync-interval puts probe bursts (SYNC_BEGIN/SYNC_END, their OKs) inside the window.
vt_causality "$WORK/merged.txt" "$WORK/causality.txt"
sed "s/^/$ME: /" "$WORK/causality.txt"
pairs=$PAIRS inv=$INVERSIONS
[ "${pairs:-0}" -ge 4 ] || bad "only ${pairs:-0} control message pairs in the merged report"
[ "${inv:-1}" = 0 ] || bad "$inv causality inversions"
echo "$ME: sync $(scn_m '.guests[0].sync.method') bound $(scn_m '.guests[0].sync.bound_ns') ns"
scn_result
