# Shared by the e2e tests that drive a real libvirt (sourced after lib.sh; the caller sets ME
# and WORK, mode 0755). libvirt_up: the running libvirtd (qemu:///system), else our own
# virtlogd and libvirtd (no systemd; sockets and logs in WORK/lv), started so that its qemu user
# and TCG agree about /dev/kvm (below). Sets URI, LIBVIRTD_PID and VIRTLOGD_PID (empty when
# running already). Exits 77 (skip) when libvirt cannot be had. libvirt_down stops what
# libvirt_up started (by pid) and removes what it made. V runs virsh on URI. libvirt_stale DOM
# DESC: a leftover domain DOM of a killed run (its description DESC) is destroyed and undefined;
# any other domain of that name is a skip. libvirt_forget DOM: the test's domain destroyed and
# undefined at its end.
LIBVIRTD_PID= VIRTLOGD_PID= URI= MADE_LOGDIR=0 MADE_USER=0 MADE_GROUP=0
# What our own libvirtd creates where none was: removed again at the end.
STATE_DIRS=(/run/libvirt /var/lib/libvirt /var/cache/libvirt /etc/libvirt/qemu /etc/libvirt/secrets
            /etc/libvirt/storage /etc/libvirt/nwfilter /etc/libvirt/qemu.conf /run/libvirtd.pid)
MADE_DIRS=()
V() { virsh -q -c "$URI" "$@"; }
alive() {	# NAME: a live (not zombie) process of that name exists
    local p
    for p in $(pgrep -x "$1"); do
        [ "$(awk '/^State:/ { print $2 }' "/proc/$p/status" 2>/dev/null)" = Z ] || return 0
    done
    return 1
}
stop_pid() {	# PID: TERM, then KILL after 5 s; only the daemons this test started
    local i
    kill -TERM "$1" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null
}
libvirt_up() {
    local i d LVD
    if alive libvirtd || alive virtqemud; then
        URI=qemu:///system
        virsh -q -c "$URI" uri >/dev/null 2>&1 ||
            { echo "$ME: SKIP: a libvirtd runs but $URI does not answer"; exit 77; }
        echo "$ME: using the running libvirt ($URI)"
    else
        # libvirtd's qemu driver refuses to start without its user.
        if ! getent group libvirt-qemu >/dev/null; then
            groupadd --system libvirt-qemu || { echo "$ME: SKIP: cannot create the libvirt-qemu group"; exit 77; }
            MADE_GROUP=1
        fi
        if ! getent passwd libvirt-qemu >/dev/null; then
            useradd --system -g libvirt-qemu -d /var/lib/libvirt -s /usr/sbin/nologin -M libvirt-qemu ||
                { echo "$ME: SKIP: cannot create the libvirt-qemu user"; exit 77; }
            MADE_USER=1
        fi
        [ -d /var/log/libvirt ] || { mkdir -p /var/log/libvirt && MADE_LOGDIR=1; }
        for d in "${STATE_DIRS[@]}"; do [ -e "$d" ] || MADE_DIRS+=("$d"); done
        mkdir -p "$WORK/lv"
        printf 'log_outputs = "3:file:%s/lv/virtlogd.log"\n' "$WORK" >"$WORK/lv/virtlogd.conf"
        printf 'unix_sock_dir = "%s/lv"\nlog_outputs = "3:file:%s/lv/libvirtd.log"\n' "$WORK" "$WORK" \
            >"$WORK/lv/libvirtd.conf"
        # QEMU's console and stdio go through virtlogd's fixed socket: start one unless it runs.
        if ! alive virtlogd; then
            virtlogd -d -f "$WORK/lv/virtlogd.conf" -p "$WORK/lv/virtlogd.pid" ||
                { echo "$ME: SKIP: virtlogd does not start"; exit 77; }
            for ((i = 0; i < 100; i++)); do [ -s "$WORK/lv/virtlogd.pid" ] && break; sleep 0.05; done
            read -r VIRTLOGD_PID <"$WORK/lv/virtlogd.pid"
        fi
        # Here /dev/kvm is kvm_pvm's (FACTS.md §5), mode 0600 root. libvirt's probe of QEMU found
        # KVM, and its check of the cache, made for its qemu user, did not: "KVM was enabled when
        # probing ..., but it is not available now". It threw the cache away and probed again (4 s)
        # several times per call, so each virsh or collector call waited 20-60 s. Our libvirtd runs
        # in a private mount namespace where /dev/kvm is a file nobody may open (mode 000), so the
        # probe and the check agree, and where /etc/libvirt is a copy whose qemu.conf has
        # namespaces = [] (libvirt cannot carry that bind mount into a QEMU namespace of its own).
        # Nothing outside the namespace changes; the domain's definition stays in the work dir.
        LVD=(libvirtd -d -f "$WORK/lv/libvirtd.conf" -p "$WORK/lv/libvirtd.pid")
        if [ -c /dev/kvm ] && [ -d /etc/libvirt ] && ! grep -qwE 'vmx|svm' /proc/cpuinfo &&
           command -v unshare >/dev/null; then
            : >"$WORK/lv/nokvm" && chmod 000 "$WORK/lv/nokvm"
            cp -a /etc/libvirt "$WORK/lv/etc"
            { grep -v '^[[:space:]]*namespaces[[:space:]]*=' /etc/libvirt/qemu.conf 2>/dev/null
              echo 'namespaces = []'; } >"$WORK/lv/etc/qemu.conf"
            LVD=(unshare --mount --propagation slave -- sh -c \
                 'mount --bind "$0" /dev/kvm && mount --bind "$1" /etc/libvirt && shift && exec "$@"' \
                 "$WORK/lv/nokvm" "$WORK/lv/etc" "${LVD[@]}")
            echo "$ME: /dev/kvm is not a usable KVM here: our libvirtd runs where its qemu user cannot open it"
        fi
        if ! "${LVD[@]}"; then
            [ "${LVD[0]}" = unshare ] &&
                echo "$ME: no private mount namespace here: libvirtd as it is (each call waits for a new probe)" &&
                libvirtd -d -f "$WORK/lv/libvirtd.conf" -p "$WORK/lv/libvirtd.pid" ||
                { echo "$ME: SKIP: libvirtd does not start: $(tail -n2 "$WORK/lv/libvirtd.log")"; exit 77; }
        fi
        URI="qemu:///system?socket=$WORK/lv/libvirt-sock"
        for ((i = 0; i < 200; i++)); do
            [ -s "$WORK/lv/libvirtd.pid" ] && [ -S "$WORK/lv/libvirt-sock" ] && break
            sleep 0.1
        done
        [ -s "$WORK/lv/libvirtd.pid" ] && read -r LIBVIRTD_PID <"$WORK/lv/libvirtd.pid"
        if [ -z "$LIBVIRTD_PID" ] || ! V uri >/dev/null 2>&1; then
            echo "$ME: SKIP: libvirtd did not come up: $(grep -v dnsmasq "$WORK/lv/libvirtd.log" | tail -n3)"
            exit 77
        fi
        echo "$ME: started virtlogd ${VIRTLOGD_PID:-(already running)} and libvirtd $LIBVIRTD_PID, socket $WORK/lv"
    fi
}

