#!/bin/sh
# Proves (issue 37, items 1 and 3): root's `list`, `record --all` and `record` trust what the
# kernel says, never a name a local user chose. The attacker is the user nobody; a root-owned
# file (0600, "secret") is the target its links point at. Each case:
#   a  nobody runs `exec -a qemu-system-x86_64` of another program with a QEMU command line
#      naming FIFOs in its own directory, then swaps agent-ctl-path.in for a link to the target:
#      list and record --all do not take it (/proc/PID/exe is no QEMU), say so once, and the
#      target is unchanged (list used to write its HELLO, "VTCP...", into it);
#   b  nobody copies a binary into its own directory as qemu-system-x86_64: still no QEMU (the
#      executable is nobody's, not root's);
#   c  a real-looking QEMU (a root-owned 0755 qemu-system-x86_64) run by nobody, whose control
#      port's .in is then swapped for a link: without --any-user it is skipped, named, with the
#      user; with --any-user it is probed, and refused with an error naming the link; the
#      target is unchanged (list and record --all --any-user);
#   d  record with explicit --ctl/--cpu paths, and with --chardev-dir, where the .in is a link
#      to a FIFO of root's (another guest's control port; a FIFO, so that the old check of the
#      type by path passed): refused at once, naming the path, nothing written into that FIFO;
#   e  root's QEMU whose FIFOs nobody made in nobody's directory: refused, naming the owner;
#   f  root's QEMU whose control port is a socket another process listens on: refused after
#      connect, before a byte, naming who listens (SO_PEERCRED);
#   g  with --any-user, another user's QEMU whose port directory is swapped for a link to a root
#      VM's: root-owned FIFOs, but not ones that QEMU holds open: refused, naming the path, and
#      record --all --wait writes nothing into the root VM's control FIFO.
echo "collect trust: QEMUs by /proc/PID/exe, other users' only with --any-user, ports opened with O_NOFOLLOW and checked on the descriptor"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
[ -x "$TOOLS/vt-fake-qemu" ] || fail "$TOOLS/vt-fake-qemu is not built"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (root's collector against another user)"; exit 77; }
for t in setpriv bash python3; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: $t is not installed"; exit 77; }
done
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || { echo "SKIP: no user nobody or group nogroup"; exit 77; }
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
NB_UID=$(id -u nobody)

# What nobody runs and writes is in a directory of the test's own that nobody can reach (the
# clone and $WORK may be 0700); the target stays in $WORK, where nobody cannot read it.
PUB=$(mktemp -d "${TMPDIR:-/tmp}/vt-trust.XXXXXX") || fail "mktemp"
chmod 0755 "$PUB"
trap 't_cleanup; rm -rf "$PUB"' EXIT
mkdir "$PUB/bin" "$PUB/tools"
cp "$TOOLS/vt-fake-qemu" "$PUB/bin/qemu-system-x86_64"	# a root-owned QEMU binary
cp "$TOOLS/vt-fake-qemu" "$PUB/tools/vt-fake-qemu"		# root's, but not named as QEMU
chmod 0755 "$PUB/bin" "$PUB/tools" "$PUB/bin/qemu-system-x86_64" "$PUB/tools/vt-fake-qemu"
# nobody's processes start here: the test's own directory may be one nobody cannot enter.
cd "$PUB" || fail "cd $PUB"
TARGET=$WORK/target
printf 'secret\n' >"$TARGET"
chmod 0600 "$TARGET"
target_same() {
	[ "$(cat "$TARGET")" = secret ] ||
		fail "$1: root's 0600 file was written through a link: $(od -c "$TARGET" | head -n 2 | tr '\n' ' ')"
}

# want CASE: the case is run ($TRUST_CASES, default all: to show each one alone against old code)
want() {
	case " ${TRUST_CASES:-a b c d e f g} " in
	*" $1 "*) return 0 ;;
	esac
	return 1
}
# nbdir NAME: a directory nobody owns, with the FIFOs of 2 data ports and a control port
nbdir() {
	mkdir "$PUB/$1"
	chown nobody:nogroup "$PUB/$1"
	$NOBODY sh -c 'cd "$1" && for p in trace-path-cpu0 trace-path-cpu1 agent-ctl-path; do
		mkfifo -m 0600 $p.in $p.out || exit 1; done' sh "$PUB/$1" || fail "nobody: mkfifo in $PUB/$1"
}
# pipe_args NAME DIR: a QEMU command line with pipe ports DIR/PORT for 2 vCPUs
pipe_args() {
	echo "-name $1 -device virtio-serial-pci,id=vser0" \
		"-chardev pipe,id=c0,path=$2/trace-path-cpu0 -device virtserialport,bus=vser0.0,nr=1,chardev=c0,name=trace-path-cpu0" \
		"-chardev pipe,id=c1,path=$2/trace-path-cpu1 -device virtserialport,bus=vser0.0,nr=2,chardev=c1,name=trace-path-cpu1" \
		"-chardev pipe,id=c2,path=$2/agent-ctl-path -device virtserialport,bus=vser0.0,nr=3,chardev=c2,name=agent-ctl-path"
}
# ready NAME PID: until the fake QEMU has its ports open
ready() {
	_ri=0
	while ! grep -q 'ready 3' "$WORK/$1.fake"; do
		kill -0 "$2" 2>/dev/null || { show "$WORK/$1.fake"; fail "the fake QEMU $1 died"; }
		[ $_ri -lt 100 ] || fail "the fake QEMU $1: no ports after 10 s"
		sleep 0.1
		_ri=$((_ri + 1))
	done
}
# swap NAME [TO]: nobody replaces the (open) agent-ctl-path.in of its directory by a link to
# TO (default the target)
swap() {
	$NOBODY sh -c 'rm -f "$1/agent-ctl-path.in" && ln -s "$2" "$1/agent-ctl-path.in"' sh \
		"$PUB/$1" "${2:-$TARGET}" || fail "nobody: cannot swap in the link in $PUB/$1"
}
# J FILE NAME JQ: a guest's field in list --json; S FILE NAME: a skipped one's why
J() { jq -r --arg n "$2" ".guests[] | select(.name == \$n) | $3" "$1"; }
S() { jq -r --arg n "$2" '.skipped[]? | select(.name == $n) | .why' "$1"; }
count() { jq -r --arg n "$2" '[.guests[] | select(.name == $n)] | length' "$1"; }

