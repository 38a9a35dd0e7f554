#!/bin/bash
# vt-suite: e2e
# test-collect-hold.sh: record --hold, the flight recorder (issue 40), on a real guest. A 2-vCPU
# TCG guest with 128 KiB ring buffers per CPU (guest and host: --buffer-size 128) writes N paced
# 64-byte markers per CPU (RATE/s, about 6 s) while the collector holds; then the collector gets
# SIGINT, as a user (or the daemon sealing a snapshot) ends a recording. Checks:
#   - while holding, no page reached the host: the spool's data regions are empty after the flood;
#   - exit 0, and `trace-cmd report -i host.dat -i guest-e2e.dat` reads both files;
#   - per CPU: the markers kept are consecutive ("vt-hold cpuK I", I+1, ...) and end at N-1, the
#     last written before the stop: the ring's worth, far fewer than N;
#   - per CPU: events in the report = the manifest's = the guest's read_events, and the guest's
#     overrun covers the markers not kept: N - kept <= overrun <= N - kept + 1000 (the agent's
#     own control-message markers are in the ring too);
#   - manifest.json: held true, the guest's held.overwritten = the overrun, a window_ns > 0;
#     the host's trace held too; `virtio-trace-collect report` reads it.
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1. Exit: 0 pass, 1 fail, 77 skip.
N=${VT_HOLD_N:-30000} RATE=${VT_HOLD_RATE:-5000}
ME=test-collect-hold
echo "$ME: record --hold keeps only the guest's last ring's worth of markers, sent at SIGINT"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=$ME

scn_begin
scn_ports pipe
VT_TCG_SINGLE=1
scn_boot

# Bytes of CPU CPU's region in a spool's data file before its first hole (0: nothing came).
region_bytes() {
    local r
    r=$(sed -n 's/^region=//p' "$1/layout" 2>/dev/null)
    [ -f "$1/data" ] && [ -n "$r" ] || { echo 0; return; }
    perl -e 'my ($f, $r, $c) = @ARGV; open(my $fh, "<", $f) or exit 0;
        my $h = sysseek($fh, $c * $r, 4); print defined $h ? $h - $c * $r : 0' "$1/data" "$r" "$2"
}

# The workload, then SIGINT to the collector itself (timeout's child), as a user would.
hold_run() {
    local pid cpu n b=/sys/kernel/tracing/instances/virtio-trace
    # A new instance starts with tracing on, which the agent turns off while it configures it:
    # the flood waits for the configuration (buffer_size_kb: 128 reads 131, whole sub-buffers),
    # then for START's tracing_on.
    local wait="i=0; until grep -q '^1[0-9][0-9]$' $b/buffer_size_kb 2>/dev/null || [ \$i -ge 60 ]; do"
    vt_test_say "$PORTS" "sh $wait sleep 1; i=\$((i + 1)); done; [ \$i -lt 60 ]" 90 &&
        [ "$ANSWER" = "ok rc=0" ] || { bad "the agent did not size its buffer: $ANSWER"; return; }
    vt_test_say "$PORTS" "waiton 60" 70 || { bad "the agent did not start recording"; return; }
    vt_test_say "$PORTS" "flood vt-hold $N $RATE 64" 120 || bad "no answer to flood"
    echo "$ANSWER" >"$WORK/flood.answer"
    for cpu in 0 1; do
        n=$(region_bytes "$OUT/.spool/guest-e2e" $cpu)
        n=$((n + $(stat -c %s "$OUT/.spool/guest-e2e/cpu$cpu.pages" 2>/dev/null || echo 0)))
        echo "$ME: cpu$cpu: $n bytes spooled after the flood, before the stop"
        [ "$n" = 0 ] || bad "cpu$cpu: $n bytes crossed the port while holding"
    done
    pid=$(pgrep -P "$SCN_COLLECT_PID")
    [ -n "$pid" ] || { bad "no collector process to stop"; return; }
    kill -INT "$pid"
}
SCN_AFTER_START=hold_run
scn_record --chardev-dir "$PORTS" --name e2e --hold --buffer-size 128 \
    --host-events sched:sched_switch
answer=$(cat "$WORK/flood.answer" 2>/dev/null)
echo "$ME: flood: $answer"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $CRC, want 0"; }
[[ $answer == *"ok written=$((2 * N)) "* ]] || bad "the guest did not write all $((2 * N)) markers"
scn_end

scn_counts e2e "0 1" lossy
total_ov=0
for cpu in 0 1; do
    ov=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.overrun")
    total_ov=$((total_ov + ov))
    grep -oE "vt-hold cpu$cpu [0-9]+" "$WORK/guest.txt" | awk '{ print $3 }' >"$WORK/seq$cpu"
    kept=$(wc -l <"$WORK/seq$cpu")
    first=$(head -1 "$WORK/seq$cpu") last=$(tail -1 "$WORK/seq$cpu")
    gaps=$(awk 'NR > 1 && $1 != prev + 1 { bad++ } { prev = $1 } END { print bad + 0 }' "$WORK/seq$cpu")
    echo "$ME: cpu$cpu: kept markers ${first:-none}..${last:-none} ($kept of $N), $gaps gaps, overrun $ov"
    [ "$kept" -gt 0 ] && [ "$kept" -lt $((N / 4)) ] || bad "cpu$cpu: $kept of $N markers kept"
    [ "$gaps" = 0 ] || bad "cpu$cpu: the kept markers are not consecutive"
    [ "${last:-}" = $((N - 1)) ] || bad "cpu$cpu: the last marker kept is ${last:-none}, want $((N - 1))"
    # Beside the markers, the ring took the agent's own (a tx marker per META chunk of the
    # bundle it sends once the guest records): a few hundred at most.
    [ "$((N - kept))" -le "$ov" ] && [ "$ov" -le "$((N - kept + 1000))" ] ||
        bad "cpu$cpu: $((N - kept)) markers not kept but overrun is $ov"
done
trace-cmd report -i "$OUT/host.dat" -i "$OUT/guest-e2e.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "merged trace-cmd report failed: $(head -3 "$WORK/merged.err")"
# (trace-cmd 3.1.6 leaves the file's name off the first lines it prints of a file.)
merged=$(grep -cE "vt-hold cpu[01] [0-9]+" "$WORK/merged.txt")
echo "$ME: the merged report: $merged guest markers, $(grep -c '^ *host\.dat: ' "$WORK/merged.txt") host events"
[ "$merged" = "$(cat "$WORK/seq0" "$WORK/seq1" | wc -l)" ] || bad "the merged report has $merged markers"
[ "$(scn_m .held)" = true ] || bad "manifest: held is $(scn_m .held)"
[ "$(scn_m .guests[0].held.overwritten)" = "$total_ov" ] ||
    bad "manifest: held.overwritten $(scn_m .guests[0].held.overwritten), the overrun $total_ov"
w=$(scn_m .guests[0].held.window_ns)
echo "$ME: manifest: held window $w ns, host held $(scn_m '.host.held.overwritten') overwritten"
[ "$w" != null ] && [ "${w%.*}" -gt 0 ] || bad "manifest: held.window_ns $w"
[ "$(scn_m '.host.held | type')" = object ] || bad "manifest: the host's trace is not held"
"$COLLECT" report "$OUT" >"$WORK/report.txt" 2>&1 || bad "virtio-trace-collect report exited $?"
scn_result
