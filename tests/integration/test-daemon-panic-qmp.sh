#!/bin/sh
# Proves (issue 40): QMP's GUEST_PANICKED of a QEMU found without libvirt seals a panic snapshot of
# that guest. Two fake QEMUs (vt-fake-agent copies run as a root-owned qemu-system-x86_64, each
# serving its -qmp socket itself, the events a test writes into a FIFO relayed to its one client:
# the daemon's `record --all=NAME` child). A: --status says "QMP only (libvirt = no)"; pqb's
# GUEST_PANICKED whose action smuggles a line naming pqa is logged as action unknown and seals one
# snapshot, pqb's, reason panic-qmp, none of pqa; pqa's two GUEST_PANICKED on one child are passed on
# once (the second logged) and seal one snapshot, pqa's: its snapshot.json (reason, guest), its
# manifest (one guest, pqa, the vCPU threads QMP gave) and guest-pqa.dat (the fixture's events);
# pqa's next child's GUEST_PANICKED within the minute is ignored, no second snapshot. B: libvirt's
# crash event (the fake event source) of the panic QMP already said makes no second snapshot.
# C: with --trigger-panic no (and a guest-filter trigger, so that the children have the pipe)
# the panic is logged by record and the daemon, and seals nothing. D: a fake QEMU that quits
# right after its GUEST_PANICKED (QEMU's default action, poweroff) ends its child at once; the
# child's panic line is still taken and its recording sealed as pqb's panic snapshot (the
# fixture's events in it). With libvirt = no neither the daemon nor its children ask libvirt (A:
# each child runs as record --all=NAME --no-libvirt; the daemon runs from a copy of the collector
# with no libvirt module beside it, and nothing in its log says the module could not be loaded;
# record --no-libvirt without --all, or with --connect, is a usage error). E: one discovery that
# misses a guest whose QEMU still runs is logged and stops nothing; two in a row stop its child.
# The names are this test's own (pqa, pqb): the daemon finds QEMUs machine-wide, and make check
# runs tests side by side (test-daemon-hostfilter-qemu's fake QEMU is qa).
echo "daemon: QMP GUEST_PANICKED seals one snapshot of that guest only, reason panic-qmp"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/daemon-lib.sh"
need_tools
[ "$(id -u)" = 0 ] || { echo "SKIP: a QEMU that list finds is root's"; exit 77; }

mkdir -p "$WORK/bin"
# A copy, not a link: a QEMU is what /proc/PID/exe names, a root-owned file nobody else may write.
cp "$FAKE" "$WORK/bin/qemu-system-x86_64"
chmod 0755 "$WORK/bin" "$WORK/bin/qemu-system-x86_64"

