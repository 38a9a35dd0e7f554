# Shared by the daemon's integration tests (sourced after collect-lib.sh).

# daemon_start LOG ARGS...: run `virtio-trace-collect daemon ARGS` in the background, its
# output in $WORK/LOG; $DAEMON_PID is its pid
daemon_start() {
	_dl=$WORK/$1
	shift
	"$COLLECT" daemon "$@" >>"$_dl" 2>&1 &
	DAEMON_PID=$!
	track $DAEMON_PID
}

# daemon_stop: SIGTERM (or $DAEMON_SIG), then wait (10 s at most) for it to end; $RC its exit
# status
daemon_stop() {
	kill -"${DAEMON_SIG:-TERM}" $DAEMON_PID 2>/dev/null
	_ds=0
	while kill -0 $DAEMON_PID 2>/dev/null && [ $_ds -lt 100 ]; do
		sleep 0.1
		_ds=$((_ds + 1))
	done
	kill -KILL $DAEMON_PID 2>/dev/null
	wait $DAEMON_PID
	RC=$?
}

# quiet_guest NAME: a fake agent on a --listen port directory $WORK/NAME that streams
# cap-guest's pages at 20 KiB/s per CPU until STOP
quiet_guest() {
	mkdir -p "$WORK/$1"
	fake "$1" --listen "$WORK/$1" --fixture "$DATA/cap-guest" --repeat 0 --rate 20K --retime
}

# fake_qemu NAME ARGS...: a fake agent run as a root-owned qemu-system-x86_64 (a copy in
# $WORK/bin, not a link: a QEMU is what /proc/PID/exe names, a file nobody else may write) with
# -name NAME and its ports in $WORK/NAME as QEMU's socket chardevs, so that discovery finds it as
# a QEMU; it serves cap-guest with ARGS; $FAKE_PID is its pid
fake_qemu() {
	_qn=$1
	shift
	mkdir -p "$WORK/bin" "$WORK/$_qn"
	if [ ! -x "$WORK/bin/qemu-system-x86_64" ]; then
		cp "$FAKE" "$WORK/bin/qemu-system-x86_64"
		chmod 0755 "$WORK/bin" "$WORK/bin/qemu-system-x86_64"
	fi
	fake_as "$WORK/bin/qemu-system-x86_64" "$_qn" --listen "$WORK/$_qn" --fixture "$DATA/cap-guest" "$@" \
		-- -name "$_qn" \
		-chardev "socket,id=s0,path=$WORK/$_qn/trace-path-cpu0,server=on,wait=off" -device virtserialport,chardev=s0,name=trace-path-cpu0 \
		-chardev "socket,id=s1,path=$WORK/$_qn/trace-path-cpu1,server=on,wait=off" -device virtserialport,chardev=s1,name=trace-path-cpu1 \
		-chardev "socket,id=s2,path=$WORK/$_qn/agent-ctl-path,server=on,wait=off" -device virtserialport,chardev=s2,name=agent-ctl-path
}

# status_of STATE NAME: the guest's STATE column in daemon --status
status_of() {
	"$COLLECT" daemon --status --state-dir "$1" 2>/dev/null | awk -v n="$2" '$1 == n { print $2 }'
}

# named_conf FILE STATE NAME...: a daemon.conf that follows only the guests NAME, each named with
# its port directory $WORK/NAME (quiet_guest), state in STATE; add lines with >>FILE
named_conf() {
	_nf=$1
	{
		echo "# the test's guests, named with their ports; nothing else on this host"
		echo "domains = none"
		for _nn in $(echo "$@" | cut -d' ' -f3-); do
			echo "guest = $_nn $WORK/$_nn"
		done
		echo "state-dir = $2"
		echo "min-free = 0"
	} >"$_nf"
}

# wait_attached STATE NAME... [SECS]: each guest attached (--status) within SECS (default 10),
# or fail
wait_attached() {
	_st=$1
	shift
	_secs=10
	case $(eval echo "\${$#}") in
	*[!0-9]*) ;;
	*) _secs=$(eval echo "\${$#}") ;;
	esac
	for _n in "$@"; do
		[ "$_n" = "$_secs" ] && continue
		_i=0
		until [ "$(status_of "$_st" "$_n")" = attached ]; do
			[ $_i -lt $((_secs * 10)) ] || { show "$WORK/daemon.log"; fail "$_n not attached within $_secs s"; }
			sleep 0.1
			_i=$((_i + 1))
		done
	done
}

# wait_sealed STATE SECS: wait until a snapshot in STATE/snapshots is sealed (its snapshot.json)
wait_sealed() {
	_ws=0
	until ls "$1"/snapshots/*/snapshot.json >/dev/null 2>&1; do
		[ $_ws -lt $(($2 * 10)) ] || { show "$WORK/daemon.log"; fail "no snapshot sealed within $2 s"; }
		sleep 0.1
		_ws=$((_ws + 1))
	done
}

# check_unit_snapshot DIR REASON: a snapshot of alpha (a fake guest serving cap-guest) with host
# events, as the daemon under its unit seals it: trace-cmd reads guest-alpha.dat with the
# fixture's softirq_entry and host.dat with sched_switch and kallsyms addresses (CAP_SYSLOG),
# snapshot.json says REASON, else fail; $NG and $NH are the guest's events and the host's
# sched_switch, $KS_ADDRS its kallsyms addresses
check_unit_snapshot() {
	report "$WORK/guest.txt" -i "$1/guest-alpha.dat"
	NG=$(all_events "$WORK/guest.txt")
	grep -q 'softirq_entry' "$WORK/guest.txt" || fail "guest-alpha.dat has no softirq_entry (the fixture's)"
	report "$WORK/host.txt" -i "$1/host.dat"
	NH=$(grep -c 'sched_switch:' "$WORK/host.txt")
	[ "$NH" -gt 0 ] || fail "host.dat: no sched_switch"
	check_kallsyms_addrs "$1/host.dat" "host.dat's"
	[ "$(jq -r .reason "$1/snapshot.json")" = "$2" ] || fail "snapshot.json reason $(jq -r .reason "$1/snapshot.json"), want $2"
}
