#!/bin/bash
# vt-suite: e2e
# test-collect-stall.sh: the host stops reading for 10 s in the middle of a recording. A 2-vCPU
# TCG guest with a 512 KiB ring buffer per CPU writes N paced markers per CPU (RATE/s, about
# 14 s); a second after START the collector is frozen with SIGSTOP for 10 s, then continued.
# The guest must keep running (its flood finishes on time, all N*2 written), the ring buffer
# overwrites, and what was overwritten must be reported, never hidden:
#   - per CPU: events in `trace-cmd report` = manifest = the guest's read_events;
#   - per CPU: the guest's overrun > 0, = the events lost according to the pages' headers
#     (manifest), = the sum of `trace-cmd report`'s "CPU:K [N EVENTS DROPPED]" lines;
#   - markers seen on each CPU are strictly increasing, and the markers missing are covered by
#     the overrun: N - seen <= overrun <= N - seen + 50 (the agent's own few markers);
#   - `virtio-trace-collect report` prints the same overrun and lost-in-pages totals.
# 1 KiB markers at 10000/s: while the host does not read, each port's virtqueue still takes
# up to 128 of the agent's 256 KiB writes (32 MiB), so less would never overrun in 10 s.
# test-fault-stall.sh runs it with a 60 s stall (VT_STALL_SECS, VT_STALL_N, VT_STALL_RATE, ME).
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
N=${VT_STALL_N:-140000} RATE=${VT_STALL_RATE:-10000} STALL=${VT_STALL_SECS:-10}
ME=${VT_STALL_ME:-test-collect-stall}
echo "$ME: the collector frozen for $STALL s mid-recording: the guest runs on, its overruns are counted in the manifest and the report, nothing else is lost"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=$ME

scn_begin
scn_ports pipe
scn_boot

# Freeze the collector itself (timeout's child), not the COMMAND it runs.
freeze() {
    local i pid=
    for ((i = 0; i < 200; i++)); do
        [ -e "$WORK/started" ] && break
        sleep 0.1
    done
    pid=$(pgrep -P "$SCN_COLLECT_PID")
    [ -n "$pid" ] || { bad "no collector process to freeze"; return; }
    sleep 1
    kill -STOP "$pid"
    echo "$ME: collector $pid stopped for $STALL s at $(date +%T.%N | cut -c1-12)"
    sleep "$STALL"
    kill -CONT "$pid"
}
SCN_AFTER_START=freeze
scn_script "$WORK/flood" "!touch '$WORK/started'" "flood vt-stall $N $RATE 1024"
scn_record --chardev-dir "$PORTS" --name e2e --buffer-size 512 -- "$WORK/flood"
answer=$(cat "$WORK/flood.answers" 2>/dev/null)
echo "$ME: flood: $answer"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
[[ $answer == *"ok written=$((2 * N)) "* ]] || bad "the guest did not write all $((2 * N)) markers"
ns=$(sed -n 's/.*ns=\([0-9]*\).*/\1/p' <<<"$answer")
[ "${ns:-0}" -ge $(((N / RATE - 1) * 1000000000)) ] || bad "the flood took ${ns:-?} ns: not paced"
[ "${T_REC%.*}" -ge "$STALL" ] || bad "record took only $T_REC s: the stall did not happen"
scn_end

scn_counts e2e "0 1" lossy
total_ov=0
for cpu in 0 1; do
    ov=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.overrun")
    lip=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .lost_events_in_pages")
    total_ov=$((total_ov + ov))
    # trace-cmd's "CPU:K [N EVENTS DROPPED]" lines, from the pages' lost-event counts.
    dropped=$(sed -n "s/^CPU:$cpu \[\([0-9]*\) EVENTS DROPPED\]/\1/p" "$WORK/guest.txt" | awk '{ s += $1 } END { print s + 0 }')
    # "vt-stall cpuK I" markers on CPU K, in order.
    grep -oE "vt-stall cpu$cpu [0-9]+" "$WORK/guest.txt" | awk '{ print $3 }' >"$WORK/seq$cpu"
    seen=$(wc -l <"$WORK/seq$cpu")
    order=$(awk 'NR > 1 && $1 <= prev { bad++ } { prev = $1 } END { print bad + 0 }' "$WORK/seq$cpu")
    echo "$ME: cpu$cpu: $seen of $N markers seen, overrun $ov, lost in pages $lip," \
         "trace-cmd report: $dropped events dropped; $order out of order"
    [ "$ov" -gt 0 ] || bad "cpu$cpu: no overrun after a $STALL s stall"
    [ "$lip" = "$ov" ] || bad "cpu$cpu: the pages say $lip events were lost, the guest's overrun $ov"
    [ "$dropped" = "$lip" ] || bad "cpu$cpu: trace-cmd report drops $dropped events, the manifest $lip"
    [ "$order" = 0 ] || bad "cpu$cpu: $order markers out of order"
    [ "$((N - seen))" -le "$ov" ] && [ "$ov" -le "$((N - seen + 50))" ] ||
        bad "cpu$cpu: $((N - seen)) markers missing but overrun is $ov"
done
[ "$(scn_m '.guests[0].lost_events.overrun')" = "$total_ov" ] ||
    bad "manifest lost_events.overrun $(scn_m '.guests[0].lost_events.overrun') != per-CPU sum $total_ov"
"$COLLECT" report "$OUT" >"$WORK/report.txt" 2>&1 || bad "virtio-trace-collect report exited $?"
grep -E 'lost events in pages|overrun' "$WORK/report.txt" | sed "s/^ */$ME: report: /"
grep -qE "^ *overrun \(guest ring buffer\): $total_ov\$" "$WORK/report.txt" &&
    grep -qE "^ *lost events in pages: $total_ov\$" "$WORK/report.txt" ||
    bad "virtio-trace-collect report does not show the overrun $total_ov"
scn_result