# qemu NAME: a fake QEMU with -name NAME, its ports and QMP socket in $WORK/NAME, its QMP events
# from the FIFO $WORK/NAME.qmp-in; sets Q_NAME to its pid
qemu() {
	mkdir -p "$WORK/$1"
	mkfifo "$WORK/$1.qmp-in"
	fake_as "$WORK/bin/qemu-system-x86_64" "$1" --listen "$WORK/$1" --fixture "$DATA/cap-guest" \
		--repeat 0 --rate 20K --retime --again --qmp "$WORK/$1/qmp.sock" \
		--qmp-events "$WORK/$1.qmp-in" -- -name "$1" \
		-chardev "socket,id=s0,path=$WORK/$1/trace-path-cpu0,server=on,wait=off" -device virtserialport,chardev=s0,name=trace-path-cpu0 \
		-chardev "socket,id=s1,path=$WORK/$1/trace-path-cpu1,server=on,wait=off" -device virtserialport,chardev=s1,name=trace-path-cpu1 \
		-chardev "socket,id=s2,path=$WORK/$1/agent-ctl-path,server=on,wait=off" -device virtserialport,chardev=s2,name=agent-ctl-path \
		-qmp "unix:$WORK/$1/qmp.sock,server=on,wait=off"
	eval "Q_$1=\$FAKE_PID"
}
# qmp_event NAME JSON: QEMU NAME sends JSON on its QMP socket (to the client it has, or the next)
qmp_event() {
	printf '%s\n' "$2" 1<>"$WORK/$1.qmp-in"
}
# qmp_clients NAME: how many QMP clients (record children) QEMU NAME has had so far
qmp_clients() {
	grep -c "qmp: client [0-9]*: connected" "$WORK/$1.fake"
}
# qmp_last NAME: QEMU NAME's last word of its QMP clients ("client N: ready", "client N: left"...)
qmp_last() {
	grep -o "qmp: client [0-9]*: [a-z]*" "$WORK/$1.fake" | grep -v ": sent$" | tail -n 1
}
# qmp_steady NAME MIN: QEMU NAME's QMP client number MIN or later (a record child) has said
# qmp_capabilities and is still there 1 s later (a child that ends at once, its own `list` having
# found the agent busy with the daemon's discovery, gets no event; 30 s at most)
qmp_steady() {
	_q=0
	while :; do
		_l=$(qmp_last "$1")
		_c=${_l#qmp: client }
		_c=${_c%%:*}
		if [ "${_l##*: }" = ready ] && [ "$_c" -ge "$2" ]; then
			sleep 1
			[ "$(qmp_last "$1")" = "$_l" ] && return 0
		fi
		[ $_q -lt 300 ] || { show "$WORK/$1.fake"; fail "$1: no record child number $2 or later follows its QMP"; }
		sleep 0.1
		_q=$((_q + 1))
	done
}
# count LOG PATTERN: lines of LOG that match
count() {
	grep -c -- "$2" "$1"
}
# snaps STATE: the snapshots' names, sorted
snaps() {
	ls "$1/snapshots" 2>/dev/null | grep -v '^\.' | sort
}
PANIC='{"event": "GUEST_PANICKED", "data": {"action": "pause", "info": {"type": "hyper-v", "arg1": 0}}}'

qemu pqa
qemu pqb
A=$WORK/state-a
L=$WORK/daemon.log
# Daemon A runs from a copy of the collector with no libvirt module beside it (as an L1 of the
# e2e-kvm tests has none): a child that asked libvirt would log that it cannot load it.
BUILT=$COLLECT
COLLECT=$WORK/bin/virtio-trace-collect
cp "$BUILT" "$COLLECT"
daemon_start daemon.log --domains pqa,pqb --libvirt no --mode stream --state-dir "$A" --min-free 0 --after 1
wait_attached "$A" pqa pqb 15
qmp_steady pqa 1
qmp_steady pqb 1
cpid=$("$COLLECT" daemon --status --state-dir "$A" | awk '$1 == "pqa" { print $3 }')
tr '\0' ' ' <"/proc/$cpid/cmdline" | grep -q -- " --all=pqa --no-libvirt " ||
	fail "libvirt = no: pqa's child (pid $cpid) is not told to leave libvirt out: $(tr '\0' ' ' <"/proc/$cpid/cmdline")"
! grep -q "libvirt support is not available" "$L" || { show "$L"; fail "libvirt = no: the daemon or a child asked libvirt"; }
for args in "--no-libvirt" "--all --connect test:///default --no-libvirt"; do
	# shellcheck disable=SC2086
	"$COLLECT" record $args -o "$WORK/none" -d 1 >"$WORK/usage.txt" 2>&1
	rc=$?
	[ $rc = 2 ] && grep -q -- "--no-libvirt leaves libvirt's domains out of --all" "$WORK/usage.txt" ||
		fail "record $args: exit $rc, want 2 and why: $(cat "$WORK/usage.txt")"
done
echo "ok: libvirt = no: the children run with --all=NAME --no-libvirt and nothing asks libvirt; --no-libvirt without --all, or with --connect, is a usage error"
"$COLLECT" daemon --status --state-dir "$A" | grep -qx "panic-trigger: QMP only (libvirt = no)" ||
	fail "--status does not say panics come from QMP only: $("$COLLECT" daemon --status --state-dir "$A")"
echo "ok: pqa and pqb attached, their children follow QMP; --status: panic-trigger: QMP only (libvirt = no)"

# pqb's action smuggles a newline and a line naming pqa: QEMU's words only go on.
qmp_event pqb '{"event": "GUEST_PANICKED", "data": {"action": "pause\npanic pqa pause\n"}}'
wait_log "$L" "pqb: snapshot .*-panic-qmp (panic-qmp)" 30 "pqb's GUEST_PANICKED sealed nothing"
[ "$(count "$L" "guest pqb: QEMU says it panicked (QMP GUEST_PANICKED, action unknown)")" = 1 ] ||
	{ show "$L"; fail "record did not log pqb's panic once, action unknown"; }
[ "$(count "$L" "pqb: the guest crashed (QMP GUEST_PANICKED, action unknown): snapshot asked for (panic-qmp; before 30.0 s, after 1.0 s)")" = 1 ] ||
	{ show "$L"; fail "the daemon did not ask for pqb's snapshot once"; }
s=$(snaps "$A")
[ "$(echo "$s" | wc -l)" = 1 ] && echo "$s" | grep -q '^pqb-.*-panic-qmp$' ||
	fail "after pqb's panic: snapshots '$s', want one, pqb's"
grep -q "pqa: the guest crashed\|panic line not understood" "$L" && { show "$L"; fail "pqb's smuggled line reached pqa or was read as a line"; }
echo "ok: pqb's GUEST_PANICKED (a hostile action) sealed $s only"

# pqa's panic, said twice to one child: one line on its pipe, one snapshot.
qmp_steady pqa 1
n=$(($(qmp_clients pqa) + 1))
qmp_event pqa "$PANIC"
qmp_event pqa "$PANIC"
wait_log "$L" "pqa: snapshot .*-panic-qmp (panic-qmp)" 30 "pqa's GUEST_PANICKED sealed nothing"
[ "$(count "$L" "guest pqa: QEMU says it panicked (QMP GUEST_PANICKED, action pause)")" = 2 ] ||
	{ show "$L"; fail "record did not log pqa's two panics"; }
[ "$(count "$L" "guest pqa: GUEST_PANICKED again: not passed on (one per recording; 2 so far)")" = 1 ] ||
	{ show "$L"; fail "record did not hold back pqa's second panic"; }
[ "$(count "$L" "pqa: the guest crashed (QMP GUEST_PANICKED, action pause): snapshot asked for (panic-qmp; before 30.0 s, after 1.0 s)")" = 1 ] ||
	{ show "$L"; fail "the daemon did not ask for pqa's snapshot once"; }
s=$(snaps "$A")
[ "$(echo "$s" | grep -c '^pqa-.*-panic-qmp$')" = 1 ] && [ "$(echo "$s" | wc -l)" = 2 ] ||
	fail "after pqa's panic: snapshots '$s', want pqb's and one of pqa"
snap=$A/snapshots/$(echo "$s" | grep '^pqa-')
[ "$(jq -r .reason "$snap/snapshot.json")" = panic-qmp ] || fail "snapshot.json reason $(jq -r .reason "$snap/snapshot.json")"
[ "$(jq -r .guest "$snap/snapshot.json")" = pqa ] || fail "snapshot.json guest $(jq -r .guest "$snap/snapshot.json")"
[ "$(man "$snap" '[.guests[].name] | join(",")')" = pqa ] || fail "manifest.json guests: $(man "$snap" '[.guests[].name] | join(",")')"
[ "$(guest_json "$snap" pqa '.vcpu_threads | map(tostring) | join(",")')" = "$Q_pqa,$Q_pqa" ] ||
	fail "manifest.json: pqa's vCPU threads $(guest_json "$snap" pqa .vcpu_threads), want QMP's ($Q_pqa twice)"
[ ! -e "$snap/guest-pqb.dat" ] || fail "pqa's snapshot holds pqb's trace"
report "$WORK/guest.txt" -i "$snap/guest-pqa.dat"
grep -q 'softirq_entry' "$WORK/guest.txt" || fail "guest-pqa.dat has no softirq_entry (the fixture's)"
"$COLLECT" daemon --status --state-dir "$A" | grep -q "^pqa .*pqa-.*-panic-qmp (panic-qmp)" ||
	fail "--status does not name pqa's snapshot: $("$COLLECT" daemon --status --state-dir "$A")"
echo "ok: pqa's two GUEST_PANICKED: $(basename "$snap"), $(all_events "$WORK/guest.txt") guest events"

# pqa's next child: a panic within the minute is the same guest's again, ignored.
qmp_steady pqa $n
qmp_event pqa "$PANIC"
wait_log "$L" "pqa: the guest crashed (QMP GUEST_PANICKED, action pause): its panic snapshot was asked for .* s ago: not another (one per 60 s; 1 ignored so far)" 10 \
	"pqa's next child's panic was not ignored"
sleep 3	# past --after 1 and a child's 3 s: a second snapshot would be sealed by now
s=$(snaps "$A")
[ "$(echo "$s" | wc -l)" = 2 ] || fail "a panic within the minute sealed another: '$s'"
"$COLLECT" daemon --status --state-dir "$A" | grep -q "^pqa .*(panic-qmp); panics: 1 taken, 1 ignored\($\|;\)" ||
	fail "--status does not count pqa's panics (1 taken, 1 ignored): $("$COLLECT" daemon --status --state-dir "$A")"
daemon_stop
[ $RC = 0 ] || { show "$L"; fail "daemon A exited $RC after SIGTERM, want 0"; }
COLLECT=$BUILT
echo "ok: pqa's next panic within the minute ignored; 2 snapshots in all"

# B: libvirt says the panic QMP said: one snapshot.
B=$WORK/state-b EV=$WORK/events
mkfifo "$EV"
n=$(($(qmp_clients pqa) + 1))
VT_DAEMON_EVENTS=$EV daemon_start daemon-b.log --domains pqa --libvirt no --mode stream --state-dir "$B" \
	--min-free 0 --after 1
L=$WORK/daemon-b.log
wait_attached "$B" pqa 15
qmp_steady pqa $n
qmp_event pqa "$PANIC"
wait_log "$L" "pqa: the guest crashed (QMP GUEST_PANICKED, action pause): snapshot asked for (panic-qmp" 10 \
	"B: pqa's GUEST_PANICKED asked for nothing"
printf 'crashed panicked pqa\n' 1<>"$EV"
wait_log "$L" "pqa: the guest crashed (panicked): its panic snapshot was asked for .* s ago: not another" 10 \
	"B: libvirt's word of the same panic was not folded in"
wait_log "$L" "pqa: snapshot .*-panic-qmp (panic-qmp)" 30 "B: nothing sealed"
sleep 2
s=$(snaps "$B")
[ "$(echo "$s" | wc -l)" = 1 ] && echo "$s" | grep -q '^pqa-.*-panic-qmp$' || fail "B: snapshots '$s', want one of pqa"
daemon_stop
[ $RC = 0 ] || { show "$L"; fail "daemon B exited $RC after SIGTERM, want 0"; }
echo "ok: QMP's and libvirt's word of one panic: one snapshot, $s"

# C: --trigger-panic no; the guest-filter trigger gives the child its pipe all the same.
C=$WORK/state-c
n=$(($(qmp_clients pqa) + 1))
daemon_start daemon-c.log --domains pqa --libvirt no --mode stream --state-dir "$C" --min-free 0 --after 1 \
	--trigger-panic no --trigger-guest-filter sched:sched_switch
L=$WORK/daemon-c.log
wait_attached "$C" pqa 15
qmp_steady pqa $n
qmp_event pqa "$PANIC"
wait_log "$L" "pqa: QMP says the guest panicked (action pause): trigger-panic is off" 10 "C: the panic line was not read"
sleep 3
[ -z "$(snaps "$C")" ] || fail "--trigger-panic no sealed $(snaps "$C")"
! grep -q "snapshot asked for" "$L" || fail "--trigger-panic no asked for a snapshot"
"$COLLECT" daemon --status --state-dir "$C" | grep -q "^panic-trigger" && fail "--trigger-panic no: --status has a panic-trigger line"
daemon_stop
[ $RC = 0 ] || { show "$L"; fail "daemon C exited $RC after SIGTERM, want 0"; }
echo "ok: --trigger-panic no: the panic logged, nothing sealed"

# D: QEMU's default action powers it off at once: the child ends right after its panic line,
# which is read before the daemon takes the child's end, and its recording is the snapshot.
D=$WORK/state-d
n=$(($(qmp_clients pqb) + 1))
daemon_start daemon-d.log --domains pqb --libvirt no --mode stream --state-dir "$D" --min-free 0 --after 1
L=$WORK/daemon-d.log
wait_attached "$D" pqb 15
qmp_steady pqb $n
sleep 1	# some of the window before the panic
qmp_event pqb '{"event": "GUEST_PANICKED", "data": {"action": "poweroff"}}'
qmp_event pqb quit
wait_log "$WORK/pqb.fake" "qmp: client [0-9]*: quitting, as QEMU powers off" 10 "pqb's fake QEMU did not quit"
wait_log "$L" "pqb: snapshot .*-panic-qmp (panic-qmp)\|could not be sealed\|no recording runs" 20 "D: pqb's end sealed nothing and said nothing"
grep -q "pqb: the guest crashed (QMP GUEST_PANICKED, action poweroff): snapshot asked for (panic-qmp" "$L" ||
	{ show "$L"; fail "D: the panic line of a child that ended at once was not taken"; }
grep -q "pqb: snapshot .*-panic-qmp (panic-qmp)" "$L" || { show "$L"; fail "D: pqb's last recording was not sealed"; }
s=$(snaps "$D")
[ "$(echo "$s" | wc -l)" = 1 ] && echo "$s" | grep -q '^pqb-.*-panic-qmp$' || fail "D: snapshots '$s', want one of pqb"
report "$WORK/guest-d.txt" -i "$D/snapshots/$s/guest-pqb.dat"
grep -q 'softirq_entry' "$WORK/guest-d.txt" || fail "D: guest-pqb.dat has no softirq_entry (the fixture's)"
daemon_stop
[ $RC = 0 ] || { show "$L"; fail "daemon D exited $RC after SIGTERM, want 0"; }
echo "ok: a QEMU that powers off on its panic: $s, $(all_events "$WORK/guest-d.txt") guest events"

# E: one look that misses a guest whose QEMU runs (its binary group-writable a moment: no QEMU
# to list) stops nothing; two looks in a row stop its recording, and a new child follows.
E=$WORK/state-e
L=$WORK/daemon-e.log
n=$(($(qmp_clients pqa) + 1))
daemon_start daemon-e.log --domains pqa --libvirt no --mode stream --state-dir "$E" --min-free 0
wait_attached "$E" pqa 15
qmp_steady pqa $n
child_of() { "$COLLECT" daemon --status --state-dir "$E" | awk '$1 == "pqa" && $2 == "attached" { print $3 }'; }
c1=$(child_of)
chmod g+w "$WORK/bin/qemu-system-x86_64"
wait_log "$L" "pqa: not found, but its QEMU (pid $Q_pqa) runs: looking again before stopping its recording" 5 \
	"E: the look that missed pqa said nothing"
chmod g-w "$WORK/bin/qemu-system-x86_64"
sleep 3
! grep -q "pqa: gone" "$L" || { show "$L"; fail "E: one look that missed pqa stopped its recording"; }
[ -n "$c1" ] && [ "$(child_of)" = "$c1" ] || { show "$L"; fail "E: pqa's child was $c1, is $(child_of)"; }
echo "ok: one look that missed pqa (its QEMU running): logged, its child $c1 kept"
chmod g+w "$WORK/bin/qemu-system-x86_64"
wait_log "$L" "pqa: gone: stopping its recording" 5 "E: two looks that missed pqa did not stop its recording"
m=$(qmp_clients pqa)
chmod g-w "$WORK/bin/qemu-system-x86_64"
[ "$(grep -c "pqa: not found, but its QEMU" "$L")" = 2 ] || { show "$L"; fail "E: not one forgiven look before the stop"; }
_e=0
until c2=$(child_of) && [ -n "$c2" ] && [ "$c2" != "$c1" ]; do
	[ $_e -lt 300 ] || { show "$L"; fail "E: no new child of pqa within 30 s of its stop"; }
	sleep 0.1
	_e=$((_e + 1))
done
# The new child's session must be up before the stop: record loses a SIGINT that comes while
# it starts, and the daemon's second SIGINT comes 10 s later (seen under load: daemon_stop's
# wait ran out, exit 137).
qmp_steady pqa $((m + 1))
daemon_stop
[ $RC = 0 ] || { show "$L"; fail "daemon E exited $RC after SIGTERM, want 0"; }
echo "ok: two looks in a row that missed pqa stopped its child $c1; once found again, child $c2"
echo "PASS"
