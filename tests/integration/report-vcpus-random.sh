#!/bin/sh
# Proves: whatever order of events the files hold, `report --vcpus --latency --interval` accounts every
# nanosecond once: on 40 random fixtures (fixed seeds; host kvm entries, VMX and SVM exits,
# userspace exits, vcpu wakeups, switches with any prev_state between vCPU threads, another VM's
# vCPU and host tasks, wakeups onto any CPU, lost-event pages; guest switches and wakeups on both
# vCPUs, some before the host's first record and after its last), every vCPU's and every guest
# task's states add up to its wall_ns, every timed wakeup's and --interval's causes to its length,
# the totals per cause to the total, and the report never fails; every fourth fixture without KVM's events (the
# TCG states). FIXTURE: packed with tests/tools/vt-mkkvm as
# report-vcpus.sh's.
echo "report --vcpus --latency --interval: the states add up on random event streams"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
command -v jq >/dev/null 2>&1 || { echo "SKIP: jq is not installed"; exit 77; }

h=$WORK/host-fixture g=$WORK/guest-fixture run=$WORK/run
mkdir -p "$h/formats/sched" "$g" "$run"
cp -r "$DATA/kvm-exits/formats/kvm" "$h/formats/"
cp "$DATA/cap-host/formats/sched/sched_switch" "$DATA/cap-host/formats/sched/sched_wakeup" "$h/formats/sched/"
for f in header_page header_event uname; do cp "$DATA/cap-host/$f" "$h/"; done
echo '[local] global' >"$h/trace_clock"
echo 3 >"$h/nr_cpus"
cp -r "$DATA/cap-guest/." "$g/"
rm -f "$g"/cpu*.raw "$g"/cpu*.stats
cp "$DATA/cap-host/formats/sched/sched_waking" "$g/formats/sched/"
id() { sed -n 's/^ID: //p' "$1"; }
hids="--exit-id $(id "$h/formats/kvm/kvm_exit") --entry-id $(id "$h/formats/kvm/kvm_entry")
	--uexit-id $(id "$h/formats/kvm/kvm_userspace_exit") --vwake-id $(id "$h/formats/kvm/kvm_vcpu_wakeup")
	--switch-id $(id "$h/formats/sched/sched_switch") --wakeup-id $(id "$h/formats/sched/sched_wakeup")"
gids="--exit-id 1 --entry-id 2 --switch-id $(id "$g/formats/sched/sched_switch")
	--wakeup-id $(id "$g/formats/sched/sched_waking")"
printf '{"tool":"fixture","version":"0","host":{"file":"host.dat"},"guests":[%s,%s]}\n' \
	'{"name":"fx","file":"guest-fx.dat","trace_id":"0x0000000000001234"}' \
	'{"name":"other","file":null,"trace_id":"0x0000000000005678"}' >"$run/manifest.json"

