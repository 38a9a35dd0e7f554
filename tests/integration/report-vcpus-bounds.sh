#!/bin/sh
# Proves: `report --vcpus` bounds its tables against what the files say and still adds up: a vCPU
# preempted by 600 different host tasks names the first 509 (the table's 510 names include the
# vCPU thread itself, the next task of its own switches in) and charges the rest to "(more tasks)", 3000 different guest tasks on a vCPU give at most 2048 vCPU-task pairs (the rest
# counted past a bound), 300 exit reasons give 256, and every vCPU's states still add up to its
# wall time exactly. FIXTURE: packed with tests/tools/vt-mkkvm as report-vcpus.sh's.
echo "report --vcpus: bounded tables (tasks, pairs, reasons) with the states still adding up"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
command -v jq >/dev/null 2>&1 || { echo "SKIP: jq is not installed"; exit 77; }

h=$WORK/host-fixture g=$WORK/guest-fixture run=$WORK/run
mkdir -p "$h/formats/sched" "$g" "$run"
cp -r "$DATA/kvm-exits/formats/kvm" "$h/formats/"
cp "$DATA/cap-host/formats/sched/sched_switch" "$DATA/cap-host/formats/sched/sched_wakeup" "$h/formats/sched/"
for f in header_page header_event uname; do cp "$DATA/cap-host/$f" "$h/"; done
echo '[local] global' >"$h/trace_clock"
echo 1 >"$h/nr_cpus"
id() { sed -n 's/^ID: //p' "$1"; }
# vCPU 0 = thread 5001: 600 preemptions by pids 10000..10599 (100 ns each), then 300 exits of
# reasons 0..299 (SVM codes; 50 ns each, 50 ns in the guest between), all on host CPU 0.
awk 'BEGIN { t = 1000000
	for (i = 0; i < 600; i++) {
		printf "0 %d 5001 sw 0 %d hog%d\n", t, 10000 + i, i
		printf "0 %d %d sw 0 5001 CPU0/KVM\n", t + 100, 10000 + i; t += 200 }
	for (i = 0; i < 300; i++) {
		printf "0 %d 5001 entry 0 1000\n", t
		printf "0 %d 5001 svmexit 0 %d 1000\n", t + 50, i; t += 100 }
	printf "0 %d 5001 entry 0 1000\n", t }' >"$WORK/events"
"$TOOLS/vt-mkkvm" -o "$h" --exit-id "$(id "$h/formats/kvm/kvm_exit")" --entry-id "$(id "$h/formats/kvm/kvm_entry")" \
	--switch-id "$(id "$h/formats/sched/sched_switch")" --cpus 1 <"$WORK/events" || fail "vt-mkkvm (host)"
mkdat "$run/host.dat" -i "$h" --trace-id 0x42 --guest fx:0x1234:5001
# The guest: 3000 tasks, one after the other on vCPU 0, 50 ns each from 1000000 on.
cp -r "$DATA/cap-guest/." "$g/"
rm -f "$g"/cpu*.raw "$g"/cpu*.stats
echo 1 >"$g/nr_cpus"
awk 'BEGIN { for (j = 0; j < 3000; j++) printf "0 %d 1 switch %d t%d\n", 1000000 + 50 * j, 20000 + j, j }' |
	"$TOOLS/vt-mkkvm" -o "$g" --exit-id 1 --entry-id 2 --switch-id "$(id "$g/formats/sched/sched_switch")" \
		--cpus 1 || fail "vt-mkkvm (guest)"
mkdat "$run/guest-fx.dat" -i "$g" --trace-id 0x1234
printf '{"tool":"fixture","version":"0","host":{"file":"host.dat"},"guests":[%s]}\n' \
	'{"name":"fx","file":"guest-fx.dat","trace_id":"0x0000000000001234"}' >"$run/manifest.json"

"$COLLECT" report --vcpus --json "$run" >"$WORK/r.json" || fail "report --vcpus --json exited $?"
v='.vcpus.guests[0].vcpus[0]'
read -r wall sum npre more nk ntasks past <<EOF
$(jq -r "[$v.wall_ns, ([$v.states | .. | numbers] | add), ($v.states.preempted | length),
	$v.states.preempted[\"(more tasks)\"], ($v.states.exit_kernel | length), ($v.tasks | length),
	.vcpus.past_bound] | @tsv" "$WORK/r.json")
EOF
echo "wall $wall, states $sum; preempting tasks $npre, (more tasks) $more ns; reasons $nk; tasks $ntasks; past a bound $past"
[ "$wall" = $((600 * 200 + 300 * 100)) ] || fail "wall $wall"
[ "$sum" = "$wall" ] || fail "the states add up to $sum, not $wall"
[ "$npre" = 510 ] && [ "$more" = $((91 * 100)) ] || fail "$npre preempting keys, (more tasks) $more ns: want 510 and 9100"
[ "$nk" = 256 ] || fail "$nk exit reasons, want 256"
[ "$ntasks" -le 2048 ] && [ "$ntasks" -ge 2000 ] && [ "$past" -gt 0 ] || fail "$ntasks tasks, $past past a bound"
bad=$(jq -r ".vcpus.guests[].vcpus[].tasks[] | select(([.states | .. | numbers] | add) != .wall_ns) | .comm" "$WORK/r.json")
[ -z "$bad" ] || fail "tasks whose states do not add up: $bad"
"$COLLECT" report --vcpus "$run" >"$WORK/r.txt" || fail "report --vcpus exited $?"
grep -q '^  note: 0 lost-event markers in the host file, 0 undecodable records, [1-9][0-9]* past a bound$' "$WORK/r.txt" ||
	fail "the text does not note what passed a bound"
echo "PASS"
