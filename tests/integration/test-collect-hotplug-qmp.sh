#!/bin/sh
# Proves: `setup --qmp SOCKET --hotplug` reads a real QEMU's virtio-serial buses from QOM and,
# where none has room, hot-plugs a controller for the ports, or says what to change and leaves
# nothing behind. QEMU 7.2 runs stopped (-S, no guest): what QEMU itself does is real, the guest
# side is the e2e test's (tests/e2e/test-collect-hotplug.sh).
#   pc, no virtio-serial at all: a virtio-serial-pci controller (vt-hp-ser0) is hot-plugged and
#       the 3 ports go on vt-hp-ser0.0 ports 1..3, FIFOs made first (mode 0600); a second
#       --hotplug changes nothing; `list` finds the QEMU by its open FIFOs (hot-plugged ports are
#       on no command line); --remove unplugs the 3 ports (DEVICE_DELETED), removes the FIFOs,
#       and says the controller goes when the guest ejects it; a second --remove finds nothing
#   q35, no hot-pluggable slot: exit 1, the message names the slot to add
#       (-device pcie-root-port) and the controller to start QEMU with; no FIFO was made and
#       --remove finds nothing of ours
#   QMP held by another client: exit 1 within 7 s, naming the one-client rule
echo "collect setup --qmp: hot-plug into a real QEMU (stopped): a controller where no bus has room, what to change where no slot takes one"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 not found"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-hpqmp.XXXXXX") || exit 1
QPID=
stop_qemu() {
	[ -n "$QPID" ] || return 0
	kill -TERM "$QPID" 2>/dev/null
	wait "$QPID" 2>/dev/null
	QPID=
}
trap 'stop_qemu; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# qemu MACHINE NAME: a stopped 2-vCPU QEMU with a QMP socket $WORK/NAME.qmp
qemu() {
	rm -f "$WORK/$2.qmp"
	qemu-system-x86_64 -name "$2" -machine "$1" -accel tcg -smp 2 -m 64 -nodefaults \
		-display none -S -qmp "unix:$WORK/$2.qmp,server=on,wait=off" >"$WORK/$2.log" 2>&1 &
	QPID=$!
	_i=0
	until [ -S "$WORK/$2.qmp" ]; do
		kill -0 $QPID 2>/dev/null || fail "QEMU ($1) did not start: $(cat "$WORK/$2.log")"
		[ $_i -lt 100 ] || fail "QEMU made no QMP socket"
		sleep 0.1
		_i=$((_i + 1))
	done
}

# --- pc: no virtio-serial at all ---
qemu pc hp-pc
D=$WORK/ports-pc
"$COLLECT" setup --qmp "$WORK/hp-pc.qmp" --hotplug --dir "$D" >"$WORK/plug.log" 2>&1 ||
	{ cat "$WORK/plug.log"; fail "setup --hotplug exited $?"; }
sed 's/^/  | /' "$WORK/plug.log"
grep -q "^QEMU hp-pc pid $QPID: hot-plugged 3 ports (trace-path-cpu0..1, agent-ctl-path) on virtio-serial bus vt-hp-ser0.0, ports 1..3 (FIFOs in $D), no reboot" "$WORK/plug.log" ||
	fail "not 3 ports on vt-hp-ser0.0 ports 1..3"
grep -q 'hot-plugged 1 virtio-serial controller' "$WORK/plug.log" || fail "no word of the hot-plugged controller"
for p in trace-path-cpu0 trace-path-cpu1 agent-ctl-path; do
	for x in in out; do
		[ -p "$D/$p.$x" ] && [ "$(stat -c %a "$D/$p.$x")" = 600 ] || fail "no FIFO $D/$p.$x with mode 0600"
	done
done
"$COLLECT" setup --qmp "$WORK/hp-pc.qmp" --hotplug --dir "$D" >"$WORK/plug2.log" 2>&1 || fail "second --hotplug exited $?"
grep -q 'it has the trace ports already (2 data ports and agent-ctl-path): nothing changed' "$WORK/plug2.log" ||
	fail "second --hotplug: $(cat "$WORK/plug2.log")"
