#!/bin/sh
# Proves: --host-pid keeps host.dat to one process. Two shells loop on `sleep 0.01` while the
# collector records host sched_switch and sched_process_fork with --host-pid of the first one:
# every fork recorded is the shell's or a descendant's (options/event-fork follows them),
# every sched_switch has the shell or a descendant on one side, the second shell never
# appears without one, there are enough of them, and the control markers are still there. A --host-pid that is not a process, or one without --host-events,
# is refused.
echo "collect: --host-pid limits host events to one process and what it forks"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
need_host_tracefs sched:sched_switch

p=$WORK/ports out=$WORK/out
mkdir -p "$p"
fake vmp --fifo "$p" --fixture "$DATA/cap-guest"
pid=$FAKE_PID
(while :; do sleep 0.01; done) &
mine=$!
track $mine
(while :; do sleep 0.01; done) &
other=$!
track $other
collect rec --chardev-dir "$p" --name vmp -o "$out" --duration 2 \
	--host-events sched:sched_switch,sched:sched_process_fork \
	--host-pid $mine --sync probe
kill $mine $other
fake_end $pid
[ $RC = 0 ] || { show "$WORK/rec.log" "$WORK/vmp.fake"; fail "collector exited $RC, want 0"; }
check_exact "$out" vmp "$DATA/cap-guest" 1

report "$WORK/host.txt" -i "$out/host.dat"
# The shell's descendants from sched_process_fork ("pid=P child_comm=C child_pid=K"), in time
# order; every sched_switch ("PREV:PID [PRIO] S ==> NEXT:PID [PRIO]") must have the shell or a
# descendant on one side. A child forked just before tracing started is filtered in but its
# fork is not in the file: the first 50 ms are left out of the foreign check.
awk -v mine=$mine -v other=$other '
BEGIN { in_set[mine] = 1 }
{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { ts = $i + 0; break }; if (t0 == "") t0 = ts }
/ sched_process_fork: / {
	f++
	for (i = 1; i <= NF; i++) { if ($i ~ /^pid=/) p = substr($i, 5); if ($i ~ /^child_pid=/) k = substr($i, 11) }
	if (p in in_set) { in_set[k] = 1; kids++ } else { bad++; print "foreign fork: " $0 >"/dev/stderr" }
}
/ sched_switch: / {
	n++
	for (i = 1; i <= NF; i++) if ($i == "==>") break
	split($(i - 3), a, ":"); split($(i + 1), b, ":")
	pp = a[length(a)]; np = b[length(b)]
	if (pp == mine || np == mine) m++
	if (!((pp in in_set) || (np in in_set)) && ts > t0 + 0.05) { bad++; if (bad < 4) print "foreign: " $0 >"/dev/stderr" }
	if (((pp == other && !(np in in_set)) || (np == other && !(pp in in_set))) && ts > t0 + 0.05) o++
}
END { printf "%d %d %d %d %d %d\n", n, m, f, kids, o, bad }' "$WORK/host.txt" >"$WORK/sum"
read -r n m f kids o bad <"$WORK/sum"
echo "host sched_switch: $n, with the shell $m; forks $f, descendants $kids; the other shell alone $o, foreign $bad"
[ "$n" -ge 20 ] || fail "only $n host sched_switch events in 2 s"
[ "$m" -gt 0 ] && [ "$kids" -gt 0 ] || fail "the shell ($m) or its children ($kids) are missing"
[ "$o" = 0 ] && [ "$bad" = 0 ] || fail "$o events of the other shell alone, $bad foreign"
nm=$(grep -cE 'print: .*virtio-trace: (rx|tx) [A-Z_0-9-]+ [0-9]+$' "$WORK/host.txt")
[ "$nm" -gt 0 ] || fail "the control markers are missing from host.dat"

"$COLLECT" record --chardev-dir "$p" --host-events sched:sched_switch --host-pid 0 >"$WORK/bad.log" 2>&1
[ $? = 2 ] || fail "--host-pid 0 is not a usage error"
"$COLLECT" record --chardev-dir "$p" --host-pid $$ >"$WORK/bad.log" 2>&1
[ $? = 2 ] && grep -q 'needs --host-events' "$WORK/bad.log" || fail "--host-pid without --host-events accepted"
echo "PASS"
