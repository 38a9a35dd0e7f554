# shellcheck shell=bash
# tests/e2e/agent-lib.sh: shared by test-agent-guest.sh and tests/bench/bench-agent.sh.
# A guest with the static trace-agent and vt-e2e-guest in its initramfs, the ports on
# QEMU-listening sockets plus a test port "vt-test" for vt-e2e-guest, driven by vt-e2e-host.
# Source lib.sh first.
#
# Binaries: VT_BUILDDIR (default <repo>/build, scripts/test.sh's build) gives vt-e2e-host and
# vt-e2e-guest; the agent is VT_STATIC_AGENT, or that build's trace-agent when it is static, or
# <repo>/build-static's (configured with --enable-static-agent here when missing).

# vt_agent_build: make the binaries. Sets VT_E2E_HOST, VT_E2E_GUEST, VT_STATIC_AGENT.
# Returns 77 when there is no configured build to use.
vt_agent_build() {
    local b=${VT_BUILDDIR:-$VT_REPO/build} s
    [ -f "$b/Makefile" ] || { echo "SKIP: no configured build in $b (set VT_BUILDDIR)"; return 77; }
    make -C "$b" -s tests/e2e/vt-e2e-host tests/e2e/vt-e2e-guest guest-agent/trace-agent >&2 ||
        { echo "FAIL: cannot build the e2e helpers in $b"; return 1; }
    VT_E2E_HOST=$b/tests/e2e/vt-e2e-host
    VT_E2E_GUEST=$b/tests/e2e/vt-e2e-guest
    if [ -z "${VT_STATIC_AGENT:-}" ]; then
        if ! grep -qa '/ld-linux' "$b/guest-agent/trace-agent"; then
            VT_STATIC_AGENT=$b/guest-agent/trace-agent
        else
            s=${VT_STATIC_BUILDDIR:-$VT_REPO/build-static}
            if [ ! -f "$s/Makefile" ]; then
                mkdir -p "$s" && (cd "$s" && "$VT_REPO/configure" -q --enable-static-agent >&2) ||
                    { echo "FAIL: cannot configure $s --enable-static-agent"; return 1; }
            fi
            make -C "$s" -s guest-agent/trace-agent >&2 ||
                { echo "FAIL: cannot build the static agent in $s"; return 1; }
            VT_STATIC_AGENT=$s/guest-agent/trace-agent
        fi
    fi
    if grep -qa '/ld-linux' "$VT_STATIC_AGENT"; then
        echo "FAIL: $VT_STATIC_AGENT is not static"; return 1
    fi
}

# vt_collect_build: vt_agent_build, and virtio-trace-collect in the same build. Sets COLLECT.
# VT_COLLECT names another collector to use instead (e.g. an installed package's).
# Returns 77 or 1 as vt_agent_build does.
vt_collect_build() {
    local b=${VT_BUILDDIR:-$VT_REPO/build} rc
    vt_agent_build; rc=$?
    [ $rc = 0 ] || return $rc
    if [ -n "${VT_COLLECT:-}" ]; then
        [ -x "$VT_COLLECT" ] || { echo "FAIL: VT_COLLECT=$VT_COLLECT is not executable"; return 1; }
        COLLECT=$VT_COLLECT
        return 0
    fi
    COLLECT=$b/host-collector/virtio-trace-collect
    make -C "$b" -s host-collector/virtio-trace-collect >&2 ||
        { echo "FAIL: cannot build virtio-trace-collect"; return 1; }
}