seed=1
while [ $seed -le 40 ]; do
	# Host: 3 CPUs, 400 events each, timestamps rising by 1..2000 ns.
	awk -v s=$seed 'BEGIN { srand(s); split("5001 5002 7001 900 0 901", P, " ")
	for (c = 0; c < 3; c++) { t = 1000000 + int(rand() * 3000)
		for (i = 0; i < 400; i++) {
			t += 1 + int(rand() * 2000); p = P[1 + int(rand() * 6)]; k = int(rand() * 9)
			if (s % 4 == 0) k = 5 + int(rand() * 4)	# sched events only: as under TCG
			if (rand() < 0.01) print c, 0, 0, "newpage"
			if (k == 0) print c, t, p, "entry", 0, 1000
			else if (k == 1) print c, t, p, "exit", 0, int(rand() * 60), 1000
			else if (k == 2) print c, t, p, "svmexit", 0, (rand() < 0.5 ? 120 : 1024), 1000
			else if (k == 3) print c, t, p, "uexit", int(rand() * 8), (rand() < 0.2 ? -4 : 0)
			else if (k == 4) print c, t, p, "vwake", 1
			else if (k == 5) print c, t, p, "wakeup", P[1 + int(rand() * 6)], int(rand() * 4)
			else print c, t, p, "sw", (rand() < 0.5 ? 0 : (rand() < 0.5 ? 1 : 256)), P[1 + int(rand() * 6)], "t"
		} } }' >"$WORK/host.ev"
	# Guest: 2 CPUs, 150 events each, from a little before the host to a little after.
	awk -v s=$seed 'BEGIN { srand(s + 1000)
	for (c = 0; c < 2; c++) { t = 990000 + int(rand() * 20000)
		for (i = 0; i < 150; i++) {
			t += 1 + int(rand() * 6000); p = 300 + int(rand() * 6)
			if (rand() < 0.02) print c, 0, 0, "newpage"
			if (rand() < 0.4) print c, t, 1, "wakeup", p, int(rand() * 3), "w"
			else print c, t, 1, "switch", p, "g"
		} } }' >"$WORK/guest.ev"
	# shellcheck disable=SC2086
	"$TOOLS/vt-mkkvm" -o "$h" $hids --cpus 3 <"$WORK/host.ev" || fail "seed $seed: vt-mkkvm (host)"
	# shellcheck disable=SC2086
	"$TOOLS/vt-mkkvm" -o "$g" $gids --cpus 2 <"$WORK/guest.ev" || fail "seed $seed: vt-mkkvm (guest)"
	"$TOOLS/vt-mkdat" -o "$run/host.dat" -i "$h" --trace-id 0x42 --guest fx:0x1234:5001,5002 \
		--guest other:0x5678:7001 --missed 1:1:? --missed 2:1:? >/dev/null || fail "seed $seed: vt-mkdat (host)"
	"$TOOLS/vt-mkdat" -o "$run/guest-fx.dat" -i "$g" --trace-id 0x1234 --missed 1:1:? >/dev/null ||
		fail "seed $seed: vt-mkdat (guest)"
	"$COLLECT" report --vcpus --latency --interval sched:sched_waking,sched:sched_switch --json "$run" >"$WORK/r.json" 2>"$WORK/r.err" ||
		{ cat "$WORK/r.err"; fail "seed $seed: report exited $?"; }
	bad=$(jq -r '
		def leaves: [.states | .. | numbers] | add;
		def causes: [.causes[]] | add // 0;
		(.vcpus.guests[].vcpus[] | (., .tasks[]) | select(leaves != .wall_ns) |
			"\(.tid // .comm): states \(leaves), wall \(.wall_ns)"),
		(.vcpus.guests[].vcpus[] | select(.wall_ns != $w) | "vCPU \(.tid): wall \(.wall_ns) != \($w)"),
		(.latency.guests[] | select(causes != .total_ns) | "\(.name): causes \(causes), total \(.total_ns)"),
		(.latency.guests[].worst[] | select(causes != .latency_ns) | "\(.comm): causes \(causes), latency \(.latency_ns)"),
		(.intervals.guests[] | select(causes != .total_ns) | "\(.name): interval causes \(causes), total \(.total_ns)"),
		(.intervals.guests[].worst[] | select(causes != .duration_ns) | "\(.key): causes \(causes), interval \(.duration_ns)")
		' --argjson w "$(jq .vcpus.wall_ns "$WORK/r.json")" "$WORK/r.json")
	[ -z "$bad" ] || fail "seed $seed: $bad"
	[ $((seed % 4)) != 0 ] || jq -e '.vcpus.kvm_events == false and .vcpus.guests[0].vcpus[0].states.running > 0' \
		"$WORK/r.json" >/dev/null || fail "seed $seed: not the TCG states without KVM's events"
	[ $seed != 1 ] || jq -c '[.vcpus.wall_ns, .vcpus.lost_markers, ([.vcpus.guests[].vcpus[].tasks[]] | length),
		([.latency.guests[].wakeups] | add), ([.intervals.guests[].wakeups] | add)]' "$WORK/r.json" |
		sed 's/^/seed 1: wall, lost markers, tasks, wakeups, intervals: /'
	seed=$((seed + 1))
done
echo "40 random fixtures: every vCPU, task and wakeup adds up"
echo "PASS"
