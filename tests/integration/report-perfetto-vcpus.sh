#!/bin/sh
# Proves: `report --perfetto` puts each vCPU's states from report --vcpus on its vCPU track as
# TrackEvent slices (TYPE_SLICE_BEGIN named for the state, TYPE_SLICE_END, on the track's uuid,
# on a sequence whose first packet clears its incremental state): decoded by protoc against
# Perfetto's own schema, each track's slices follow one another without gap or overlap from
# the recording's first host record to its last, and summed per state name they equal
# `report --vcpus --json`'s leaves for that vCPU, to the nanosecond. A vCPU of a guest with no
# trace file (no machine, so no track) gets no slices.
# Fixture: report-vcpus.sh's KVM recording (VT_VCPUS_FIXTURE=DIR builds it only).
echo "report --perfetto: each vCPU's report --vcpus states as slices on its track, summing to the JSON's"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "SKIP: jq is not installed"; exit 77; }
command -v protoc >/dev/null 2>&1 || { echo "SKIP: protoc is not installed (Debian's protobuf-compiler)"; exit 77; }
SCHEMA=${VT_PERFETTO_SCHEMA:-$VT_SRCDIR/../shared/oracles/perfetto}
[ -f "$SCHEMA/perfetto_trace.proto" ] ||
	{ echo "SKIP: no Perfetto schema at $SCHEMA/perfetto_trace.proto (../shared beside the clone)"; exit 77; }

run=$WORK/run
mkdir -p "$run"
out=$(VT_VCPUS_FIXTURE=$run sh "$VT_SRCDIR/tests/integration/report-vcpus.sh" 2>&1) ||
	{ echo "$out"; fail "building the report-vcpus fixture"; }
"$COLLECT" report --perfetto "$WORK/v.pftrace" "$run" >/dev/null 2>"$WORK/v.err" || { cat "$WORK/v.err"; fail "report --perfetto exited $?"; }
cat "$WORK/v.err"
protoc --decode=perfetto.protos.Trace -I "$SCHEMA" perfetto_trace.proto <"$WORK/v.pftrace" >"$WORK/v.txt" 2>"$WORK/protoc.err" ||
	{ cat "$WORK/protoc.err"; fail "protoc cannot decode it"; }
"$COLLECT" report --vcpus --json "$run" >"$WORK/vcpus.json" || fail "report --vcpus --json exited $?"

# The JSON's leaves per vCPU, named as the slices are ("exit HLT", "preempted by stress-ng[900]").
jq -r '.vcpus.guests[] | .name as $g | .vcpus[] | "\($g) vCPU \(.vcpu)" as $l | .states | to_entries[] |
	if (.value | type) == "object" then .key as $k | .value | to_entries[] |
		"\($l)|\({exit_kernel: "exit ", exit_userspace: "exit to QEMU ", preempted: "preempted by "}[$k])\(.key)|\(.value)"
	else "\($l)|\({guest: "in the guest"}[.key] // .key)|\(.value)" end | select(endswith("|0") | not)' \
	"$WORK/vcpus.json" | grep -v '^other ' | sort >"$WORK/json-sums.txt"
python3 - "$WORK/v.txt" >"$WORK/slice-sums.txt" <<'PY' || fail "the slices are not one after another on their tracks"
import re, sys
text = open(sys.argv[1]).read()
tracks, ev = {}, []
for pkt in re.split(r"\npacket \{", text):
    m = re.search(r"track_descriptor \{\s*uuid: (\d+)\s*name: \"([^\"]*)\"", pkt)
    if m:
        tracks[m.group(1)] = re.sub(r" \(host thread \d+\)$", "", m.group(2))
    m = re.search(r"timestamp: (\d+)\s*trusted_packet_sequence_id: (\d+)\s*track_event \{\s*type: (\w+)\s*track_uuid: (\d+)(?:\s*categories: \"[^\"]*\")?(?:\s*name: \"([^\"]*)\")?", pkt)
    if m:
        ev.append((int(m.group(1)), m.group(3), m.group(4), m.group(5), pkt))
first_flags = re.search(r"sequence_flags: (\d+)", ev[0][4]).group(1) if ev else None
assert first_flags == "3", "the first slice packet does not clear the incremental state: %s" % first_flags
open_, last_end, first, sums, count = {}, {}, {}, {}, {}
for ts, typ, uuid, name, _ in ev:
    assert uuid in tracks, "a slice on track %s, which has no descriptor" % uuid
    t = tracks[uuid]
    if typ == "TYPE_SLICE_BEGIN":
        assert t not in open_, "%s: a slice begins at %d inside another" % (t, ts)
        assert t not in last_end or last_end[t] == ts, "%s: a gap or overlap at %d" % (t, ts)
        first.setdefault(t, ts)
        open_[t] = (ts, name)
    else:
        assert typ == "TYPE_SLICE_END" and t in open_, "%s: an end without a begin at %d" % (t, ts)
        b, name = open_.pop(t)
        sums[(t, name)] = sums.get((t, name), 0) + ts - b
        count[t] = count.get(t, 0) + 1
        last_end[t] = ts
assert not open_, "slices left open: %s" % open_
for t in sorted(count):
    assert first[t] == 1000000 and last_end[t] == 1100000, "%s spans %d..%d" % (t, first[t], last_end[t])
    print("# %s: %d slices" % (t, count[t]), file=sys.stderr)
for (t, name), ns in sorted(sums.items()):
    print("%s|%s|%d" % (t, name, ns))
PY
sort -o "$WORK/slice-sums.txt" "$WORK/slice-sums.txt"
[ -s "$WORK/json-sums.txt" ] || fail "report --vcpus --json has no states"
diff -u "$WORK/json-sums.txt" "$WORK/slice-sums.txt" || fail "the slices' sums per state differ from report --vcpus --json"
echo "ok: $(wc -l <"$WORK/json-sums.txt") states of fx vCPU 0 and 1 equal report --vcpus --json's"
n=$(grep -c 'type: TYPE_SLICE_BEGIN' "$WORK/v.txt")
[ "$n" = 33 ] || fail "$n slices, want 33 (fx vCPU 0: 19, vCPU 1: 14; guest other has no track)"
grep -q '^    name: "other vCPU' "$WORK/v.txt" && fail "guest other, which has no trace file, has a vCPU track"
echo "PASS"
