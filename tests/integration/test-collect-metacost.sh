#!/bin/sh
# Proves: every guest entry of the manifest says what its metadata bundles cost (issue 42's
# "measure what the bundle costs the guest"): metadata.bytes equals budget.metadata_bytes,
# fetches counts the META requests answered (an agent with META_FLAGS, as trace-agent, answers
# the setup's without kallsyms, the whole one after START and the final one: 3; an older one
# the setup's whole bundle and the final one: 2), fetch_ms is the host's time for them, first_page_ms the
# time from the control port's connection to the first good page (under the recording's own
# length), and guest_cpu_ms is the agent's word for its CPU, taken as it says it (1234 us:
# 1.234 ms), null from an agent that does not say (or says something that is not a number),
# and never more than the session's time however much the agent claims.
echo "collect: the manifest's metadata cost: bytes, fetches, host time, the first page, the agent's CPU (bounded)"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

# run NAME [fake options...]: one recording of a fake guest sending the fixture twice.
run() {
	_n=$1
	shift
	mkdir -p "$WORK/p-$_n"
	fake "$_n" --fifo "$WORK/p-$_n" --fixture "$DATA/cap-guest" --repeat 2 --retime "$@"
	_fp=$FAKE_PID
	collect "rec-$_n" --chardev-dir "$WORK/p-$_n" --name "$_n" -o "$WORK/out-$_n" -q -- sleep 1
	fake_end $_fp
	[ $RC = 0 ] || { show "$WORK/rec-$_n.log"; fail "$_n: collector exited $RC"; }
	check_exact "$WORK/out-$_n" "$_n" "$DATA/cap-guest" 2
}
m() { guest_json "$WORK/out-$1" "$1" ".metadata.$2"; }

oracle "$DATA/cap-guest" 2
run said --meta-cpu-us 1234 --open-meta
run silent
run liar --meta-cpu-us 99999999999999
run junk --meta-cpu-us abc

for g in said silent liar junk; do
	bytes=$(m $g bytes) budget=$(guest_json "$WORK/out-$g" $g .budget.metadata_bytes)
	[ "$bytes" -gt 0 ] && [ "$bytes" = "$budget" ] ||
		fail "$g: metadata.bytes $bytes, budget.metadata_bytes $budget: want the same, above 0"
	want=2
	[ $g = said ] && want=3
	[ "$(m $g fetches)" = $want ] || fail "$g: metadata.fetches $(m $g fetches), want $want"
	awk -v v="$(m $g fetch_ms)" 'BEGIN { exit !(v > 0 && v < 60000) }' ||
		fail "$g: metadata.fetch_ms $(m $g fetch_ms), want above 0 and under a minute"
	# The recording lasts about a second (sleep 1): its first page came within it.
	awk -v v="$(m $g first_page_ms)" 'BEGIN { exit !(v > 0 && v < 5000) }' ||
		fail "$g: metadata.first_page_ms $(m $g first_page_ms), want above 0 and under 5 s"
	echo "$g: metadata $bytes bytes in $(m $g fetches) fetches, $(m $g fetch_ms) ms; first page after $(m $g first_page_ms) ms; the agent's CPU $(m $g guest_cpu_ms) ms"
done
[ "$(m said guest_cpu_ms)" = 1.234 ] || fail "said: guest_cpu_ms $(m said guest_cpu_ms), want 1.234 (1234 us)"
[ "$(m silent guest_cpu_ms)" = null ] || fail "silent: guest_cpu_ms $(m silent guest_cpu_ms), want null"
[ "$(m junk guest_cpu_ms)" = null ] || fail "junk: guest_cpu_ms $(m junk guest_cpu_ms), want null"
# The session (connection to the last STATS) took seconds, not the 99999999999999 us claimed.
awk -v v="$(m liar guest_cpu_ms)" 'BEGIN { exit !(v > 0 && v < 60000) }' ||
	fail "liar: guest_cpu_ms $(m liar guest_cpu_ms): a claim of 3 years was not bounded by the session's time"
python3 "$VT_SRCDIR/scripts/validate-json.py" "$VT_SRCDIR/doc/manifest.schema.json" "$WORK/out-said/manifest.json" ||
	fail "the manifest does not match doc/manifest.schema.json"
echo "PASS"
