#!/bin/bash
# vt-suite: e2e
# test-sync-guest.sh: clock sync of a TCG guest, acceptance for time sync under TCG. A 2-vCPU
# TCG guest (thread=single) boots with the ports `virtio-trace-collect setup` makes (pipe
# backend) and runs the static trace-agent (--once) and vt-e2e-guest. The host records for
# ~17 s with --sync-interval 0.3, --sync-probes 100 (short bursts, so that a busy host still
# fits enough of them) and --qmp RUN/qmp.sock; in the middle the test stops the VM for
# 1 s and continues it through a second, HMP, monitor (a pipe chardev: RUN/hmp.in, RUN/hmp.out).
# Checks:
#  1. causality: in `trace-cmd report -i host.dat -i guest-e2e.dat`, every control message's
#     tx precedes its rx (host tx TYPE SEQ -> guest rx TYPE SEQ, guest tx -> host rx); at least
#     VT_SYNC_MIN_PAIRS (200) pairs (SYNC_PROBE/SYNC_REPLY excluded), zero inversions;
#  2. the manifest's bound (.guests[0].sync.bound_ns) <= half the smallest probe min RTT;
#  3. stop/cont: every vCPU has more than one epoch, and the last one's offset differs from the
#     first's by the stopped time (the guest TSC stands still while the VM is stopped): between
#     paused-seen..cont-sent and stop-sent..running-seen, give or take VT_SYNC_STOP_TOL s
#     (default 0.02), and the new epochs of all vCPUs start at one host TSC (the RESUME's
#     arrival), and the guest's events leave a hole of the stopped time (none mapped into it);
#     the inversions of check 1 cover the whole recording.
# Clean console, the agent exits after BYE, the guest powers off.
# Env: VT_BUILDDIR (default <repo>/build), VT_STATIC_AGENT, VT_KEEP=1 keeps the work dir,
# VT_SYNC_MIN_PAIRS, VT_SYNC_STOP_TOL. Exit: 0 pass, 1 fail, 77 skip.
echo "test-sync-guest: TCG guest clock sync: >= 200 causally ordered control-message pairs, bound <= min RTT / 2, a new epoch with the stopped time after a QMP stop/cont"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
VT_LOG_PREFIX=test-sync-guest
ME=test-sync-guest
MIN_PAIRS=${VT_SYNC_MIN_PAIRS:-200}
STOP_TOL=${VT_SYNC_STOP_TOL:-0.02}
BEFORE=8 STOPPED=1 AFTER=8	# seconds of recording before the stop, stopped, after the cont

for t in qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq; do
    command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
done