"$COLLECT" list --no-libvirt --no-probe hp-pc >"$WORK/list.txt" || fail "list exited $?"
sed 's/^/  | /' "$WORK/list.txt"
grep -q "^hp-pc  *qemu pid $QPID  *2 vCPUs + control " "$WORK/list.txt" ||
	fail "list does not find the QEMU by its hot-plugged ports"
t0=$(date +%s%N)
"$COLLECT" setup --qmp "$WORK/hp-pc.qmp" --remove --dir "$D" >"$WORK/remove.log" 2>&1 || fail "--remove exited $?"
t1=$(date +%s%N)
sed 's/^/  | /' "$WORK/remove.log"
echo "measured: --remove took $(( (t1 - t0) / 1000000 )) ms (5 s of it waiting for the stopped guest to eject the controller)"
grep -q 'unplugged 3 ports (the control port first' "$WORK/remove.log" || fail "--remove did not unplug 3 ports"
grep -q 'removed their FIFOs' "$WORK/remove.log" || fail "--remove did not remove the FIFOs"
grep -q 'it goes when the guest ejects it' "$WORK/remove.log" || fail "--remove did not say the controller waits for the guest"
[ ! -e "$D" ] || fail "--remove left $D: $(ls "$D")"
"$COLLECT" setup --qmp "$WORK/hp-pc.qmp" --remove >"$WORK/remove2.log" 2>&1 || fail "second --remove exited $?"
grep -q 'nothing to remove' "$WORK/remove2.log" || fail "second --remove: $(cat "$WORK/remove2.log")"

# QMP serves one client: while one holds it, setup says so and ends.
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(4096)
open(sys.argv[2], "w").write("held\n"); time.sleep(15)' "$WORK/hp-pc.qmp" "$WORK/held" &
HOLD=$!
_i=0
until [ -s "$WORK/held" ]; do
	[ $_i -lt 100 ] || fail "the QMP holder never got QEMU's greeting"
	sleep 0.1
	_i=$((_i + 1))
done
t0=$(date +%s%N)
"$COLLECT" setup --qmp "$WORK/hp-pc.qmp" --hotplug --dir "$D" >"$WORK/held.log" 2>&1
rc=$?
t1=$(date +%s%N)
kill $HOLD 2>/dev/null
wait $HOLD 2>/dev/null
[ $rc = 1 ] && [ $(( (t1 - t0) / 1000000 )) -lt 7000 ] || fail "QMP held: exit $rc after $(( (t1 - t0) / 1000000 )) ms"
grep -q 'QEMU serves one QMP client at a time' "$WORK/held.log" || fail "QMP held: $(cat "$WORK/held.log")"
stop_qemu

# --- q35: no slot that takes hot-plug ---
qemu q35 hp-q35
D=$WORK/ports-q35
"$COLLECT" setup --qmp "$WORK/hp-q35.qmp" --hotplug --dir "$D" >"$WORK/q35.log" 2>&1
rc=$?
sed 's/^/  | /' "$WORK/q35.log"
[ $rc = 1 ] || fail "q35 without a slot: exit $rc, want 1"
grep -q 'QEMU could not hot-plug a virtio-serial controller' "$WORK/q35.log" || fail "q35: no word of the controller"
grep -q 'pcie-root-port' "$WORK/q35.log" && grep -q 'virtio-serial-pci,id=vtser0,max_ports=31' "$WORK/q35.log" ||
	fail "q35: the message does not say what to change"
[ ! -e "$D" ] || fail "q35: FIFOs were made: $(ls "$D")"
"$COLLECT" setup --qmp "$WORK/hp-q35.qmp" --remove >"$WORK/q35r.log" 2>&1 || fail "q35 --remove exited $?"
grep -q 'nothing to remove' "$WORK/q35r.log" || fail "q35: something of ours was left: $(cat "$WORK/q35r.log")"
stop_qemu
echo "PASS"