# vt_agent_image WORK RUNSCRIPT NAME: an image CACHE/image-NAME whose /etc/vt/agent-run is
# RUNSCRIPT (a file), with /sbin/trace-agent and /bin/vt-e2e-guest. Sets VT_IMAGE.  The kernel is
# VT_KERNEL_DEB's when set (see vt_kernel_select in lib.sh; the image is then image-NAME@TAG).
# With VT_AGENT_ROOT (a directory, e.g. the trace-agent .deb unpacked with dpkg-deb -x) that
# tree goes into the image instead of /sbin/trace-agent, as a user puts the package's files
# into an image: the guest then runs its usr/sbin/trace-agent.
# With VT_AGENT_KERNEL (a vmlinux with everything built in, e.g. kernel-patches/build.sh's) the
# image is WORK/image-kernel: that kernel and an initramfs without modules.
# VT_GUEST_EXTRA_MODULES: the modules put in the image but not loaded, instead of mkguest.sh's
# default (e.g. with msr, for a guest that writes its TSC; the virtio vsock transport for an agent
# reached over vsock).
# Returns 77 when no kernel is available.
vt_agent_image() {
    local work=$1 script=$2 name=$3 cache rc mods=()
    [ -z "${VT_GUEST_EXTRA_MODULES:-}" ] || mods=(--extra-modules "$VT_GUEST_EXTRA_MODULES")
    mkdir -p "$work/overlay/sbin" "$work/overlay/bin" "$work/overlay/etc/vt"
    if [ -n "${VT_AGENT_ROOT:-}" ]; then
        [ -x "$VT_AGENT_ROOT/usr/sbin/trace-agent" ] ||
            { echo "FAIL: no usr/sbin/trace-agent in VT_AGENT_ROOT=$VT_AGENT_ROOT"; return 1; }
        cp -a "$VT_AGENT_ROOT/." "$work/overlay/"
    else
        cp "$VT_STATIC_AGENT" "$work/overlay/sbin/trace-agent"
        strip "$work/overlay/sbin/trace-agent" 2>/dev/null
    fi
    cp "$VT_E2E_GUEST" "$work/overlay/bin/vt-e2e-guest"
    strip "$work/overlay/bin/vt-e2e-guest" 2>/dev/null
    cp "$script" "$work/overlay/etc/vt/agent-run"
    chmod 755 "$work/overlay/etc/vt/agent-run"
    cache=${VT_CACHE:-$VT_REPO/.cache/guest}
    vt_kernel_select; rc=$?
    [ $rc = 0 ] || return $rc
    VT_IMAGE=$cache/image-$name$VT_KERNEL_TAG
    if [ -n "${VT_AGENT_KERNEL:-}" ]; then
        VT_IMAGE=$work/image-kernel
        mods=(--modules "" --extra-modules "")
    fi
    "$VT_E2E_DIR/mkguest.sh" -q --cache "$cache" "${mods[@]}" --overlay "$work/overlay" --out "$VT_IMAGE" \
        >/dev/null 2>"$work/mkguest.log"
    rc=$?
    [ $rc = 2 ] && { echo "SKIP: no guest kernel available: $(tail -n1 "$work/mkguest.log")"; return 77; }
    [ $rc = 0 ] || { cat "$work/mkguest.log"; echo "FAIL: mkguest.sh exited $rc"; return 1; }
    if [ -n "${VT_AGENT_KERNEL:-}" ]; then
        rm -f "$VT_IMAGE/vmlinux" "$VT_IMAGE/bzImage"
        cp "$VT_AGENT_KERNEL" "$VT_IMAGE/vmlinux" || { echo "FAIL: no kernel $VT_AGENT_KERNEL"; return 1; }
    fi
}

# vt_agent_boot RUNDIR: boot the image with 2 vCPUs, socket chardevs, the vt-test port, running
# /etc/vt/agent-run. QEMU is bounded by VT_TIMEOUT.
vt_agent_boot() {
    VT_RUNDIR=$1
    VT_SMP=${VT_SMP:-2}
    VT_CHARDEV=socket
    VT_GUEST_RUN=/etc/vt/agent-run
    mkdir -p "$VT_RUNDIR/ports"
    # nr=30: lib.sh numbers its ports from 1 on the same controller.
    VT_QEMU_EXTRA=(-chardev "socket,id=vttest,path=$VT_RUNDIR/ports/vt-test.sock,server=on,wait=off"
                   -device "virtserialport,bus=vser0.0,nr=30,chardev=vttest,name=vt-test")
    vt_guest_start
}

# vt_agent_wait_off SECONDS: wait for the guest to power off; stop it after SECONDS. 0 if it did.
vt_agent_wait_off() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        kill -0 "$VT_TIMEOUT_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$VT_TIMEOUT_PID" 2>/dev/null; then
        vt_log "the guest did not power off within $1 s"
        vt_guest_where
        vt_guest_stop
        return 1
    fi
    vt_guest_wait
}

# vt_collect_image WORK NAME: the image the collector e2e tests boot: the agent runs as a
# daemon that leaves after the collector's BYE and vt-e2e-guest serves the vt-test port;
# then the guest checks the agent's exit status and that its instance is gone. With
# vt.agent_keep=1 on the kernel command line the agent serves one collector after another
# and gets a SIGTERM once vt-e2e-guest has quit. VT_AGENT_PRE: shell lines the guest runs
# before it starts the agent (they go into the image). With vt.hotplug=/etc/vt/agent-hotplug on
# the command line no agent starts at boot: /init's uevent listener starts /etc/vt/agent-hotplug
# (trace-agent, as trace-agent.service does) when the port agent-ctl-path is hot-plugged and
# SIGTERMs it when the port is unplugged; the guest then checks the agent left with exit
# status 0 ("E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after its port was unplugged").
# Sets VT_IMAGE.
vt_collect_image() {
    mkdir -p "$1/overlay/etc/vt"
    cat >"$1/overlay/etc/vt/agent-hotplug" <<'SH'
#!/bin/sh
# trace-agent.service's part (guest/init, vt.hotplug=): started when agent-ctl-path appears,
# SIGTERMed when it goes.
echo "E2E: agent-hotplug: starting trace-agent"
trace-agent &
agent=$!
trap 'kill -TERM $agent' TERM
wait $agent
rc=$?
# A wait cut short by the trap: the agent's own status follows.
[ $rc -gt 128 ] && { wait $agent; rc=$?; }
echo $rc >/run/vt-agent.status
echo "E2E: trace-agent exit status $rc"
SH
    chmod 755 "$1/overlay/etc/vt/agent-hotplug"
    {
        echo '#!/bin/sh'
        [ -z "${VT_AGENT_PRE:-}" ] || echo "$VT_AGENT_PRE"
        cat <<'SH'
if grep -q 'vt.hotplug=' /proc/cmdline; then
    vt-e2e-guest
    rc=$?
    i=0
    while [ ! -e /run/vt-agent.status ] && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
    arc=$(cat /run/vt-agent.status 2>/dev/null || echo "none (it never started, or never stopped)")
    echo "E2E: vt-e2e-guest rc=$rc, trace-agent exit status $arc after its port was unplugged"
    [ -d /sys/kernel/tracing/instances/virtio-trace ] && { echo "E2E: FAIL instance left"; rc=1; }
    [ "$arc" = 0 ] || rc=1
    exit $rc
fi
once=--once end=BYE
grep -q 'vt.agent_keep=1' /proc/cmdline && once= end=SIGTERM
trace-agent --quiet $once &
agent=$!
vt-e2e-guest --agent-pid "$agent"
rc=$?
[ -z "$once" ] && kill -TERM "$agent"
wait "$agent"
arc=$?
echo "E2E: vt-e2e-guest rc=$rc, trace-agent exit status $arc after $end"
[ -d /sys/kernel/tracing/instances/virtio-trace ] && { echo "E2E: FAIL instance left"; rc=1; }
[ "$arc" = 0 ] || rc=1
exit $rc
SH
    } >"$1/agent-run"
    vt_agent_image "$1" "$1/agent-run" "$2"
}