libvirt_down() {
    local d
    [ -n "$LIBVIRTD_PID" ] && stop_pid "$LIBVIRTD_PID"
    [ -n "$VIRTLOGD_PID" ] && stop_pid "$VIRTLOGD_PID"
    [ "$MADE_LOGDIR" = 1 ] && rm -rf /var/log/libvirt
    for d in "${MADE_DIRS[@]+"${MADE_DIRS[@]}"}"; do rm -rf "$d"; done
    [ "$MADE_USER" = 1 ] && userdel libvirt-qemu 2>/dev/null
    [ "$MADE_GROUP" = 1 ] && getent group libvirt-qemu >/dev/null && groupdel libvirt-qemu 2>/dev/null
    LIBVIRTD_PID= VIRTLOGD_PID=
}

libvirt_forget() {	# DOM: destroyed, undefined, its log removed
    V destroy "$1" >/dev/null 2>&1
    V undefine "$1" >/dev/null 2>&1
    rm -f "/var/log/libvirt/qemu/$1.log"
}

libvirt_stale() {
    V dominfo "$1" >/dev/null 2>&1 || return 0
    [ "$(V desc "$1" 2>/dev/null)" = "$2" ] ||
        { echo "$ME: SKIP: a domain $1 exists that this test did not make"; exit 77; }
    V destroy "$1" >/dev/null 2>&1
    V undefine "$1" >/dev/null || { echo "$ME: FAIL: cannot undefine the stale $1"; exit 1; }
}

