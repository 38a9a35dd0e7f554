#!/bin/sh
# Proves: --max-size bounds what a guest may spool. A guest that streams
# without end fills exactly its budget: the pages kept (spool and manifest)
# plus its metadata are at most SIZE and at least SIZE minus the slack of one
# page per CPU, the manifest says max_size_reached, a message names
# the guest, every page sent is either kept or counted as dropped, and the
# file written holds exactly the pages kept.
echo "collect: --max-size (pages + metadata) stops a guest at the bound, named, a problem, file consistent"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
size=262144
slack=$((2 * 4096))
fake vmbig --fifo "$p" --fixture "$DATA/cap-guest" --repeat 0 --rate 1M --retime
pid=$FAKE_PID
collect rec --chardev-dir "$p" --name vmbig -o "$out" --duration 3 --max-size 256K --keep-spool
fake_end $pid
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3 (the guest was stopped)"; }
guest_json "$out" vmbig .problems | grep -q -- "--max-size reached" ||
	fail "no problem names --max-size: $(guest_json "$out" vmbig .problems)"
sent=$(( $(fake_total vmbig 0 bytes) + $(fake_total vmbig 1 bytes) ))
spooled=$( (spool_pages "$out/.spool/guest-vmbig" 0; spool_pages "$out/.spool/guest-vmbig" 1) | wc -c)
# The metadata counts against the budget too (manifest budget.metadata).
meta=$(guest_json "$out" vmbig .budget.metadata_bytes)
[ $((sent + meta)) -gt "$size" ] || fail "the agent sent only $sent bytes + $meta of metadata: the test did not exceed the bound"
[ "$meta" -gt 0 ] || fail "manifest budget.metadata_bytes is '$meta': the metadata did not count"
[ "$(guest_json "$out" vmbig .budget.pages_bytes)" = "$spooled" ] ||
	fail "manifest budget.pages_bytes $(guest_json "$out" vmbig .budget.pages_bytes), the spool holds $spooled bytes"
[ $((spooled + meta)) -le $size ] || fail "spooled $spooled bytes + $meta of metadata, bound $size"
[ $((spooled + meta)) -ge $((size - slack)) ] ||
	fail "spooled only $spooled bytes + $meta of metadata, bound $size - $slack: stopped early"
pages=$(guest_json "$out" vmbig '[.cpus[].pages] | add')
[ $((pages * 4096)) = "$spooled" ] || fail "manifest has $pages pages, the spool $spooled bytes"
# Every page the agent sent is either kept or counted as dropped for the bound.
sentp=$(( $(fake_total vmbig 0 pages) + $(fake_total vmbig 1 pages) ))
dropped=$(guest_json "$out" vmbig '[.cpus[].dropped_pages_max_size] | add')
[ $((pages + dropped)) = "$sentp" ] ||
	fail "manifest: $pages pages kept + $dropped dropped, the agent sent $sentp"
[ "$(guest_json "$out" vmbig .max_size_reached)" = true ] || fail "manifest max_size_reached is not true"
grep -q 'vmbig' "$WORK/rec.log" && grep -qi 'max' "$WORK/rec.log" ||
	{ show "$WORK/rec.log"; fail "no message names vmbig and the size bound"; }
report "$WORK/r.txt" -i "$out/guest-vmbig.dat"
ev=$(all_events "$WORK/r.txt")
[ "$ev" = "$(guest_json "$out" vmbig '[.cpus[].events] | add')" ] ||
	fail "report shows $ev events, the manifest $(guest_json "$out" vmbig '[.cpus[].events] | add')"
echo "spooled $spooled of $sent bytes sent (bound $size), exit $RC"
echo "PASS"
