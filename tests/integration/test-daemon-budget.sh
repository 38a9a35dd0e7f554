#!/bin/sh
# Proves: the daemon's configuration refuses an unknown key and a bad value naming FILE:LINE,
# and a bad --KEY value naming the option (exit 2); a second daemon on the same state
# directory is refused (exit 1); over total-budget the oldest snapshot is dropped, and said,
# and the newer kept; a daemon killed with SIGKILL takes its child with it, and once
# restarted keeps the sealed snapshot, removes the stale socket, keeps the killed child's
# segment (finished by the child at its SIGTERM) as guests/NAME/previous and attaches a new guest.
echo "daemon: configuration errors by line, one daemon per state, the budget drops the oldest, SIGKILL and restart"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }

S=$WORK/state
# Configuration errors.
printf 'domains = none\n# a comment\nwindw = 10\n' >"$WORK/bad1.conf"
"$COLLECT" daemon --config "$WORK/bad1.conf" --state-dir "$S" 2>"$WORK/e1"; rc=$?
[ $rc = 2 ] && grep -q "bad1.conf:3: unknown key 'windw'" "$WORK/e1" || fail "unknown key: exit $rc, '$(cat "$WORK/e1")'"
printf 'domains = none\nwindow = 5s\n' >"$WORK/bad2.conf"
"$COLLECT" daemon --config "$WORK/bad2.conf" --state-dir "$S" 2>"$WORK/e2"; rc=$?
[ $rc = 2 ] && grep -q "bad2.conf:2: window '5s': seconds" "$WORK/e2" || fail "bad value: exit $rc, '$(cat "$WORK/e2")'"
"$COLLECT" daemon --domains none --mode fast --state-dir "$S" 2>"$WORK/e3"; rc=$?
[ $rc = 2 ] && grep -q -- "--mode 'fast': one of hold or stream" "$WORK/e3" || fail "bad --mode: exit $rc, '$(cat "$WORK/e3")'"
"$COLLECT" daemon --config "$WORK/missing.conf" 2>"$WORK/e4"; rc=$?
[ $rc = 2 ] || fail "a missing --config exited $rc, want 2"
[ ! -e "$S" ] || fail "a refused configuration made $S"

# The budget: two old snapshots of 3 MiB each, total-budget 5 MiB: the older goes.
mkdir -m 0700 -p "$S/snapshots/old-1" "$S/snapshots/old-2"
head -c 3145728 /dev/urandom >"$S/snapshots/old-1/guest-x.dat"
head -c 3145728 /dev/urandom >"$S/snapshots/old-2/guest-x.dat"
touch -d '2 hours ago' "$S/snapshots/old-1"
touch -d '1 hour ago' "$S/snapshots/old-2"
chmod -R go-rwx "$S"
quiet_guest alpha
quiet_guest beta
named_conf "$WORK/daemon.conf" "$S" alpha beta
printf 'mode = stream\ntotal-budget = 5\n' >>"$WORK/daemon.conf"
daemon_start d1.log --config "$WORK/daemon.conf"
wait_log "$WORK/d1.log" "dropped snapshot old-1" 5 "the budget did not drop old-1"
grep -q "dropped snapshot old-1 ([0-9]* bytes): the state directory holds [0-9]* bytes, over total-budget 5242880" \
	"$WORK/d1.log" || { show "$WORK/d1.log"; fail "the drop is not explained"; }
[ ! -e "$S/snapshots/old-1" ] || fail "old-1 still there"
[ -d "$S/snapshots/old-2" ] || fail "old-2 was dropped too"
! grep -q "dropped snapshot old-2" "$WORK/d1.log" || fail "old-2 said dropped"
rm -rf "$S/snapshots/old-2"

# A second daemon on the same state is refused.
"$COLLECT" daemon --config "$WORK/daemon.conf" 2>"$WORK/e5"; rc=$?
[ $rc = 1 ] && grep -q "another daemon runs" "$WORK/e5" || fail "a second daemon: exit $rc, '$(cat "$WORK/e5")'"

# A sealed snapshot, then SIGKILL.
wait_log "$WORK/d1.log" "alpha: recording" 5 "alpha not attached"
sleep 1
snap=$("$COLLECT" snapshot alpha --state-dir "$S" --after 0 --reason before-kill) || fail "snapshot exited $?"
child=$(sed -n 's/.*beta: recording (pid \([0-9]*\)).*/\1/p' "$WORK/d1.log" | tail -n 1)
[ -n "$child" ] || fail "no child for beta"
[ -d "$S/guests/beta/current" ] || fail "beta's child writes no guests/beta/current"
kill -KILL $DAEMON_PID
wait $DAEMON_PID 2>/dev/null
i=0
while kill -0 "$child" 2>/dev/null; do
	[ $i -lt 100 ] || fail "the record child $child outlived its daemon by 10 s"
	sleep 0.1
	i=$((i + 1))
done
[ -S "$S/control.sock" ] || fail "no stale socket to remove (the test proves nothing)"

# Restarted: the snapshot is kept, the stale socket replaced, beta's killed segment kept,
# and a new guest attached.
quiet_guest gamma
echo "guest = gamma $WORK/gamma" >>"$WORK/daemon.conf"
daemon_start d2.log --config "$WORK/daemon.conf"
wait_log "$WORK/d2.log" "gamma: recording" 5 "the restarted daemon did not attach gamma"
grep -q "removing the stale socket" "$WORK/d2.log" || { show "$WORK/d2.log"; fail "the stale socket is not said removed"; }
[ -f "$snap/snapshot.json" ] && [ -f "$snap/guest-alpha.dat" ] || fail "the sealed snapshot $snap is gone"
[ -f "$S/guests/beta/previous/manifest.json" ] ||
	fail "beta's killed segment was not kept (and finished by its child) as guests/beta/previous"
grep -q "beta: the segment a stopped daemon left is now guests/beta/previous" "$WORK/d2.log" ||
	fail "the kept segment is not said"
[ "$(status_of "$S" gamma)" = attached ] || fail "gamma is '$(status_of "$S" gamma)'"
daemon_stop
[ $RC = 0 ] || fail "daemon exited $RC"
echo "PASS"
