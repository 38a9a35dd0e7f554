#!/bin/sh
# Proves (issue 13): a 256-vCPU guest's per-CPU figures survive exactly. The
# fake agent serves 256 CPUs (the fixture's pages reused), CPU n sending
# n % 13 pages more than its neighbours, so that no two adjacent CPUs have
# the same figures. For every CPU:
#  - manifest.json's bytes, pages, agent_bytes and agent_pages equal what the
#    agent sent and said in STATS, and its events equal the events in the
#    pages the agent sent;
#  - `trace-cmd report` shows that many events on that CPU;
#  - `virtio-trace-collect report DIR` prints, in the guest's section, a line
#        cpuN: E events, P pages, B bytes; agent: AP pages, AB bytes
#    (indented; the words after each number are what is checked, so the
#    punctuation may differ) with the same figures.
# The run exits 0. Bounded: a collector still running after $HARD_LIMIT s is
# SIGKILLed (a failure). 256 ports need ~520 fds in the fake agent.
echo "collect: a 256-vCPU guest: per-CPU bytes, pages, agent figures and events exact in manifest.json, trace-cmd report and report"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools
HARD_LIMIT=120
NCPU=256

[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1200 ] || ulimit -n 1200 2>/dev/null ||
	{ echo "SKIP: cannot raise the open-file limit to 1200 (it is $(ulimit -n))"; exit 77; }

p=$WORK/p out=$WORK/out
mkdir -p "$p"
slow_fake big --listen "$p" --fixture "$DATA/cap-guest" --cpus $NCPU --repeat 1 --vary-pages 13 --retime
BIG=$FAKE_PID
record_bg rec --chardev-dir "$p" --name big -o "$out" -d 3 --stop-timeout 10
wait_gone $HARD_LIMIT
fake_end $BIG
echo "measured: collector gone at $(secs $((T_GONE - T_RUN0))) s, exit $RC$([ $KILLED = 1 ] && echo ' (SIGKILLed by the test)')"
[ $KILLED = 0 ] || { show "$WORK/rec.log"; fail "the collector did not end within $HARD_LIMIT s"; }

# "cpu pages bytes events" the agent sent, and "cpu pages bytes" its STATS said
awk '$2 == "total" && $3 ~ /^cpu[0-9]+$/ { c = substr($3, 4); p = b = e = "";
	for (i = 4; i < NF; i++) { if ($i == "pages") p = $(i + 1); if ($i == "bytes") b = $(i + 1);
	if ($i == "events") e = $(i + 1) } print c, p, b, e }' "$WORK/big.fake" | sort -n >"$WORK/sent"
awk '$2 == "STATS" && $3 ~ /^cpu[0-9]+$/ { c = substr($3, 4); print c, $5, $7 }' "$WORK/big.fake" |
	sort -n | sort -n -u -k1,1 >"$WORK/stats"
[ "$(wc -l <"$WORK/sent")" = $NCPU ] || { show "$WORK/big.fake"; fail "the fake agent printed totals for $(wc -l <"$WORK/sent") CPUs, want $NCPU"; }
# Distinct neighbours, or the test proves little.
awk 'NR > 1 && $2 == p { bad = 1 } { p = $2 } END { exit bad }' "$WORK/sent" ||
	fail "the fake agent sent the same page count on adjacent CPUs"
awk '{ print $1, $2, $3 }' "$WORK/sent" | cmp -s - "$WORK/stats" ||
	{ diff "$WORK/sent" "$WORK/stats" | head; fail "the fake agent's STATS differ from what it sent"; }
echo "sent: $(awk '{ p += $2; e += $4 } END { print p " pages, " e " events" }' "$WORK/sent") on $NCPU CPUs"

[ $RC = 0 ] || { show "$WORK/rec.log"; echo "(continuing: the figures below say what went wrong)"; }
[ -f "$out/manifest.json" ] || fail "no manifest.json"
[ "$(guest_json "$out" big '.cpus | length')" = $NCPU ] ||
	fail "manifest lists $(guest_json "$out" big '.cpus | length') CPUs, want $NCPU"

