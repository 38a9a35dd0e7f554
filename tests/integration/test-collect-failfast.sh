#!/bin/sh
# Proves (issue 29): a name that does not exist stops `record` before anything
# is recorded, with exit status 2, the closest names, and nothing left behind
# (no output directory, no host tracefs instance, no agent instance):
#  - a host event (--host-events sched:sched_swich): "did you mean
#    sched:sched_switch?", said before a guest is even greeted (a fake agent
#    that never gets HELLO), with a --host-pid that is no process beside it;
#  - a guest event, tracer, clock and filter, refused by the real trace-agent
#    on this host's tracefs (stand-in FIFO ports), with the agent's closest
#    names; the host events recorded meanwhile are dropped too;
#  - but a guest that refuses what another guest takes is dropped alone
#    (exit 3), so that one guest cannot end the others' recording;
# and `report --guest NAME` with a name the run does not have exits 2 and
# lists the guests it has.
echo "collect: unknown host/guest events, tracers and clocks stop record before it records (exit 2, closest names); report --guest of an unknown guest exits 2"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
AGENT=$VT_BUILDDIR/guest-agent/trace-agent
need_host_tracefs sched:sched_switch
T=/sys/kernel/tracing
[ -x "$AGENT" ] || fail "$AGENT is not built"

# nothing_left OUT: no output directory, no tracefs instance of the collector
nothing_left() {
	[ ! -e "$1" ] || { ls -la "$1"; fail "$1 was made"; }
	[ ! -e $T/instances/virtio-trace-collect-$COLLECT_PID ] ||
		fail "the host instance virtio-trace-collect-$COLLECT_PID is left behind"
}

# 1. The host's events are checked before anything starts.
p=$WORK/fports
mkdir -p "$p"
fake fk --fifo "$p" --fixture "$DATA/cap-guest" --repeat 1
fpid=$FAKE_PID
collect host --chardev-dir "$p" --name fk -o "$WORK/out-host" -d 1 \
	--host-events sched:sched_swich,sched:sched_wakeup,irq:irq_handler_entry --host-pid 2147483646
[ $RC = 2 ] || { show "$WORK/host.log"; fail "a misspelt host event: exit $RC, want 2"; }
grep -q "error: --host-events: the host has no event sched:sched_swich; did you mean sched:sched_switch?" \
	"$WORK/host.log" || { show "$WORK/host.log"; fail "no 'did you mean sched:sched_switch?' for the host event"; }
grep -q "error: --host-pid 2147483646: no such process" "$WORK/host.log" ||
	{ show "$WORK/host.log"; fail "the --host-pid that is no process is not named"; }
grep -q "instances/" "$WORK/host.log" && { show "$WORK/host.log"; fail "the message points to an instance path"; }
nothing_left "$WORK/out-host"
grep -q "HELLO" "$WORK/fk.fake" && { show "$WORK/fk.fake"; fail "the guest was greeted before the host events were checked"; }
kill $fpid 2>/dev/null
echo "host: exit 2, '$(grep 'sched_swich' "$WORK/host.log")'"

# 2. The guest's names, refused by the real agent: each stops the run.
p=$WORK/ports
mkdir -p "$p"
ncpu=$(ls -d $T/per_cpu/cpu* | wc -l)
i=0
for n in agent-ctl-path $(while [ $i -lt "$ncpu" ]; do echo trace-path-cpu$i; i=$((i + 1)); done); do
	mkfifo "$p/$n.in" "$p/$n.out" || fail "mkfifo $p/$n"
