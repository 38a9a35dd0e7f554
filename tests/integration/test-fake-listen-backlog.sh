#!/bin/sh
# Proves: the fake agent's --listen control port serves one host at a time as QEMU's chardev
# server does: a second client waits in the listen backlog while the first is connected, it is
# not accepted and closed. (The fake closed it: `record --all`'s session could connect while its
# own HELLO probe's connection was still open, and found itself closed, "cannot read the control
# port": test-daemon-hostfilter-qemu failed so in 2 of 3 suite runs.) A record session holds
# the port; a knock on it is still open after 5 s (it was closed at once); after the session a
# second one records exactly as the first.
echo "fake agent: --listen leaves a second client in the backlog while a host is connected, as QEMU"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools

mkdir -p "$WORK/qb"
fake qb --listen "$WORK/qb" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime --again
collect_start r1 --chardev-dir "$WORK/qb" --name qb -o "$WORK/o1" -d 8
wait_log "$WORK/qb.fake" "START" 20 "the first session did not start"
"$FAKE" --knock "$WORK/qb/agent-ctl-path" 2>"$WORK/knock"
k=$?
cat "$WORK/knock"
[ $k = 3 ] || { show "$WORK/qb.fake"; fail "a second client on a port that has its host: knock exit $k, want 3 (left in the backlog)"; }
collect_wait 30
[ $RC = 0 ] || { show "$WORK/r1.log"; fail "the first session exited $RC, want 0"; }
collect r2 --chardev-dir "$WORK/qb" --name qb -o "$WORK/o2" -d 2
[ $RC = 0 ] || { show "$WORK/r2.log"; show "$WORK/qb.fake"; fail "the session after the knock exited $RC, want 0"; }
for o in o1 o2; do
	report "$WORK/$o.txt" -i "$WORK/$o/guest-qb.dat"
	[ "$(all_events "$WORK/$o.txt")" -gt 0 ] || fail "$o: no events"
done
[ "$(grep -c "host connected to agent-ctl-path" "$WORK/qb.fake")" = 3 ] ||
	{ show "$WORK/qb.fake"; fail "want 3 connections to the control port (r1, the knock once r1 left, r2)"; }
echo "PASS"