# --- a: argv[0] says QEMU, /proc/PID/exe does not ---
if want a; then
	nbdir a
	: >"$WORK/evil-a.fake"
	$NOBODY bash -c 'exec -a qemu-system-x86_64 "$0" "$@"' "$PUB/tools/vt-fake-qemu" \
		$(pipe_args evil-a "$PUB/a") 2>"$WORK/evil-a.fake" &
	A=$!
	track $A
	ready evil-a $A
	swap a
	"$COLLECT" list --json evil-a >"$WORK/a.json" 2>"$WORK/a.err" || { show "$WORK/a.err"; fail "a: list exited $?"; }
	target_same "a: list"
	[ "$(count "$WORK/a.json" evil-a)" = 0 ] || fail "a: the fake QEMU is listed: $(cat "$WORK/a.json")"
	why=$(S "$WORK/a.json" evil-a)
	echo "  | a: list --json skipped: $why"
	[ "$why" = "it calls itself qemu-system-x86_64, but it runs $PUB/tools/vt-fake-qemu, not a QEMU binary: not a QEMU" ] ||
		fail "a: list does not say why the fake is left out: '$why'"
	"$COLLECT" list evil-a >"$WORK/a.txt" 2>&1 || fail "a: list exited $?"
	target_same "a: list (table)"
	grep -qx "note: pid $A (evil-a) has trace ports and is left out: $why" "$WORK/a.txt" ||
		{ show "$WORK/a.txt"; fail "a: the table does not name the fake once"; }
	[ "$(grep -c evil-a "$WORK/a.txt")" = 1 ] || { show "$WORK/a.txt"; fail "a: the table names the fake more than once"; }
	collect a-all --all=evil-a -o "$WORK/out-a" -d 1
	target_same "a: record --all"
	[ $RC = 1 ] || { show "$WORK/a-all.log"; fail "a: record --all exited $RC, want 1 (nothing to record)"; }
	grep -q -- "--all: pid $A (evil-a) is left out: $why" "$WORK/a-all.log" ||
		{ show "$WORK/a-all.log"; fail "a: record --all does not say why the fake is left out"; }
	grep -q -- "--all: no guest to record" "$WORK/a-all.log" || { show "$WORK/a-all.log"; fail "a: record --all recorded something"; }
