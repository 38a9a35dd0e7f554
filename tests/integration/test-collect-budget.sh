#!/bin/sh
# Proves: what a guest sends is bounded on disk and in memory. A guest that
# sends nothing but malformed pages as fast as it can:
#  - without --max-size: the first 16 malformed pages of each CPU are kept as
#    evidence in bad-pages/, every other one is counted (manifest bad_pages is
#    the total, bad_pages_kept 16, every page the agent sent is accounted for);
#    the collector's peak RSS (VmHWM, GNU time's %M) stays under 64 MiB;
#  - with --max-size 2M, next to a good guest: malformed pages and metadata
#    count against the budget, the guest is stopped when it is used up
#    (max_size_reached, a problem naming --max-size, exit 3), the budget taken
#    is at most 2M, the run's whole output directory stays under 2M + the
#    good guest's files, and the good guest's file is exact.
echo "collect: a flood of malformed pages is bounded: 16 kept per CPU, counted, --max-size covers them, RSS flat"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
[ -x /usr/bin/time ] || { echo "SKIP: GNU time (/usr/bin/time) is not installed"; exit 77; }

keep=16 page=4096

# 1. A flood, no --max-size: evidence bounded, everything counted, memory flat.
p=$WORK/p1 out=$WORK/out1
mkdir -p "$p"
fake flood1 --fifo "$p" --fixture "$DATA/cap-guest" --repeat 0 --all-bad
pid=$FAKE_PID
_cl=$WORK/rec1.log
/usr/bin/time -f '%M' -o "$WORK/rss1" "$COLLECT" record --chardev-dir "$p" --name flood1 -o "$out" \
	--duration 3 -q >"$_cl" 2>&1 &
COLLECT_PID=$!
track $COLLECT_PID
collect_wait 60
fake_end $pid
[ $RC = 3 ] || { show "$_cl"; fail "flood without --max-size: collector exited $RC, want 3"; }
for c in 0 1; do
	sent=$(fake_total flood1 $c pages)
	j=".cpus[] | select(.cpu == $c)"
	bad=$(guest_json "$out" flood1 "$j | .bad_pages")
	kept=$(guest_json "$out" flood1 "$j | .bad_pages_kept")
	[ "$sent" -gt $((keep * 4)) ] || fail "cpu$c: the agent sent only $sent pages: no flood"
	[ "$bad" = "$sent" ] || fail "cpu$c: manifest bad_pages $bad, the agent sent $sent malformed pages"
	[ "$kept" = $keep ] || fail "cpu$c: manifest bad_pages_kept $kept, want $keep"
	f=$out/bad-pages/flood1-cpu$c.bad
	[ "$(stat -c %s "$f" 2>/dev/null)" = $((keep * page)) ] ||
		fail "cpu$c: $f holds $(stat -c %s "$f" 2>/dev/null) bytes, want $keep pages"
	[ "$(guest_json "$out" flood1 "$j | .pages")" = 0 ] || fail "cpu$c: malformed pages went into the trace"
done
guest_json "$out" flood1 .problems | grep -q "malformed pages ($keep kept" ||
	fail "problems do not name the kept evidence: $(guest_json "$out" flood1 .problems)"
rss=$(tail -n 1 "$WORK/rss1")
sent1=$(( $(fake_total flood1 0 bytes) + $(fake_total flood1 1 bytes) ))
echo "flood without --max-size: $sent1 bytes of malformed pages in 3 s, $(du -sk "$out" | cut -f1) KiB on disk, peak RSS $rss KiB"
[ "$rss" -lt 65536 ] || fail "peak RSS $rss KiB under the flood, bound 64 MiB"

# 2. The same flood with --max-size 2M, next to a good guest.
pg=$WORK/pg pf=$WORK/pf out=$WORK/out2
mkdir -p "$pg" "$pf"
oracle "$DATA/cap-guest" 2
fake good --fifo "$pg" --fixture "$DATA/cap-guest" --repeat 2 --retime
gpid=$FAKE_PID
fake flood2 --listen "$pf" --fixture "$DATA/cap-guest" --repeat 0 --all-bad
fpid=$FAKE_PID
max=2097152
collect rec2 --chardev-dir "$pg" --name good --chardev-dir "$pf" --name flood2 -o "$out" \
	--duration 3 --max-size 2M
fake_end $gpid
fake_end $fpid
[ $RC = 3 ] || { show "$WORK/rec2.log"; fail "flood with --max-size: collector exited $RC, want 3"; }
check_exact "$out" good "$DATA/cap-guest" 2
[ -z "$(guest_json "$out" good '.problems // empty')" ] || fail "the good guest got problems: $(guest_json "$out" good .problems)"
b() { guest_json "$out" flood2 ".budget.$1"; }
[ "$(b max)" = $max ] || fail "manifest budget.max $(b max), want $max"
[ "$(b used)" -le $max ] || fail "budget used $(b used) > max $max"
[ "$(b used)" -gt $((max - 2 * page)) ] || fail "budget used $(b used): the guest stopped before it was used up"
[ "$(b used)" = $(( $(b pages_bytes) + $(b bad_pages_bytes) + $(b fragment_bytes) + $(b metadata_bytes) )) ] ||
	fail "budget used $(b used) is not the sum of its parts"
[ "$(b metadata_bytes)" -gt 0 ] || fail "the metadata did not count against the budget"
bad=$(guest_json "$out" flood2 '[.cpus[].bad_pages] | add')
[ "$(b bad_pages_bytes)" = $((bad * page)) ] || fail "budget bad_pages_bytes $(b bad_pages_bytes), manifest counts $bad malformed pages"
[ "$(guest_json "$out" flood2 .max_size_reached)" = true ] || fail "max_size_reached is not true"
guest_json "$out" flood2 .problems | grep -q -- "--max-size reached" ||
	fail "no problem names --max-size: $(guest_json "$out" flood2 .problems)"
sentp=$(( $(fake_total flood2 0 pages) + $(fake_total flood2 1 pages) ))
dropped=$(guest_json "$out" flood2 '[.cpus[].dropped_pages_max_size] | add')
[ $((bad + dropped)) = "$sentp" ] || fail "$bad malformed + $dropped dropped pages, the agent sent $sentp"
kept=$(guest_json "$out" flood2 '[.cpus[].bad_pages_kept] | add')
[ "$kept" -le $((2 * keep)) ] || fail "$kept malformed pages kept, at most $keep per CPU"
flood_disk=$(cat "$out"/bad-pages/* | wc -c)
[ "$flood_disk" -le $((2 * keep * page)) ] || fail "bad-pages/ holds $flood_disk bytes"
total=$(du -sk "$out" | cut -f1)
echo "flood with --max-size 2M: sent $sentp pages, budget used $(b used) bytes ($bad malformed pages counted, $kept kept, $dropped dropped), bad-pages/ $flood_disk bytes, output directory $total KiB"
echo "PASS"
