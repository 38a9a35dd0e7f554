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

# daemon_stop: SIGTERM, then wait (10 s at most) for it to end; $RC its exit status
daemon_stop() {
	kill -TERM $DAEMON_PID 2>/dev/null
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

# status_of STATE NAME: the guest's STATE column in daemon --status
status_of() {
	"$COLLECT" daemon --status --state-dir "$1" 2>/dev/null | awk -v n="$2" '$1 == n { print $2 }'
}

# wait_attached STATE NAME SECS: wait until --status says NAME is attached (else fail, with
# $WORK/daemon.log)
wait_attached() {
	_wa=0
	until [ "$(status_of "$1" "$2")" = attached ]; do
		[ $_wa -lt $(($3 * 10)) ] || { show "$WORK/daemon.log"; fail "$2 not attached within $3 s"; }
		sleep 0.1
		_wa=$((_wa + 1))
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
