#!/bin/sh
# Proves (issue 28): `record --listen` sockets do not depend on the umask, and who connects is
# checked. The directory and the run's directory can be entered by all, so that the socket's own
# mode is the only gate. For each run, DIR/agent-ctl-path as the collector made it:
#   u000: at umask 000: mode 600 (it was 777), owned by root; the user nobody cannot connect
#         (it used to be taken as the guest); nobody with CAP_DAC_OVERRIDE connects but is
#         refused and logged (SO_PEERCRED); the real agent (root) is then the guest, exact;
#         a second connection once it is taken is refused and logged; exit 3, the manifest's
#         problems count the 2 refused connections;
#   u022: at umask 022: mode 600 (it was 755); the agent records, exit 0, exact;
#   grp:  --listen-group nogroup at umask 000: mode 660, group nogroup; an agent run as
#         nobody:nogroup (a QEMU of another user) is the guest, exit 0, exact;
#   uid:  --listen-uid nobody at umask 022: mode 600, owned by nobody; an agent run as nobody
#         is the guest, exit 0, exact.
# (Those directories are root's, mode 0755: only root can change what they hold.) Then (issue
# 37) --listen refuses a directory that others than its owner and root can write (0777, 1777:
# the sticky bit does not stop a name taken first, 0775) or that another user owns (nobody's
# 0755): the exact message names it, its mode and owner, and what to do; exit 1, nothing made.
echo "collect: --listen sockets are 0600 (0660 with --listen-group) at any umask, peers checked, a taken port refused; a directory others can write is refused"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv is not installed"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (sockets of root, peers of another user)"; exit 77; }
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || { echo "SKIP: no user nobody or group nogroup"; exit 77; }
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
# nobody runs the agent too: copies it can reach, wherever the tree is (collect-lib.sh)
for_user "$NOBODY" "$FAKE" "$DATA/cap-guest"
FAKE=$FOR_USER/vt-fake-agent DATA=$FOR_USER
chmod 0711 "$WORK"

# wait_sock PATH: until PATH is a socket (10 s)
wait_sock() {
	_w=0
	while [ ! -S "$1" ]; do
		[ $_w -lt 100 ] || { show "$WORK/$r.log"; fail "run $r: no socket $1 after 10 s"; }
		kill -0 $COLLECT_PID 2>/dev/null || { show "$WORK/$r.log"; fail "run $r: the collector died"; }
		sleep 0.1
		_w=$((_w + 1))
	done
}

# start RUN UMASK ARGS...: the collector listening on $WORK/p-RUN at umask UMASK
start() {
	r=$1 um=$2 _cl=$WORK/$1.log
	shift 2
	p=$WORK/p-$r
	mkdir -p "$p"
	chmod 0755 "$p"
	(umask "$um"; exec "$COLLECT" record --chardev-dir "$p" --listen --name lg-$r -o "$WORK/o-$r" -d 3 "$@" >"$WORK/$r.log" 2>&1) &
	COLLECT_PID=$!
	track $COLLECT_PID
	T_COLLECTORS="$T_COLLECTORS $COLLECT_PID"
	wait_sock "$p/agent-ctl-path"
	MODE=$(stat -c '%a %U %G' "$p/agent-ctl-path")
	echo "run $r (umask $um): agent-ctl-path is $MODE"
}

# agent [AS...]: the guest's agent connects (as root, or through AS, e.g. $NOBODY)
agent() {
	: >"$WORK/lg-$r.fake"
	"$@" "$FAKE" --name lg-$r --connect "$p" --fixture "$DATA/cap-guest" --repeat 1 --retime 2>"$WORK/lg-$r.fake" &
	FAKE_PID=$!
	track $FAKE_PID
}

# finish: the collector ends by itself; the guest's file is exact
finish() {
	collect_wait 30
	fake_end $FAKE_PID
	check_exact "$WORK/o-$r" lg-$r "$DATA/cap-guest" 1
}

# run u000
start u000 000
[ "$MODE" = "600 root root" ] || fail "run u000: agent-ctl-path is $MODE at umask 000, want 600 root root"
$NOBODY "$FAKE" --knock "$p/agent-ctl-path" 2>"$WORK/knock1"
k=$?
[ $k = 2 ] && grep -q "Permission denied" "$WORK/knock1" ||
	{ cat "$WORK/knock1"; fail "run u000: the user nobody reached the socket (knock exit $k), want permission denied"; }
$NOBODY --inh-caps=+dac_override --ambient-caps=+dac_override "$FAKE" --knock "$p/agent-ctl-path" 2>"$WORK/knock2"
k=$?
[ $k = 0 ] || { cat "$WORK/knock2"; show "$WORK/u000.log"; fail "run u000: a peer with CAP_DAC_OVERRIDE (uid nobody) was not refused (knock exit $k)"; }
grep -q "guest lg-u000: refused a connection to $p/agent-ctl-path from pid [0-9]* (vt-fake-agent), uid 65534, gid 65534: not root" "$WORK/u000.log" ||
	{ show "$WORK/u000.log"; fail "run u000: the refused peer is not logged with its credentials"; }