# libvirt_domain_xml FILE NAME DESC CMDLINE ON_REBOOT: a 2-vCPU TCG domain (<domain type='qemu'>)
# that boots the image copied to WORK/boot (vmlinux, initramfs) directly, the e2e command line
# with CMDLINE (vt.run=..., vt.ports=...) after it, its console in WORK/console.log and an extra
# pipe channel vt-test (WORK/ports/vt-test.in/.out, made by the caller) for vt-e2e-guest;
# ON_REBOOT: destroy or restart; DEVICES (optional): more XML among its devices.
libvirt_domain_xml() {
    cat >"$1" <<XML
<domain type='qemu'>
  <name>$2</name>
  <description>$3</description>
  <memory unit='MiB'>512</memory>
  <vcpu>2</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$WORK/boot/vmlinux</kernel>
    <initrd>$WORK/boot/initramfs</initrd>
    <cmdline>console=ttyS0 loglevel=5 trace_clock=x86-tsc panic=-1 idle=halt maxcpus=1 trace_event=sched:*,irq:*,timer:* vt.keep=sched,irq,timer $4</cmdline>
  </os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>$5</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    <serial type='file'><source path='$WORK/console.log'/><target port='0'/></serial>
    <channel type='pipe'>
      <source path='$WORK/ports/vt-test'/>
      <target type='virtio' name='vt-test'/>
    </channel>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>${6:-}
  </devices>
</domain>
XML
}

# libvirt_boot_files: VT_IMAGE's kernel and initramfs copied to WORK/boot (libvirt gives the
# files to its qemu user while the domain runs), and WORK/ports made.
libvirt_boot_files() {
    mkdir -p "$WORK/boot" "$WORK/ports"
    cp "$VT_IMAGE/vmlinux" "$WORK/boot/vmlinux" && cp "$(ls "$VT_IMAGE"/initramfs.cpio* | head -n1)" "$WORK/boot/initramfs" ||
        { echo "$ME: FAIL: no kernel or initramfs in $VT_IMAGE"; exit 1; }
    chmod -R a+rX "$WORK/boot"
}

# ---- For a test that runs alone on one domain DOM (DESC) with a collector or a daemon ---------

# vt_libvirt_need: 0, or 77 after saying what is missing (the tools, root)
vt_libvirt_need() {
    local t
    for t in libvirtd virtlogd virsh qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq; do
        command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; return 77; }
    done
    [ "$(id -u)" = 0 ] || { echo "$ME: SKIP: needs root (a system libvirtd and its qemu user)"; return 77; }
}

# vt_libvirt_work: WORK, a new work dir QEMU (libvirt's qemu user) can reach; KEEP, DEFINED=0,
# COLLECT_PID= (the test's collector, stopped first at the end), fail=0 and bad(); the traps
# that call vt_libvirt_cleanup at the end
vt_libvirt_work() {
    WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
    chmod 755 "$WORK"	# QEMU runs as libvirt's qemu user: it must reach the kernel and the FIFOs
    KEEP=${VT_KEEP:-0}
    DEFINED=0 COLLECT_PID= fail=0
    trap vt_libvirt_cleanup EXIT
    trap 'exit 1' INT TERM HUP
}
bad() { echo "$ME: FAIL: $*"; fail=1; }

# vt_libvirt_cleanup: the test's collector (COLLECT_PID) stopped, the domain DOM (if DEFINED=1)
# destroyed and undefined, libvirt's daemons stopped (libvirt_down), the work dir removed
# unless VT_KEEP=1
vt_libvirt_cleanup() {
    [ -n "$COLLECT_PID" ] && kill -TERM "$COLLECT_PID" 2>/dev/null && wait "$COLLECT_PID" 2>/dev/null
    [ "$DEFINED" = 1 ] && libvirt_forget "$DOM"
    libvirt_down
    if [ "$KEEP" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}

# vt_libvirt_define CMDLINE DEVICES: define DOM (its description DESC) as libvirt_domain_xml makes
# it, running the agent (vt.run, 4 ports) with CMDLINE after it and DEVICES among its devices;
# a leftover of a killed run is removed first (libvirt_stale). 0, or 1.
vt_libvirt_define() {
    libvirt_stale "$DOM" "$DESC"
    mkfifo "$WORK/ports/vt-test.in" "$WORK/ports/vt-test.out"
    libvirt_domain_xml "$WORK/domain.xml" "$DOM" "$DESC" "vt.run=/etc/vt/agent-run vt.ports=4$1" destroy "$2"
    V define "$WORK/domain.xml" >/dev/null || { echo "$ME: FAIL: libvirt refused the domain"; return 1; }
    DEFINED=1
}