# The expected line per CPU: cpu pages bytes events agent_pages agent_bytes
awk '{ print $1, $2, $3, $4, $2, $3 }' "$WORK/sent" >"$WORK/want"
guest_json "$out" big '.cpus[] | "\(.cpu) \(.pages) \(.bytes) \(.events) \(.agent_pages) \(.agent_bytes)"' |
	sort -n >"$WORK/manifest"

# trace-cmd report: events per CPU
report "$WORK/big.txt" -i "$out/guest-big.dat"
awk 'match($0, /-[0-9]+ +\[[0-9][0-9][0-9]\] *[0-9]+(\.[0-9]+)?: /) {
	s = substr($0, RSTART, RLENGTH); sub(/^[^[]*\[/, "", s); n[s + 0]++ }
	END { for (c = 0; c < '$NCPU'; c++) print c, n[c] + 0 }' "$WORK/big.txt" >"$WORK/tc"

# virtio-trace-collect report: the per-CPU lines of the guest's section
"$COLLECT" report "$out" >"$WORK/report.txt" 2>"$WORK/report.err" ||
	{ show "$WORK/report.err"; fail "virtio-trace-collect report exited $?"; }
awk 'index($0, "guest big") == 1 { on = 1; next } /^(host|guest) / { on = 0 }
	on && /^ +cpu[0-9]+: / && / pages/ && / bytes/ && / events/ {
		c = $1; sub(/^cpu/, "", c); sub(/:$/, "", c); ag = 0; p = b = e = ap = ab = "-"
		for (i = 2; i <= NF; i++) {
			w = $i; gsub(/[,;:()]/, "", w)
			if (w == "agent") ag = 1
			if (i == 2) continue
			v = $(i - 1); gsub(/[,;:()]/, "", v)
			if (w == "pages") { if (ag) ap = v; else p = v }
			if (w == "bytes") { if (ag) ab = v; else b = v }
			if (w == "events") e = v
		}
		print c, p, b, e, ap, ab
	}' "$WORK/report.txt" | sort -n >"$WORK/rep"

# compare WHAT FILE: FILE (cpu and figures) against $WORK/want; sets $BAD
BAD=
compare() {
	_diffs=$(awk 'NR == FNR { w[$1] = $0; next } { g[$1] = $0 }
		END { n = 0; for (c = 0; c < '$NCPU'; c++) if (w[c] != g[c]) {
			if (n < 4) printf "  cpu%d: want \"%s\", got \"%s\"\n", c, w[c], g[c]; n++ }
			if (n) printf "  %d of '$NCPU' CPUs differ\n", n }' "$WORK/want" "$2")
	if [ -n "$_diffs" ]; then
		echo "$1 (cpu pages bytes events agent_pages agent_bytes):"
		echo "$_diffs"
		BAD="$BAD $1"
	fi
}
compare manifest.json "$WORK/manifest"
awk 'NR == FNR { e[$1] = $2; next } { print $1, $2, $3, e[$1], $5, $6 }' "$WORK/tc" "$WORK/want" >"$WORK/want.tc"
cmp -s "$WORK/want" "$WORK/want.tc" || {
	awk 'NR == FNR { w[$1] = $4; next } w[$1] != $2 { if (n++ < 4) printf "  cpu%d: the agent sent %s events, trace-cmd report shows %s\n", $1, w[$1], $2 }
		END { if (n) printf "  %d of '$NCPU' CPUs differ\n", n }' "$WORK/want" "$WORK/tc"
	BAD="$BAD trace-cmd-report"
}
[ -s "$WORK/rep" ] || echo "report: no per-CPU lines (\"cpuN: E events, P pages, B bytes; agent: AP pages, AB bytes\") in the section of guest big"
compare report "$WORK/rep"
[ $RC = 0 ] || BAD="$BAD exit-status-$RC"
[ -z "$BAD" ] || fail "per-CPU figures not exact in:$BAD"
echo "PASS"
