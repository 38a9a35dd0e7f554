#!/bin/sh
# Proves: `virtio-trace-collect report --perfetto FILE` writes the recording
# as a Perfetto trace that protoc decodes against Perfetto's own schema with
# no error, holding one machine for the host and one per guest, each guest
# named (SystemInfo.machine_name) and tied to the host clock by a zero-offset
# RemoteClockSync under a BOOTTIME primary trace clock; its events equal
# `trace-cmd report -t -i host.dat -i guest-A.dat -i guest-B.dat`: per
# machine, per CPU and per event type the same counts, and every event at
# the same time to the nanosecond in the same merged order (guest events at
# host time), every field value equal to `trace-cmd report -R`'s
# (perfetto-fields.py); the pages that reported lost events start bundles marked
# lost_events, no others; every guest vCPU has a track naming its host thread;
# the file is created 0600 and not through a symbolic link.
echo "collect: report --perfetto decodes with Perfetto's schema and equals trace-cmd's merged report, per machine, CPU and type, to the ns"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v protoc >/dev/null 2>&1 || { echo "SKIP: protoc is not installed (Debian's protobuf-compiler)"; exit 77; }
SCHEMA=${VT_PERFETTO_SCHEMA:-$VT_SRCDIR/../shared/oracles/perfetto}
[ -f "$SCHEMA/perfetto_trace.proto" ] ||
	{ echo "SKIP: no Perfetto schema at $SCHEMA/perfetto_trace.proto (../shared beside the clone)"; exit 77; }

pa=$WORK/pa pb=$WORK/pb out=$WORK/out
mkdir -p "$pa" "$pb"
fake lossy --fifo "$pa" --fixture "$DATA/cap-guest" --repeat 2 --retime --tsc-offset 7000000 \
	--missed 1:5:1234 --missed 1:11 --missed 0:1
a=$FAKE_PID
fake other --fifo "$pb" --fixture "$DATA/cap-host" --repeat 2 --retime --tsc-offset 9000000
b=$FAKE_PID
host=
if [ -w /sys/kernel/tracing/instances ] && [ -r /sys/kernel/tracing/events/sched/sched_switch/format ]; then
	host="--host-events sched:sched_switch"
	(while :; do sleep 0.01; done) &
	busy=$!
	track $busy
else
	echo "note: no writable tracefs instances, the host machine holds no events"
fi
# shellcheck disable=SC2086
collect rec --chardev-dir "$pa" --name lossy --chardev-dir "$pb" --name other -o "$out" \
	--duration 2 --quiet --sync probe $host
