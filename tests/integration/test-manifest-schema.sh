#!/bin/sh
# Proves: manifest.json and `report --json` match their schemas, doc/manifest.schema.json and
# doc/report.schema.json (python3's jsonschema as the oracle), on real recordings of fake
# guests: a plain guest with its last boot's trace (exit 0), a run with problems (loss, a bad
# page, probes; the host's events when tracefs is writable: exit 3), and --sync kvm on the KVM
# debugfs fixture (kvm-debugfs epochs) when tracefs is writable. Both carry "schema_version": 1.
# report --json carries each trace's per-CPU figures, their sums, a guest's sync and problems,
# equal to the manifest's (what report --help promises: everything the report shows).
# And the schemas can fail: a manifest with a key renamed, one without schema_version, one with
# a count as a string, and a report with a key renamed are each rejected, the key named.
echo "collect: manifest.json and report --json validate against doc/*.schema.json; a renamed key fails"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
VALIDATE="$VT_SRCDIR/scripts/validate-json.py"
MS=$VT_SRCDIR/doc/manifest.schema.json RS=$VT_SRCDIR/doc/report.schema.json
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
python3 -c 'import jsonschema' 2>/dev/null ||
	{ echo "SKIP: python3's jsonschema is not installed (python3-jsonschema)"; exit 77; }

# valid OUTDIR: its manifest.json and report --json match the schemas and say schema_version 1
valid() {
	_n=$(basename "$1")
	python3 "$VALIDATE" "$MS" "$1/manifest.json" >"$WORK/$_n.vm" 2>&1 ||
		{ cat "$WORK/$_n.vm"; fail "$_n: manifest.json does not match the schema"; }
	"$COLLECT" report --json "$1" >"$WORK/$_n.json" 2>"$WORK/$_n.json.err" ||
		{ show "$WORK/$_n.json.err"; fail "$_n: report --json exited $?"; }
	python3 "$VALIDATE" "$RS" "$WORK/$_n.json" >"$WORK/$_n.vr" 2>&1 ||
		{ cat "$WORK/$_n.vr"; fail "$_n: report --json does not match the schema"; }
	[ "$(man "$1" .schema_version)" = 1 ] || fail "$_n: manifest schema_version '$(man "$1" .schema_version)'"
	[ "$(jq -r .schema_version "$WORK/$_n.json")" = 1 ] || fail "$_n: report schema_version is not 1"
	echo "ok: $_n: manifest.json and report --json ($(jq '.traces | length' "$WORK/$_n.json") traces) match"
	carries "$1" "$WORK/$_n.json"
}

# carries OUTDIR REPORT: report --json carries what its --help promises the text report shows:
# each trace's per-CPU figures, their sums, a guest's sync (method, probes, epochs) and problems,
# equal to the manifest's.
carries() {
	_q='def figs: {name: (.name // "host"), cpus: [.cpus[]? | {cpu, events, pages, bytes}
		+ (if .agent_pages then {agent_pages, agent_bytes} else {} end)],
		bad: ([.cpus[]?.bad_pages] | add // 0),
		method: .sync.method, probes: ([.sync.probes[]?.samples] | add // 0),
		epochs: (.sync.epochs // [] | length)};'
	jq -S "$_q"' [(.host // empty), .guests[]] | map(figs + {problems: (if (.problems // "") == ""
		then null else .problems end)})' "$1/manifest.json" >"$WORK/carries.man" &&
	jq -S "$_q"' .traces | map(figs + {bad: .bad_pages, problems})' "$2" >"$WORK/carries.rep" ||
		{ fail "$(basename "$1"): jq failed on the figures"; return; }
	cmp -s "$WORK/carries.man" "$WORK/carries.rep" ||
		{ diff "$WORK/carries.man" "$WORK/carries.rep" | head -20; fail "$(basename "$1"): report --json's figures are not the manifest's"; return; }
	echo "ok: $(basename "$1"): report --json carries $(jq '[.[].cpus | length] | add' "$WORK/carries.rep") CPUs' figures, $(jq '[.[].epochs] | add' "$WORK/carries.rep") epochs, $(jq '[.[].probes] | add' "$WORK/carries.rep") probes, $(jq '[.[] | select(.problems)] | length' "$WORK/carries.rep") traces' problems as the manifest has them"
}

# rejected NAME FILE SCHEMA WORD: the validator refuses FILE and names WORD
rejected() {
	python3 "$VALIDATE" "$3" "$2" >"$WORK/$1.v" 2>&1
	_rc=$?
	[ $_rc = 1 ] || { cat "$WORK/$1.v"; fail "$1: the validator exited $_rc, want 1"; }
	grep -q -- "$4" "$WORK/$1.v" || { cat "$WORK/$1.v"; fail "$1: the failure does not name $4"; }
	echo "ok: $1 rejected: $(grep -m1 -- "$4" "$WORK/$1.v" | sed 's/^ *//' | cut -c1-110)"
}

