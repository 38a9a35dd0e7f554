#!/bin/sh
# Proves (issue 40): a plain `record --qmp` of a guest that migrated into its QEMU records it, and
# one of a guest that migrated out of it says so. After the migration, QEMU 7.2's query-migrate
# answered the destination {"status": "completed"} and nothing more (a QEMU started with
# -incoming reports that migration's status), the source {"status": "completed", "setup-time": 2,
# "downtime": 3, "total-time": 15, ...}. Record took both for a guest that had left, so the
# destination daemon's plain child after a snapshot ended at once ("it migrated to another host
# before its recording started", exit 1) and was restarted again and again. The fake agent's QMP
# answers query-migrate as QEMU did:
#   destination's answer: record exits 0 with the fixture's exact events, nothing said of a
#       migration (the answer read: its --verbose line), the manifest's migration null;
#   source's answer: "guest qi: it migrated to another host", exit 1 with nothing written when
#       the answer came before the guest's START, else exit 0 with the guest drained as one
#       that left.
echo "collect record --qmp: a guest that migrated into its QEMU is recorded; one that migrated out is refused, saying so"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
P=$WORK/p
mkdir -p "$P"

# rec NAME QUERY-MIGRATE: record guest qi for 1 s, its QMP answering query-migrate QUERY-MIGRATE
rec() {
	VT_FAKE_QMP_MIGRATE=$2
	export VT_FAKE_QMP_MIGRATE
	fake qi --fifo "$P" --fixture "$DATA/cap-guest" --repeat 1 --retime --qmp "$WORK/$1.qmp"
	unset VT_FAKE_QMP_MIGRATE
	collect "$1" --chardev-dir "$P" --name qi --qmp "$WORK/$1.qmp" -o "$WORK/o-$1" --duration 1 --verbose
	fake_end $FAKE_PID
	cp "$WORK/qi.fake" "$WORK/$1.fake"
	grep -q "qmp: client 1: ready" "$WORK/$1.fake" ||
		{ show "$WORK/$1.fake"; fail "$1: record never followed the fake QEMU's QMP"; }
}

rec dst '{"status": "completed"}'
[ $RC = 0 ] || { show "$WORK/dst.log" "$WORK/dst.fake"; fail "dst: record exited $RC, want 0"; }
! grep -q "migrated" "$WORK/dst.log" || fail "dst: record speaks of a migration: $(grep migrated "$WORK/dst.log" | head -1)"
grep -q "guest qi: its QEMU took it in by a migration that completed" "$WORK/dst.log" ||
	{ show "$WORK/dst.log"; fail "dst: record did not read query-migrate's answer"; }
check_exact "$WORK/o-dst" qi "$DATA/cap-guest" 1
[ "$(guest_json "$WORK/o-dst" qi .migration)" = null ] ||
	fail "dst: the manifest's migration is $(guest_json "$WORK/o-dst" qi .migration)"
echo "ok: a guest that migrated in: exit 0, the fixture's events, no migration"

rec src '{"status": "completed", "setup-time": 2, "downtime": 3, "total-time": 15}'
# The answer comes before the guest's START (exit 1, nothing written) or just after it (the guest
# is drained as one that left: exit 0, its manifest says migrated out), as the two race.
grep -q "guest qi: it migrated to another host" "$WORK/src.log" ||
	{ show "$WORK/src.log"; fail "src: record did not say the guest migrated out"; }
case $RC in
1)	grep -q "guest qi: it migrated to another host before its recording started" "$WORK/src.log" ||
		{ show "$WORK/src.log"; fail "src: exit 1 without saying the guest left before its start"; }
	[ ! -e "$WORK/o-src/guest-qi.dat" ] || fail "src: record wrote guest-qi.dat" ;;
0)	grep -q "guest qi: running -> draining (migrated out)" "$WORK/src.log" ||
		{ show "$WORK/src.log"; fail "src: exit 0 without draining a guest that migrated out"; } ;;
*)	show "$WORK/src.log"; fail "src: record exited $RC, want 1 (before START) or 0 (drained)" ;;
esac
echo "ok: a guest that migrated out: exit $RC, said so"
