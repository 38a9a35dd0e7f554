#!/bin/sh
# Proves (issue 37, item 4): `setup --qmp SOCKET --hotplug` takes over no file it did not make,
# whoever answers on the socket. The QMP peer is a fake QEMU run as the user nobody (a copy of
# its script in a 0755 directory of the test's own): it answers query-name with the name of a
# victim VM, whose six FIFOs (root's, 0600) are in /run/virtio-trace/VICTIM, two of them held
# open by the victim's stand-in "QEMU". Owner, mode, type and inode of every file named below
# are compared before and after, exactly.
#   default: --hotplug without --dir puts the ports in /run/virtio-trace/qemu-PID-START of the
#       peer (SO_PEERCRED's pid, /proc/PID/stat's start time), owned by nobody, 0600; the
#       victim's FIFOs are not chowned and no chardev-add names them (it used to chown all six
#       to nobody and give their paths to the peer); --remove removes the six and the directory;
#   dir: a --dir others may write (1777) is refused, nothing made; the peer's default directory
#       made a link to the victim's is refused, the victim's FIFOs unchanged;
#   held: in a --dir holding four of the FIFOs exactly as setup makes them for nobody, one open
#       in another process: exit 1 naming the path and the holder's pid, nothing plugged or
#       made (it used to take them);
#   owner: in a --dir holding another uid's FIFOs (root's): exit 1 naming the path and the
#       owner, none chowned, nothing plugged (it used to chown them to the peer);
#   remove: after a --hotplug into a --dir, one FIFO replaced by root's, one by a link to a FIFO
#       that would pass, one chmod 0644: --remove removes the other three, names and leaves
#       these three, leaves the link's target and the directory (it used to remove any FIFO).
echo "collect setup --qmp --hotplug: a QMP peer gets only files setup made for it: never another VM's FIFOs, never one another process holds, --remove deletes only its own"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a peer of another user, files of root)"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv is not installed"; exit 77; }
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || { echo "SKIP: no user nobody or group nogroup"; exit 77; }
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
# A python3 the user nobody can run (the one first in PATH may be in root's home).
PY=
for p in /usr/bin/python3 "$(command -v python3 2>/dev/null)"; do
	[ -n "$p" ] && $NOBODY "$p" -c pass 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "SKIP: no python3 that the user nobody can run"; exit 77; }
