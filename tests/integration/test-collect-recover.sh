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
fake vmk --fifo "$p" --fixture "$DATA/cap-guest" --repeat 0 --rate 400K --retime
pid=$FAKE_PID
"$COLLECT" record --chardev-dir "$p" --name vmk -o "$out" --duration 60 --quiet >"$WORK/rec.log" 2>&1 &
cpid=$!
track $cpid
T_COLLECTORS=$cpid
spool=$out/.spool/guest-vmk
i=0
while [ $i -lt 150 ]; do
	s=$(spool_pages "$spool" 1 | wc -c)
	[ "$s" -ge 65536 ] && break
	kill -0 $cpid 2>/dev/null || { show "$WORK/rec.log"; fail "collector exited early"; }
	sleep 0.1
	i=$((i + 1))
done
[ "$s" -ge 65536 ] || { show "$WORK/rec.log"; fail "no pages spooled in 15 s ($spool)"; }
kill -KILL $cpid
wait $cpid 2>/dev/null
kill -TERM $pid
wait $pid 2>/dev/null
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
