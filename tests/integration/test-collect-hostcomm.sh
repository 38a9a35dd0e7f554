#!/bin/sh
# Proves: host.dat names the host tasks that existed when the recording started. A shell
# loop (comm vt-looper) forks `sleep` while the collector records host sched_switch and
# sched_process_fork; a task that sleeps through the whole recording (comm vt-idler) is in
# the saved command lines too. trace-cmd report shows no "<...>" for any thread that was in
# /proc before the collector started, the looper's events carry its name, and
# `trace-cmd dump --cmd-lines` lists both tasks. The idler runs under another name first,
# which the kernel's saved_cmdlines keeps: the name /proc gives at the end wins over it.
echo "collect: host.dat carries the names of the host tasks (saved command lines)"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch
tracefs=/sys/kernel/tracing

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
# The name a task shows is its executable's: links give the two tasks names of their own.
ln -s "$(command -v sh)" "$WORK/vt-looper"
ln -s "$(command -v sleep)" "$WORK/vt-idler"
# The idler first runs as vt-preexec while a private instance records sched
# events, so the kernel's saved_cmdlines keeps its pid under that name; it then
# execs vt-idler with the instance gone. The kernel's name is stale: /proc's wins.
ln -s "$(command -v sh)" "$WORK/vt-preexec"
mkfifo "$WORK/go"
inst=$tracefs/instances/vt-test-hostcomm-$$
mkdir "$inst" || fail "cannot create $inst"
T_INST=$inst
trap 'rmdir "$T_INST" 2>/dev/null; t_cleanup' EXIT
echo 1 >"$inst/events/sched/sched_switch/enable"
echo 1 >"$inst/events/sched/sched_wakeup/enable"
"$WORK/vt-preexec" -c 'read x <"$1"; exec "$2" 1000' vt-preexec "$WORK/go" "$WORK/vt-idler" &
idler=$!
track $idler
for _w in $(seq 100); do
	[ "$(cat /proc/$idler/comm 2>/dev/null)" = vt-preexec ] &&
		grep -q "^$idler vt-preexec\$" $tracefs/saved_cmdlines && break
	sleep 0.05
done
echo 0 >"$inst/events/sched/sched_wakeup/enable"
echo 0 >"$inst/events/sched/sched_switch/enable"
rmdir "$inst"
echo go >"$WORK/go"
if grep -q "^$idler vt-preexec\$" $tracefs/saved_cmdlines; then
	echo "the kernel names the idler $idler vt-preexec (stale once it execs)"
else
	echo "note: the kernel's saved_cmdlines has no stale name for the idler (another tracer?)"
fi
"$WORK/vt-looper" -c 'while :; do sleep 0.01; done' &
looper=$!
track $looper
# Both have exec'd before the collector looks: until then their comm is the shell's.
for _w in $(seq 100); do
	[ "$(cat /proc/$idler/comm 2>/dev/null)" = vt-idler ] &&
		[ "$(cat /proc/$looper/comm 2>/dev/null)" = vt-looper ] && break
	sleep 0.05
done
fake vmc --fifo "$p" --fixture "$DATA/cap-guest"
pid=$FAKE_PID
sleep 0.2
# Every thread that exists before the recording starts.
ls /proc/[0-9]*/task 2>/dev/null | grep -E '^[0-9]+$' | sort -u >"$WORK/before"
grep -qx "$looper" "$WORK/before" && grep -qx "$idler" "$WORK/before" ||
	fail "the looper $looper or the idler $idler is not in /proc"
collect rec --chardev-dir "$p" --name vmc -o "$out" --duration 2 \
	--host-events sched:sched_switch,sched:sched_process_fork --sync probe
kill $looper $idler
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/vmc.fake"; fail "collector exited $RC, want 0"; }
[ -f "$out/host.dat" ] || fail "no host.dat"

report "$WORK/host.txt" -i "$out/host.dat"
trace-cmd dump --cmd-lines -i "$out/host.dat" >"$WORK/cmdlines.txt" 2>"$WORK/cmdlines.err" ||
	fail "trace-cmd dump --cmd-lines exited $?"
# Event lines start with "COMM-PID [CPU] TS:"; COMM may hold spaces, PID is after the last '-'.
sed -nE 's/^ *(.*)-([0-9]+) +\[[0-9]{3}\] +[0-9]+\.[0-9]+: .*/\2 \1/p' "$WORK/host.txt" |
	sort -u >"$WORK/tasks"
events=$(all_events "$WORK/host.txt")
tasks=$(wc -l <"$WORK/tasks")
unnamed=$(awk '$2 == "<...>" { print $1 }' "$WORK/tasks" | sort -u)
old_unnamed=$(echo "$unnamed" | grep -xF -f "$WORK/before" | wc -l)
new_unnamed=$(echo "$unnamed" | grep -c .)
looper_events=$(grep -cE "^ *vt-looper-$looper +\[" "$WORK/host.txt")
looper_anon=$(grep -cE "^ *<\.\.\.>-$looper +\[" "$WORK/host.txt")
cmdlines=$(grep -cE '^[0-9]+ .' "$WORK/cmdlines.txt")
echo "host events: $events from $tasks tasks; unnamed: $new_unnamed tasks, $old_unnamed of them older than the recording"
echo "looper $looper: $looper_events named events, $looper_anon unnamed; saved command lines: $cmdlines"
[ "$events" -ge 20 ] || fail "only $events host events in 2 s"
[ "$cmdlines" -gt 0 ] || { show "$WORK/cmdlines.txt"; fail "host.dat has no saved command lines"; }
grep -qx "$looper vt-looper" "$WORK/cmdlines.txt" || fail "the looper is not in the saved command lines"
grep -qx "$idler vt-idler" "$WORK/cmdlines.txt" ||
	fail "the idler, which slept through the recording, is not in the saved command lines"
[ "$looper_events" -gt 0 ] && [ "$looper_anon" = 0 ] ||
	fail "the looper's events: $looper_events named, $looper_anon \"<...>\""
if [ "$old_unnamed" != 0 ]; then
	echo "$unnamed" | grep -xF -f "$WORK/before" | head -5 | while read -r t; do
		grep -m1 -E "^ *<\.\.\.>-$t +\[" "$WORK/host.txt"
	done
	fail "$old_unnamed tasks that existed before the recording show as \"<...>\""
fi
echo "PASS"
