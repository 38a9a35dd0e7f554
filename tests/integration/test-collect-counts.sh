#!/bin/sh
# Proves: over each of the three stand-in port kinds QEMU offers (FIFO pairs,
# a unix socket QEMU listens on, a unix socket the collector listens on with
# --listen), virtio-trace-collect records a guest's pages completely: the
# events trace-cmd reports from guest-NAME.dat equal, per CPU, the fixture's
# events times the number of repetitions the agent sent, and manifest.json's
# per-CPU bytes, pages and events equal what the agent sent; exit status 0.
echo "collect: exact per-CPU event, byte and page counts over FIFO, socket and --listen ports"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

K=3
for mode in fifo socket listen; do
	p=$WORK/ports-$mode out=$WORK/out-$mode name=vm-$mode
	mkdir -p "$p"
	case $mode in
	fifo) fake $name --fifo "$p" --fixture "$DATA/cap-guest" --repeat $K --retime; att= ;;
	socket) fake $name --listen "$p" --fixture "$DATA/cap-guest" --repeat $K --retime; att= ;;
	listen) fake $name --connect "$p" --fixture "$DATA/cap-guest" --repeat $K --retime; att=--listen ;;
	esac
	pid=$FAKE_PID
	collect $mode --chardev-dir "$p" --name $name $att -o "$out" --duration 2 --quiet
	fake_end $pid
	[ $RC = 0 ] || { show "$WORK/$mode.log" "$WORK/$name.fake"; fail "$mode: collector exited $RC, want 0"; }
	check_exact "$out" $name "$DATA/cap-guest" $K
	[ "$(guest_json "$out" $name .file)" = "guest-$name.dat" ] ||
		fail "$mode: manifest names file '$(guest_json "$out" $name .file)'"
	[ -z "$(guest_json "$out" $name '.problems // empty')" ] ||
		fail "$mode: manifest reports problems: $(guest_json "$out" $name .problems)"
	[ "$(man "$out" '.guests | length')" = 1 ] || fail "$mode: manifest lists $(man "$out" '.guests | length') guests"
	[ ! -e "$out/.spool" ] || fail "$mode: the spool was left behind without --keep-spool"
	echo "ok: $mode"
done
echo "PASS"
