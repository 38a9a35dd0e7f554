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

# --subbuf-size on a guest whose kernel has no buffer_subbuf_size_kb (the fake agent offers no
# SUBBUF capability, like Linux < 6.8): refused, with a message that says why.
p=$WORK/ports-subbuf
mkdir -p "$p"
fake vm-subbuf --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime
pid=$FAKE_PID
collect subbuf --chardev-dir "$p" --name vm-subbuf -o "$WORK/out-subbuf" --duration 1 --subbuf-size 8
fake_end $pid
[ $RC = 1 ] || { show "$WORK/subbuf.log"; fail "--subbuf-size without the knob: exit $RC, want 1"; }
grep -q "guest vm-subbuf: --subbuf-size: the guest kernel cannot change its sub-buffer size" "$WORK/subbuf.log" ||
	{ show "$WORK/subbuf.log"; fail "--subbuf-size without the knob: no clear message"; }
echo "ok: --subbuf-size refused: $(grep -m1 'subbuf-size' "$WORK/subbuf.log" | cut -c1-150)"
echo "PASS"
