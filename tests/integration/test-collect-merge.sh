#!/bin/sh
# Proves: with --host-events the collector records this machine's own
# sched_switch events in a private tracefs instance (removed afterwards) into
# host.dat (with its control-message markers and nothing else), and `trace-cmd report -i host.dat -i guest-NAME.dat` merges the
# two files into one time-ordered timeline that holds every guest event and
# host events around them. The fake guest's TSC runs 5e9 ticks ahead of the
# host's and its pages are stamped with guest TSC values taken during the
# recording, so the guest events land inside the host's time window only if
# the collector measured the offset (SYNC probes) and applied it.
echo "collect: --host-events host.dat and guest file merge time-ordered, guest shifted into the host window"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch
tracefs=/sys/kernel/tracing
ls $tracefs/instances >"$WORK/instances.before"

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vmx --fifo "$p" --fixture "$DATA/cap-guest" --retime --tsc-offset 5000000000
pid=$FAKE_PID
# Keep the scheduler busy so that host sched_switch events surround the guest's.
(while :; do sleep 0.01; done) &
busy=$!
track $busy
collect rec --chardev-dir "$p" --name vmx -o "$out" --duration 3 --host-events sched:sched_switch \
	--sync probe
kill $busy
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/vmx.fake"; fail "collector exited $RC, want 0"; }
# Its private instance is gone, and no instance that was there before was
# touched (other tests may create and remove their own meanwhile).
[ ! -e "$tracefs/instances/virtio-trace-collect-$COLLECT_PID" ] ||
	fail "the collector left its tracefs instance virtio-trace-collect-$COLLECT_PID behind"
ls $tracefs/instances >"$WORK/instances.after"
missing=$(comm -23 "$WORK/instances.before" "$WORK/instances.after" | grep -v '^virtio-trace-collect-' | tr '\n' ' ')
[ -z "$missing" ] || fail "tracefs instances that existed before are gone: $missing"
check_exact "$out" vmx "$DATA/cap-guest" 1
[ -f "$out/host.dat" ] || fail "no host.dat"
[ "$(man "$out" '.host.file')" = host.dat ] || fail "manifest host.file is '$(man "$out" .host.file)'"

report "$WORK/host.txt" -i "$out/host.dat"
nh=$(all_events "$WORK/host.txt")
[ "$nh" -gt 0 ] || fail "host.dat has no events"
# sched_switch, plus the collector's own control-message markers
# (virtio-trace-protocol(5), MARKERS); nothing else.
ns=$(grep -cE -- '-[0-9]+ +\[[0-9]{3}\] *[0-9.]+: sched_switch:' "$WORK/host.txt")
nm=$(grep -cE -- '-[0-9]+ +\[[0-9]{3}\] *[0-9.]+: print: .*virtio-trace: (rx|tx) [A-Z_0-9-]+ [0-9]+$' "$WORK/host.txt")
[ "$ns" -gt 0 ] || fail "host.dat has no sched_switch events"
[ $((ns + nm)) = "$nh" ] || {
	grep -vE 'sched_switch:|virtio-trace: (rx|tx) ' "$WORK/host.txt" | head -5
	fail "host.dat holds events other than sched_switch and control markers"
}
mh=$(man "$out" '[.host.cpus[].events] | add')
[ "$mh" = "$nh" ] || fail "manifest says $mh host events, report shows $nh"

cd "$out" || fail "cd $out"
report "$WORK/merged.txt" -i host.dat -i guest-vmx.dat
ng=$ORACLE_CPU0
ng=$((ng + ORACLE_CPU1))
[ "$(grep -c '^ *guest-vmx.dat: .*\[[0-9]\{3\}\]' "$WORK/merged.txt")" = "$ng" ] ||
	fail "merged report has $(grep -c '^ *guest-vmx.dat: .*\[[0-9]\{3\}\]' "$WORK/merged.txt") guest events, want $ng"
# trace-cmd drops the file prefix from the event after a "[N EVENTS DROPPED]"
# line, so host events are every event line that is not the guest's.
nall=$(grep -c '\[[0-9]\{3\}\] *[0-9]' "$WORK/merged.txt")
ngm=$(grep -c '^ *guest-vmx.dat: .*\[[0-9]\{3\}\]' "$WORK/merged.txt")
[ $((nall - ngm)) = "$nh" ] ||
	fail "merged report has $((nall - ngm)) host events, the host file alone $nh"
sed -nE 's/^ *([^ ]+): +.*-[0-9]+ +\[[0-9]{3}\] *([0-9]+(\.[0-9]+)?): .*/\1 \2/p' "$WORK/merged.txt" >"$WORK/ts"
awk 'NR > 1 && $2 < prev { bad++ } { prev = $2 } END { exit bad > 0 }' "$WORK/ts" ||
	fail "the merged timeline is not in time order"
# Every guest event lies between the first and the last host event.
awk '$1 == "host.dat" { if (!h0) h0 = $2; h1 = $2 }
     $1 != "host.dat" { if (!g0) g0 = $2; g1 = $2 }
     END { if (!(g0 > h0 && g1 < h1)) { printf "guest %s..%s, host %s..%s\n", g0, g1, h0, h1; exit 1 } }' \
	"$WORK/ts" || fail "guest events fall outside the host's recording: the clock offset was not applied"
awk '{ f = $1 } f != last { runs++ } { last = f } END { exit runs < 3 }' "$WORK/ts" ||
	fail "host and guest events do not interleave"
off=$(guest_json "$out" vmx '[.sync.epochs[].offset] | first')
[ -n "$off" ] && [ "$off" != null ] || fail "manifest has no sync epoch"
awk -v o="$off" 'BEGIN { d = o - 5000000000; if (d < 0) d = -d; exit d > 2000000 }' ||
	fail "measured offset $off is not 5000000000 (+- 2e6 ticks)"
echo "PASS"
