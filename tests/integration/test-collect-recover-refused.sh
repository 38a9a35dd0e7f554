#!/bin/sh
# Proves: a spool file whose section is corrupt (an epoch line of the sync
# file cut short, as a hostile hand could leave it) is refused by `recover`,
# which names the file, the section and the line in the manifest's problems
# and still writes every spooled page of the guest.
echo "collect: recover refuses a corrupt spool section, names it, keeps the pages"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vmr --fifo "$p" --fixture "$DATA/cap-guest" --repeat 0 --rate 400K --retime
pid=$FAKE_PID
"$COLLECT" record --chardev-dir "$p" --name vmr -o "$out" --duration 60 --quiet >"$WORK/rec.log" 2>&1 &
cpid=$!
track $cpid
T_COLLECTORS=$cpid
spool=$out/.spool/guest-vmr
i=0
while [ $i -lt 150 ]; do
	s=$(spool_pages "$spool" 1 | wc -c)
	[ "$s" -ge 65536 ] && [ -f "$spool/sync" ] && break
	kill -0 $cpid 2>/dev/null || { show "$WORK/rec.log"; fail "collector exited early"; }
	sleep 0.1
	i=$((i + 1))
done
[ "$s" -ge 65536 ] || { show "$WORK/rec.log"; fail "no pages spooled in 15 s ($spool)"; }
[ -f "$spool/sync" ] || fail "no sync file in the spool"
kill -KILL $cpid
wait $cpid 2>/dev/null
kill -TERM $pid
wait $pid 2>/dev/null
for c in 0 1; do
	eval "spool_pages$c=$(($(spool_pages "$spool" $c | wc -c) / 4096))"
done

# An epoch line with three of the eight values it needs.
line=$(($(wc -l <"$spool/sync") + 1))
printf 'epoch cpu=0 from=1 offset=\n' >>"$spool/sync"
timeout -s KILL 60 "$COLLECT" recover "$out" >"$WORK/recover.log" 2>&1
rc=$?
case $rc in
0 | 3) ;;
*) show "$WORK/recover.log"; fail "recover exited $rc" ;;
esac
[ -f "$out/guest-vmr.dat" ] || { show "$WORK/recover.log"; fail "recover wrote no guest-vmr.dat"; }
want="$out/.spool/guest-vmr/sync: section 'epoch', line $line: epoch line without its 8 values: the file was refused"
probs=$(guest_json "$out" vmr .problems)
case $probs in
*"$want"*) ;;
*) show "$WORK/recover.log"; fail "the problems do not name the refused section: '$probs'" ;;
esac
for c in 0 1; do
	eval "want=\$spool_pages$c"
	got=$(guest_json "$out" vmr ".cpus[] | select(.cpu == $c) | .pages")
	[ "$got" = "$want" ] || fail "cpu$c: recovered manifest has $got pages, the spool had $want"
done
echo "refused: line $line of the sync file; recovered $spool_pages0 + $spool_pages1 pages, exit $rc"
echo "PASS"