agent
_w=0
until grep -q "guest lg-u000: recording" "$WORK/u000.log"; do
	[ $_w -lt 100 ] || { show "$WORK/u000.log" "$WORK/lg-u000.fake"; fail "run u000: the agent never recorded"; }
	sleep 0.1
	_w=$((_w + 1))
done
"$FAKE" --knock "$p/agent-ctl-path" 2>"$WORK/knock3"
k=$?
[ $k = 0 ] || { cat "$WORK/knock3"; fail "run u000: a second connection (root) was not refused (knock exit $k)"; }
grep -q "guest lg-u000: refused a second connection to $p/agent-ctl-path from pid [0-9]* (vt-fake-agent), uid 0, gid 0: the port is taken" "$WORK/u000.log" ||
	{ show "$WORK/u000.log"; fail "run u000: the second connection is not logged"; }
finish
[ $RC = 3 ] || { show "$WORK/u000.log"; fail "run u000: exit $RC, want 3 (refused connections are a problem)"; }
guest_json "$WORK/o-u000" lg-u000 .problems | grep -q "^2 connections to its ports refused" ||
	fail "run u000: the manifest's problems: $(guest_json "$WORK/o-u000" lg-u000 .problems)"
[ ! -e "$p/agent-ctl-path" ] || fail "run u000: the socket is left behind"
[ -z "$(ls -A "$p")" ] || fail "run u000: left in the directory: $(ls -A "$p")"

# run u022
start u022 022
[ "$MODE" = "600 root root" ] || fail "run u022: agent-ctl-path is $MODE at umask 022, want 600 root root"
agent
finish
[ $RC = 0 ] || { show "$WORK/u022.log"; fail "run u022: exit $RC, want 0"; }
[ "$(stat -c %a "$p/trace-path-cpu1" 2>/dev/null || echo gone)" = gone ] || fail "run u022: a data socket is left behind"

# run grp
start grp 000 --listen-group nogroup
[ "$MODE" = "660 root nogroup" ] || fail "run grp: agent-ctl-path is $MODE, want 660 root nogroup"
agent $NOBODY
finish
[ $RC = 0 ] || { show "$WORK/grp.log" "$WORK/lg-grp.fake"; fail "run grp: exit $RC, want 0 (nobody:nogroup may connect)"; }

# run uid
start uid 022 --listen-uid nobody
[ "$MODE" = "600 nobody root" ] || fail "run uid: agent-ctl-path is $MODE, want 600 nobody root"
agent $NOBODY
finish
[ $RC = 0 ] || { show "$WORK/uid.log" "$WORK/lg-uid.fake"; fail "run uid: exit $RC, want 0 (nobody may connect)"; }

# refuse RUN MODE OWNER: a directory of that mode and owner is refused with its exact message,
# before any socket is made
refuse() {
	r=$1 p=$WORK/p-$1
	mkdir -p "$p"
	chown "$3" "$p"
	chmod "$2" "$p"
	"$COLLECT" record --chardev-dir "$p" --listen --name lg-$r -o "$WORK/o-$r" -d 1 >"$WORK/$r.log" 2>&1
	RC=$?
	[ $RC = 1 ] || { show "$WORK/$r.log"; fail "run $r: exit $RC, want 1 (nothing recorded)"; }
	if [ "$3" = root ]; then
		what="can be written by others than its owner and root, who could take the socket's name (first, or by renaming ours away) and have QEMU connect to them: use a directory only its owner can write (\`chmod go-w DIR\`, or \`mkdir -m 0700 DIR\`)"
	else
		what="belongs to another user, who could take the socket's name (first, or by renaming ours away) and have QEMU connect to them: use a directory of this user or root that only its owner can write (\`mkdir -m 0700 DIR\`)"
	fi
	want="virtio-trace-collect record: error: guest lg-$r: --listen: the directory $p (mode $(printf %04o 0$2), owner $3) $what"
	[ "$(grep -c -x -F -- "$want" "$WORK/$r.log")" = 1 ] || { show "$WORK/$r.log"; fail "run $r: no line '$want'"; }
	[ -z "$(ls -A "$p")" ] || fail "run $r: the refused directory holds $(ls -A "$p")"
	[ ! -e "$WORK/o-$r" ] || fail "run $r: an output directory was made"
	echo "run $r: a directory of mode $2 owned by $3 is refused"
}
# Directories others can write (the sticky bit does not help: a name taken first stays theirs),
# and one of another user.
refuse w777 777 root
refuse w1777 1777 root
refuse g775 775 root
refuse own 755 nobody
echo "PASS"
