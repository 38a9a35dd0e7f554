#!/bin/sh
# Proves: the daemon starts a migration destination's child as `record --incoming` by what the
# kernel shows (issue 40). Two vt-fake-qemu processes, run as a root-owned qemu-system-x86_64
# (a QEMU by /proc/PID/exe) with pipe ports made by `setup --create` and QEMU's command line,
# started after the daemon: q-in with `-incoming unix:WORK/in.sock -qmp unix:WORK/qi/qmp.sock,...`
# that listens at in.sock 2 s after opening its ports (QEMU binds it after them and keeps it
# until the migration's connection comes; the daemon once saw the ports alone and started a
# plain child), q-late with `-incoming unix:WORK/late.sock` and no listener (its guest arrived
# already). The daemon
# (--libvirt no --domains q-in,q-late) logs q-in waiting to migrate in and starts its child as
# exactly `record --chardev-dir WORK/qi --name q-in --incoming --qemu-pid PID --qmp
# WORK/qi/qmp.sock -o STATE/guests/q-in/current --quiet --trigger-fd N` (its /proc/PID/cmdline; the
# fd is the panic trigger's pipe, trigger-panic being on by default), and q-late's
# as the plain `record --all=q-late ...`, never with --incoming.
echo "daemon: a QEMU started with -incoming that listens (2 s after its ports) gets record --incoming; one whose guest arrived a plain record"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
[ -x "$TOOLS/vt-fake-qemu" ] || fail "$TOOLS/vt-fake-qemu is not built"

mkdir -p "$WORK/bin"
# A copy, not a link: a QEMU is what /proc/PID/exe names, a root-owned file nobody else may write.
cp "$TOOLS/vt-fake-qemu" "$WORK/bin/qemu-system-x86_64"
chmod 0755 "$WORK/bin" "$WORK/bin/qemu-system-x86_64"
for d in qi ql; do
	"$COLLECT" setup --vcpus 2 --dir "$WORK/$d" --create >/dev/null 2>"$WORK/setup.err" || fail "setup --create exited $?"
done
# ports NAME DIR: pipe ports DIR/PORT for 2 vCPUs, as QEMU's arguments
ports() {
	echo "-name $1 -device virtio-serial-pci,id=vser0" \
		"-chardev pipe,id=c0,path=$2/trace-path-cpu0 -device virtserialport,bus=vser0.0,nr=1,chardev=c0,name=trace-path-cpu0" \
		"-chardev pipe,id=c1,path=$2/trace-path-cpu1 -device virtserialport,bus=vser0.0,nr=2,chardev=c1,name=trace-path-cpu1" \
		"-chardev pipe,id=c2,path=$2/agent-ctl-path -device virtserialport,bus=vser0.0,nr=3,chardev=c2,name=agent-ctl-path"
}
S=$WORK/state
daemon_start daemon.log --libvirt no --domains q-in,q-late --mode stream --state-dir "$S" --min-free 0
# q-in listens at in.sock 2 s after its ports are open (as QEMU binds it after them: the daemon
# sees the ports first); q-late never does.
VT_FAKE_INCOMING_DELAY_MS=2000 "$WORK/bin/qemu-system-x86_64" $(ports q-in "$WORK/qi") \
	-incoming "unix:$WORK/in.sock" -qmp "unix:$WORK/qi/qmp.sock,server=on,wait=off" 2>"$WORK/q-in.fake" &
QI=$!
track $QI
VT_FAKE_INCOMING_DELAY_MS=-1 "$WORK/bin/qemu-system-x86_64" $(ports q-late "$WORK/ql") \
	-incoming "unix:$WORK/late.sock" 2>"$WORK/q-late.fake" &
QL=$!
track $QL
_i=0
until grep -q 'ready' "$WORK/q-in.fake" && grep -q 'ready' "$WORK/q-late.fake"; do
	[ $_i -lt 100 ] || fail "the fake QEMUs did not open their ports: $(cat "$WORK"/q-*.fake)"
	sleep 0.1
	_i=$((_i + 1))
done
wait_attached "$S" q-in 15
PID=$("$COLLECT" daemon --status --state-dir "$S" | awk '$1 == "q-in" { print $3 }')
got=$(tr '\0' ' ' <"/proc/$PID/cmdline")
want="virtio-trace-collect record --chardev-dir $WORK/qi --name q-in --incoming --qemu-pid $QI --qmp $WORK/qi/qmp.sock -o $S/guests/q-in/current --quiet --trigger-fd N "
[ "$(echo "$got" | sed -E 's/--trigger-fd [0-9]+ $/--trigger-fd N /')" = "$want" ] || { show "$WORK/daemon.log"; fail "q-in's child is '$got', want '$want'"; }
grep -q "q-in: QEMU $QI waits for it to migrate in" "$WORK/daemon.log" ||
	{ show "$WORK/daemon.log"; fail "the daemon did not say q-in's QEMU waits for it"; }
# q-late: its silent agent ends each plain child (record --all leaves it out); one is enough.
wait_log "$WORK/daemon.log" "q-late: recording (pid" 10 "q-late got no child"
n=$(grep -c "q-late: recording (pid .*/guests/q-late/current$" "$WORK/daemon.log")
[ "$n" -ge 1 ] && ! grep -q "q-late.*incoming" "$WORK/daemon.log" ||
	{ show "$WORK/daemon.log"; fail "q-late's children are not plain ones"; }
n=$(grep -c "q-in: recording (pid .*(record --incoming" "$WORK/daemon.log")
[ "$n" = 1 ] || { show "$WORK/daemon.log"; fail "$n children of q-in, want 1"; }
daemon_stop
[ "$RC" = 0 ] || { show "$WORK/daemon.log"; fail "the daemon exited $RC on SIGTERM, want 0"; }
echo "q-in: $got"
echo "PASS"
