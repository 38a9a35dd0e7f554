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
# VT_KEEP=1 keeps the work dir. Exit: 0 pass, 1 fail, 77 skip.
echo "test-collect-guest: virtio-trace-collect records a TCG guest's events through setup-made ports: exact markers, counts equal to manifest and guest stats, causally ordered control messages"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
VT_LOG_PREFIX=test-collect-guest
ME=test-collect-guest
N=${VT_E2E_MARKERS:-2000}

for t in qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq; do
    command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
done

T0=$(vt_now)
WORK=$(mktemp -d /tmp/vt-test-collect-guest.XXXXXX)
KEEP=${VT_KEEP:-0}
COLLECT_PID=
cleanup() {
    [ -n "$COLLECT_PID" ] && kill -TERM "$COLLECT_PID" 2>/dev/null && wait "$COLLECT_PID" 2>/dev/null
    vt_guest_stop 2>/dev/null
    if [ "$KEEP" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail=0
bad() { echo "$ME: FAIL: $*"; fail=1; }

vt_agent_build; rc=$?
[ $rc = 0 ] || exit $rc
COLLECT=${VT_BUILDDIR:-$VT_REPO/build}/host-collector/virtio-trace-collect
make -C "${VT_BUILDDIR:-$VT_REPO/build}" -s host-collector/virtio-trace-collect >&2 ||
    { echo "$ME: FAIL: cannot build virtio-trace-collect"; exit 1; }

# The guest half: the agent as a daemon that leaves after the collector's BYE, the workload
# server until the host says quit, then the agent's exit status and the instance's removal.
t=$(vt_now)
vt_collect_image "$WORK" collect-guest; rc=$?
[ $rc = 0 ] || exit $rc
T_IMAGE=$(vt_secs "$t" "$(vt_now)")

# The ports, as a user would make them.
RUN=$WORK/run PORTS=$WORK/run/ports OUT=$WORK/out
mkdir -p "$RUN"
vt_collect_ports "$COLLECT" "$PORTS" || exit 1
VT_RUNDIR=$RUN VT_SMP=2 VT_TCG_SINGLE=1 VT_PORTS=0 VT_GUEST_RUN=/etc/vt/agent-run
VT_APPEND="vt.ports=4" VT_TIMEOUT=${VT_TIMEOUT:-180}
VT_QEMU_EXTRA=("${SETUP_ARGS[@]}")
t=$(vt_now)
vt_guest_start || { echo "$ME: FAIL: QEMU did not start"; exit 1; }
if ! vt_test_say "$PORTS" hello 60; then
    tr -d '\r' <"$RUN/console.log" | tail -20
    echo "$ME: FAIL: vt-e2e-guest did not answer hello in 60 s"; exit 1
fi
hello=$ANSWER
T_BOOT=$(vt_secs "$t" "$(vt_now)")
echo "$ME: guest says: $hello (boot ${T_BOOT} s)"

# The workload runs as record's COMMAND: it starts after START and its end stops the recording.
cat >"$WORK/flood" <<SH
#!/bin/bash
exec 7<>"$PORTS/vt-test.in" 8<>"$PORTS/vt-test.out"
echo "flood vt-e2e $N 0 64" >&7
read -r -t 120 answer <&8 || answer="no answer"
echo "\$answer" >"$WORK/flood.answer"
sleep 1.2	# a quiet stretch: guest timer/sched events, and a probe burst inside the window
[[ \$answer == ok* ]]
SH
chmod +x "$WORK/flood"
t=$(vt_now)
timeout -k 5 150 "$COLLECT" record --chardev-dir "$PORTS" --name e2e -e sched -e irq -e timer \
    --host-events sched:sched_switch --sync-interval 0.5 -o "$OUT" --quiet -- "$WORK/flood" >"$WORK/record.log" 2>&1 &
COLLECT_PID=$!
wait "$COLLECT_PID"
crc=$?
COLLECT_PID=
T_REC=$(vt_secs "$t" "$(vt_now)")
echo "$ME: record exited $crc after ${T_REC} s; flood: $(cat "$WORK/flood.answer" 2>/dev/null)"
[ $crc = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $crc, want 0"; }

# Let the guest go: vt-e2e-guest quits, the agent has had its BYE, /init powers off.
vt_test_say "$PORTS" quit 30 || bad "vt-e2e-guest did not answer quit"
vt_agent_wait_off 60 || fail=1
T_RUN=$(vt_secs "$T0" "$(vt_now)")

echo "  guest console:"
tr -d '\r' <"$RUN/console.log" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    /'
vt_check_console "$RUN/console.log" || fail=1
grep -aq 'E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after BYE' "$RUN/console.log" ||
    bad "the guest side did not end cleanly"

[ -s "$OUT/manifest.json" ] && [ -s "$OUT/guest-e2e.dat" ] && [ -s "$OUT/host.dat" ] ||
    { bad "record wrote no files"; echo "$ME: FAIL"; KEEP=1; exit 1; }

# The guest file alone: per-CPU events (report prints one line per event; [CCC] is the CPU).
trace-cmd report -i "$OUT/guest-e2e.dat" >"$WORK/guest.txt" 2>"$WORK/guest.err" ||
    bad "trace-cmd report of the guest file failed: $(head -3 "$WORK/guest.err")"
trace-cmd report -i "$OUT/host.dat" -i "$OUT/guest-e2e.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "merged trace-cmd report failed: $(head -3 "$WORK/merged.err")"
M() { jq -r "$1" "$OUT/manifest.json"; }
for cpu in 0 1; do
    cnt=$(grep -cE "^ *.* \[00$cpu\] " "$WORK/guest.txt")
    man=$(M ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
    rd=$(M ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.read_events")
    ov=$(M ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.overrun + .stats.commit_overrun + .stats.dropped_events")
    lip=$(M ".guests[0].cpus[] | select(.cpu == $cpu) | .lost_events_in_pages")
    lost=$(M ".guests[0].lost_events.in_pages + .guests[0].lost_events.overrun")
    mk=$(grep -cE "\[00$cpu\] .*vt-e2e cpu$cpu " "$WORK/guest.txt")
    mkother=$(grep -E "vt-e2e cpu$cpu " "$WORK/guest.txt" | grep -cvE "\[00$cpu\] ")
    echo "$ME: cpu$cpu: report $cnt events, manifest $man, guest stats read_events $rd overrun $ov," \
         "lost $lost; markers $mk on cpu$cpu, $mkother elsewhere"
    [ "$cnt" = "$man" ] || bad "cpu$cpu: report has $cnt events, manifest $man"
    [ "$ov" = 0 ] && [ "$lost" = 0 ] || bad "cpu$cpu: overrun $ov, lost $lost (want 0)"
    # What the guest's ring buffer says it handed out, less what the pages say was lost.
    [ "$((rd - lip))" = "$man" ] || bad "cpu$cpu: guest read_events $rd - lost in pages $lip != recorded $man"
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
awk '
/virtio-trace: (tx|rx) [A-Z_0-9-]+ [0-9]+/ {
    for (i = 1; i <= NF; i++) if ($i == "virtio-trace:") break
    dir = $(i + 1); type = $(i + 2); seq = $(i + 3)
    ts = ""
    for (j = 1; j < i; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($j, 1, length($j) - 1); break }
    side = ($1 == "host.dat:") ? "host" : "guest"
    key = type " " seq
    if (dir == "tx") { tx[side, key] = ts; txn[side, key]++ } else { rx[side, key] = ts; rxn[side, key]++ }
    lines++
}
END {
    pairs = 0; inv = 0; unpaired = 0
    for (k in tx) {
        split(k, a, SUBSEP); s = a[1]; key = a[2]
        o = (s == "host") ? "guest" : "host"
        if ((o, key) in rx) {
            pairs++
            if (rx[o, key] + 0 < tx[s, key] + 0) { inv++; printf "inversion: %s tx %s at %s, %s rx at %s\n", s, key, tx[s, key], o, rx[o, key] }
        } else unpaired++
    }
    printf "causality: %d marker lines, %d tx/rx pairs, %d inversions, %d tx without rx\n", lines, pairs, inv, unpaired
}' "$WORK/merged.txt" >"$WORK/causality.txt"
sed "s/^/$ME: /" "$WORK/causality.txt"
read -r pairs inv < <(sed -n 's/^causality: [0-9]* marker lines, \([0-9]*\) tx\/rx pairs, \([0-9]*\) inversions.*/\1 \2/p' "$WORK/causality.txt")
[ "${pairs:-0}" -ge 4 ] || bad "only ${pairs:-0} control message pairs in the merged report"
[ "${inv:-1}" = 0 ] || bad "$inv causality inversions"
echo "$ME: sync $(M '.guests[0].sync.method') bound $(M '.guests[0].sync.bound_ns') ns"

echo "$ME: timings: image ${T_IMAGE} s, boot to vt-e2e-guest ${T_BOOT} s, record ${T_REC} s," \
     "whole test ${T_RUN} s"
if [ $fail = 0 ]; then echo "$ME: PASS"; exit 0; fi
KEEP=1
echo "$ME: FAIL"
exit 1
