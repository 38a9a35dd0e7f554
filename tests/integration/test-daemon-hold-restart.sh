#!/bin/sh
# Proves (issue 40, daemon scale): the daemon's held child finds an agent that restarted through
# its liveness check (record --alive-interval 5), with no probe burst due (--sync-interval 60):
# the fake agent forgets its HELLO 2 s into the hold, the child's next STATS_REQ is answered
# "send HELLO first" and the child ends, and a new child holds the guest again (the fake sees a
# second START with HOLD) within 5 s of the check interval plus the daemon's restart.
echo "daemon: a held child's liveness check finds an agent that restarted; a new child holds the guest"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools

S=$WORK/state
mkdir -p "$WORK/delta"
fake delta --listen "$WORK/delta" --fixture "$DATA/cap-guest" --repeat 5 --ring-pages 3 --again \
	--forget-hello 2
named_conf "$WORK/daemon.conf" "$S" delta
daemon_start daemon.log --config "$WORK/daemon.conf" --after 0
wait_log "$WORK/delta.fake" "START: holding" 20 "the daemon's child did not ask the agent to hold"
wait_log "$WORK/delta.fake" "forgetting the session" 10 "the fake agent did not restart"
wait_count "$WORK/delta.fake" "START: holding" 2 15 "no new held child within 15 s of the restart"
# What the restarted agent was first asked: the check, not a probe burst's SYNC_BEGIN.
first=$(grep -m1 ' before HELLO' "$WORK/delta.fake")
case $first in
*"STATS_REQ before HELLO"*) ;;
*) show "$WORK/delta.fake"; fail "the restarted agent was first asked: $first" ;;
esac
grep -q 'answering seq [0-9]* with ERROR .*send HELLO first' "$WORK/delta.fake" ||
	{ show "$WORK/delta.fake"; fail "the check was not answered send HELLO first"; }
echo "ok: held again $((_wc / 10)).$((_wc % 10)) s after the agent restarted (checks every 5 s)"
daemon_stop
[ $RC = 0 ] || { show "$WORK/daemon.log"; fail "daemon exited $RC after SIGTERM, want 0"; }
echo "PASS"
