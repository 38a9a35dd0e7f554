#!/bin/bash
# vt-suite: e2e
# test-collect-live.sh: record --live with a real guest. A 2-vCPU TCG guest (thread=single, for the
# clock) boots with the ports `virtio-trace-collect setup` prints; the host runs
# `record --live=2000 -e sched -e irq -e timer --host-events sched:sched_stat_runtime --host-pid
# QEMU -- WORK`, WORK asking vt-e2e-guest for markers on each CPU, then, after a quiet second, for
# one marker per CPU, then waiting (6 s at most) until the live output shows those. Checks:
#  - liveness: while the recording still runs, the live output holds the lone markers: the agent
#    sent its partial pages (FLUSH), as nothing else would fill a page in that time with the
#    guest's buffer_percent; how long it took is printed;
#  - the live lines are the lines of `trace-cmd report -i host.dat -i guest-e2e.dat` of the files
#    the same run wrote: the host's exactly (same lines, same order) but for the collector's own,
#    which the view leaves out and counts (the count checked); the guest's the same events,
#    each vCPU's in the same order with the same text, their timestamps within 10 ms of the file's
#    (the live view maps with the epochs known when it prints, the files with the whole run's,
#    which later probe bursts narrow per vCPU: so events of two vCPUs close in time may come in
#    another order; the largest difference is printed), and each vCPU's task names the file's
#    (or "<...>", a task the live view had no name for yet, or a name the file's sched events
#    show the task had: the file names a task by its last name);
#  - the merged live output is in time order, and nothing was shown out of order or left out.
# Clean console, the agent exits after BYE, the guest powers off.
# Env: VT_BUILDDIR (default <repo>/build), VT_STATIC_AGENT, VT_KEEP=1 keeps the work dir.
# Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-live: record --live with a TCG guest: lone markers shown while recording (FLUSH), the lines trace-cmd report shows for the files, in time order"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
VT_LOG_PREFIX=test-collect-live
ME=test-collect-live
N=300
W_MS=2000

scn_begin
scn_ports pipe
VT_TCG_SINGLE=1
scn_boot

LIVE=$WORK/live.txt
# The workload: a task that execs twice (vt-e2e-guest forks it, it runs sh, then sleep: the
# file names it "sleep", the live view by the name it had when its first event came, unless
# the bundle the view started with was read after the execs: both happen), N
# markers per CPU at 200/s, a quiet second, one marker per CPU, then 3 s of
# quiet during which the test looks for that marker in the live output.
scn_script "$WORK/work" "sh exec sleep 0.1" "flood vt-e2e $N 200 64" "!sleep 1" "flood vt-one 1 0 64" \
    "!for i in \$(seq 60); do [ \$(grep -c 'vt-one cpu' '$LIVE') = 2 ] && break; sleep 0.1; done; echo \$i >'$WORK/early'" \
    "!sleep 0.5"
: >"$LIVE"
# --live prints to standard output: record's own log goes elsewhere (scn_record joins the two).
t=$(vt_now)
timeout -k 5 150 "$COLLECT" record -o "$OUT" --chardev-dir "$PORTS" --name e2e --qmp "$RUN/qmp.sock" \
    --live=$W_MS -e sched -e irq -e timer --host-events sched:sched_stat_runtime \
    --host-pid "$VT_QEMU_PID" -- "$WORK/work" >"$LIVE" 2>"$WORK/record.log"
CRC=$?
T_REC=$(vt_secs "$t" "$(vt_now)")
echo "$ME: record exited $CRC after $T_REC s"
[ $CRC = 0 ] || { sed 's/^/    | /' "$WORK/record.log" | tail -20; bad "record exited $CRC, want 0"; }
echo "$ME: workload: $(tr '\n' ';' <"$WORK/work.answers" 2>/dev/null)"
scn_end
[ -s "$OUT/guest-e2e.dat" ] && [ -s "$OUT/host.dat" ] || { bad "record wrote no files"; scn_result; }

# Liveness: the lone markers were on the screen while recording (within 6 s of being written; the
# guest's buffer_percent alone would hold them until the stop).
early=$(cat "$WORK/early" 2>/dev/null)
echo "$ME: lone markers shown while recording, about $(( ${early:-60} * 100 )) ms after they were written"
[ "${early:-60}" -lt 60 ] || bad "the lone markers (one per CPU) were not shown while recording"

