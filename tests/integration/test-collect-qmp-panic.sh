#!/bin/sh
# Proves (issue 40): record --qmp reads a real QEMU's GUEST_PANICKED and passes the first of a
# recording on to --trigger-fd as "panic NAME ACTION". QEMU 7.2 runs stopped (-S, no guest) with
# a pvpanic device (isa, port 0x505) and the trace ports as sockets; its second monitor (HMP,
# read from a FIFO) writes the panic bit to the port as a guest kernel's panic does
# (`o /b 0x505 1`), and QEMU sends its own event:
#   default action (poweroff): record logs "guest vm: QEMU says it panicked (QMP GUEST_PANICKED,
#       action poweroff)" once and the descriptor holds exactly "panic vm poweroff"; QEMU quits,
#       and record, its QMP socket closed, ends by itself with exit 1 ("no guest could be set
#       up": no guest ran) and no sanitizer report (it once wrote into the QMP watch the engine
#       had freed when the socket closed);
#   -action panic=none (action run: the guest goes on): two panics are two log lines, one line
#       "panic vm run" on the descriptor, and "GUEST_PANICKED again: not passed on (one per
#       recording; 2 so far)" once.
echo "collect record --qmp: a real QEMU's GUEST_PANICKED is logged and passed on once to --trigger-fd"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 not found"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-qmppanic.XXXXXX") || exit 1
QPID= RPID=
stop_all() {
	for _p in $RPID $QPID; do
		kill -TERM "$_p" 2>/dev/null
		wait "$_p" 2>/dev/null
	done
	QPID= RPID=
}
trap 'stop_all; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
show() { for _f in "$@"; do echo "--- $_f"; tail -n 30 "$_f"; done; }

# qemu NAME ARGS...: a stopped QEMU with a pvpanic device, its ports in $WORK/NAME, QMP at
# $WORK/NAME.qmp and HMP reading $WORK/NAME.hmp.in
qemu() {
	_n=$1
	shift
	mkdir -p "$WORK/$_n"
	mkfifo "$WORK/$_n.hmp.in" "$WORK/$_n.hmp.out"
	_ports=
	for _i in 0 1 2; do
		_name=trace-path-cpu$_i
		[ $_i = 2 ] && _name=agent-ctl-path
		_ports="$_ports -chardev socket,id=c$_i,path=$WORK/$_n/$_name,server=on,wait=off"
		_ports="$_ports -device virtserialport,chardev=c$_i,name=$_name"
	done
	# shellcheck disable=SC2086
	qemu-system-x86_64 -name "$_n" -machine pc -accel tcg -smp 2 -m 64 -nodefaults -display none -S \
		-device pvpanic -device virtio-serial-pci $_ports "$@" \
		-chardev "pipe,id=hmp,path=$WORK/$_n.hmp" -mon chardev=hmp,mode=readline \
		-qmp "unix:$WORK/$_n.qmp,server=on,wait=off" >"$WORK/$_n.log" 2>&1 &
	QPID=$!
	_i=0
	until [ -S "$WORK/$_n.qmp" ] && [ -S "$WORK/$_n/agent-ctl-path" ]; do
		kill -0 $QPID 2>/dev/null || fail "QEMU did not start: $(cat "$WORK/$_n.log")"
		[ $_i -lt 100 ] || fail "QEMU made no QMP socket in 10 s"
		sleep 0.1
		_i=$((_i + 1))
	done
}
# record NAME: record --qmp following QEMU NAME, --trigger-fd 3 into $WORK/NAME.trig, its log in
# $WORK/NAME.rec; waits until it has QEMU's answer to query-cpus-fast (it follows QMP)
record() {
	"$COLLECT" record --chardev-dir "$WORK/$1" --qmp "$WORK/$1.qmp" --name "$1" -o "$WORK/$1.out" \
		--trigger-fd 3 --verbose 3>"$WORK/$1.trig" >"$WORK/$1.rec" 2>&1 &
	RPID=$!
	_i=0
	until grep -q "guest $1: 2 vCPU threads from QMP" "$WORK/$1.rec"; do
		kill -0 $RPID 2>/dev/null || { show "$WORK/$1.rec"; fail "record ended before it followed QMP"; }
		[ $_i -lt 100 ] || { show "$WORK/$1.rec"; fail "record did not follow QMP within 10 s"; }
		sleep 0.1
		_i=$((_i + 1))
	done
}
# panic NAME: the guest's kernel's panic, as pvpanic sees it
panic() {
	printf 'o /b 0x505 1\n' 1<>"$WORK/$1.hmp.in"
}
# clean LOG: no sanitizer report in LOG
clean() {
	! grep -q "Sanitizer\|runtime error" "$1" || { show "$1"; fail "a sanitizer report in $1"; }
}
# wait_for FILE PATTERN N WHAT: N lines of FILE match PATTERN within 10 s
wait_for() {
	_i=0
	until [ "$(grep -c -- "$2" "$1")" = "$3" ]; do
		[ $_i -lt 100 ] || { show "$1"; fail "$4"; }
		sleep 0.1
		_i=$((_i + 1))
	done
}

# QEMU's default: the panic powers it off.
qemu vm
record vm
panic vm
wait_for "$WORK/vm.rec" "guest vm: QEMU says it panicked (QMP GUEST_PANICKED, action poweroff)" 1 \
	"record did not log the panic (action poweroff)"
_i=0
while kill -0 $QPID 2>/dev/null && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
kill -0 $QPID 2>/dev/null && fail "QEMU did not power off on the panic"
_i=0
while kill -0 $RPID 2>/dev/null && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
kill -0 $RPID 2>/dev/null && { show "$WORK/vm.rec"; fail "record did not end within 10 s of QEMU's"; }
wait $RPID
rc=$?
RPID=
clean "$WORK/vm.rec"
[ $rc = 1 ] && grep -q "no guest could be set up" "$WORK/vm.rec" || { show "$WORK/vm.rec"; fail "record exited $rc, want 1 (no guest set up)"; }
stop_all
[ "$(cat "$WORK/vm.trig")" = "panic vm poweroff" ] || fail "--trigger-fd holds '$(cat "$WORK/vm.trig")', want 'panic vm poweroff'"
echo "ok: action poweroff: one log line, --trigger-fd: $(cat "$WORK/vm.trig")"

# -action panic=none: the guest runs on, and can say it again.
qemu vm2 -action panic=none
record vm2
panic vm2
wait_for "$WORK/vm2.rec" "guest vm2: QEMU says it panicked (QMP GUEST_PANICKED, action run)" 1 "record did not log the first panic"
panic vm2
wait_for "$WORK/vm2.rec" "guest vm2: QEMU says it panicked (QMP GUEST_PANICKED, action run)" 2 "record did not log the second panic"
wait_for "$WORK/vm2.rec" "guest vm2: GUEST_PANICKED again: not passed on (one per recording; 2 so far)" 1 \
	"record did not say it held back the second panic"
kill -0 $QPID 2>/dev/null || fail "QEMU quit on a panic with -action panic=none"
stop_all
clean "$WORK/vm2.rec"
[ "$(cat "$WORK/vm2.trig")" = "panic vm2 run" ] || fail "--trigger-fd holds '$(cat "$WORK/vm2.trig")', want one line 'panic vm2 run'"
echo "ok: action run, two panics: two log lines, --trigger-fd: $(cat "$WORK/vm2.trig")"
echo "PASS"