T0=$(vt_now)
WORK=$(mktemp -d /tmp/vt-test-sync-guest.XXXXXX)
KEEP=${VT_KEEP:-0}
COLLECT_PID= HMP_PID=
cleanup() {
    [ -n "$COLLECT_PID" ] && kill -TERM "$COLLECT_PID" 2>/dev/null && wait "$COLLECT_PID" 2>/dev/null
    vt_guest_stop 2>/dev/null
    [ -n "$HMP_PID" ] && kill -TERM "$HMP_PID" 2>/dev/null && wait "$HMP_PID" 2>/dev/null
    if [ "$KEEP" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail=0
bad() { echo "$ME: FAIL: $*"; fail=1; }

vt_collect_build; rc=$?
[ $rc = 0 ] || exit $rc

t=$(vt_now)
vt_collect_image "$WORK" sync-guest; rc=$?
[ $rc = 0 ] || exit $rc
T_IMAGE=$(vt_secs "$t" "$(vt_now)")

RUN=$WORK/run PORTS=$WORK/run/ports OUT=$WORK/out
mkdir -p "$RUN"
vt_collect_ports "$COLLECT" "$PORTS" || exit 1
mkfifo "$RUN/hmp.in" "$RUN/hmp.out"
# The test's own monitor: HMP on a pipe chardev, drained into hmp.log. lib.sh gives QEMU
# -qmp unix:RUN/qmp.sock,server=on,wait=off, which is the collector's.
cat <"$RUN/hmp.out" >"$WORK/hmp.log" 2>/dev/null &
HMP_PID=$!
VT_RUNDIR=$RUN VT_SMP=2 VT_TCG_SINGLE=1 VT_PORTS=0 VT_GUEST_RUN=/etc/vt/agent-run
VT_APPEND="vt.ports=4" VT_TIMEOUT=${VT_TIMEOUT:-180}
VT_QEMU_EXTRA=("${SETUP_ARGS[@]}" -chardev "pipe,id=hmp,path=$RUN/hmp" -mon "chardev=hmp,mode=readline")
t=$(vt_now)
vt_guest_start || { echo "$ME: FAIL: QEMU did not start"; exit 1; }
if ! vt_test_say "$PORTS" hello 60; then
    tr -d '\r' <"$RUN/console.log" | tail -20
    echo "$ME: FAIL: vt-e2e-guest did not answer hello in 60 s"; exit 1
fi
hello=$ANSWER
T_BOOT=$(vt_secs "$t" "$(vt_now)")
echo "$ME: guest says: $hello (boot ${T_BOOT} s)"

# record's COMMAND: BEFORE s, stop, STOPPED s, cont, AFTER s. The host times of the two
# commands go to WORK/stopcont; `info status` confirms each state.
cat >"$WORK/stopcont" <<SH
#!/bin/bash
hmp_wait() {	# hmp_wait REGEX: until hmp.log has one more line matching REGEX (5 s)
    local n=\$1 re=\$2 i
    for ((i = 0; i < 500; i++)); do
        [ "\$(tr -d '\r' <"$WORK/hmp.log" | grep -cE "\$re")" -gt "\$n" ] && return 0
        sleep 0.01
    done
    return 1
}
exec 9<>"$RUN/hmp.in"
sleep $BEFORE
n=\$(tr -d '\r' <"$WORK/hmp.log" | grep -cE 'VM status: paused')
t1=\$(date +%s.%N)
printf 'stop\ninfo status\n' >&9
hmp_wait "\$n" 'VM status: paused' || { echo "no paused status" >"$WORK/stopcont.err"; exit 1; }
tp=\$(date +%s.%N)
sleep $STOPPED
n=\$(tr -d '\r' <"$WORK/hmp.log" | grep -cE 'VM status: running')
t2=\$(date +%s.%N)
printf 'cont\ninfo status\n' >&9
hmp_wait "\$n" 'VM status: running' || { echo "no running status" >"$WORK/stopcont.err"; exit 1; }
echo "\$t1 \$tp \$t2 \$(date +%s.%N)" >"$WORK/stopcont.times"
sleep $AFTER
SH
chmod +x "$WORK/stopcont"
t=$(vt_now)
timeout -k 5 120 "$COLLECT" record --chardev-dir "$PORTS" --name e2e --sync-interval 0.3 --sync-probes 100 \
    --qmp "$RUN/qmp.sock" -e sched -e irq -e timer --host-events sched:sched_switch -o "$OUT" --quiet \
    -- "$WORK/stopcont" >"$WORK/record.log" 2>&1 &
COLLECT_PID=$!
wait "$COLLECT_PID"
crc=$?
COLLECT_PID=
T_REC=$(vt_secs "$t" "$(vt_now)")
echo "$ME: record exited $crc after ${T_REC} s"
[ $crc = 0 ] || { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $crc, want 0"; }
STOP_S= STOP_MIN= STOP_MAX=
if read -r t1 tp t2 tr <"$WORK/stopcont.times" 2>/dev/null; then
    # The VM stopped between t1 (stop sent) and tp (paused seen), ran again between t2 (cont
    # sent) and tr (running seen).
    STOP_S=$(vt_secs "$t1" "$t2") STOP_MIN=$(vt_secs "$tp" "$t2") STOP_MAX=$(vt_secs "$t1" "$tr")
    echo "$ME: VM stopped ${STOP_MIN}..${STOP_MAX} s (stop to cont sent: ${STOP_S} s)," \
         "$(vt_secs "$t" "$t1") s after record started"
else
    bad "stop/cont did not happen: $(cat "$WORK/stopcont.err" 2>/dev/null)"
    tr -d '\r' <"$WORK/hmp.log" | grep -a 'VM status' | tail -5 | sed 's/^/    hmp| /'
fi

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
M() { jq -r "$1" "$OUT/manifest.json"; }

# 1. Causality over the whole recording (see test-collect-guest.sh): a pair is one (TYPE, SEQ)
# sent by one side and received by the other; SEQ counts per direction.
trace-cmd report -i "$OUT/host.dat" -i "$OUT/guest-e2e.dat" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
    bad "merged trace-cmd report failed: $(head -3 "$WORK/merged.err")"
vt_causality "$WORK/merged.txt" "$WORK/causality.txt" '^SYNC_(PROBE|REPLY)$'
sed "s/^/$ME: /" "$WORK/causality.txt" | head -n 30
pairs=$PAIRS inv=$INVERSIONS
echo "$ME: check 1: ${pairs:-0} control message pairs (want >= $MIN_PAIRS), ${inv:-?} inversions (want 0)"
[ "${pairs:-0}" -ge "$MIN_PAIRS" ] || bad "only ${pairs:-0} control message pairs, want >= $MIN_PAIRS"
[ "${inv:-1}" = 0 ] || bad "${inv:-?} causality inversions"

# 2. The bound against the round trip.
bound=$(M '.guests[0].sync.bound_ns')
minrtt=$(M '[.guests[0].sync.probes[].min_rtt_ns] | min')
echo "$ME: check 2: sync $(M '.guests[0].sync.method') bound ${bound} ns, min RTT ${minrtt} ns" \
     "(per vCPU: $(M '[.guests[0].sync.probes[] | "cpu\(.cpu) \(.min_rtt_ns) ns/\(.samples) samples"] | join(", ")'))"
if [ "$minrtt" = null ] || [ "$bound" = null ]; then
    bad "the manifest has no bound or no probes"
else
    # Each epoch's bound against the smallest round trip of the probes that
    # made it (0.5 ns of slack for the ticks-to-ns rounding).
    M '.guests[0].sync.epochs[] | select(.source == "probes") | "\(.cpu) \(.bound_ns) \(.min_rtt_ns)"' |
    while read -r cpu cb cr; do
        echo "$ME: check 2: cpu$cpu epoch: bound ${cb} ns, its min RTT ${cr} ns"
        awk -v b="$cb" -v r="$cr" 'BEGIN { exit !(r > 0 && b <= r / 2 + 0.5) }' ||
            echo "cpu$cpu: bound $cb ns is wider than its min RTT / 2 = $(awk -v r="$cr" 'BEGIN { print r / 2 }') ns"
    done >"$RUN/check2.out"
    grep "check 2:" "$RUN/check2.out"
    if grep -qv "check 2:" "$RUN/check2.out"; then
        while read -r line; do bad "$line"; done < <(grep -v "check 2:" "$RUN/check2.out")
    fi
    grep -q "check 2:" "$RUN/check2.out" || bad "no epoch measured by probes"
fi

# 3. The stop/cont: a second epoch per vCPU, offset moved back by the stopped time.
khz=$(M '.host_tsc.khz')
for cpu in 0 1; do
    ne=$(M "[.guests[0].sync.epochs[] | select(.cpu == $cpu)] | length")
    first=$(M "[.guests[0].sync.epochs[] | select(.cpu == $cpu)] | first | .offset")
    last=$(M "[.guests[0].sync.epochs[] | select(.cpu == $cpu)] | last | .offset")
    from=$(M "[.guests[0].sync.epochs[] | select(.cpu == $cpu)] | (last.host_tsc_from - first.host_tsc_from)")
    echo "$ME: check 3: cpu$cpu: $ne epochs: $(M "[.guests[0].sync.epochs[] | select(.cpu == $cpu) | \"offset \(.offset) from +\(.host_tsc_from) bound \(.bound_ns) ns\"] | join(\"; \")")"
    if [ "$ne" -le 1 ] 2>/dev/null; then bad "cpu$cpu: $ne epoch(s), want > 1 after stop/cont"; continue; fi
    d=$(awk -v a="$first" -v b="$last" -v k="$khz" 'BEGIN { printf "%.4f", (a - b) / (k * 1000) }')
    echo "$ME: check 3: cpu$cpu: last epoch offset - first = $((last - first)) ticks = -${d} s" \
         "(stopped ${STOP_MIN:-?}..${STOP_MAX:-?} s); it starts $(awk -v f="$from" -v k="$khz" 'BEGIN { printf "%.3f", f / (k * 1000) }') s after the first"
    [ -n "$STOP_S" ] && awk -v d="$d" -v a="$STOP_MIN" -v b="$STOP_MAX" -v t="$STOP_TOL" \
        'BEGIN { exit !(d >= a - t && d <= b + t) }' ||
        bad "cpu$cpu: the offset moved by -$d s, the VM was stopped ${STOP_MIN:-?}..${STOP_MAX:-?} s (tolerance $STOP_TOL s)"
done

# The RESUME opens the new epoch of every vCPU at the moment it arrived: one start for all.
starts=$(M '[.guests[0].sync.epochs | group_by(.cpu)[] | select(length > 1) | last.host_tsc_from] | unique | length')
spread=$(M '[.guests[0].sync.epochs | group_by(.cpu)[] | select(length > 1) | last.host_tsc_from] | if length > 0 then max - min else 0 end')
echo "$ME: check 3: the vCPUs' last epochs start at $starts host TSC(s), spread $spread ticks" \
     "($(awk -v f="$spread" -v k="$khz" 'BEGIN { printf "%.6f", f / (k * 1000) }') s)"
[ "$starts" = 1 ] || bad "the vCPUs' new epochs do not start at one moment (the RESUME): $starts starts, spread $spread ticks"

# Nothing runs in a stopped guest: its events, mapped to host time, leave a hole of the stopped
# time. An event of a vCPU mapped with the pre-stop offset after the cont lands inside it.
read -r hole hfrom hto < <(awk '/^guest-e2e.dat:/ {
        for (j = 2; j < NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) break
        if (j == NF) next
        t = $j + 0
        if (n++ && t - last > g) { g = t - last; a = last; b = t }
        last = t
    } END { printf "%.6f %.6f %.6f\n", g, a, b }' "$WORK/merged.txt")
echo "$ME: check 3: the largest hole in the guest's events is ${hole} s (${hfrom} -> ${hto}), stopped ${STOP_MIN:-?}..${STOP_MAX:-?} s"
[ -n "$STOP_MIN" ] && awk -v h="$hole" -v a="$STOP_MIN" -v t="$STOP_TOL" 'BEGIN { exit !(h >= a - t) }' ||
    bad "the guest's events leave no hole of the stopped time (largest ${hole} s): events mapped with a stale offset"

echo "$ME: timings: image ${T_IMAGE} s, boot to vt-e2e-guest ${T_BOOT} s, record ${T_REC} s," \
     "whole test ${T_RUN} s"
if [ $fail = 0 ]; then echo "$ME: PASS"; exit 0; fi
KEEP=1
echo "$ME: FAIL"
exit 1
