#!/bin/sh
# Proves: `daemon` (issue 40) follows two guests named with their ports (mode stream) and
# attaches both within 5 s; `snapshot alpha` answers with a sealed snapshot within --after plus
# 10 s (record's own stop and file writing: 1.7 s of it on a quiet machine, 6.2 s at load 29), whose guest-alpha.dat holds the fixture's events and host.dat
# the host's sched_switch, per trace-cmd report, with snapshot.json saying why; a snapshot with
# --after 1.05 has its child stopped within 0.1 s of the window's end (the daemon's log line
# says how late; the daemon's loop turns every 0.2 s and wakes for it); its files
# are 0600 and its directories 0700; the control socket is 0600 and refuses another uid by its
# peer credentials even when the file lets it connect; a guest whose ports go is detached;
# SIGINT (ignored by the shell that started it in the background) stops the children, removes
# the socket and exits 0.
echo "daemon: two guests attached, a snapshot sealed and readable, the socket's peers checked, a guest gone detached"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
[ "$(id -u)" = 0 ] || { echo "SKIP: host events need root"; exit 77; }
[ -d /sys/kernel/tracing/instances ] || { echo "SKIP: no tracefs"; exit 77; }

S=$WORK/state
# alpha's agent serves one child after another (--again): it is snapshotted twice.
mkdir -p "$WORK/alpha"
fake alpha --listen "$WORK/alpha" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime --again
quiet_guest beta
beta_pid=$FAKE_PID
named_conf "$WORK/daemon.conf" "$S" alpha beta
printf 'mode = stream\nhost-events = sched:sched_switch\n' >>"$WORK/daemon.conf"
t0=$(date +%s.%N)
daemon_start daemon.log --config "$WORK/daemon.conf" --after 1
for n in alpha beta; do
	i=0
	until [ "$(status_of "$S" $n)" = attached ]; do
		[ $i -lt 50 ] || { show "$WORK/daemon.log"; fail "$n not attached within 5 s"; }
		sleep 0.1
		i=$((i + 1))
	done
done
echo "both attached after $(echo "$(date +%s.%N) - $t0" | bc) s"
[ "$(stat -c %a "$S/control.sock")" = 600 ] || fail "control.sock is mode $(stat -c %a "$S/control.sock")"
[ "$(stat -c %a "$S")" = 700 ] || fail "the state directory is mode $(stat -c %a "$S")"
sleep 2	# some of the window before the trigger

# A snapshot: --after 1, answered within 10 s more (the child's stop, its files, the rename).
t0=$(date +%s.%N)
snap=$("$COLLECT" snapshot alpha --state-dir "$S" --reason bug-42 2>"$WORK/snap.err")
rc=$?
took=$(echo "$(date +%s.%N) - $t0" | bc)
[ $rc = 0 ] || { show "$WORK/snap.err" "$WORK/daemon.log"; fail "snapshot exited $rc"; }
echo "snapshot $snap in $took s (--after 1)"
[ "$(echo "$took < 11.0" | bc)" = 1 ] || fail "the snapshot took $took s, want under 11 (1 after + 10)"
case $snap in "$S/snapshots/alpha-"*-bug-42) ;; *) fail "snapshot path '$snap'" ;; esac
[ -f "$snap/snapshot.json" ] || fail "no snapshot.json in $snap"
[ "$(jq -r .reason "$snap/snapshot.json")" = bug-42 ] || fail "snapshot.json reason $(jq -r .reason "$snap/snapshot.json")"
[ "$(jq -r .guest "$snap/snapshot.json")" = alpha ] || fail "snapshot.json guest"
[ "$(jq -r .after "$snap/snapshot.json")" = 1 ] || fail "snapshot.json after $(jq -r .after "$snap/snapshot.json")"
report "$WORK/guest.txt" -i "$snap/guest-alpha.dat"
ng=$(all_events "$WORK/guest.txt")
[ "$ng" -gt 0 ] || fail "guest-alpha.dat: no events"
grep -q 'softirq_entry' "$WORK/guest.txt" || fail "guest-alpha.dat has no softirq_entry (the fixture's)"
report "$WORK/host.txt" -i "$snap/host.dat"
nh=$(grep -c 'sched_switch:' "$WORK/host.txt")
[ "$nh" -gt 0 ] || fail "host.dat: no sched_switch"
echo "snapshot: $ng guest events, $nh host sched_switch"
bad=$(find "$snap" \( -type f ! -perm 0600 \) -o \( -type d ! -perm 0700 \))
[ -z "$bad" ] || fail "not private: $bad"
[ "$(status_of "$S" beta)" = attached ] || fail "beta is $(status_of "$S" beta) after alpha's snapshot"
"$COLLECT" daemon --status --state-dir "$S" | grep -q "^alpha .*alpha-.*-bug-42 (bug-42)" ||
	fail "--status does not name alpha's last snapshot: $("$COLLECT" daemon --status --state-dir "$S")"