fi

# --- b: nobody's own copy named qemu-system-x86_64 ---
if want b; then
	nbdir b
	mkdir "$PUB/b-bin"
	chown nobody:nogroup "$PUB/b-bin"
	$NOBODY cp "$PUB/tools/vt-fake-qemu" "$PUB/b-bin/qemu-system-x86_64" || fail "b: nobody cannot copy the binary"
	: >"$WORK/evil-b.fake"
	$NOBODY "$PUB/b-bin/qemu-system-x86_64" $(pipe_args evil-b "$PUB/b") 2>"$WORK/evil-b.fake" &
	B=$!
	track $B
	ready evil-b $B
	"$COLLECT" list --json evil-b >"$WORK/b.json" 2>&1 || fail "b: list exited $?"
	[ "$(count "$WORK/b.json" evil-b)" = 0 ] || fail "b: nobody's qemu-system-x86_64 is listed: $(cat "$WORK/b.json")"
	why=$(S "$WORK/b.json" evil-b)
	echo "  | b: list --json skipped: $why"
	[ "$why" = "it calls itself $PUB/b-bin/qemu-system-x86_64, but it runs $PUB/b-bin/qemu-system-x86_64, which root does not own: not a QEMU" ] ||
		fail "b: list does not say why nobody's binary is no QEMU: '$why'"
	# (with --any-user too: another user's QEMU is still a root-owned binary)
	"$COLLECT" list --any-user --json evil-b >"$WORK/b2.json" 2>&1 || fail "b: list --any-user exited $?"
	[ "$(count "$WORK/b2.json" evil-b)" = 0 ] || fail "b: nobody's binary is listed with --any-user"
fi

# --- c: another user's real-looking QEMU, its control port swapped for a link ---
if want c; then
	nbdir c
	: >"$WORK/evil-c.fake"
	$NOBODY "$PUB/bin/qemu-system-x86_64" $(pipe_args evil-c "$PUB/c") 2>"$WORK/evil-c.fake" &
	C=$!
	track $C
	ready evil-c $C
	swap c
	"$COLLECT" list --json evil-c >"$WORK/c.json" 2>&1 || fail "c: list exited $?"
	target_same "c: list"
	[ "$(count "$WORK/c.json" evil-c)" = 0 ] || fail "c: another user's QEMU is probed without --any-user"
	why=$(S "$WORK/c.json" evil-c)
	echo "  | c: list --json skipped: $why"
	[ "$why" = "a QEMU of another user, uid $NB_UID (nobody): --any-user probes it" ] ||
		fail "c: list does not say another user's QEMU is left out: '$why'"
	"$COLLECT" list --any-user --json evil-c >"$WORK/c2.json" 2>&1 || fail "c: list --any-user exited $?"
	target_same "c: list --any-user"
	[ "$(J "$WORK/c2.json" evil-c .qemu_pid)" = "$C" ] || fail "c: --any-user does not list nobody's QEMU: $(cat "$WORK/c2.json")"
	[ "$(J "$WORK/c2.json" evil-c .agent.state)" = error ] || fail "c: agent state $(J "$WORK/c2.json" evil-c .agent.state), want error"
	why=$(J "$WORK/c2.json" evil-c .agent.why)
	echo "  | c: list --any-user: $why"
	[ "$why" = "$PUB/c/agent-ctl-path.in is a symbolic link: a port is never opened through one" ] ||
		fail "c: the error does not name the link: '$why'"
	collect c-all --all=evil-c --any-user -o "$WORK/out-c" -d 1
	target_same "c: record --all --any-user"
	[ $RC = 1 ] || { show "$WORK/c-all.log"; fail "c: record --all exited $RC, want 1"; }
	grep -q -- "--all: evil-c is left out: $why" "$WORK/c-all.log" ||
		{ show "$WORK/c-all.log"; fail "c: record --all does not name the link"; }