[ -n "$host" ] && kill $busy
fake_end $a
fake_end $b
[ $RC = 0 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 0"; }

pf=$WORK/out.pftrace
( umask 0; "$COLLECT" report --perfetto "$pf" "$out" >"$WORK/report.txt" 2>"$WORK/report.err" )
rc=$?
[ $rc = 0 ] || { show "$WORK/report.err"; fail "report --perfetto exited $rc, want 0"; }
grep -q "wrote $pf (" "$WORK/report.err" || { show "$WORK/report.err"; fail "report did not say what it wrote"; }
[ "$(stat -c %a "$pf")" = 600 ] || fail "$pf has mode $(stat -c %a "$pf"), want 600 (the recording's)"

protoc --decode=perfetto.protos.Trace -I "$SCHEMA" perfetto_trace.proto <"$pf" >"$WORK/pf.txt" 2>"$WORK/protoc.err" ||
	{ show "$WORK/protoc.err"; fail "protoc cannot decode $pf as perfetto.protos.Trace"; }
[ -s "$WORK/protoc.err" ] && { show "$WORK/protoc.err"; fail "protoc warned decoding $pf"; }

# Our events, one line each: "MACHINE CPU NS NAME" in file order, and "LOST MACHINE CPU NS"
# for the first event of each bundle marked lost_events.
awk '
# protoc prints the fields of a packet by number: machine_id (98) after its events.
/^packet \{/ { m = 0; n = 0; lost = 0; ft = 0; next }
/^  machine_id: / { m = $2; next }
/^  ftrace_events \{/ { ft = 1; cpu = ""; lost = 0; first = 1; next }
/^  [a-z]/ { ft = 0; next }
ft && /^    cpu: / { cpu = $2; next }
# lost_events comes after the events too: the first event of the bundle is where the loss was.
ft && /^    lost_events: true/ { lost = 1; next }
ft && /^      timestamp: / { ts = $2; next }
ft && /^      [a-z_0-9]+ \{/ { name = $1; if (name != "generic") emit(); next }
ft && /^        event_name: / { name = $2; gsub(/"/, "", name); emit(); next }
/^\}/ {
	for (i = 1; i <= n; i++) print m, ev[i]
	if (lost) print "LOST", m, fe >"/dev/stderr"
}
function emit() {
	ev[++n] = cpu " " ts " " name
	if (first) fe = cpu " " ts
	first = 0
}' "$WORK/pf.txt" >"$WORK/pf.ev" 2>"$WORK/pf.lost"

# trace-cmd's merged report in the same form; machines numbered as the manifest orders them.
files=
[ -n "$host" ] && files="-i $out/host.dat"
files="$files -i $out/guest-lossy.dat -i $out/guest-other.dat"
# shellcheck disable=SC2086
report "$WORK/tc.txt" -t $files
awk -v host="${host:+1}" '
BEGIN { id["host.dat"] = 0; id["guest-lossy.dat"] = 1; id["guest-other.dat"] = 2 }
/EVENTS DROPPED\]/ { last = $1; sub(/:$/, "", last); next }
match($0, /-[0-9]+ +\[[0-9][0-9][0-9]\] *[0-9]+(\.[0-9]+)?: [^ :]+:/) {
	f = $1; sub(/:$/, "", f)
	s = substr($0, RSTART, RLENGTH - 1)
	split(s, p, /[][]/); cpu = p[2] + 0
	t = p[3]; sub(/^ +/, "", t); split(t, q, /: /); ts = q[1]; name = q[2]
	split(ts, r, "."); ns = r[1] r[2]; sub(/^0+/, "", ns)
	if (!(f in id)) f = last	# none after a DROPPED line: the file of that line
	last = f
	print id[f], cpu, ns, name
}' "$WORK/tc.txt" >"$WORK/tc.ev"
[ -s "$WORK/tc.ev" ] || fail "trace-cmd's merged report holds no events"

# Counts per machine, CPU and type.
cut -d' ' -f1,2,4 "$WORK/tc.ev" | sort | uniq -c >"$WORK/tc.counts"
cut -d' ' -f1,2,4 "$WORK/pf.ev" | sort | uniq -c >"$WORK/pf.counts"
cmp -s "$WORK/tc.counts" "$WORK/pf.counts" || {
	diff "$WORK/tc.counts" "$WORK/pf.counts" | head -20
	fail "event counts per machine, CPU and type differ (< trace-cmd, > perfetto)"
}
# The merged order at the same ns: ours sorted by time (ties: machine, then
# CPU, then file order within a CPU, the order trace-cmd merges in) equals
# trace-cmd's line for line.
awk '{ print NR, $0 }' "$WORK/pf.ev" | sort -s -k4,4n -k2,2n -k3,3n -k1,1n | cut -d' ' -f2- >"$WORK/pf.sorted"
cmp -s "$WORK/tc.ev" "$WORK/pf.sorted" || {
	diff "$WORK/tc.ev" "$WORK/pf.sorted" | head -20
	fail "the merged event sequence (machine, CPU, ns, type) differs from trace-cmd's"
}
ng=$(awk '$1 != 0' "$WORK/tc.ev" | wc -l)
nh=$(awk '$1 == 0' "$WORK/tc.ev" | wc -l)
[ "$ng" -gt 0 ] || fail "no guest events"
echo "ok: $ng guest and $nh host events: counts per machine, CPU and type, times to the ns and merged order equal trace-cmd's"
# Markers that are not atrace lines (the fixture's, the collector's) go generic, not typed print.
[ "$(grep -c '^      print {' "$WORK/pf.txt")" = 0 ] || fail "a non-atrace marker went out as a typed print"
[ "$(grep -c '^        event_name: "print"$' "$WORK/pf.txt")" = "$(awk '$4 == "print"' "$WORK/tc.ev" | wc -l)" ] ||
	fail "not every marker is a generic print"
# Field values: every field of every event, typed or generic, against trace-cmd report -R's.
# shellcheck disable=SC2086
report "$WORK/tcR.txt" -R -t $files
python3 "$VT_SRCDIR/tests/integration/perfetto-fields.py" "$WORK/pf.txt" "$WORK/tcR.txt" \
	host.dat=0 guest-lossy.dat=1 guest-other.dat=2 || fail "field values differ from trace-cmd report -R's"

# Machines: the host's packets carry no machine_id, each guest its own, named once.
# pf.flat: each line of a packet prefixed with the packet's number and machine.
awk '/^packet \{/ { p++; m = 0; n = 0; next } /^  machine_id: / { m = $2 }
	/^\}/ { for (i = 1; i <= n; i++) print p, m, l[i]; next } { l[++n] = $0 }' "$WORK/pf.txt" >"$WORK/pf.flat"
[ "$(grep -c '^[0-9]* [0-9]*   system_info {' "$WORK/pf.flat")" = 3 ] || fail "want 3 SystemInfo packets (host and two guests)"
for g in lossy:1 other:2; do
	n=${g%:*} id=${g#*:}
	[ "$(grep -c "^[0-9]* $id     machine_name: \"$n\"\$" "$WORK/pf.flat")" = 1 ] ||
		fail "guest $n is not named once as machine $id"
	[ "$(grep -c "^[0-9]* $id   remote_clock_sync {" "$WORK/pf.flat")" = 1 ] ||
		fail "guest $n (machine $id) has no RemoteClockSync"
done
grep -q '^[0-9]* 0     machine_name' "$WORK/pf.flat" && fail "the host has a machine_name (only remote machines take one)"
ids=$(sed -n 's/^  machine_id: //p' "$WORK/pf.txt" | sort -un | tr '\n' ' ')
[ "$ids" = "1 2 " ] || fail "machine ids in the file: '$ids', want '1 2 '"
# The trace clock: the first packet is the host's ClockSnapshot, BOOTTIME primary.
grep -q '^1 0     primary_trace_clock: BUILTIN_CLOCK_BOOTTIME$' "$WORK/pf.flat" ||
	fail "the first packet is not the host's ClockSnapshot with primary_trace_clock BOOTTIME"
# Each RemoteClockSync: two rounds whose readings are all the same: a zero offset, our mapping kept.
for id in 1 2; do
	v=$(awk -v id=$id '$2 == id && /remote_clock_sync/ { pk = $1 } $1 == pk && /timestamp: / { print $4 }' \
		"$WORK/pf.flat" | sort | uniq -c | awk '{ print $1 }')
	[ "$v" = 4 ] || fail "machine $id: RemoteClockSync readings are not 4 equal ones ($v)"
done
echo "ok: one machine per guest plus the host, named, clocks declared"

# Losses: a bundle marked lost_events starts at each event trace-cmd shows
# after a DROPPED line (same machine, CPU and ns), and nowhere else.
awk 'BEGIN { id["host.dat"] = 0; id["guest-lossy.dat"] = 1; id["guest-other.dat"] = 2 }
	/EVENTS DROPPED\]/ { f = $1; sub(/:$/, "", f); d = 1; next }
	d && match($0, /\[[0-9][0-9][0-9]\] *[0-9]+(\.[0-9]+)?:/) {
		s = substr($0, RSTART, RLENGTH - 1); split(s, p, /[][]/); t = p[3]; sub(/^ +/, "", t)
		split(t, r, "."); ns = r[1] r[2]; sub(/^0+/, "", ns); print id[f], p[2] + 0, ns; d = 0 }' \
	"$WORK/tc.txt" | sort >"$WORK/tc.lost"
sed 's/^LOST //' "$WORK/pf.lost" | sort >"$WORK/pf.lost.s"
[ "$(wc -l <"$WORK/tc.lost")" = 3 ] || fail "trace-cmd shows $(wc -l <"$WORK/tc.lost") losses, the fixture injects 3"
cmp -s "$WORK/tc.lost" "$WORK/pf.lost.s" || {
	diff "$WORK/tc.lost" "$WORK/pf.lost.s"
	fail "the bundles marked lost_events are not where trace-cmd shows the losses (< trace-cmd, > perfetto)"
}
echo "ok: 3 losses marked where trace-cmd shows them (machine, CPU, ns)"

# vCPU tracks: one per vCPU thread of each guest, naming it.
for g in lossy other; do
	for tid in $(guest_json "$out" $g '.vcpu_threads[]'); do
		grep -q "name: \"$g vCPU [0-9]* (host thread $tid)\"" "$WORK/pf.txt" ||
			fail "no track names host thread $tid as a vCPU of $g"
	done
done
echo "ok: every vCPU thread has its track"

# Not through a symbolic link, and a guest selected alone.
ln -s "$WORK/victim" "$WORK/link.pftrace"
"$COLLECT" report --perfetto "$WORK/link.pftrace" "$out" >/dev/null 2>"$WORK/link.err" &&
	fail "report --perfetto wrote through a symbolic link"
[ ! -e "$WORK/victim" ] || fail "report --perfetto created the link's target"
"$COLLECT" report --guest other --perfetto "$WORK/other.pftrace" "$out" >/dev/null 2>&1 ||
	fail "report --guest other --perfetto failed"
protoc --decode=perfetto.protos.Trace -I "$SCHEMA" perfetto_trace.proto <"$WORK/other.pftrace" >"$WORK/other.txt" ||
	fail "protoc cannot decode the --guest file"
grep -q 'machine_name: "lossy"' "$WORK/other.txt" && fail "--guest other still holds guest lossy"
grep -q 'machine_name: "other"' "$WORK/other.txt" || fail "--guest other lacks guest other"
echo "ok: no write through a link; --guest selects"
exit 0