NOBODY_UID=$(id -u nobody)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-hptake.XXXXXX") || exit 1
# The peer's own directory in /tmp, whatever TMPDIR is: nobody must reach it.
PEERDIR=$(mktemp -d /tmp/vt-hppeer.XXXXXX) || exit 1
ROOT=/run/virtio-trace
VICTIM=vt-victim-$$
MADE_ROOT=0
[ -e "$ROOT" ] || MADE_ROOT=1
PEER= HOLD= VHOLD= PEER_DIR=
cleanup() {
	for p in $PEER $HOLD $VHOLD; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$WORK" "$PEERDIR" "$ROOT/$VICTIM"
	[ -z "$PEER_DIR" ] || rm -rf "$PEER_DIR"
	[ $MADE_ROOT = 0 ] || rmdir "$ROOT" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
show() { for _f; do sed 's/^/  | /' "$_f"; done; }
PORTS="trace-path-cpu0.in trace-path-cpu0.out trace-path-cpu1.in trace-path-cpu1.out agent-ctl-path.in agent-ctl-path.out"

# The fake QEMU: QMP over a unix socket, a virtio-serial bus with room, no guest. It logs each
# command and keeps the ports device_add plugged, for --remove to find.
chmod 0755 "$PEERDIR"
cat >"$PEERDIR/fake-qmp.py" <<'EOF'
import json, os, socket, sys
path, name, log = sys.argv[1:4]
devs = []
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(4)
def reply(c, cmd, a):
    if cmd == "query-name":
        return {"name": name}
    if cmd == "query-cpus-fast":
        return [{"cpu-index": i, "thread-id": os.getpid()} for i in (0, 1)]
    if cmd == "qom-list":
        p = a["path"]
        if p == "/machine/peripheral":
            return [{"name": "vser0", "type": "child<virtio-serial-pci>"}] + \
                   [{"name": d, "type": "child<virtserialport>"} for d in devs]
        if p.endswith("/virtio-backend"):
            return [{"name": "vser0.0", "type": "child<virtio-serial-bus>"}]
        return []
    if cmd == "qom-get" and a.get("property") == "max_ports":
        return 31
    if cmd == "device_add":
        devs.append(a["id"])
        return {}
    if cmd == "device_del":
        if a["id"] in devs:
            devs.remove(a["id"])
        c.sendall(json.dumps({"event": "DEVICE_DELETED", "data": {"device": a["id"]}}).encode() + b"\n")
        return {}
    if cmd in ("qmp_capabilities", "chardev-add", "chardev-remove"):
        return {}
    return None
while True:
    c, _ = srv.accept()
    c.sendall(b'{"QMP": {"version": {}, "capabilities": []}}\n')
    for line in c.makefile("rb"):
        m = json.loads(line)
        with open(log, "a") as f:
            f.write(json.dumps(m) + "\n")
        r = reply(c, m["execute"], m.get("arguments", {}))
        out = {"return": r} if r is not None else {"error": {"class": "GenericError", "desc": "no"}}
        c.sendall(json.dumps(out).encode() + b"\n")
    c.close()
EOF
chmod 0644 "$PEERDIR/fake-qmp.py"
SOCKDIR=$PEERDIR/peer
mkdir "$SOCKDIR"
chown nobody:nogroup "$SOCKDIR"
QMP=$SOCKDIR/qmp.sock
LOG=$SOCKDIR/qmp.log
: >"$LOG"
chown nobody "$LOG"
$NOBODY "$PY" "$PEERDIR/fake-qmp.py" "$QMP" "$VICTIM" "$LOG" &
PEER=$!
_i=0
until [ -S "$QMP" ]; do
	kill -0 $PEER 2>/dev/null || fail "the fake QMP peer did not start"
	[ $_i -lt 100 ] || fail "the fake QMP peer made no socket in 10 s"
	sleep 0.1
	_i=$((_i + 1))
done
[ "$(stat -c %u /proc/$PEER)" = "$NOBODY_UID" ] || fail "the fake QMP peer does not run as nobody"
START=$(sed 's/.*) //' /proc/$PEER/stat | cut -d' ' -f20)
PEER_DIR=$ROOT/qemu-$PEER-$START

# snap DIR NAMES...: owner, group, mode, type, inode of each DIR/NAME (the entry itself)
snap() {
	_d=$1
	shift
	for _n; do
		stat -c "%n %u:%g %a %F %i" "$_d/$_n" 2>&1
	done
}

# fifos DIR UID: the six FIFOs in DIR, 0600, UID's (mkfifo before chown: nothing opens them)
fifos() {
	mkdir -p "$1"
	for _p in $PORTS; do
		mkfifo -m 0600 "$1/$_p" && chown "$2" "$1/$_p" || fail "cannot make $1/$_p"
	done
}

# no_plug LOG: the peer was asked to plug nothing
no_plug() {
	! grep -q '"chardev-add"\|"device_add"' "$LOG" || { show "$LOG"; fail "$1: the peer was asked to plug ports"; }
}

# --- default: the victim's FIFOs in /run/virtio-trace/VICTIM, the peer answers its name ---
mkdir -p "$ROOT"
fifos "$ROOT/$VICTIM" 0
# The victim's QEMU holds its control port.
sh -c 'exec 3<>"$1" 4<>"$2"; exec sleep 300' _ "$ROOT/$VICTIM/agent-ctl-path.in" "$ROOT/$VICTIM/agent-ctl-path.out" &
VHOLD=$!
snap "$ROOT/$VICTIM" $PORTS >"$WORK/victim.before"
: >"$LOG"
"$COLLECT" setup --qmp "$QMP" --hotplug >"$WORK/plug.log" 2>&1
rc=$?
show "$WORK/plug.log"
snap "$ROOT/$VICTIM" $PORTS >"$WORK/victim.after"
cmp -s "$WORK/victim.before" "$WORK/victim.after" ||
	{ diff "$WORK/victim.before" "$WORK/victim.after" | sed 's/^/  /'; fail "default: the victim's FIFOs changed"; }
! grep -q "$ROOT/$VICTIM" "$LOG" || { show "$LOG"; fail "default: the peer was given the victim's paths"; }
[ $rc = 0 ] || fail "default: --hotplug exited $rc, want 0"
grep -q "^QEMU $VICTIM pid $PEER: hot-plugged 3 ports (trace-path-cpu0..1, agent-ctl-path) on virtio-serial bus vser0.0, ports 1..3 (FIFOs in $PEER_DIR), no reboot" "$WORK/plug.log" ||
	fail "default: the ports are not in $PEER_DIR"
[ "$(grep -c "\"chardev-add\".*\"device\": \"$PEER_DIR/" "$LOG")" = 3 ] ||
	{ show "$LOG"; fail "default: not 3 chardev-add in $PEER_DIR"; }
case $(stat -c '%u %F %A' "$ROOT") in
"0 directory d"????-??-?) ;;
*) fail "default: $ROOT is $(stat -c '%u %F %A' "$ROOT"), want root's, writable by none else" ;;
esac
[ "$(stat -c '%u %a %F' "$PEER_DIR")" = "0 755 directory" ] || fail "default: $PEER_DIR is $(stat -c '%u %a %F' "$PEER_DIR")"
for p in $PORTS; do
	[ "$(stat -c '%u %a %F' "$PEER_DIR/$p")" = "$NOBODY_UID 600 fifo" ] ||
		fail "default: $PEER_DIR/$p is $(stat -c '%u %a %F' "$PEER_DIR/$p"), want nobody's 0600 FIFO"
