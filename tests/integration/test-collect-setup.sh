#!/bin/sh
# Proves: `virtio-trace-collect setup` prints the port wiring trace-agent needs
# and nothing rots: qemu-config/example-2vcpu.{args,xml} are exactly what setup
# prints today; ports are trace-path-cpu0..N-1 then agent-ctl-path, 30 per
# virtio-serial controller (31 vCPUs -> 2 controllers, the control port on
# the second); QEMU 7.2 accepts the arguments (-S, no guest run) for both
# backends; the libvirt XML validates against libvirt's domain schema;
# --create makes DIR and the FIFOs with mode 0600 and is idempotent; bad
# input exits 2. The QEMU arguments name the guest with debug-threads=on (QEMU
# then calls its vCPU threads "CPU n/TCG") and give it a QMP socket in DIR;
# the libvirt XML numbers its controllers from 1 (index 0 is the one libvirt
# gives qemu-guest-agent's channel) or from --controller-index; setup has no
# -d/-f (they are record's --duration/--filter).
echo "collect setup: QEMU arguments and libvirt XML for the ports, checked examples, --create idempotent"
: "${VT_SRCDIR:?run through make check}" "${VT_BUILDDIR:?run through make check}"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
CONF=$VT_SRCDIR/qemu-config
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-setup.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# The examples: regenerated with the commands the README gives.
"$COLLECT" setup --vcpus 2 --backend pipe --dir /run/virtio-trace/demo --format qemu --accel kvm >"$WORK/ex.args" ||
	fail "setup --format qemu exited $?"
"$COLLECT" setup --vcpus 2 --backend pipe --dir /run/virtio-trace/demo --name demo --format libvirt \
	--accel kvm >"$WORK/ex.xml" || fail "setup --format libvirt exited $?"
diff -u "$CONF/example-2vcpu.args" "$WORK/ex.args" ||
	fail "qemu-config/example-2vcpu.args is stale (regenerate it as qemu-config/README.md says)"
diff -u "$CONF/example-2vcpu.xml" "$WORK/ex.xml" ||
	fail "qemu-config/example-2vcpu.xml is stale (regenerate it as qemu-config/README.md says)"

# Guest name with debug-threads, QMP socket in DIR.
grep -qx -- "-name guest,debug-threads=on" "$WORK/ex.args" || fail "no -name guest,debug-threads=on"
grep -qx -- "-qmp unix:/run/virtio-trace/demo/qmp.sock,server=on,wait=off" "$WORK/ex.args" ||
	fail "no -qmp unix:DIR/qmp.sock,server=on,wait=off"
"$COLLECT" setup --vcpus 1 --dir "$WORK/n" --name vm-1 | grep -qx -- "-name vm-1,debug-threads=on" ||
	fail "--name vm-1 does not name QEMU's guest"

# libvirt controller indexes: 1 by default (0 is qemu-guest-agent's), else --controller-index.
[ "$(grep -c "<controller type='virtio-serial' index='1' ports='31'/>" "$WORK/ex.xml")" = 1 ] &&
	[ "$(grep -c "controller='1' bus='0'" "$WORK/ex.xml")" = 3 ] &&
	! grep -q "index='0'\|controller='0'" "$WORK/ex.xml" || fail "the default libvirt XML does not use controller 1 only"
"$COLLECT" setup --vcpus 31 --format libvirt --controller-index 5 >"$WORK/ci.xml" ||
	fail "--controller-index 5 exited $?"
[ "$(grep -c "<controller type='virtio-serial' index='[56]' ports='31'/>" "$WORK/ci.xml")" = 2 ] &&
	[ "$(grep -c "controller='5' bus='0'" "$WORK/ci.xml")" = 30 ] &&
	[ "$(grep -c "controller='6' bus='0'" "$WORK/ci.xml")" = 2 ] || fail "--controller-index 5: wrong indexes"

# Port names and controllers for 31 vCPUs: 32 ports, 30 on vtser0, 2 on vtser1.
"$COLLECT" setup --vcpus 31 --dir "$WORK/p31" >"$WORK/31.args" || fail "setup --vcpus 31 exited $?"
n=$(grep -c '^-device virtio-serial-pci,id=vtser[01],max_ports=31$' "$WORK/31.args")
[ "$n" = 2 ] || fail "31 vCPUs: $n controllers, want 2"
names=$(sed -n 's/^-device virtserialport,.*name=//p' "$WORK/31.args" | tr '\n' ' ')
want=$(i=0; while [ $i -lt 31 ]; do printf 'trace-path-cpu%d ' $i; i=$((i + 1)); done; echo 'agent-ctl-path ')
[ "$names" = "$want" ] || fail "31 vCPUs: ports '$names'"
grep -q "^-device virtserialport,bus=vtser1.0,nr=2,chardev=vt-ctl,name=agent-ctl-path$" "$WORK/31.args" ||
	fail "31 vCPUs: the control port is not vtser1 nr 2"
grep -q "^-chardev pipe,id=vt-cpu30,path=$WORK/p31/trace-path-cpu30$" "$WORK/31.args" ||
	fail "31 vCPUs: no pipe chardev for cpu30"

