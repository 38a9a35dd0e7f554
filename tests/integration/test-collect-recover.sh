#!/bin/sh
# Proves: a collector killed with SIGKILL in the middle of a stream leaves a
# spool that `virtio-trace-collect recover DIR` turns into a valid
# guest-NAME.dat and manifest.json, and no spooled page is lost: per CPU, the
# pages and events in the recovered file equal the whole pages in the spool
# before recovery (counted independently with vt-mkdat from the spool).
echo "collect: recover after SIGKILL keeps every spooled page"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
kill_midstream vmk "$p" "$out"
spool=$out/.spool/guest-vmk
[ -f "$out/guest-vmk.dat" ] && fail "guest-vmk.dat exists before recover"

# The oracle: the spool's whole pages with the fixture's metadata.
mkdir "$WORK/sp"
cp -r "$DATA/cap-guest/." "$WORK/sp/"
rm -f "$WORK"/sp/cpu*.raw
for c in 0 1; do
	sz=$(spool_pages "$spool" $c | wc -c)
	spool_pages "$spool" $c | head -c $((sz / 4096 * 4096)) >"$WORK/sp/cpu$c.raw"
	eval "spool_pages$c=$((sz / 4096))"
done
"$TOOLS/vt-mkdat" -i "$WORK/sp" -o "$WORK/sp.dat" >/dev/null || fail "vt-mkdat on the spool's pages"
report "$WORK/sp.txt" -i "$WORK/sp.dat"

timeout -s KILL 60 "$COLLECT" recover "$out" >"$WORK/recover.log" 2>&1
rc=$?
case $rc in
0 | 3) ;;
*) show "$WORK/recover.log"; fail "recover exited $rc" ;;
esac
[ -f "$out/guest-vmk.dat" ] || { show "$WORK/recover.log"; fail "recover wrote no guest-vmk.dat"; }
report "$WORK/rec.txt" -i "$out/guest-vmk.dat"
[ "$(man "$out" .recovered)" = true ] || fail "manifest does not say recovered"
for c in 0 1; do
	eval "want=\$spool_pages$c"
	got=$(guest_json "$out" vmk ".cpus[] | select(.cpu == $c) | .pages")
	[ "$got" = "$want" ] || fail "cpu$c: recovered manifest has $got pages, the spool had $want"
	got=$(cpu_events "$WORK/rec.txt" $c)
	want=$(cpu_events "$WORK/sp.txt" $c)
	[ "$got" = "$want" ] || fail "cpu$c: recovered file shows $got events, the spool's pages hold $want"
	[ "$got" -gt 0 ] || fail "cpu$c: no events recovered"
done
echo "recovered: $spool_pages0 + $spool_pages1 pages, exit $rc"
echo "PASS"