done
k=0
while IFS="|" read -r what want args; do
	k=$((k + 1))
	inst=vt-failfast-$$-$k
	"$AGENT" --port-dir "$p" --instance $inst --keep-instance 0 --once --wait 20 --no-kallsyms \
		2>"$WORK/agent$k.log" &
	apid=$!
	track $apid
	# shellcheck disable=SC2086
	collect g$k --chardev-dir "$p" --name hostvm -o "$WORK/out$k" -d 5 \
		--host-events sched:sched_process_exec $args
	_w=0
	while kill -0 $apid 2>/dev/null && [ $_w -lt 100 ]; do sleep 0.1; _w=$((_w + 1)); done
	kill -0 $apid 2>/dev/null && { kill $apid; fail "$what: the agent did not end its session"; }
	[ $RC = 2 ] || { show "$WORK/g$k.log" "$WORK/agent$k.log"; fail "$what: exit $RC, want 2"; }
	grep -qF -- "$want" "$WORK/g$k.log" ||
		{ show "$WORK/g$k.log"; fail "$what: the collector does not say '$want'"; }
	grep -q "error: no guest takes the events, tracer or clock asked for: nothing is recorded" "$WORK/g$k.log" ||
		{ show "$WORK/g$k.log"; fail "$what: the collector does not say that nothing is kept"; }
	grep -q "recording" "$WORK/agent$k.log" && grep -q "START" "$WORK/agent$k.log" &&
		{ show "$WORK/agent$k.log"; fail "$what: the agent was started"; }
	nothing_left "$WORK/out$k"
	[ ! -e $T/instances/$inst ] || fail "$what: the agent's instance $inst is left behind"
	echo "$what: exit 2, '$(grep -F -- "$want" "$WORK/g$k.log" | head -1 | sed 's/^virtio-trace-collect [a-z]*: //')'"
done <<EOF
event|--event: no event matches sched:sched_swich; did you mean sched:sched_switch?|-e sched:sched_swich
system|--event: no event matches schde:*; did you mean sched?|-e schde
tracer|--tracer: tracer nopp is not available; did you mean nop?|--tracer nopp
clock|--clock: trace clock x86-tcs is not offered by this kernel; did you mean x86-tsc?|--clock x86-tcs
filter|--event: the kernel refused filter|-e sched:sched_switch -f no_such_field==1
EOF

# 3. A guest that refuses what another takes is dropped alone: one guest cannot end the
# others' recording (the fake guest's kernel has no timer events, this host's has).
mkdir -p "$WORK/fk2"
fake fk2 --fifo "$WORK/fk2" --fixture "$DATA/cap-guest" --repeat 1 --retime
fpid=$FAKE_PID
"$AGENT" --port-dir "$p" --instance vt-failfast-$$-mix --keep-instance 0 --once --wait 20 --no-kallsyms \
	2>"$WORK/agentmix.log" &
apid=$!
track $apid
collect mix --chardev-dir "$p" --name hostvm --chardev-dir "$WORK/fk2" --name fk2 -o "$WORK/outmix" -d 2 \
	-e timer:hrtimer_start
wait $apid
fake_end $fpid
[ $RC = 3 ] || { show "$WORK/mix.log"; fail "one guest refusing, one taking: exit $RC, want 3"; }
grep -q "error: guest fk2: --event: no event matches timer:hrtimer_start; dropping this guest$" \
	"$WORK/mix.log" || { show "$WORK/mix.log"; fail "the refusing guest is not named and dropped"; }
[ -f "$WORK/outmix/guest-hostvm.dat" ] || { show "$WORK/mix.log"; fail "the guest that took the events has no file"; }
echo "mixed: exit 3, fk2 dropped ('no event matches timer:hrtimer_start'), hostvm recorded"

# 4. report --guest with a guest the run does not have.
d=$WORK/rep
mkdir -p "$d"
printf '{"tool":"fixture","version":"0","host":null,"guests":[{"name":"alpha","file":null},{"name":"beta","file":null}]}\n' \
	>"$d/manifest.json"
"$COLLECT" report --guest nosuch "$d" >"$WORK/rep.out" 2>"$WORK/rep.err"
rc=$?
[ $rc = 2 ] || { cat "$WORK/rep.out" "$WORK/rep.err"; fail "report --guest nosuch: exit $rc, want 2"; }
grep -q "no such guest; its guests: alpha, beta" "$WORK/rep.err" ||
	{ cat "$WORK/rep.err"; fail "report --guest nosuch does not list alpha and beta"; }
[ ! -s "$WORK/rep.out" ] || { cat "$WORK/rep.out"; fail "report --guest nosuch printed a report"; }
echo "report: exit 2, '$(cat "$WORK/rep.err")'"
echo "PASS"
