#!/bin/sh
# peer-guest.sh: /etc/vt/agent-run of tests/bench/bench-peer.sh's guest (busybox sh).
# Brings up the virtio-net link that QEMU user networking serves (10.0.2.15, gateway 10.0.2.2),
# links every named virtio port under /dev/virtio-ports (trace-cmd's trace-pipe-cpuN come after
# init has made its links), keeps the benchmark's events enabled in an idle instance "hold"
# (under TCG, enabling and disabling events patches kernel text, and guests were seen to
# soft-lock in it: with the events already on, nothing is patched at session start and end),
# then starts both agents as daemons and serves the host on the vt-test port.
# With vt.peer_vsock=1 on the kernel command line (bench-peer.sh --kvm: an L2 guest under KVM
# with a vhost-vsock-pci device), no network: the virtio vsock transport is loaded and
# `trace-cmd agent` listens on vsock (its default, port 823), a second one with its --notimeout
# on port 824; there is no idle second trace-agent, and an instance "nullrec" (tracing on, no
# events) takes the load when no recorder runs (the bench's floor).
T=/sys/kernel/tracing
EVENTS="sched irq"
VSOCK=0
grep -q 'vt\.peer_vsock=1' /proc/cmdline && VSOCK=1
if [ $VSOCK = 1 ]; then
	modprobe vmw_vsock_virtio_transport || echo "PEER: error modprobe vmw_vsock_virtio_transport failed"
	i=0
	while [ ! -e /dev/vsock ] && [ $i -lt 100 ]; do usleep 20000; i=$((i + 1)); done
	echo "PEER: vsock $(ls -l /dev/vsock 2>&1)"
	want=/dev/virtio-ports/vt-test
else
	modprobe virtio_net 2>/dev/null
	ip link set lo up
	i=0
	while ! ip link set eth0 up 2>/dev/null && [ $i -lt 100 ]; do usleep 20000; i=$((i + 1)); done
	ip addr add 10.0.2.15/24 dev eth0
	ip route add default via 10.0.2.2
	want=/dev/virtio-ports/trace-pipe-cpu0
fi
i=0
while [ $i -lt 500 ]; do
	n=0
	for d in /sys/class/virtio-ports/vport*; do
		name=
		read -r name <"$d/name" 2>/dev/null
		[ -n "$name" ] && ln -sf "../${d##*/}" "/dev/virtio-ports/$name" && n=$((n + 1))
	done
	[ -e "$want" ] && [ -e /dev/virtio-ports/vt-test ] && break
	usleep 20000
	i=$((i + 1))
done
echo "PEER: ports $(ls /dev/virtio-ports | tr '\n' ' ')"
mkdir -p $T/instances/hold /var/lib/trace-cmd /tmp
echo 4 >$T/instances/hold/buffer_size_kb
echo 0 >$T/instances/hold/tracing_on
for e in $EVENTS; do echo 1 >$T/instances/hold/events/$e/enable; done
# trace-cmd's agent records the top-level buffer: off until a session turns it on.
echo 0 >$T/tracing_on
cd /tmp
# bench-peer's VT_PEER_AGENT_ARGS, as vt.peer_agent=ARG,ARG on the kernel command line.
args=$(sed -n 's/.*vt\.peer_agent=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')
trace-agent --quiet $args &
ours=$!
idle=
if [ $VSOCK = 1 ]; then
	trace-cmd agent >/tmp/tc-agent.log 2>&1 &
	theirs=$!
	trace-cmd agent -p 824 --notimeout >/tmp/tc-agent-nt.log 2>&1 &
	idle=$!
	mkdir -p $T/instances/nullrec
	echo 4096 >$T/instances/nullrec/buffer_size_kb
else
	trace-cmd agent -N 10.0.2.2 >/tmp/tc-agent.log 2>&1 &
	theirs=$!
	# The same agent on ports no host has connected (named idle-agent, to be told apart).
	cp /sbin/trace-agent /sbin/idle-agent
	idle-agent --quiet -c idle-ctl -p idle-cpu -i idle-vt &
	idle=$!
fi
echo "PEER: trace-agent $ours, trace-cmd agent $theirs"
vt-e2e-guest --agent-pid "$ours"
rc=$?
kill -TERM "$ours" "$theirs" $idle
wait "$ours"
echo "PEER: trace-agent exit $?; trace-cmd agent log:"
cat /tmp/tc-agent.log
[ $VSOCK = 0 ] || { echo "PEER: trace-cmd agent --notimeout log:"; cat /tmp/tc-agent-nt.log; }
exit $rc
