#!/bin/sh
# Proves: `daemon` in its default mode, hold (issue 40), runs its guest's child as
# `record --hold`: the fake agent is asked to hold (START with HOLD), nothing of the guest
# reaches the child's spool while nothing is asked, and `snapshot` seals a recording whose
# manifest says held, with the events the ring overwrote; trace-cmd report reads exactly the
# ring's last pages (3 per CPU of 10); after the snapshot the guest is held again by a new child.
# The child runs with --sync-interval 60 --alive-interval 5 (its cmdline).
echo "daemon: mode hold runs record --hold; a snapshot is the ring's last pages, the manifest says held"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools

S=$WORK/state R=3
mkdir -p "$WORK/gamma"
fake gamma --listen "$WORK/gamma" --fixture "$DATA/cap-guest" --repeat 5 --ring-pages $R --again
cat >"$WORK/daemon.conf" <<CONF
domains = none
guest = gamma $WORK/gamma
state-dir = $S
min-free = 0
CONF
daemon_start daemon.log --config "$WORK/daemon.conf" --after 0
wait_log "$WORK/gamma.fake" "START: holding" 20 "the daemon's child did not ask the agent to hold"
[ "$(status_of "$S" gamma)" = attached ] || fail "gamma is '$(status_of "$S" gamma)', want attached"
"$COLLECT" daemon --status --state-dir "$S" | grep -q '^daemon: hold mode' ||
	fail "--status does not say hold: $("$COLLECT" daemon --status --state-dir "$S")"
# The held child checks its agent with a STATS_REQ every 5 s and probes the clock once a minute
# (a burst every 5 s was the whole of a held child's cost).
kid=
for p in /proc/[0-9]*; do
	[ "$(awk '{ print $4 }' "$p/stat" 2>/dev/null)" = "$DAEMON_PID" ] || continue
	tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q ' record ' && kid=${p#/proc/}
done
[ -n "$kid" ] || fail "no record child of the daemon (pid $DAEMON_PID)"
args=$(tr '\0' ' ' <"/proc/$kid/cmdline")
case $args in
*" --hold --sync-interval 60 --alive-interval 5 "*) ;;
*) fail "the held child runs: $args" ;;
esac
echo "ok: the held child: ...$(echo "$args" | grep -o ' --hold .*alive-interval 5')"
sleep 3	# past the child's 3 s minimum age
for c in 0 1; do
	n=$(spool_pages "$S/guests/gamma/current/.spool/guest-gamma" $c | wc -c)
	[ "$n" = 0 ] || fail "cpu$c: $n bytes reached the child's spool while holding"
done

snap=$("$COLLECT" snapshot gamma --state-dir "$S" --reason held 2>"$WORK/snap.err") ||
	{ show "$WORK/snap.err" "$WORK/daemon.log" "$WORK/gamma.fake"; fail "snapshot failed"; }
echo "snapshot $snap"
[ "$(man "$snap" .held)" = true ] || fail "manifest.json held is $(man "$snap" .held)"
over=$(guest_json "$snap" gamma .held.overwritten)
[ "${over:-0}" -gt 0 ] || fail "manifest.json: no overwritten events ($over)"
report "$WORK/guest.txt" -i "$snap/guest-gamma.dat"
# The first session's "cpuN: held P of T pages, E events overwritten": R pages each, and the
# manifest's overwritten events are theirs.
fake_over=0
for c in 0 1; do
	line=$(grep -m1 "cpu$c: held " "$WORK/gamma.fake")
	[ "$(echo "$line" | awk '{print $4}')" = $R ] || fail "cpu$c: the fake did not hold $R pages: $line"
	fake_over=$((fake_over + $(echo "$line" | awk '{print $8}')))
	got=$(grep -cE -- "-[0-9]+ +\[$(printf %03d $c)\]" "$WORK/guest.txt")
	[ "$got" -gt 0 ] || fail "cpu$c: no events in the snapshot's guest-gamma.dat"
done
[ "$over" = "$fake_over" ] || fail "manifest.json: $over events overwritten, the agent overwrote $fake_over"
echo "held snapshot: $over events overwritten, the rest read by trace-cmd report"
wait_count "$WORK/gamma.fake" "START: holding" 2 20 "the guest was not held again"
daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon.log"; fail "daemon exited $RC after SIGTERM, want 0"; }
echo "PASS"
