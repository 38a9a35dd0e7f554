#!/bin/sh
# Proves: `virtio-trace-collect report DIR` tells the truth about a run. For
# each source (two fake guests, and the host when tracefs is writable) its
# per-type event counts equal those `trace-cmd report` shows for the same
# file, sorted by count, and their sum is the total it prints; the lost-event
# figures (in-page counts, pages after loss, guest overrun) and bad pages equal
# manifest.json's and the values the fake agent injected; problems are shown;
# each guest's sync method, bound, minimum probe RTT and every epoch are
# printed as the manifest has them. A missing manifest, a malformed one and a
# missing trace file exit 1; bad usage exits 2.
echo "collect: report DIR prints per-type event counts equal to trace-cmd's, the manifest's loss and the sync epochs"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

pa=$WORK/pa pb=$WORK/pb out=$WORK/out
mkdir -p "$pa" "$pb"
fake lossy --fifo "$pa" --fixture "$DATA/cap-guest" --repeat 2 --retime --tsc-offset 7000000 \
	--missed 1:5:1234 --missed 1:11 --missed 0:1 --overrun 1:55 --overrun 0:7
a=$FAKE_PID
fake broken --listen "$pb" --fixture "$DATA/cap-host" --repeat 2 --retime --bad-page 1
b=$FAKE_PID
host=
if [ -w /sys/kernel/tracing/instances ] && [ -r /sys/kernel/tracing/events/sched/sched_switch/format ]; then
	host="--host-events sched:sched_switch"
else
	echo "note: no writable tracefs instances, the host part is not checked"
fi
# shellcheck disable=SC2086
collect rec --chardev-dir "$pa" --name lossy --chardev-dir "$pb" --name broken -o "$out" \
	--duration 2 --quiet --sync probe $host
fake_end $a
fake_end $b
# broken's bad page is a problem: exit 3, files written.
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3"; }

"$COLLECT" report "$out" >"$WORK/report.txt" 2>"$WORK/report.err"
rc=$?
[ $rc = 0 ] || { show "$WORK/report.err"; fail "report exited $rc, want 0"; }
[ -s "$WORK/report.err" ] && { show "$WORK/report.err"; fail "report printed to stderr"; }

# section HEADER: the report's lines for one source ("host:" or "guest NAME:")
section() {
	awk -v h="$1" 'index($0, h) == 1 { on = 1; print; next } /^(host|guest) / || /^host:/ { on = 0 } on' \
		"$WORK/report.txt"
}

# tc_counts FILE: "name count" per event type as trace-cmd report shows FILE, sorted
tc_counts() {
	report "$WORK/tc.txt" -i "$1"
	awk 'match($0, /-[0-9]+ +\[[0-9][0-9][0-9]\] *[0-9]+(\.[0-9]+)?: [^ :]+:/) {
		s = substr($0, RSTART, RLENGTH - 1); sub(/.*: /, "", s); n[s]++ }
		END { for (k in n) print k, n[k] }' "$WORK/tc.txt" | sort
}

# rep_counts HEADER: "name count" per type from the report (system dropped,
# as trace-cmd report prints only the name), sorted
rep_counts() {
	section "$1" | awk '/^ +[0-9]+  [^ ]+:[^ ]+$/ { s = $2; sub(/^[^:]*:/, "", s); n[s] += $1 }
		END { for (k in n) print k, n[k] }' | sort
}

# field HEADER LABEL: the value after "  LABEL: " in a section
field() {
	section "$1" | awk -v l="  $2: " 'index($0, l) == 1 { print substr($0, length(l) + 1); exit }'
}