done
echo "default: the peer's ports are in $PEER_DIR; the victim's six FIFOs are as they were"
"$COLLECT" setup --qmp "$QMP" --remove >"$WORK/remove.log" 2>&1 || { show "$WORK/remove.log"; fail "default: --remove exited $?"; }
show "$WORK/remove.log"
grep -q "unplugged 3 ports .*removed their FIFOs in $PEER_DIR\$" "$WORK/remove.log" || fail "default: --remove did not remove the FIFOs"
[ ! -e "$PEER_DIR" ] || fail "default: --remove left $PEER_DIR: $(ls "$PEER_DIR")"
snap "$ROOT/$VICTIM" $PORTS >"$WORK/victim.after"
cmp -s "$WORK/victim.before" "$WORK/victim.after" || fail "default: --remove changed the victim's FIFOs"

# --- dir: a directory others can write, or a link, is refused before anything is plugged ---
D=$WORK/open
mkdir -m 1777 "$D"
: >"$LOG"
"$COLLECT" setup --qmp "$QMP" --hotplug --dir "$D" >"$WORK/open.log" 2>&1
rc=$?
show "$WORK/open.log"
no_plug dir
[ $rc = 1 ] && grep -q "$D is owned by uid 0 with mode 1777: setup --hotplug keeps ports only in a directory that nobody but root can write" "$WORK/open.log" ||
	fail "dir: a directory all may write: exit $rc, want 1 and the reason"
[ -z "$(ls -A "$D")" ] || fail "dir: files were made in $D: $(ls -A "$D")"
# The peer's own default directory, made a link to the victim's.
ln -s "$ROOT/$VICTIM" "$PEER_DIR"
"$COLLECT" setup --qmp "$QMP" --hotplug >"$WORK/link.log" 2>&1
rc=$?
show "$WORK/link.log"
no_plug dir
[ $rc = 1 ] && grep -q "$PEER_DIR: not a directory (a link, or another file): setup --hotplug follows no link" "$WORK/link.log" ||
	fail "dir: the default directory a link: exit $rc, want 1 and the reason"
rm "$PEER_DIR"
snap "$ROOT/$VICTIM" $PORTS >"$WORK/victim.after"
cmp -s "$WORK/victim.before" "$WORK/victim.after" || fail "dir: the victim's FIFOs changed"

# --- held: FIFOs as setup makes them for nobody (cpu0's not there), one open in another process ---
D=$WORK/held
fifos "$D" nobody
rm "$D/trace-path-cpu0.in" "$D/trace-path-cpu0.out"
sh -c 'exec 3<>"$1"; exec sleep 300' _ "$D/trace-path-cpu1.out" &
HOLD=$!
_i=0
until [ "$(readlink /proc/$HOLD/fd/3 2>/dev/null)" = "$D/trace-path-cpu1.out" ]; do
	[ $_i -lt 100 ] || fail "held: the holder did not open the FIFO"
	sleep 0.1
	_i=$((_i + 1))