# The child is stopped at the end of the window, not at the loop's next turn (issue 40): the loop
# turns every 0.2 s from the request on, so --after 1.05 ends 0.05 s past a turn, and a stop on
# the next one came 0.15 s late. The log says how late the stop and the seal were. A second
# snapshot of alpha: its new child is 3 s old first (younger ones are not stopped yet).
sleep 3
snap2=$("$COLLECT" snapshot alpha --state-dir "$S" --after 1.05 --reason turn 2>"$WORK/snap2.err") ||
	{ show "$WORK/snap2.err" "$WORK/daemon.log"; fail "snapshot --after 1.05 exited $?"; }
line=$(grep -F "alpha: snapshot $snap2 (turn): sealed " "$WORK/daemon.log")
stop=$(echo "$line" | sed -n 's/.*, its record stopped \(-*[0-9.]*\) s past it$/\1/p')
sealed=$(echo "$line" | sed -n 's/.*: sealed \([0-9.]*\) s past its --after time,.*/\1/p')
echo "snapshot --after 1.05: its record stopped $stop s past the window, sealed $sealed s past it"
[ -n "$stop" ] && [ -n "$sealed" ] || { show "$WORK/daemon.log"; fail "no 'sealed ... stopped' figures in the log"; }
[ "$(echo "$stop < 0.1 && $stop >= 0" | bc)" = 1 ] ||
	fail "the record was stopped $stop s past the window's end, want under 0.1 s (the loop's turn)"

# Another uid: refused by its credentials although the file would let it in.
AS="setpriv --reuid=nobody --regid=nogroup --clear-groups"
if command -v setpriv >/dev/null 2>&1; then
	for_user "$AS" "$COLLECT"
	chmod 0711 "$S" && chmod 0666 "$S/control.sock"
	# shellcheck disable=SC2086
	$AS "$FOR_USER/virtio-trace-collect" snapshot beta --state-dir "$S" >"$WORK/nobody.out" 2>"$WORK/nobody.err"
	rc=$?
	chmod 0700 "$S" && chmod 0600 "$S/control.sock"
	[ $rc = 1 ] || fail "another uid's snapshot exited $rc, want 1"
	grep -q 'permission denied' "$WORK/nobody.err" || { show "$WORK/nobody.err"; fail "no 'permission denied'"; }
	wait_log "$WORK/daemon.log" "refused a connection from uid $(id -u nobody)" 2 "the refusal is not logged"
	[ ! -s "$WORK/nobody.out" ] || fail "another uid got an answer: $(cat "$WORK/nobody.out")"
	[ "$(ls "$S/snapshots" | grep -c '^beta-')" = 0 ] || fail "another uid's request made a snapshot"
else
	echo "note: setpriv missing: another uid's refusal not tried"
fi

# Errors: an unknown guest (1), no daemon (6), a usage error (2).
"$COLLECT" snapshot gamma --state-dir "$S" 2>"$WORK/e1"; rc=$?
[ $rc = 1 ] && grep -q 'gamma: no such guest' "$WORK/e1" || fail "snapshot gamma: exit $rc, '$(cat "$WORK/e1")'"
"$COLLECT" snapshot alpha --state-dir "$WORK/none" 2>/dev/null; rc=$?
[ $rc = 6 ] || fail "snapshot without a daemon exited $rc, want 6"
"$COLLECT" snapshot 2>/dev/null; rc=$?
[ $rc = 2 ] || fail "snapshot without a guest exited $rc, want 2"
# More guest events than record takes (256) is a usage error, not a longer command line than the
# child's argv holds (it wrote past it before).
ev=$(awk 'BEGIN { for (i = 0; i < 257; i++) printf "%ssched:e%d", i ? "," : "", i }')
timeout -s INT 10 "$COLLECT" daemon --state-dir "$WORK/ev" --libvirt no --events "$ev" 2>"$WORK/e2"; rc=$?
[ $rc = 2 ] && grep -q 'events: 257 events, at most 256' "$WORK/e2" ||
	fail "daemon --events with 257 events: exit $rc, '$(cat "$WORK/e2")', want 2 and 'at most 256'"

# beta's ports go (its QEMU ended; the directory is removed): detached.
kill -TERM $beta_pid
rm -rf "$WORK/beta"
wait_log "$WORK/daemon.log" "beta: detached" 5 "beta not detached"
[ -z "$(status_of "$S" beta)" ] || fail "beta still in --status: $(status_of "$S" beta)"
[ -d "$S/guests/beta/previous" ] || fail "beta's last segment was not kept as guests/beta/previous"

# SIGINT as SIGTERM, though the shell started the daemon in the background with SIGINT ignored
# (the daemon blocks it before that matters: a blocked signal is queued, ignored or not).
DAEMON_SIG=INT daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon.log"; fail "daemon exited $RC after SIGINT, want 0"; }
[ ! -e "$S/control.sock" ] || fail "control.sock left after SIGINT"
grep -q 'stopped$' "$WORK/daemon.log" || fail "no 'stopped' in the log"
echo "PASS"