# The files, as trace-cmd shows them.
trace-cmd report -i "$OUT/host.dat" -i "$OUT/guest-e2e.dat" >"$WORK/report.txt" 2>"$WORK/report.err" ||
    bad "trace-cmd report failed: $(head -3 "$WORK/report.err")"
events() { grep -v -e 'cpus=[0-9]*$' -e '^$' "$1"; }
events "$WORK/report.txt" >"$WORK/want.txt"
events "$LIVE" >"$WORK/got.txt"
echo "$ME: trace-cmd report $(wc -l <"$WORK/want.txt") lines, live $(wc -l <"$WORK/got.txt") lines"
grep "live view" "$WORK/record.log" | sed "s/^/$ME: /"
grep -q "out of order\|not shown" "$WORK/record.log" && bad "the collector showed events out of order or left some out"

# The host's lines: exactly, but for those of the collector, which the view leaves out (its
# own feedback, said in its log with their count). The live host lines must be the report's in
# the same order with only lines left out, as many as the view says, and every line left out
# must be the collector's: run by, or naming, a task called "virtio-trace-co" (all its threads;
# io_uring's are "iou-wrk-N"), never one of its markers (print), which the view keeps.
grep '^ *host.dat: ' "$WORK/want.txt" >"$WORK/want.host"
grep '^ *host.dat: ' "$WORK/got.txt" >"$WORK/got.host"
said=$(sed -n 's/.*live view: \([0-9]*\) host events of this collector and its terminal left out.*/\1/p' "$WORK/record.log")
nh=$(wc -l <"$WORK/want.host")
[ "$nh" -gt 10 ] || bad "only $nh host lines: the test tests little"
python3 - "$WORK/want.host" "$WORK/got.host" "${said:-0}" <<'PY' || bad "the live host lines are not trace-cmd report's (less the collector's)"
import re, sys
want = open(sys.argv[1]).read().splitlines()
got = open(sys.argv[2]).read().splitlines()
said = int(sys.argv[3])
left, j = [], 0
for l in want:
    if j < len(got) and got[j] == l:
        j += 1
    else:
        left.append(l)
bad = 0
if j != len(got):
    print("    the live line %d is not in the report in order: %s" % (j + 1, got[j]))
    bad = 1
if len(left) != said:
    print("    %d report lines are not in the live view, which says it left out %d" % (len(left), said))
    bad = 1
for l in left:
    if ' print: ' in l or not re.search(r'(virtio-trace-co|iou-wrk-[0-9]+)', l):
        print("    left out, but not the collector's: " + l.strip())
        bad = 1
        break
print("test-collect-live: host: %d report lines, %d shown in the same order, %d of the collector's left out as the view says" % (len(want), j, len(left)))
sys.exit(bad)
PY

# The guest's: the same events, in the same order, text equal; timestamps within the bound.
bound=$(scn_m '.guests[0].sync.bound_ns')
echo "$ME: the guest's clock: $(scn_m '.guests[0].sync.method'), bound $bound ns"
split() {	# FILE -> "TS<tab>PID [CPU] EVENT TEXT" (task name and file column left out)
    grep '^ *guest-e2e.dat: ' "$1" |
        sed -E 's/^ *guest-e2e\.dat: +.{0,}-([0-9]+) +(\[[0-9]{3}\]) +([0-9]+\.[0-9]+): /\3\t\1 \2 /'
}
split "$WORK/want.txt" >"$WORK/want.guest"
split "$WORK/got.txt" >"$WORK/got.guest"
ng=$(wc -l <"$WORK/want.guest")
[ "$ng" -gt $((2 * N)) ] || bad "only $ng guest lines"
# Each vCPU's events in order (between vCPUs the order follows each one's mapping, which the
# stop's probes refine per vCPU: events of two vCPUs a few us apart may swap).
maxd=0
for cpu in 000 001; do
    grep -P "\t[0-9]+ \[$cpu\] " "$WORK/want.guest" >"$WORK/want.g$cpu"
    grep -P "\t[0-9]+ \[$cpu\] " "$WORK/got.guest" >"$WORK/got.g$cpu"
    cut -f2- "$WORK/want.g$cpu" >"$WORK/want.t$cpu"
    cut -f2- "$WORK/got.g$cpu" >"$WORK/got.t$cpu"
    cmp -s "$WORK/want.t$cpu" "$WORK/got.t$cpu" ||
        { diff "$WORK/want.t$cpu" "$WORK/got.t$cpu" | head -6 | sed 's/^/    /'
          bad "vCPU $cpu: the live guest events differ from trace-cmd report's"; }
    d=$(paste "$WORK/want.g$cpu" "$WORK/got.g$cpu" | awk -F'\t' '{
        d = ($3 - $1) * 1e9; if (d < 0) d = -d; if (d > m) m = d } END { printf "%.0f", m }')
    echo "$ME: guest vCPU $cpu: $(wc -l <"$WORK/want.t$cpu") events, in order, text equal, timestamps at most $d ns from the file's"
    [ "$d" -gt "$maxd" ] && maxd=$d
