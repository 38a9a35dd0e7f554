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
kill_midstream vmr "$p" "$out" sync
spool=$out/.spool/guest-vmr
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