fi

# --- d: the operator's own paths, the .in a link to another guest's control FIFO (root's) ---
if want d; then
	nbdir d
	mkfifo -m 0600 "$WORK/other.in"
	exec 7<>"$WORK/other.in"	# held open, as its QEMU would: what is written stays in it
	swap d "$WORK/other.in"
	# other_empty WHAT: nothing was written through the link into the other FIFO
	other_empty() {
		left=$(dd if="$WORK/other.in" iflag=nonblock bs=64k count=1 2>/dev/null | wc -c)
		[ "$left" = 0 ] || fail "d: $1 wrote $left bytes through the link into another guest's FIFO"
	}
	COLLECT_LIMIT=10 collect d-ctl --ctl "$PUB/d/agent-ctl-path" --cpu "$PUB/d/trace-path-cpu0" --name d-ctl -o "$WORK/out-d1" -d 1
	other_empty "record --ctl"
	[ $RC != 0 ] || fail "d: record --ctl through a link exited 0"
	grep -q "guest d-ctl: $PUB/d/agent-ctl-path.in is a symbolic link: a port is never opened through one" "$WORK/d-ctl.log" ||
		{ show "$WORK/d-ctl.log"; fail "d: record --ctl does not name the link"; }
	COLLECT_LIMIT=10 collect d-dir --chardev-dir "$PUB/d" --name d-dir -o "$WORK/out-d2" -d 1
	other_empty "record --chardev-dir"
	[ $RC != 0 ] || fail "d: record --chardev-dir through a link exited 0"
	grep -q "guest d-dir: $PUB/d/agent-ctl-path.in is a symbolic link: a port is never opened through one" "$WORK/d-dir.log" ||
		{ show "$WORK/d-dir.log"; fail "d: record --chardev-dir does not name the link"; }
	exec 7>&-
fi

# --- e: root's QEMU, FIFOs of nobody's ---
if want e; then
	nbdir e
	: >"$WORK/root-e.fake"
	"$PUB/bin/qemu-system-x86_64" $(pipe_args root-e "$PUB/e") 2>"$WORK/root-e.fake" &
	E=$!
	track $E
	ready root-e $E
	"$COLLECT" list --json root-e >"$WORK/e.json" 2>&1 || fail "e: list exited $?"
	why=$(J "$WORK/e.json" root-e .agent.why)
	echo "  | e: list: $why"
	[ "$(J "$WORK/e.json" root-e .agent.state)" = error ] &&
		[ "$why" = "$PUB/e/agent-ctl-path.out belongs to uid $NB_UID, not to the QEMU's user (uid 0) or root" ] ||
		fail "e: nobody's FIFOs of root's QEMU are not refused by owner: $(J "$WORK/e.json" root-e .agent.state) '$why'"
	left=$(dd if="$PUB/e/agent-ctl-path.in" iflag=nonblock bs=64k count=1 2>/dev/null | wc -c)
	[ "$left" = 0 ] || fail "e: $left bytes were written into nobody's FIFO"
fi

# --- f: root's QEMU, its control port a socket another process listens on ---
if want f; then
	mkdir "$PUB/f"
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); s.listen(4)
print("listening", flush=True)
c, _ = s.accept()
c.settimeout(5)
try:
    d = c.recv(100)
except OSError:
    d = b""
