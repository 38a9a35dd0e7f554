#!/bin/sh
# Proves: vt-capture records into a private tracefs instance and removes it
# (also when stopped by SIGTERM); the events trace-cmd reads from the file
# built from the capture equal the kernel's own per-CPU "read events" count.
echo "vt-capture: private instance removed; trace-cmd sees exactly the events the kernel handed out"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd

tracefs=/sys/kernel/tracing
if [ ! -d $tracefs/instances ] || [ ! -w $tracefs/instances ]; then
	echo "SKIP: no writable $tracefs/instances (not root, or tracefs not mounted)"
	exit 77
fi

"$TOOLS/vt-capture" -t $tracefs -o "$WORK/cap" -e sched -e irq -e timer -d 0.5 >"$WORK/out"
rc=$?
[ $rc = 77 ] && { echo "SKIP: vt-capture cannot create an instance"; exit 77; }
[ $rc = 0 ] || fail "vt-capture exited $rc"
inst=$(awk '$1 == "instance" { print $2 }' "$WORK/out")
case $inst in vt-capture-[0-9]*) ;; *) fail "vt-capture named no private instance" ;; esac
[ -e "$tracefs/instances/$inst" ] && fail "instance $inst left behind"

mkdat "$WORK/cap.dat" -i "$WORK/cap"
report "$WORK/cap.txt" "$WORK/cap.dat"
got=$(count_events "$WORK/cap.txt")
want=$(stat_of "$WORK/cap.dat" events)
[ "$got" = "$want" ] || fail "report shows $got events, the writer wrote $want"
kernel=$(cat "$WORK"/cap/cpu*.stats | awk '$1 == "read" && $2 == "events:" { n += $3 } END { print n + 0 }')
overrun=$(cat "$WORK"/cap/cpu*.stats | awk '$1 == "overrun:" { n += $2 } END { print n + 0 }')
[ "$overrun" = 0 ] || { echo "SKIP: the ring buffer overran ($overrun)"; exit 77; }
[ "$got" = "$kernel" ] || fail "report shows $got events, the kernel handed out $kernel"
grep -q 'print: .*vt-capture tick 0' "$WORK/cap.txt" || fail "no trace_marker event"
grep -q 'sched_switch:' "$WORK/cap.txt" || fail "no sched_switch event"

"$TOOLS/vt-capture" -t $tracefs -o "$WORK/cap2" -d 30 >"$WORK/out2" &
pid=$!
i=0
while [ $i -lt 50 ] && ! grep -q instance "$WORK/out2"; do sleep 0.1; i=$((i + 1)); done
sleep 0.3
kill -TERM $pid
wait $pid
rc=$?
inst=$(awk '$1 == "instance" { print $2 }' "$WORK/out2")
[ -n "$inst" ] || fail "second vt-capture named no instance"
[ -e "$tracefs/instances/$inst" ] && fail "instance $inst left behind after SIGTERM"
[ $rc = 1 ] || fail "vt-capture stopped by SIGTERM exited $rc"
echo "PASS"
