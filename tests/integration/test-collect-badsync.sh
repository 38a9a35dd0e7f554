#!/bin/sh
# Proves: probe replies are checked before they are believed. A guest that
# answers every clock probe with a pseudo-random TSC (vt-fake-agent
# --absurd-probes) gets no clock mapping, and says so: the manifest's sync
# method is "none" with the reason, its bound_ns is null (never 0: that only
# an exact method may claim), problems name it, `report` says the timestamps
# are not mapped, the exit status is 3, and the warnings are rate-limited.
# A truthful guest in the same run keeps its probe mapping with a bound > 0.
echo "collect: absurd probe replies give method none + reason, no 0 ns bound, exit 3; a truthful guest keeps its mapping"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

pg=$WORK/pg pl=$WORK/pl out=$WORK/out
mkdir -p "$pg" "$pl"
fake honest --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
gpid=$FAKE_PID
fake liar --listen "$pl" --fixture "$DATA/cap-guest" --repeat 2 --retime --absurd-probes
lpid=$FAKE_PID
collect rec --chardev-dir "$pg" --name honest --chardev-dir "$pl" --name liar -o "$out" \
	--duration 2 --sync-interval 0.3
fake_end $gpid
fake_end $lpid
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "collector exited $RC, want 3"; }
jq -e . "$out/manifest.json" >/dev/null || fail "manifest.json is not valid JSON"
m=$(guest_json "$out" liar .sync.method)
[ "$m" = none ] || fail "liar: sync method '$m', want none (bound $(guest_json "$out" liar .sync.bound_ns))"
guest_json "$out" liar .sync.why | grep -q "plausible" ||
	fail "liar: sync.why does not give the reason: $(guest_json "$out" liar .sync.why)"
[ "$(guest_json "$out" liar .sync.bound_ns)" = null ] ||
	fail "liar: bound_ns $(guest_json "$out" liar .sync.bound_ns), want null"
[ "$(guest_json "$out" liar '.sync.epochs | length')" = 0 ] || fail "liar: epochs were built from absurd replies"
guest_json "$out" liar .problems | grep -q "no clock mapping" ||
	fail "liar: problems do not name the missing mapping: $(guest_json "$out" liar .problems)"
guest_json "$out" liar .problems | grep -q "rejected as implausible" ||
	fail "liar: problems do not count the rejected bursts: $(guest_json "$out" liar .problems)"
n=$(grep -c "guest liar: implausible clock probe replies" "$WORK/rec.log")
[ "$n" -ge 1 ] && [ "$n" -le 5 ] || { show "$WORK/rec.log"; fail "liar: $n implausible-reply warnings, want 1 to 5"; }
"$COLLECT" report "$out" >"$WORK/report.txt" 2>&1
sed -n '/liar/,$p' "$WORK/report.txt" | grep -q "sync method: none" ||
	{ show "$WORK/report.txt"; fail "report does not say method none for liar"; }
sed -n '/liar/,$p' "$WORK/report.txt" | grep -q "not mapped onto the host" ||
	{ show "$WORK/report.txt"; fail "report does not say liar's timestamps are unmapped"; }
# The truthful guest: probes accepted, a real bound.
[ "$(guest_json "$out" honest .sync.method)" = probe ] || fail "honest: sync method $(guest_json "$out" honest .sync.method)"
awk -v b="$(guest_json "$out" honest .sync.bound_ns)" 'BEGIN { exit !(b > 0) }' ||
	fail "honest: bound_ns $(guest_json "$out" honest .sync.bound_ns), want > 0"
[ -z "$(guest_json "$out" honest '.problems // empty')" ] || fail "honest got problems: $(guest_json "$out" honest .problems)"
check_exact "$out" honest "$DATA/cap-guest" 2
echo "liar: $(guest_json "$out" liar .sync.why); honest: bound $(guest_json "$out" honest .sync.bound_ns) ns"
echo "PASS"