done
[ "$(cat "$WORK/want.g000" "$WORK/want.g001" | wc -l)" = "$ng" ] || bad "guest lines on other vCPUs"
# The file's mapping is the whole run's; the live view's the epochs known when it printed, whose
# bound may have been wider than the final one (a loaded host: a start burst ms wide, then
# narrowed): within 10 ms, and printed.
awk -v d="$maxd" 'BEGIN { exit !(d <= 10000000) }' ||
    bad "a live guest timestamp is $maxd ns from the file's: more than the 10 ms a clock estimate may move"
# Task names, each vCPU's in order: where the file names a task, the live view names it the
# same way, or "<...>" (it had no name for it yet), or by a name the task had while recording,
# as the file's own sched events show it ("COMM:PID [PRIO]", and after an exec the file's
# basename, as the kernel names it: busybox's sh runs its sleep applet as /proc/self/exe, and
# the task is "exe" until the applet starts, which a bundle the view read may hold): the file
# names a task by its last name (the kernel's saved_cmdlines at the end), the live view by the
# one it knew then (a task that exec'd after its first event).
{
    grep '^ *guest-e2e\.dat: ' "$WORK/want.txt" | grep -oE '[^ ]+:[0-9]+ \[[0-9]+\]' |
        sed -E 's/^(.*):([0-9]+) .*/\1-\2/'
    grep -E '^ *guest-e2e\.dat: .* sched_process_exec: ' "$WORK/want.txt" |
        sed -nE 's/.* filename=([^ ]*) pid=([0-9]+) .*/\1 \2/p' |
        awk '{ n = $1; sub(/.*\//, "", n); print substr(n, 1, 15) "-" $2 }'
} | sort -u >"$WORK/had.names"
mism=0 had=0
for cpu in 000 001; do
    r=$(paste <(grep -E "^ *guest-e2e\.dat: .* \[$cpu\] " "$WORK/want.txt" | cut -c15-40) \
        <(grep -E "^ *guest-e2e\.dat: .* \[$cpu\] " "$WORK/got.txt" | cut -c15-40) |
        awk -F'\t' -v f="$WORK/names.$cpu" -v had="$WORK/had.names" '
        BEGIN { while ((getline l < had) > 0) ok[l] = 1 }
        $1 != $2 && $2 !~ /<\.\.\.>/ {
            w = $2; sub(/^[: ]+/, "", w); sub(/ +\[.*$/, "", w)
            if (w in ok) { h++; next }
            n++; if (n <= 5) print "file \"" $1 "\", live \"" $2 "\"" >f }
        END { print n + 0, h + 0 }')
    [ -s "$WORK/names.$cpu" ] && sed "s/^/    vCPU $cpu: /" "$WORK/names.$cpu"
    mism=$((mism + ${r% *})) had=$((had + ${r#* }))
done
echo "$ME: guest task names: $mism lines named otherwise than in the file (other than <...>), $had by a name the task had earlier"
[ "$mism" = 0 ] || bad "$mism guest lines name another task than the file"

# The merged output is in time order.
sed -nE 's/.*\[[0-9]{3}\] +([0-9]+\.[0-9]+):.*/\1/p' "$WORK/got.txt" |
    awk 'NR > 1 && $1 < p { bad++ } { p = $1 } END { exit bad > 0 }' || bad "the live output is not in time order"
grep -q 'vt-e2e cpu1 ' "$WORK/got.txt" && grep -q '^ *host.dat: .*sched_stat_runtime' "$WORK/got.txt" ||
    bad "the live output lacks guest markers or host events"
scn_result