print("got %d bytes" % len(d), flush=True)
time.sleep(30)
' "$PUB/f/agent-ctl-path" >"$WORK/f.listener" 2>&1 &
	L=$!
	track $L
	_fi=0
	while ! grep -q listening "$WORK/f.listener"; do
		[ $_fi -lt 100 ] || fail "f: the listener did not start"
		sleep 0.1
		_fi=$((_fi + 1))
	done
	mkfifo "$PUB/f/trace-path-cpu0.in" "$PUB/f/trace-path-cpu0.out"
	: >"$WORK/root-f.fake"
	"$PUB/bin/qemu-system-x86_64" -name root-f \
		-chardev "socket,id=s2,path=$PUB/f/agent-ctl-path,server=on,wait=off" -device virtserialport,chardev=s2,name=agent-ctl-path \
		-chardev "pipe,id=c0,path=$PUB/f/trace-path-cpu0" -device virtserialport,chardev=c0,name=trace-path-cpu0 \
		2>"$WORK/root-f.fake" &
	F=$!
	track $F
	_fi=0
	while ! grep -q 'ready 1' "$WORK/root-f.fake"; do
		[ $_fi -lt 100 ] || fail "f: the fake QEMU did not start"
		sleep 0.1
		_fi=$((_fi + 1))
	done
	"$COLLECT" list --json root-f >"$WORK/f.json" 2>&1 || fail "f: list exited $?"
	why=$(J "$WORK/f.json" root-f .agent.why)
	echo "  | f: list: $why"
	[ "$why" = "$PUB/f/agent-ctl-path: pid $L (uid 0) listens there, not the QEMU (pid $F, uid 0)" ] ||
		fail "f: a socket another process listens on is not refused by its peer: '$why'"
	_fi=0
	while ! grep -q 'got' "$WORK/f.listener" && [ $_fi -lt 60 ]; do sleep 0.1; _fi=$((_fi + 1)); done
	grep -q 'got 0 bytes' "$WORK/f.listener" || fail "f: the listener got a HELLO: $(cat "$WORK/f.listener")"
fi

# --- g: another user's QEMU whose port directory becomes a link to a root VM's ---
if want g; then
	mkdir "$WORK/rootvm" "$PUB/g"
	for p in trace-path-cpu0 trace-path-cpu1 agent-ctl-path; do
		mkfifo -m 0600 "$WORK/rootvm/$p.in" "$WORK/rootvm/$p.out"
	done
	: >"$WORK/root-g.fake"
	"$PUB/bin/qemu-system-x86_64" $(pipe_args root-g "$WORK/rootvm") 2>"$WORK/root-g.fake" &
	RG=$!
	track $RG
	ready root-g $RG
	chown nobody:nogroup "$PUB/g"
	nbdir g/vm
	: >"$WORK/evil-g.fake"
	$NOBODY "$PUB/bin/qemu-system-x86_64" $(pipe_args evil-g "$PUB/g/vm") 2>"$WORK/evil-g.fake" &
	G=$!
	track $G
	ready evil-g $G
	$NOBODY sh -c 'mv "$1/vm" "$1/vm.old" && ln -s "$2" "$1/vm"' sh "$PUB/g" "$WORK/rootvm" ||
		fail "g: nobody cannot swap its directory for a link"
	"$COLLECT" list --any-user --json evil-g >"$WORK/g.json" 2>&1 || fail "g: list exited $?"
	why=$(J "$WORK/g.json" evil-g .agent.why)
	echo "  | g: list --any-user: $why"
	[ "$(J "$WORK/g.json" evil-g .agent.state)" = error ] &&
		[ "$why" = "$PUB/g/vm/agent-ctl-path.out is not a FIFO the QEMU (pid $G) has open" ] ||
		fail "g: root's VM's FIFOs reached through nobody's directory link are not refused: '$why'"
	COLLECT_LIMIT=10 collect g-all --all=evil-g --any-user --wait=2 -o "$WORK/out-g" -d 1
	left=$(dd if="$WORK/rootvm/agent-ctl-path.in" iflag=nonblock bs=64k count=1 2>/dev/null | wc -c)
	[ "$left" = 0 ] || fail "g: record --all wrote $left bytes into the root VM's control FIFO"
	[ $RC = 1 ] && grep -q -- "--all: evil-g is left out: $why" "$WORK/g-all.log" ||
		{ show "$WORK/g-all.log"; fail "g: record --all --any-user did not leave evil-g out (exit $RC)"; }
fi

echo "PASS: ${TRUST_CASES:-a-g}: fakes by name or by owner not taken, links never followed, owners and listeners checked"