# QEMU accepts them (paused, never runs a guest); FIFOs must exist for pipe chardevs.
if command -v qemu-system-x86_64 >/dev/null; then
	for b in pipe unix unix-connect; do
		"$COLLECT" setup --vcpus 31 --backend $b --dir "$WORK/q-$b" --create >"$WORK/q-$b.args" ||
			fail "setup --create --backend $b exited $?"
		echo '{"execute":"qmp_capabilities"}{"execute":"quit"}' |
			timeout 20 qemu-system-x86_64 -machine pc -accel tcg -display none -nodefaults -S \
			-qmp stdio $(cat "$WORK/q-$b.args") >"$WORK/q-$b.out" 2>&1 ||
			{ cat "$WORK/q-$b.out"; fail "QEMU refused the $b arguments"; }
	done
	# debug-threads=on: QEMU names its vCPU threads; the QMP socket appears in DIR.
	"$COLLECT" setup --vcpus 2 --dir "$WORK/dt" --name dt --create >"$WORK/dt.args" || fail "setup for dt exited $?"
	# shellcheck disable=SC2046
	timeout 20 qemu-system-x86_64 -machine pc -accel tcg -smp 2 -display none -nodefaults -S \
		$(cat "$WORK/dt.args") >"$WORK/dt.out" 2>&1 &
	qpid=$!
	i=0
	while [ ! -S "$WORK/dt/qmp.sock" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	pid=$(pgrep -P $qpid -x qemu-system-x86 || echo $qpid)
	names=$(cat /proc/"$pid"/task/*/comm 2>/dev/null | grep -c '^CPU [01]/TCG$')
	sock=no; [ -S "$WORK/dt/qmp.sock" ] && sock=yes
	kill $qpid 2>/dev/null; wait $qpid 2>/dev/null
	[ "$names" = 2 ] || { cat "$WORK/dt.out"; fail "QEMU named $names vCPU threads 'CPU n/TCG', want 2"; }
	[ $sock = yes ] || fail "no QMP socket $WORK/dt/qmp.sock"
else
	echo "note: no qemu-system-x86_64, arguments not tried"
fi

# The libvirt XML in a minimal domain validates (unix backend, 2 controllers).
"$COLLECT" setup --vcpus 31 --backend unix --dir "$WORK/lv" --format libvirt >"$WORK/lv.xml" ||
	fail "setup --format libvirt exited $?"
grep -q "<controller type='virtio-serial' index='2' ports='31'/>" "$WORK/lv.xml" || fail "no second controller"
grep -q "<source mode='bind' path='$WORK/lv/agent-ctl-path'/>" "$WORK/lv.xml" || fail "no unix source"
grep -q "<address type='virtio-serial' controller='2' bus='0' port='2'/>" "$WORK/lv.xml" ||
	fail "the control channel is not on controller 2 port 2"
# unix-connect: QEMU is the client and tries again every second.
"$COLLECT" setup --vcpus 1 --backend unix-connect --dir "$WORK/lvc" --name c --format libvirt \
	--controller-index 3 >"$WORK/lvc.xml"
[ "$(grep -c "<source mode='connect' path='$WORK/lvc/[a-z0-9-]*'>" "$WORK/lvc.xml")" = 2 ] &&
	[ "$(grep -c "<reconnect enabled='yes' timeout='1'/>" "$WORK/lvc.xml")" = 2 ] ||
	fail "unix-connect: no connecting sources with reconnect"
"$COLLECT" setup --vcpus 1 --backend unix-connect --dir "$WORK/qc" | grep -q "^-chardev socket,id=vt-ctl,path=$WORK/qc/agent-ctl-path,server=off,reconnect=1$" ||
	fail "unix-connect: no client chardev for the control port"
if command -v virt-xml-validate >/dev/null; then
	{ echo "<domain type='qemu'><name>vt</name><memory>65536</memory>"
	  echo "<os><type arch='x86_64'>hvm</type></os><devices>"
	  cat "$WORK/lv.xml" "$WORK/ex.xml" "$WORK/lvc.xml"
	  echo "</devices></domain>"; } >"$WORK/domain.xml"
	virt-xml-validate "$WORK/domain.xml" domain >"$WORK/validate.out" 2>&1 ||
		{ cat "$WORK/validate.out"; fail "libvirt's schema rejects the XML"; }
else
	echo "note: no virt-xml-validate, XML schema not checked"
fi

# --create: directory, 2 FIFOs per port, mode 0600; twice is fine; a non-FIFO is refused.
d=$WORK/c/sub
for i in 1 2; do
	"$COLLECT" setup -n 2 --dir "$d" --create >/dev/null || fail "--create run $i exited $?"
done
n=$(find "$d" -type p -perm 0600 | wc -l)
[ "$n" = 6 ] || fail "--create made $n FIFOs with mode 0600, want 6"
rm "$d/agent-ctl-path.in" && : >"$d/agent-ctl-path.in"
"$COLLECT" setup -n 2 --dir "$d" --create >/dev/null 2>"$WORK/err"
rc=$?
[ $rc = 1 ] || fail "--create over a regular file exited $rc, want 1"

# Usage errors: exit 2, nothing on stdout.
for args in "" "--vcpus 0" "--vcpus 1025" "--vcpus 2x" "--vcpus -1" "-n 2 --backend tcp" \
	"-n 2 --format json" "-n 2 --name ../x" "-n 2 --name .hidden" "-n 2 extra" \
	"-n 2 -d $WORK/x" "-n 2 -f qemu" "-n 2 --controller-index 2" \
	"-n 2 --format libvirt --controller-index x" "-n 2 --format libvirt --controller-index 1001"; do
	# shellcheck disable=SC2086
	"$COLLECT" setup $args >"$WORK/out" 2>/dev/null
	rc=$?
	[ $rc = 2 ] || fail "setup $args exited $rc, want 2"
	[ ! -s "$WORK/out" ] || fail "setup $args printed to stdout"
done
"$COLLECT" setup --help | grep -q 'agent-ctl-path' || fail "--help does not name the ports"
"$COLLECT" setup -n 1024 >/dev/null 2>&1 || fail "--vcpus 1024 refused"
echo "PASS"