done
snap "$D" $PORTS >"$WORK/held.before"
: >"$LOG"
"$COLLECT" setup --qmp "$QMP" --hotplug --dir "$D" >"$WORK/held.log" 2>&1
rc=$?
show "$WORK/held.log"
snap "$D" $PORTS >"$WORK/held.after"
[ "$(ls "$D" | wc -l)" = 4 ] || fail "held: $D holds $(ls "$D" | tr '\n' ' '), want the 4 FIFOs that were there"
cmp -s "$WORK/held.before" "$WORK/held.after" || fail "held: the FIFOs changed"
no_plug held
[ $rc = 1 ] || fail "held: exit $rc, want 1"
grep -q "$D/trace-path-cpu1.out is there already and open in process $HOLD (sleep)" "$WORK/held.log" ||
	fail "held: the message does not name the path and the holder"
kill $HOLD
wait $HOLD 2>/dev/null
HOLD=

# --- owner: root's FIFOs (another VM's, of a QEMU run as root), the peer runs as nobody ---
D=$WORK/owner
fifos "$D" root
snap "$D" $PORTS >"$WORK/owner.before"
: >"$LOG"
"$COLLECT" setup --qmp "$QMP" --hotplug --dir "$D" >"$WORK/owner.log" 2>&1
rc=$?
show "$WORK/owner.log"
snap "$D" $PORTS >"$WORK/owner.after"
cmp -s "$WORK/owner.before" "$WORK/owner.after" ||
	{ diff "$WORK/owner.before" "$WORK/owner.after" | sed 's/^/  /'; fail "owner: the FIFOs changed"; }
no_plug owner
[ $rc = 1 ] || fail "owner: exit $rc, want 1"
grep -q "$D/trace-path-cpu0.in is there already and it belongs to uid 0 (root), not to uid $NOBODY_UID that setup gives them to" "$WORK/owner.log" ||
	fail "owner: the message does not name the path and the owner"

# --- remove: only what setup made goes ---
D=$WORK/rm
"$COLLECT" setup --qmp "$QMP" --hotplug --dir "$D" >"$WORK/rm-plug.log" 2>&1 || { show "$WORK/rm-plug.log"; fail "remove: --hotplug exited $?"; }
rm "$D/agent-ctl-path.in" "$D/trace-path-cpu0.out"
mkfifo -m 0600 "$D/agent-ctl-path.in"
mkfifo -m 0600 "$WORK/outside.fifo"
chown nobody "$WORK/outside.fifo"
ln -s "$WORK/outside.fifo" "$D/trace-path-cpu0.out"
chmod 0644 "$D/trace-path-cpu1.in"
KEPT="agent-ctl-path.in trace-path-cpu0.out trace-path-cpu1.in"
snap "$D" $KEPT >"$WORK/rm.before"
snap "$WORK" outside.fifo >>"$WORK/rm.before"
"$COLLECT" setup --qmp "$QMP" --remove --dir "$D" >"$WORK/rm.log" 2>&1
rc=$?
show "$WORK/rm.log"
[ $rc = 0 ] || fail "remove: --remove exited $rc, want 0"
snap "$D" $KEPT >"$WORK/rm.after"
snap "$WORK" outside.fifo >>"$WORK/rm.after"
cmp -s "$WORK/rm.before" "$WORK/rm.after" ||
	{ diff "$WORK/rm.before" "$WORK/rm.after" | sed 's/^/  /'; fail "remove: files setup did not make were removed or changed"; }
[ "$(ls "$D" | tr '\n' ' ')" = "agent-ctl-path.in trace-path-cpu0.out trace-path-cpu1.in " ] ||
	fail "remove: $D holds $(ls "$D" | tr '\n' ' '), want the three setup did not make"
grep -q "left $D/agent-ctl-path.in: setup did not make it (it belongs to uid 0 (root), not to uid $NOBODY_UID" "$WORK/rm.log" &&
grep -q "left $D/trace-path-cpu0.out: setup did not make it (it is a link, not a FIFO)" "$WORK/rm.log" &&
grep -q "left $D/trace-path-cpu1.in: setup did not make it (its mode is 0644" "$WORK/rm.log" ||
	fail "remove: the files left are not named with the reason"
echo "PASS"