host=
tracefs=
if [ -w /sys/kernel/tracing/instances ] && [ -r /sys/kernel/tracing/events/sched/sched_switch/format ]; then
	host="--host-events sched:sched_switch"
	tracefs=1
else
	echo "note: no writable tracefs instances: no host trace, no --sync kvm run"
fi

# 1: a plain guest, with the last boot's trace.
p=$WORK/p1
mkdir -p "$p"
fake plain --fifo "$p" --fixture "$DATA/cap-guest" --repeat 2 --retime --last-boot-info "schema test boot"
a=$FAKE_PID
collect plain --chardev-dir "$p" --name plain -o "$WORK/plain" --duration 2 --quiet --last-boot boot
fake_end $a
[ $RC = 0 ] || { show "$WORK/plain.log" "$WORK/plain.fake"; fail "plain: collector exited $RC, want 0"; }
[ "$(guest_json "$WORK/plain" plain .last_boot_file)" = guest-plain.lastboot.dat ] ||
	fail "plain: no last_boot_file in the manifest"
valid "$WORK/plain"

# 2: problems: loss and overrun on one guest, a bad page on the other; probes; the host.
pa=$WORK/pa pb=$WORK/pb
mkdir -p "$pa" "$pb"
fake lossy --fifo "$pa" --fixture "$DATA/cap-guest" --repeat 2 --retime --tsc-offset 7000000 \
	--missed 1:5:1234 --missed 0:1 --overrun 1:55
a=$FAKE_PID
fake broken --listen "$pb" --fixture "$DATA/cap-host" --repeat 2 --retime --bad-page 1 --notice-flood 2
b=$FAKE_PID
# shellcheck disable=SC2086
collect problems --chardev-dir "$pa" --name lossy --chardev-dir "$pb" --name broken \
	-o "$WORK/problems" --duration 2 --quiet --sync probe $host
fake_end $a
fake_end $b
[ $RC = 3 ] || { show "$WORK/problems.log"; fail "problems: collector exited $RC, want 3"; }
[ -n "$(guest_json "$WORK/problems" broken .problems)" ] || fail "problems: broken has no problems"
[ "$(guest_json "$WORK/problems" lossy .sync.method)" = probe ] || fail "problems: lossy not probed"
[ -z "$host" ] || [ "$(man "$WORK/problems" '.host | type')" = object ] || fail "problems: no host entry"
valid "$WORK/problems"

# 3: --sync kvm from the KVM debugfs fixture (see test-collect-kvm.sh).
if [ -n "$tracefs" ]; then
	dbg=$WORK/debugfs
	mkdir -p "$dbg"
	cp -r "$DATA/kvm-debugfs/intel48/kvm" "$dbg/" && chmod -R u+w "$dbg" || fail "copying the KVM fixture"
	for v in 0 1; do
		rm -f "$dbg/kvm/4242-11/vcpu$v/tsc-scaling-ratio" "$dbg/kvm/4242-11/vcpu$v/tsc-scaling-ratio-frac-bits"
		echo -5000000 >"$dbg/kvm/4242-11/vcpu$v/tsc-offset"
	done
	p=$WORK/p3
	mkdir -p "$p"
	fake kvm --fifo "$p" --fixture "$DATA/cap-guest" --retime --tsc-offset -5000000
	a=$FAKE_PID
	collect kvm --chardev-dir "$p" --name kvm --qemu-pid 4242 --debugfs "$dbg" --sync kvm \
		-o "$WORK/kvm" --duration 2 --quiet
	fake_end $a
	[ $RC = 0 ] || { show "$WORK/kvm.log"; fail "kvm: collector exited $RC, want 0"; }
	[ "$(guest_json "$WORK/kvm" kvm .sync.method)" = kvm ] || fail "kvm: sync method is not kvm"
	valid "$WORK/kvm"
fi

# The schemas can fail: a renamed key, a missing one, a wrong type, in copies.
m=$WORK/problems/manifest.json
sed 's/"pages_after_loss"/"pages_after_losses"/' "$m" >"$WORK/renamed.json"
cmp -s "$m" "$WORK/renamed.json" && fail "the copy has no pages_after_loss to rename"
rejected "manifest with pages_after_loss renamed" "$WORK/renamed.json" "$MS" pages_after_losses
grep -v '"schema_version"' "$m" >"$WORK/nover.json"
rejected "manifest without schema_version" "$WORK/nover.json" "$MS" "'schema_version' is a required property"
sed 's/"formats_refused": \([0-9]*\)/"formats_refused": "\1"/' "$m" >"$WORK/string.json"
rejected "manifest with formats_refused a string" "$WORK/string.json" "$MS" "formats_refused: '[0-9]*' is not of type 'integer'"
sed 's/"events_total"/"total_events"/' "$WORK/problems.json" >"$WORK/report-renamed.json"
rejected "report with events_total renamed" "$WORK/report-renamed.json" "$RS" total_events
echo "PASS"