# vt_collect_ports COLLECT PORTS [BACKEND]: the guest's ports (VT_SMP vCPUs, default 2) as a
# user makes them, with `COLLECT setup` (BACKEND: pipe, the default, or unix), plus the vt-test
# port (always a pipe). Sets SETUP_ARGS to the QEMU arguments for all of them (-accel tcg: these
# guests are TCG's, whatever the host's /dev/kvm).
vt_collect_ports() {
    "$1" setup --vcpus "${VT_SMP:-2}" --backend "${3:-pipe}" --dir "$2" --name e2e --create --accel tcg >"$2.args" ||
        { echo "FAIL: setup exited $?"; return 1; }
    eval "SETUP_ARGS=($(cat "$2.args"))"
    mkfifo "$2/vt-test.in" "$2/vt-test.out"
    SETUP_ARGS+=(-chardev "pipe,id=vttest,path=$2/vt-test"
                 -device "virtserialport,bus=vtser0.0,nr=30,chardev=vttest,name=vt-test")
}

# vt_test_say PORTS LINE SECS: send LINE to vt-e2e-guest on the vt-test port and set ANSWER
# to its reply; returns 1 when none comes within SECS.
vt_test_say() {
    local rc=0
    ANSWER=
    exec 7<>"$1/vt-test.in" 8<>"$1/vt-test.out"
    echo "$2" >&7
    read -r -t "$3" ANSWER <&8 || rc=1
    exec 7>&- 8<&-
    return $rc
}

# vt_causality MERGED OUT [SKIP]: causality of the control-message markers in MERGED, the output
# of `trace-cmd report -i host.dat -i guest-NAME.dat` (lines "FILE: COMM-PID [CCC] TS: print:
# ... virtio-trace: tx|rx TYPE SEQ"). A pair is one (TYPE, SEQ) sent by one side and received by
# the other; it is inverted when the receive comes first. Message types matching the extended
# regex SKIP are left out. Writes each inversion and a "causality: ..." summary line to OUT and
# sets PAIRS and INVERSIONS.
vt_causality() {
    awk -v skip="${3:-}" '
/virtio-trace: (tx|rx) [A-Z_0-9-]+ [0-9]+/ {
    for (i = 1; i <= NF; i++) if ($i == "virtio-trace:") break
    dir = $(i + 1); type = $(i + 2); seq = $(i + 3)
    if (skip != "" && type ~ skip) next
    ts = ""
    for (j = 1; j < i; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($j, 1, length($j) - 1); break }
    side = ($1 == "host.dat:") ? "host" : "guest"
    key = type " " seq
    if (dir == "tx") tx[side, key] = ts; else rx[side, key] = ts
    lines++
}
END {
    pairs = 0; inv = 0; unpaired = 0
    for (k in tx) {
        split(k, a, SUBSEP); s = a[1]; key = a[2]
        o = (s == "host") ? "guest" : "host"
        if ((o, key) in rx) {
            pairs++
            if (rx[o, key] + 0 < tx[s, key] + 0) { inv++; printf "inversion: %s tx %s at %s, %s rx at %s\n", s, key, tx[s, key], o, rx[o, key] }
        } else unpaired++
    }
    printf "causality: %d marker lines, %d tx/rx pairs, %d inversions, %d tx without rx\n", lines, pairs, inv, unpaired
}' "$1" >"$2"
    read -r PAIRS INVERSIONS < <(sed -n 's/^causality: [0-9]* marker lines, \([0-9]*\) tx\/rx pairs, \([0-9]*\) inversions.*/\1 \2/p' "$2")
}
