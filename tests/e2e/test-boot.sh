#!/bin/bash
# test-boot.sh: smoke test of the e2e guest: build/reuse the image (mkguest.sh), boot it with 2 vCPUs
# under TCG with the virtio-serial ports (run-guest.sh), check the port names and trace_clock
# inside the guest, pass a line host->guest and guest->host over agent-ctl-path, power off.
# Exit: 0 pass, 1 fail, 77 skip (no QEMU/busybox/cpio/kmod, or no kernel obtainable).
echo "test-boot: build/reuse the guest image, boot 2 vCPUs under TCG, check virtio-serial port names, trace_clock=x86-tsc and an agent-ctl-path round trip"
# vt-suite: e2e
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
VT_LOG_PREFIX=test-boot

for t in qemu-system-x86_64 busybox cpio depmod timeout mkfifo; do
    command -v "$t" >/dev/null || { echo "test-boot: SKIP: $t not found"; exit 77; }
done

T0=$(vt_now)
CACHE=${VT_CACHE:-$VT_REPO/.cache/guest}
WORK=$(mktemp -d /tmp/vt-test-boot.XXXXXX)
KEEP=${VT_KEEP:-0}
cleanup() {
    vt_guest_stop 2>/dev/null
    exec 3>&- 4>&- 2>/dev/null
    if [ "$KEEP" = 1 ]; then echo "test-boot: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# The guest half, put into the image by an overlay (cached by content like the rest).
mkdir -p "$WORK/overlay/etc/vt"
cat >"$WORK/overlay/etc/vt/test-boot" <<'EOF'
#!/bin/sh
fail=0
names=
for d in /sys/class/virtio-ports/vport*; do
    read -r n <"$d/name"
    names="$names $n"
    [ "$n" = agent-ctl-path ] && ctl=/dev/${d##*/}
done
names=$(echo $names | tr ' ' '\n' | sort | tr '\n' ' ')
if [ "$names" = "agent-ctl-path trace-path-cpu0 trace-path-cpu1 " ]; then
    echo "TEST: ok port names: $names"
else
    echo "TEST: FAIL port names: '$names'"; fail=1
fi
ncpu=$(grep -c ^processor /proc/cpuinfo)
[ "$ncpu" = 2 ] && echo "TEST: ok $ncpu cpus" || { echo "TEST: FAIL $ncpu cpus"; fail=1; }
read -r clk </sys/kernel/tracing/trace_clock
case "$clk" in
*"[x86-tsc]"*) echo "TEST: ok trace_clock: $clk" ;;
*) echo "TEST: FAIL trace_clock: $clk"; fail=1 ;;
esac
if [ -n "${ctl:-}" ]; then
    # host -> guest: the host queued a line in agent-ctl-path.in before the boot
    if read -t 10 -r line <"$ctl" && [ "$line" = "vt-host-hello" ]; then
        echo "TEST: ok host->guest: $line"
    else
        echo "TEST: FAIL host->guest: '${line:-}'"; fail=1
    fi
    read -r boot_id </proc/sys/kernel/random/boot_id
    echo "vt-guest-hello $boot_id" >"$ctl"
    echo "TEST: sent vt-guest-hello $boot_id"
else
    echo "TEST: FAIL no agent-ctl-path port"; fail=1
fi
exit $fail
EOF
chmod 755 "$WORK/overlay/etc/vt/test-boot"

# 1. The image.
vt_kernel_select >"$WORK/kernel.msg"; rc=$?
if [ $rc != 0 ]; then echo "test-boot: $(cat "$WORK/kernel.msg")"; exit $rc; fi
IMG=$CACHE/image-test-boot$VT_KERNEL_TAG
t=$(vt_now)
"$HERE/mkguest.sh" --cache "$CACHE" --overlay "$WORK/overlay" --out "$IMG" 2>"$WORK/mkguest.log" >/dev/null
rc=$?
sed 's/^/  /' "$WORK/mkguest.log"
if [ $rc = 2 ]; then echo "test-boot: SKIP: no guest kernel available"; exit 77; fi
[ $rc = 0 ] || { echo "test-boot: FAIL: mkguest.sh exited $rc"; exit 1; }
T_MKGUEST=$(vt_secs "$t" "$(vt_now)")
K_TIMES=$(sed -n 's/.*kernel ready in .*(\(.*\))$/\1/p' "$WORK/mkguest.log")
I_TIME=$(sed -n 's/.*initramfs: .* bytes in \([0-9.]*\) s$/\1/p' "$WORK/mkguest.log")

# 2. Host ends of the ports, held open O_RDWR so that nothing blocks and no data is lost at exit.
VT_RUNDIR=$WORK/run VT_SMP=2 vt_make_ports || { echo "test-boot: FAIL: cannot create the FIFOs"; exit 1; }
exec 3<>"$WORK/run/ports/agent-ctl-path.out" 4<>"$WORK/run/ports/agent-ctl-path.in"
echo "vt-host-hello" >&4

# 3. Boot.
t=$(vt_now)
"$HERE/run-guest.sh" --image "$IMG" --dir "$WORK/run" --smp 2 --timeout "${VT_TIMEOUT:-90}" \
    --run /etc/vt/test-boot 2>"$WORK/run-guest.log"
rc=$?
T_RUN=$(vt_secs "$t" "$(vt_now)")
grep -v '^run-guest: qemu:' "$WORK/run-guest.log" | sed 's/^/  /'
echo "  guest console:"
tr -d '\r' <"$WORK/run/console.log" | grep -a -E '^(VT-INIT|TEST):' | sed 's/^/    /'
fail=0
if [ $rc != 0 ]; then
    echo "test-boot: FAIL: run-guest.sh exited $rc"
    grep -a '^run-guest: qemu:' "$WORK/run-guest.log"
    KEEP=1
    exit 1
fi
sent=$(tr -d '\r' <"$WORK/run/console.log" | sed -n 's/^TEST: sent //p')
got=
read -t 5 -r got <&3 || true
if [ -n "$sent" ] && [ "$got" = "$sent" ]; then
    echo "test-boot: ok guest->host on agent-ctl-path.out: '$got'"
else
    echo "test-boot: FAIL guest->host: host read '$got', guest sent '$sent'"
    fail=1
fi
for w in "ok port names" "ok 2 cpus" "ok trace_clock" "ok host->guest"; do
    grep -aq "TEST: $w" "$WORK/run/console.log" || { echo "test-boot: FAIL: missing 'TEST: $w'"; fail=1; }
done

read -r g_start < <(tr -d '\r' <"$WORK/run/console.log" | sed -n 's/^VT-INIT: start uptime=//p')
read -r g_ready g_done < <(VT_RUNDIR=$WORK/run vt_boot_times)
h_ready=$(sed -n 's/.*init ready after \([0-9.]*\) s.*/\1/p' "$WORK/run-guest.log")
echo "test-boot: kernel $(. "$IMG/guest.env"; echo "$KERNEL_PACKAGE $KERNEL_VERSION")"
echo "test-boot: timings: mkguest ${T_MKGUEST} s${K_TIMES:+ (kernel: $K_TIMES)}${I_TIME:+ (initramfs build $I_TIME s)};" \
     "boot: /init started at guest uptime ${g_start:-?} s, ready at ${g_ready} s (host ${h_ready:-?} s after QEMU start);" \
     "QEMU run ${T_RUN} s; whole test $(vt_secs "$T0" "$(vt_now)") s"
if [ $fail = 0 ]; then echo "test-boot: PASS"; exit 0; fi
KEEP=1
echo "test-boot: FAIL"
exit 1