check_source() {
	_h=$1 _file=$2 _jq=$3
	tc_counts "$out/$_file" >"$WORK/want"
	rep_counts "$_h" >"$WORK/got"
	[ -s "$WORK/want" ] || fail "$_file: trace-cmd report shows no events"
	cmp -s "$WORK/want" "$WORK/got" || {
		diff "$WORK/want" "$WORK/got"
		fail "$_h event counts per type differ from trace-cmd report (< trace-cmd, > report)"
	}
	# Sorted by count, largest first; the total is their sum and trace-cmd's.
	section "$_h" | awk '/^ +[0-9]+  [^ ]+:[^ ]+$/ { print $1 }' >"$WORK/order"
	sort -rn "$WORK/order" | cmp -s - "$WORK/order" || fail "$_h: event types not sorted by count"
	total=$(awk '{ t += $2 } END { print t }' "$WORK/want")
	[ "$(field "$_h" events)" = "$total" ] || fail "$_h: report total $(field "$_h" events), trace-cmd shows $total"
	[ "$(man "$out" "[$_jq.cpus[].events] | add")" = "$total" ] || fail "$_h: manifest events differ from trace-cmd"
	# Loss and bad pages exactly as the manifest has them.
	for pair in "lost events in pages:$_jq.lost_events.in_pages" \
		"pages after loss:[$_jq.cpus[].pages_after_loss] | add" \
		"bad pages:[$_jq.cpus[].bad_pages] | add"; do
		label=${pair%%:*} q=${pair#*:}
		[ "$(field "$_h" "$label")" = "$(man "$out" "$q")" ] ||
			fail "$_h: report '$label' is '$(field "$_h" "$label")', manifest '$(man "$out" "$q")'"
	done
	if [ "$_h" = "host:" ]; then ring=host; else ring=guest; fi
	[ "$(field "$_h" "overrun ($ring ring buffer)")" = "$(man "$out" "$_jq.lost_events.overrun")" ] ||
		fail "$_h: report overrun '$(field "$_h" "overrun ($ring ring buffer)")', manifest '$(man "$out" "$_jq.lost_events.overrun")'"
	echo "ok: $_h $total events in $(wc -l <"$WORK/want") types equal trace-cmd report; loss equals the manifest"
}

check_sync() {
	_h="guest $1:" _jq=".guests[] | select(.name == \"$1\")"
	method=$(man "$out" "$_jq | .sync.method")
	[ "$method" = probe ] || fail "$1: manifest sync method '$method', want probe"
	field "$_h" "sync method" | grep -q "^probe (" || fail "$1: report sync method '$(field "$_h" "sync method")'"
	want=$(printf '%.1f ns' "$(man "$out" "$_jq | .sync.bound_ns")")
	[ "$(field "$_h" "sync bound")" = "$want" ] || fail "$1: report bound '$(field "$_h" "sync bound")', manifest $want"
	want=$(printf '%.1f ns' "$(man "$out" "[$_jq | .sync.probes[].min_rtt_ns] | min")")
	field "$_h" "min RTT" | grep -q "^$want (cpu" || fail "$1: report min RTT '$(field "$_h" "min RTT")', manifest $want"
	n=$(man "$out" "$_jq | .sync.epochs | length")
	[ "$n" -gt 0 ] || fail "$1: no epochs in the manifest"
	[ "$(field "$_h" epochs)" = "$n" ] || fail "$1: report says $(field "$_h" epochs) epochs, manifest $n"
	man "$out" "$_jq | .sync.epochs[] | \"cpu\\(.cpu): from host TSC \\(.host_tsc_from) offset \\(.offset) \" +
		\"ratio \\(.ratio)/2^\\(.frac_bits) source \\(.source) drift \\(if .drift then \"yes\" else \"no\" end)\"" |
		while read -r line; do
			section "$_h" | grep -qF "    $line bound " || { echo "missing: $line"; exit 1; }
		done || fail "$1: an epoch of the manifest is not in the report"
	echo "ok: $1 sync method, bound, min RTT and $n epochs as in the manifest"
}

check_source "guest lossy:" guest-lossy.dat '.guests[] | select(.name == "lossy")'
# The injected loss, not just agreement between two zeros.
[ "$(field "guest lossy:" "lost events in pages")" = 1234 ] || fail "lossy: lost events in pages is not 1234"
[ "$(field "guest lossy:" "pages after loss")" = 3 ] || fail "lossy: pages after loss is not 3"
[ "$(field "guest lossy:" "overrun (guest ring buffer)")" = 62 ] || fail "lossy: overrun is not 62"
[ "$(field "guest lossy:" problems)" = none ] || fail "lossy: problems '$(field "guest lossy:" problems)'"
check_source "guest broken:" guest-broken.dat '.guests[] | select(.name == "broken")'
[ "$(field "guest broken:" "bad pages")" -gt 0 ] || fail "broken: no bad pages reported"
field "guest broken:" problems | grep -q 'malformed pages' || fail "broken: problems '$(field "guest broken:" problems)'"
check_sync lossy
check_sync broken
if [ -n "$host" ]; then
	[ -f "$out/host.dat" ] || fail "no host.dat"
	check_source "host:" host.dat .host
fi

# Failures: no manifest, a malformed one, a missing trace file; usage.
mkdir "$WORK/empty"
"$COLLECT" report "$WORK/empty" >/dev/null 2>"$WORK/err1"
rc=$?
[ $rc = 1 ] || fail "report of a directory without manifest exited $rc, want 1"
grep -q 'manifest.json' "$WORK/err1" || fail "no clear message for a missing manifest: $(cat "$WORK/err1")"
mkdir "$WORK/trunc"
head -c 300 "$out/manifest.json" >"$WORK/trunc/manifest.json"
"$COLLECT" report "$WORK/trunc" >/dev/null 2>"$WORK/err2"
rc=$?
[ $rc = 1 ] || fail "report of a truncated manifest exited $rc, want 1"
grep -q 'manifest.json:[0-9]*: unexpected end of input' "$WORK/err2" ||
	fail "no clear message for a truncated manifest: $(cat "$WORK/err2")"
mkdir "$WORK/nodat"
cp "$out/manifest.json" "$WORK/nodat/"
"$COLLECT" report "$WORK/nodat" >/dev/null 2>"$WORK/err3"
rc=$?
[ $rc = 1 ] || fail "report with the trace files missing exited $rc, want 1"
grep -q 'cannot read .*guest-lossy.dat' "$WORK/err3" || fail "no clear message for a missing file: $(cat "$WORK/err3")"
"$COLLECT" report >/dev/null 2>&1
rc=$?
[ $rc = 2 ] || fail "report without DIR exited $rc, want 2"
"$COLLECT" report --bogus "$out" >/dev/null 2>&1
rc=$?
[ $rc = 2 ] || fail "report --bogus exited $rc, want 2"
"$COLLECT" report --help | grep -q '^Usage: virtio-trace-collect report \[OPTION\]\.\.\. DIR' || fail "report --help"
echo "ok: missing manifest, truncated manifest and missing file exit 1; usage errors exit 2"
echo "PASS"
