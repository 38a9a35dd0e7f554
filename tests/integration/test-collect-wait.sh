#!/bin/sh
# Proves: `record --wait[=SEC]` waits for a guest whose ports are not there yet (a guest booting,
# or ports about to be hot-plugged), and the collector says what it waits for in words. Four
# runs, three at once:
#   late   the ports appear 1.5 s after record started (a fake agent started then), cpu1's
#          1.2 s after the others: record waits ("waiting for its trace ports to appear"),
#          finds cpu1's port when the agent says it has 2 CPUs, records both exactly, exit 0, and
#          --duration 2 counts from its start: the agent saw START and STOP at least 1.9 s apart
#   never  --wait=1 on a directory that never gets ports: exit 1 within 5 s, the message names
#          the wait and `virtio-trace-collect list`, and no output directory is left
#   mute   the ports are there (setup --create) but nothing answers: after the 15 s HELLO
#          timeout the failure names the likely causes and the commands that check them
#          (ls /dev/virtio-ports/, systemctl status trace-agent, the udev rule
#          90-trace-agent.rules, virtio-trace-collect list), exit 1
#   status run in a pseudo-terminal (script(1)): the status line says "waiting for trace-agent
#          in the guest to answer", never a bare state name ("hello")
echo "collect --wait: late ports are waited for and recorded exactly; the status and the failure of a guest that never answers say why in words"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
. "$VT_SRCDIR/tests/integration/slow-lib.sh"
need_tools

mkdir -p "$WORK/late" "$WORK/never"
"$COLLECT" setup --vcpus 2 --dir "$WORK/mute" --create >/dev/null || fail "setup --create exited $?"
"$COLLECT" setup --vcpus 2 --dir "$WORK/tty" --create >/dev/null || fail "setup --create exited $?"

# mute: 15 s of HELLO timeout, in the background while the others run.
"$COLLECT" record --chardev-dir "$WORK/mute" --name mute --wait=1 -o "$WORK/out-mute" >"$WORK/mute.log" 2>&1 &
MUTE=$!
track $MUTE
if command -v script >/dev/null 2>&1; then
	script -qec "'$COLLECT' record --chardev-dir '$WORK/tty' --name tty --wait=1 -o '$WORK/out-tty' -d 1" \
		/dev/null >"$WORK/tty.log" 2>&1 </dev/null &
	TTY=$!
	track $TTY
fi

# late: record first, the ports 1.5 s later.
record_bg late --chardev-dir "$WORK/late" --name late --wait=20 -d 2 -o "$WORK/out-late"
sleep 1.5
# Its ports come one by one, the control port and cpu0's, then cpu1's 1.2 s later (record
# looks every 0.5 s): record attaches with one data port and the agent says 2 CPUs (CI once
# saw cpu1 unrecorded, 0 events, when record looked between two of them).
slow_fake late --fifo "$WORK/late" --fixture "$DATA/cap-guest" --repeat 2 --retime --port-gap 1200
LATE=$FAKE_PID
wait_gone 30
fake_end $LATE
st=$(tl late start) sp=$(tl late stop)
echo "measured: late guest: ports at +1.5 s, START at $(at "$st" $T_RUN0), STOP at $(at "$sp" $T_RUN0), exit $RC"
[ $RC = 0 ] || { show "$WORK/late.log"; fail "record --wait exited $RC, want 0"; }
grep -q 'guest late: waiting for its trace ports to appear' "$WORK/late.log" ||
	{ show "$WORK/late.log"; fail "record --wait did not say it waits for the ports"; }
ns_le $((st + 1900000000)) "$sp" || fail "--duration 2 did not count from the start: START to STOP $(secs $((sp - st))) s"
check_exact "$WORK/out-late" late "$DATA/cap-guest" 2
grep -q 'guest late: data ports 1\.\.1 appeared after its first 1' "$WORK/late.log" ||
	{ show "$WORK/late.log"; fail "record did not look for cpu1's port again (or found it at once)"; }

# never: no ports within --wait=1.
t0=$(now_ns)
"$COLLECT" record --chardev-dir "$WORK/never" --name never --wait=1 -d 1 -o "$WORK/out-never" >"$WORK/never.log" 2>&1
RC=$?
t1=$(now_ns)
echo "measured: never: exit $RC after $(secs $((t1 - t0))) s"
[ $RC = 1 ] || { show "$WORK/never.log"; fail "no ports: exit $RC, want 1"; }
ns_le $((t1 - t0)) 5000000000 || fail "no ports with --wait=1 took $(secs $((t1 - t0))) s"
grep -q 'guest never: its trace ports did not appear within 1 s (--wait): `virtio-trace-collect list` shows' "$WORK/never.log" ||
	{ show "$WORK/never.log"; fail "no message naming the wait and list"; }
[ ! -e "$WORK/out-never" ] || fail "a run that recorded nothing left $WORK/out-never"

# mute: the agent never answers.
_i=0
while kill -0 $MUTE 2>/dev/null && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
wait $MUTE
RC=$?
sed 's/^/  | /' "$WORK/mute.log"
[ $RC = 1 ] || fail "a guest that never answers: exit $RC, want 1"
for want in 'guest mute: trace-agent did not answer (HELLO) within 15 s' \
	'guest mute: likely causes: trace-agent is not installed or not running in the guest' \
	'ls /dev/virtio-ports/' 'systemctl status trace-agent' '90-trace-agent.rules' \
	'virtio-trace-collect list'; do
	grep -qF "$want" "$WORK/mute.log" || fail "the failure does not say '$want'"
done
[ ! -e "$WORK/out-mute" ] || fail "a run that recorded nothing left $WORK/out-mute"

# status: words, not state names.
if [ -n "${TTY:-}" ]; then
	_i=0
	while kill -0 $TTY 2>/dev/null && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
	tr '\r' '\n' <"$WORK/tty.log" | grep -E '^.{0,4}\[ *[0-9.]+s\] ' | sort -u | sed 's/^/  | /' | head -5
	tr '\r' '\n' <"$WORK/tty.log" | grep -q '\] tty: waiting for trace-agent in the guest to answer' ||
		fail "the status line does not say it waits for trace-agent"
	! tr '\r' '\n' <"$WORK/tty.log" | grep -qE '\] tty: (hello|new|configure|meta)$' ||
		fail "the status line shows a state name"
else
	echo "note: no script(1): the status line is not checked"
fi
echo "PASS"
