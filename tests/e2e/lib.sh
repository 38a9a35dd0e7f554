# shellcheck shell=bash
# tests/e2e/lib.sh: boot the virtio-trace test guest under QEMU/TCG.  Source it from bash.
#
# Configuration (set before vt_guest_start; run-guest.sh sets them from its options):
#   VT_IMAGE        image dir from mkguest.sh (default: $VT_CACHE/image or <repo>/.cache/guest/image;
#                   with VT_KERNEL_DEB, image@TAG: see vt_kernel_select)
#   VT_KERNEL_DEB   the guest kernel: a linux-image .deb, or debian:SUITE (e.g. debian:trixie, fetched
#                   by kernel-deb.sh through a private apt configuration); mkguest.sh and every e2e
#                   test that builds an image use it.  Default: the host's apt kernel (Debian 12: 6.1)
#   VT_RUNDIR       run dir (required): console.log, qemu.pid, qemu.cmd, qmp.sock, ports/
#   VT_SMP=2 VT_MEM=512 VT_TIMEOUT=120 (seconds, hard limit for QEMU)
#   VT_TCG_SINGLE=0 (1: -accel tcg,thread=single, for clock tests)
#   VT_DEBUG_THREADS=0 (1: -name vt-guest,debug-threads=on: the vCPU threads are named "CPU n/TCG",
#                   as record --qemu-pid looks for them)
#   VT_KERNEL=vmlinux (PVH boot of the ELF; or bzImage)
#   VT_MACHINE=pc   (q35 when VT_IOMMU=1)
#   VT_IOMMU=0      (1: -machine q35 -device intel-iommu,intremap=off first, guest intel_iommu=on)
#   VT_IOMMU_PLATFORM=0 (1: the virtio-serial controller uses the vIOMMU:
#                   iommu_platform=on,disable-legacy=on)
#   VT_PORTS=1      (0: no virtio-serial ports at all)
#   VT_NO_REBOOT=1  (0: leave out -no-reboot, so that a reset (QMP system_reset) reboots the guest)
#   VT_NPORTS       number of trace-path-cpuN ports (default: VT_SMP)
#   VT_CHARDEV=pipe (pipe: FIFOs ports/NAME.in + NAME.out; socket: ports/NAME.sock, QEMU listens,
#                   server=on,wait=off)
#   VT_GUEST_RUN    path of an executable in the initramfs  -> vt.run=PATH
#   VT_GUEST_SCRIPT host file run by the guest with sh       -> fw_cfg opt/vt/script, vt.script=fw_cfg
#   VT_GUEST_CMD    one command line (no '"')                -> "vt.cmd=..."
#   VT_APPEND       extra kernel command line words
#   VT_TCG_KEEP     event systems the guest's /init enables in two idle instances, with one CPU
#                   online, before the test runs (maxcpus=1 vt.keep=, see guest/init), so that
#                   no session patches kernel text under TCG; default sched,irq,timer,iommu;
#                   empty: none, both CPUs up at boot (benchmarks)
#   VT_QEMU_EXTRA   array of extra QEMU arguments (e.g. (-device e1000,netdev=n0 -netdev user,id=n0))
#   VT_LOG_IGNORE   extended regex: console lines to forgive in vt_check_console
#   VT_NO_REBOOT=1  (0: no -no-reboot, so a guest reboot or panic warm-resets the machine)
# After vt_guest_start: VT_QEMU_PID (QEMU itself; also in $VT_RUNDIR/qemu.pid), VT_TIMEOUT_PID,
# VT_QEMU_ARGV (the command), VT_KERNEL_APPEND (the guest command line), VT_START_TIME.
# Port names: trace-path-cpu0..N-1 and agent-ctl-path, at most 30 per virtio-serial controller.

VT_E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VT_REPO=$(cd "$VT_E2E_DIR/../.." && pwd)
VT_QEMU_BIN=${VT_QEMU_BIN:-qemu-system-x86_64}
VT_PORTS_PER_CONTROLLER=30

vt_log() { echo "${VT_LOG_PREFIX:-vt}: $*" >&2; }

vt_now() { date +%s.%N; }

# vt_for_user DIR AS FILE...: copies of FILEs (built programs, and what they load from
# beside themselves) in DIR/for-user (0755), keeping their names, for the user of AS (a
# command prefix, e.g. "setpriv --reuid=65534 --regid=65534 --clear-groups") to run: the
# tree may sit where only root can enter (a clone in /root, mode 0700). DIR must let that
# user through (the tests' work directories under /tmp). Returns 1, saying why, when the
# user cannot reach the copies. The integration tests' for_user (collect-lib.sh) does the same.
vt_for_user() {
    local dir=$1/for-user as=$2 f
    shift 2
    mkdir -p "$dir" && chmod 0755 "$dir" || { echo "cannot make $dir"; return 1; }
    for f in "$@"; do
        cp -R "$f" "$dir/" && chmod -R a+rX "$dir/${f##*/}" || { echo "cannot copy $f into $dir"; return 1; }
    done
    for f in "$@"; do
        # shellcheck disable=SC2086
        $as test -r "$dir/${f##*/}" ||
            { echo "the user $($as id -un 2>/dev/null) cannot reach $dir/${f##*/}"; return 1; }
    done
}

# vt_qmp_py SOCK TIMEOUT CODE: run the Python CODE against QEMU's QMP socket SOCK, after the
# greeting and qmp_capabilities; CODE calls cmd(NAME[, ARGS]) (the reply, "return" or "error")
# and hmp(LINE) (a monitor command's text, "" on an error).
vt_qmp_py() {
    python3 -c 'import json, re, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(float(sys.argv[2]))
s.connect(sys.argv[1])
f = s.makefile("rw")
def cmd(c, a=None):
    f.write(json.dumps({"execute": c, **({"arguments": a} if a else {})}) + "\n"); f.flush()
    while True:
        m = json.loads(f.readline())
        if "return" in m or "error" in m:
            return m
def hmp(line):
    return cmd("human-monitor-command", {"command-line": line}).get("return", "")
f.readline()
cmd("qmp_capabilities")
'"$3" "$1" "$2"
}

# vt_qmp_cpus SOCK: QEMU's own word on its vCPU threads ("CPU TID" lines, sorted), asked over
# its QMP socket (one client at a time: ask before the collector connects).
vt_qmp_cpus() {
    vt_qmp_py "$1" 10 '
for c in sorted(cmd("query-cpus-fast")["return"], key=lambda c: c["cpu-index"]):
    print(c["cpu-index"], c["thread-id"])'
}
vt_secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# vt_guest_where [QMP_SOCKET]: where a guest that does not answer is, for the log: each vCPU's RIP
# in 5 samples 0.2 s apart, and the bytes of guest memory at each RIP. A vCPU that keeps coming
# back to an address whose memory no longer holds int3 (cc) is QEMU running a stale translation
# of patched kernel text (see VT_TCG_KEEP).
vt_guest_where() {
    local sock=${1:-$VT_RUNDIR/qmp.sock}
    [ -S "$sock" ] || return 0
    vt_qmp_py "$sock" 5 '
rips = {}
for _ in range(5):
    for cpu, rip in re.findall(r"CPU#(\d+)\s.*?RIP=([0-9a-f]+)", hmp("info registers -a"), re.S):
        rips.setdefault(int(cpu), []).append(rip)
    time.sleep(0.2)
for cpu in sorted(rips):
    print("vCPU %d at %s" % (cpu, " ".join(rips[cpu])))
for rip in sorted({r for v in rips.values() for r in v}):
    out = hmp("x/4bx 0x" + rip)
    print("%s: %s" % (rip, " ".join(re.findall(r"0x([0-9a-f]{2})\b", out.split(":", 1)[-1]))))' 2>&1 |
        sed "s/^/${VT_LOG_PREFIX:-vt}: guest vCPUs: /" >&2
}

vt_image_dir() { echo "${VT_IMAGE:-${VT_CACHE:-$VT_REPO/.cache/guest}/image${VT_KERNEL_TAG:-}}"; }

# vt_kernel_select: the kernel VT_KERNEL_DEB names.  Sets VT_KERNEL_TAG, the image-name suffix:
# "" by default, "@PACKAGE_VERSION" (e.g. @6.12.117+deb13-amd64_6.12.117-1) with VT_KERNEL_DEB,
# as mkguest.sh names its default image dir.  A VT_KERNEL_DEB of debian:SUITE is resolved to the
# .deb's path (kernel-deb.sh, cached by content) and exported.  Returns 77 with a "SKIP: reason"
# line on stdout when that kernel cannot be had, 1 (and a FAIL line) when it is no kernel package.
vt_kernel_select() {
    local deb err pkg ver
    VT_KERNEL_TAG=
    [ -n "${VT_KERNEL_DEB:-}" ] || return 0
    case "$VT_KERNEL_DEB" in
    debian:*)
        err=$(mktemp)
        if ! deb=$("$VT_E2E_DIR/kernel-deb.sh" -q --suite "${VT_KERNEL_DEB#debian:}" 2>"$err"); then
            echo "SKIP: no Debian ${VT_KERNEL_DEB#debian:} kernel: $(tail -n1 "$err")"
            rm -f "$err"
            return 77
        fi
        rm -f "$err"
        export VT_KERNEL_DEB=$deb ;;
    esac
    [ -f "$VT_KERNEL_DEB" ] || { echo "FAIL: VT_KERNEL_DEB: no such file $VT_KERNEL_DEB"; return 1; }
    pkg=$(dpkg-deb -f "$VT_KERNEL_DEB" Package 2>/dev/null)
    ver=$(dpkg-deb -f "$VT_KERNEL_DEB" Version 2>/dev/null)
    case "$pkg" in
    linux-image-*) ;;
    *) echo "FAIL: VT_KERNEL_DEB: $VT_KERNEL_DEB is not a linux-image package"; return 1 ;;
    esac
    VT_KERNEL_TAG=@${pkg#linux-image-}_$ver
}

# vt_port_names: the port names, one per line (data ports first, then the control port).
vt_port_names() {
    local i n=${VT_NPORTS:-${VT_SMP:-2}}
    for ((i = 0; i < n; i++)); do echo "trace-path-cpu$i"; done
    echo "agent-ctl-path"
}

# vt_make_ports: create $VT_RUNDIR/ports and, for pipe chardevs, the FIFOs NAME.in / NAME.out.
# Call it before opening the FIFOs on the host side (open them O_RDWR: exec 3<>FILE).
vt_make_ports() {
    local p name
    p=$VT_RUNDIR/ports
    mkdir -p "$p" || return 1
    [ "${VT_CHARDEV:-pipe}" = pipe ] || return 0
    for name in $(vt_port_names); do
        [ -p "$p/$name.in" ] || mkfifo "$p/$name.in" || return 1
        [ -p "$p/$name.out" ] || mkfifo "$p/$name.out" || return 1
    done
}

# vt_qemu_argv: fill the array VT_QEMU_ARGV and VT_KERNEL_APPEND from the configuration.
vt_qemu_argv() {
    local img kernel initrd machine accel append keep i ctl=0 nctl name dev chardev
    img=$(vt_image_dir)
    case "${VT_KERNEL:-vmlinux}" in
    vmlinux) kernel=$img/vmlinux ;;
    bzImage|bzimage) kernel=$img/bzImage ;;
    *) kernel=$VT_KERNEL ;;
    esac
    initrd=$(ls "$img"/initramfs.cpio* 2>/dev/null | head -n1)
    [ -f "$kernel" ] || { vt_log "no kernel $kernel (run tests/e2e/mkguest.sh)"; return 1; }
    [ -f "$initrd" ] || { vt_log "no initramfs in $img (run tests/e2e/mkguest.sh)"; return 1; }
    case "$VT_RUNDIR" in *,*) vt_log "VT_RUNDIR must not contain ','"; return 1 ;; esac

    machine=${VT_MACHINE:-pc}
    [ "${VT_IOMMU:-0}" = 1 ] && machine=q35
    accel=tcg
    [ "${VT_TCG_SINGLE:-0}" = 1 ] && accel=tcg,thread=single
    # idle=halt: QEMU's default CPU (qemu64) is an AMD family 15 part, so the guest idles in
    # amd_e400_idle; under TCG a CPU halted there was seen never to answer the IPI that
    # text_poke sends when the agent disables its events at BYE (the other CPU spins in
    # smp_call_function_many_cond, soft lockup). Plain HLT idling does not do that.
    append="console=ttyS0 loglevel=5 trace_clock=x86-tsc panic=-1 idle=halt"
    [ "${VT_IOMMU:-0}" = 1 ] && append+=" intel_iommu=on"
    # Enabling or disabling an event patches kernel text (jump labels and static calls, through
    # int3). Under multi-threaded TCG a vCPU was seen to loop for ever on the int3 of a patch
    # that had already ended (QEMU 7.2 went on running its old translation), with nothing on the
    # console: 6 of 6 runs of 150 enable/disable cycles under a marker flood hung (0 of 6 with
    # the events kept enabled; tests/bench/bench-tcg-patch.sh). With the systems the tests
    # record kept enabled in two idle instances, the sessions under test patch nothing (a
    # tracepoint's static call is patched only between 0, 1 and 2 probes).
    # The enabling itself patches, so the guest boots with one CPU (maxcpus=1), and /init brings
    # the others up once the instances hold the events (guest/init, vt.keep). Patching with
    # both CPUs up was not safe: enabling in /init alone hung 3 boots of ~60; with the keys
    # turned on by trace_event= beforehand, /init's second probe (a static call patched)
    # still oopsed on a stale int3 in the kernel-patch kernel once (CI, 2026-11-26).
    # trace_event= stays: it expands the top level's buffer at boot (on 6.1 the instances'
    # size would stop that), as the tests were written for; /init turns those events off.
    keep=${VT_TCG_KEEP-sched,irq,timer,iommu}
    [ -z "$keep" ] || append+=" maxcpus=1 trace_event=${keep//,/:*,}:* vt.keep=$keep"
    local qname=vt-guest
    [ "${VT_DEBUG_THREADS:-0}" = 1 ] && qname+=,debug-threads=on
    VT_QEMU_ARGV=("$VT_QEMU_BIN" -name "$qname" -machine "$machine" -accel "$accel"
        -m "${VT_MEM:-512}" -smp "${VT_SMP:-2}" -nodefaults -no-user-config -display none
        -serial "file:$VT_RUNDIR/console.log"
        -qmp "unix:$VT_RUNDIR/qmp.sock,server=on,wait=off"
        -pidfile "$VT_RUNDIR/qemu.pid")
    [ "${VT_NO_REBOOT:-1}" = 0 ] || VT_QEMU_ARGV+=(-no-reboot)
    [ -z "${VT_CPU:-}" ] || VT_QEMU_ARGV+=(-cpu "$VT_CPU")
    # intel-iommu must be the first device.
    [ "${VT_IOMMU:-0}" = 1 ] && VT_QEMU_ARGV+=(-device intel-iommu,intremap=off)
    VT_QEMU_ARGV+=(-kernel "$kernel" -initrd "$initrd")

    if [ "${VT_PORTS:-1}" = 1 ]; then
        local names=() n=0
        mapfile -t names < <(vt_port_names)
        nctl=$(((${#names[@]} + VT_PORTS_PER_CONTROLLER - 1) / VT_PORTS_PER_CONTROLLER))
        for ((ctl = 0; ctl < nctl; ctl++)); do
            dev="virtio-serial-pci,id=vser$ctl,max_ports=$((VT_PORTS_PER_CONTROLLER + 1))"
            [ "${VT_IOMMU_PLATFORM:-0}" = 1 ] && dev+=",iommu_platform=on,disable-legacy=on"
            VT_QEMU_ARGV+=(-device "$dev")
        done
        for ((i = 0; i < ${#names[@]}; i++)); do
            name=${names[$i]}
            ctl=$((i / VT_PORTS_PER_CONTROLLER))
            if [ "${VT_CHARDEV:-pipe}" = socket ]; then
                chardev="socket,id=vtp$i,path=$VT_RUNDIR/ports/$name.sock,server=on,wait=off"
            else
                chardev="pipe,id=vtp$i,path=$VT_RUNDIR/ports/$name"
            fi
            VT_QEMU_ARGV+=(-chardev "$chardev"
                -device "virtserialport,bus=vser$ctl.0,nr=$((i % VT_PORTS_PER_CONTROLLER + 1)),chardev=vtp$i,name=$name")
            n=$((n + 1))
        done
        append+=" vt.ports=$n"
    fi
    if [ -n "${VT_GUEST_RUN:-}" ]; then
        append+=" vt.run=$VT_GUEST_RUN"
    elif [ -n "${VT_GUEST_SCRIPT:-}" ]; then
        [ -f "$VT_GUEST_SCRIPT" ] || { vt_log "no such script: $VT_GUEST_SCRIPT"; return 1; }
        case "$VT_GUEST_SCRIPT" in *,*) vt_log "the script path must not contain ','"; return 1 ;; esac
        VT_QEMU_ARGV+=(-fw_cfg "name=opt/vt/script,file=$VT_GUEST_SCRIPT")
        append+=" vt.script=fw_cfg"
    elif [ -n "${VT_GUEST_CMD:-}" ]; then
        case "$VT_GUEST_CMD" in *'"'*) vt_log "VT_GUEST_CMD must not contain '\"'"; return 1 ;; esac
        append+=" \"vt.cmd=$VT_GUEST_CMD\""
    fi
    [ -z "${VT_APPEND:-}" ] || append+=" $VT_APPEND"
    VT_KERNEL_APPEND=$append
    VT_QEMU_ARGV+=(-append "$append")
    VT_QEMU_ARGV+=("${VT_QEMU_EXTRA[@]+"${VT_QEMU_EXTRA[@]}"}")
}

# vt_shell_quote ARGS...: print ARGS on one line, quoted for sh where needed.
vt_shell_quote() {
    local a sep= q="'" bq="'\\''"
    for a in "$@"; do
        if [[ "$a" =~ ^[A-Za-z0-9_./:=,+@%-]+$ ]]; then printf '%s%s' "$sep" "$a"
        else printf "%s'%s'" "$sep" "${a//$q/$bq}"; fi
        sep=' '
    done
    echo
}

# vt_guest_start: start QEMU in the background under `timeout`. Sets VT_QEMU_PID, VT_TIMEOUT_PID,
# VT_START_TIME. Returns non-zero if QEMU did not come up.
vt_guest_start() {
    local i
    [ -n "${VT_RUNDIR:-}" ] || { vt_log "VT_RUNDIR is not set"; return 1; }
    mkdir -p "$VT_RUNDIR" || return 1
    VT_RUNDIR=$(cd "$VT_RUNDIR" && pwd)
    if [ "${VT_PORTS:-1}" = 1 ]; then vt_make_ports || return 1; fi
    vt_qemu_argv || return 1
    rm -f "$VT_RUNDIR/qemu.pid" "$VT_RUNDIR/console.log" "$VT_RUNDIR/qmp.sock"
    vt_shell_quote "${VT_QEMU_ARGV[@]}" >"$VT_RUNDIR/qemu.cmd"
    VT_START_TIME=$(vt_now)
    # timeout: TERM at VT_TIMEOUT, KILL 5 s later.  stdin from /dev/null: QEMU never touches the tty.
    timeout -k 5 "${VT_TIMEOUT:-120}" "${VT_QEMU_ARGV[@]}" </dev/null >"$VT_RUNDIR/qemu.stderr" 2>&1 &
    VT_TIMEOUT_PID=$!
    VT_QEMU_PID=
    for ((i = 0; i < 200; i++)); do
        if [ -s "$VT_RUNDIR/qemu.pid" ]; then
            read -r VT_QEMU_PID <"$VT_RUNDIR/qemu.pid"
            break
        fi
        kill -0 "$VT_TIMEOUT_PID" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$VT_QEMU_PID" ]; then
        vt_log "QEMU did not start:"
        sed 's/^/  /' "$VT_RUNDIR/qemu.stderr" >&2
        vt_guest_stop
        return 1
    fi
    vt_log "QEMU pid $VT_QEMU_PID, run dir $VT_RUNDIR"
}

# vt_wait_console REGEX SECONDS: wait until the console log matches REGEX (status 0),
# QEMU exits or SECONDS pass (status 1).  Polls every 50 ms.
vt_wait_console() {
    local re=$1 end
    end=$(awk -v t="$(vt_now)" -v s="$2" 'BEGIN { printf "%.3f", t + s }')
    while :; do
        grep -aqE "$re" "$VT_RUNDIR/console.log" 2>/dev/null && return 0
        kill -0 "$VT_TIMEOUT_PID" 2>/dev/null || { grep -aqE "$re" "$VT_RUNDIR/console.log" 2>/dev/null; return; }
        awk -v a="$(vt_now)" -v b="$end" 'BEGIN { exit !(a > b) }' && return 1
        sleep 0.05
    done
}

# vt_guest_wait: wait for QEMU to end (it is bounded by VT_TIMEOUT). Sets VT_QEMU_RC (124 = timed out)
# and VT_END_TIME.
vt_guest_wait() {
    VT_QEMU_RC=0
    [ -n "${VT_TIMEOUT_PID:-}" ] || return 0
    wait "$VT_TIMEOUT_PID" 2>/dev/null || VT_QEMU_RC=$?
    VT_END_TIME=$(vt_now)
    VT_TIMEOUT_PID=
    return "$VT_QEMU_RC"
}

# vt_guest_stop: end exactly the QEMU started by vt_guest_start (and its timeout wrapper).
vt_guest_stop() {
    local pid=${VT_QEMU_PID:-} i
    if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
       tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$VT_RUNDIR/qemu.pid"; then
        kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < 40; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$pid" 2>/dev/null
    fi
    if [ -n "${VT_TIMEOUT_PID:-}" ]; then
        kill -TERM "$VT_TIMEOUT_PID" 2>/dev/null
        wait "$VT_TIMEOUT_PID" 2>/dev/null
        VT_TIMEOUT_PID=
    fi
    VT_QEMU_PID=
}

# vt_guest_died: 0 when the guest of vt_guest_start died or hung in its own boot, after the caller
# waited for its first answer in vain: QEMU is gone and the console shows a kernel panic or oops
# (Debian's 6.12 under TCG was seen to panic now and then in its own boot, in the middle of a
# just-patched jump: "Fatal exception in interrupt" at 1 s and at 3.7 s), or QEMU runs and /init
# never said "VT-INIT: ready" (its vt.keep enabling hung: a vCPU looping on a stale int3 while the
# other waited in smp_call_function_many_cond, an RCU stall on the console; see VT_TCG_KEEP).
# A guest QEMU that vt_guest_start did not start (libvirt's) is named by VT_QEMU_PID all the same.
vt_guest_died() {
    if kill -0 "$VT_QEMU_PID" 2>/dev/null; then
        ! tr -d '\r' <"$VT_RUNDIR/console.log" 2>/dev/null | grep -aq '^VT-INIT: ready'
    else
        tr -d '\r' <"$VT_RUNDIR/console.log" 2>/dev/null | grep -aqE 'Kernel panic|Oops'
    fi
}

# vt_guest_say_died WHO WHEN: after vt_guest_died, say so (WHO: the caller's name; WHEN: what
# had not run yet) and keep the console as console-died.log, for a boot once more.
vt_guest_say_died() {
    if kill -0 "$VT_QEMU_PID" 2>/dev/null; then
        echo "$1: the guest hung in its boot, before /init was ready (under TCG, $2):"
        tr -d '\r' <"$VT_RUNDIR/console.log" | grep -aE '^VT-INIT|rcu: INFO|soft lockup|RIP: 0010' |
            head -8 | sed 's/^/    /'
        VT_LOG_PREFIX=$1 vt_guest_where
    else
        echo "$1: the guest kernel panicked before it answered (under TCG, $2):"
        tr -d '\r' <"$VT_RUNDIR/console.log" | grep -aE 'RIP:|Kernel panic|Oops|BUG:' | head -4 | sed 's/^/    /'
    fi
    echo "$1: booting once more"
    mv "$VT_RUNDIR/console.log" "$VT_RUNDIR/console-died.log"
}

# vt_guest_boot_again WHO WHEN: vt_guest_say_died, then stop QEMU and start it again.
# Returns vt_guest_start's status.
vt_guest_boot_again() {
    vt_guest_say_died "$1" "$2"
    vt_guest_stop
    vt_guest_start
}

# vt_check_console [LOG]: 0 if the guest ran its command to "VT-INIT: done rc=0" and the console
# has no BUG:/WARNING:/panic/Oops/VT-INIT error lines; else print what is wrong and return 1.
vt_check_console() {
    local log=${1:-$VT_RUNDIR/console.log} bad done_line keep_line ok=0
    [ -f "$log" ] || { vt_log "no console log $log"; return 1; }
    bad=$(tr -d '\r' <"$log" | grep -anE 'BUG:|WARNING:|Kernel panic|Oops|general protection fault|soft lockup|hung_task|VT-INIT: error' |
          grep -vE '^[0-9]+:VT-INIT: run ' |
          { if [ -n "${VT_LOG_IGNORE:-}" ]; then grep -vE "$VT_LOG_IGNORE"; else cat; fi; } || true)
    if [ -n "$bad" ]; then
        vt_log "console $log has errors:"
        echo "$bad" | head -n 40 | sed 's/^/  /' >&2
        ok=1
    fi
    # vt.keep's enabling patches kernel text: with one CPU online, in two instances (guest/init).
    keep_line=$(tr -d '\r' <"$log" | grep -a '^VT-INIT: keep' | head -n1)
    if [ -n "$keep_line" ] && ! grep -q '(2 instances, 1 CPU online)$' <<<"$keep_line"; then
        vt_log "console $log: the events were not kept by two instances with one CPU online: $keep_line"
        ok=1
    fi
    done_line=$(tr -d '\r' <"$log" | grep -a 'VT-INIT: done rc=' | tail -n1)
    if [ -z "$done_line" ]; then
        vt_log "console $log: no 'VT-INIT: done' marker; last lines:"
        tr -d '\r' <"$log" | tail -n 25 | sed 's/^/  /' >&2
        ok=1
    elif ! grep -q 'VT-INIT: done rc=0\b' <<<"$done_line"; then
        vt_log "guest command failed: $done_line"
        ok=1
    fi
    return $ok
}

# vt_boot_times [LOG]: print "ready_uptime done_uptime" from the markers (guest seconds), or "- -".
vt_boot_times() {
    local log=${1:-$VT_RUNDIR/console.log} r d
    r=$(tr -d '\r' <"$log" | sed -n 's/.*VT-INIT: ready uptime=\([0-9.]*\).*/\1/p' | head -n1)
    d=$(tr -d '\r' <"$log" | sed -n 's/.*VT-INIT: done rc=[0-9]* uptime=\([0-9.]*\).*/\1/p' | head -n1)
    echo "${r:--} ${d:--}"
}

# ---- L1: a guest in which KVM is real --------------------------------------------------------
# This machine's /dev/kvm cannot run a stock guest, but the QEMU here emulates AMD SVM with
# nested paging under TCG: an L1 guest booted with -accel tcg -cpu EPYC (or max) loads kvm_amd
# and runs an L2 guest with -accel kvm (FACTS.md, section 5). vt_l1_run boots L1 from the image
# tests/e2e/mkl1.sh makes, runs a scenario script inside it (tests/e2e/l1/l1-lib.sh has its
# helpers: L2 with the ports `setup` prints, the collector bounded, stacks of what hangs) and
# brings the scenario's output directory back over 9p, for the normal tools on this side.
#
# Configuration (before vt_l1_run; the lib.sh VT_* of the guest are set from these, locally):
#   VT_L1_IMAGE     the image dir (default: vt_l1_image builds or reuses it)
#   VT_L1_SMP=2 VT_L1_MEM=2048 VT_L1_TIMEOUT=600 (seconds, hard limit for L1)
#   VT_L1_CPU=EPYC  L1's CPU model: an AMD one with SVM. EPYC booted L2 in 8-15 s where max
#                   took 14-30 s (tests/e2e/l1/README.md); max works too
#   VT_L1_SINGLE=0  (1: -accel tcg,thread=single: L2 then hung in its boot, 2 runs of 2)
#   VT_L1_QEMU_BIN  the QEMU that runs L1 (default: vt_l1_qemu's, Debian bookworm-backports'
#                   QEMU 10 from tests/e2e/qemu-deb.sh, else this machine's with a note; under
#                   Debian 12's QEMU 7.2 L2 stalled in some runs: tests/e2e/l1/README.md)
#   VT_L1_KEEP      L1's vt.keep (default sched,irq,timer,kvm: the collector's host events in
#                   L1 then patch no text); empty: none, both CPUs up from the start
#   VT_L1_APPEND    more L1 kernel command line (e.g. "clocksource=tsc tsc=reliable")
#   VT_L1_TICK      L1's tick (default "lapic=notscdeadline nohz=off highres=off": each CPU's
#                   local APIC timer in periodic mode, which QEMU re-arms and re-raises by itself;
#                   empty: Debian's tickless one-shot timer). Why: QEMU's VMRUN sets a bit of the
#                   vCPU's interrupt requests without the lock the other threads take to set
#                   theirs (fixed upstream after 10.0, not in 7.2 or 10.0), so an interrupt for
#                   L1 can be left unseen; with a periodic timer the next tick raises it again,
#                   where a one-shot timer lost is never re-armed (tests/e2e/l1/README.md)
#   VT_L1_ENV       lines "NAME=VALUE" for L1's /etc/vt/l1-run and the scenario (L1_BEAT,
#                   L1_KVM_AMD_OPTS, L1_KALLSYMS=1, L2_SMP, L2_APPEND, ...; see tests/e2e/l1/)
#   VT_L1_STALL=45  seconds without a heartbeat line (l1/run writes one every 3 s; before the
#                   first, without any console line) after which L1 counts as frozen: its
#                   vCPUs' places are taken and it is stopped. A soft-lockup report repeated
#                   on the console is no heartbeat
#   VT_RUNDIR       (required) L1's run dir: console.log, qemu.*, where.txt and the share l1/
#                   (env, scenario.sh, status, scenario.log, l1-info.txt, l2-*-console.log)

# With an AMD model (-cpu EPYC, and L2's -cpu host then) 6.1 says "Speculative Return Stack
# Overflow: WARNING: See ... for mitigation options." at boot: a notice, not a kernel warning.
# vt_l1_run forgives it on L1's console; a test checking L2's console passes it as VT_LOG_IGNORE.
VT_L1_LOG_IGNORE='Speculative Return Stack Overflow: WARNING: See '

# vt_l1_image: build or reuse the L1 image (tests/e2e/mkl1.sh); sets VT_L1_IMAGE. Returns 77
# (a "SKIP: reason" line on stdout) when it cannot be built here, 1 on a failure.
vt_l1_image() {
    local out rc
    [ -z "${VT_L1_IMAGE:-}" ] || return 0
    out=$("$VT_E2E_DIR/mkl1.sh" -q 2>&1); rc=$?
    if [ $rc != 0 ]; then
        echo "$out" | grep -E '^(SKIP|FAIL):' || echo "$out" | tail -n 20
        return $rc
    fi
    VT_L1_IMAGE=$(echo "$out" | tail -n1)
}

# vt_l1_qemu: choose the QEMU that runs L1 (once): VT_L1_QEMU_BIN when set, else bookworm-
# backports' QEMU (tests/e2e/qemu-deb.sh) with its own firmware, else this machine's
# qemu-system-x86_64. Sets VT_L1_QEMU_BIN, VT_L1_QEMU_FW (its -L options) and VT_L1_QEMU_SAYS
# (a line: the version, and why it is not the backports' one when it is not).
vt_l1_qemu() {
    local out rc root
    [ -z "${VT_L1_QEMU_SAYS:-}" ] || return 0
    VT_L1_QEMU_FW=()
    if [ -n "${VT_L1_QEMU_BIN:-}" ]; then
        VT_L1_QEMU_SAYS="$("$VT_L1_QEMU_BIN" --version 2>&1 | head -n1) (VT_L1_QEMU_BIN)"
        return 0
    fi
    out=$("$VT_E2E_DIR/qemu-deb.sh" -q 2>&1); rc=$?
    if [ $rc = 0 ]; then
        VT_L1_QEMU_BIN=$(echo "$out" | tail -n1)
        root=${VT_L1_QEMU_BIN%/usr/bin/qemu-system-x86_64}
        VT_L1_QEMU_FW=(-L "$root/usr/share/seabios" -L "$root/usr/share/qemu")
        VT_L1_QEMU_SAYS="$("$VT_L1_QEMU_BIN" --version 2>&1 | head -n1) ($VT_L1_QEMU_BIN)"
    else
        VT_L1_QEMU_BIN=qemu-system-x86_64
        VT_L1_QEMU_SAYS="$(qemu-system-x86_64 --version 2>&1 | head -n1), this machine's: no newer one ($(echo "$out" | tail -n1 | cut -c1-160)); L2 may stall (tests/e2e/l1/README.md)"
    fi
}

# vt_l1_symbolize KALLSYMS < LINES: each 16-digit hex address in LINES followed by its
# symbol+offset from KALLSYMS (L1's /proc/kallsyms of the same boot).
vt_l1_symbolize() {
    python3 -c 'import bisect, re, sys
syms = []
for line in open(sys.argv[1]):
    a, t, n = (line.split() + ["", ""])[:3]
    if t.lower() in "tw":
        syms.append((int(a, 16), n + (" " + line.split()[3] if len(line.split()) > 3 else "")))
syms.sort()
keys = [s[0] for s in syms]
def name(m):
    a = int(m.group(0), 16)
    i = bisect.bisect_right(keys, a) - 1
    if i < 0 or a - keys[i] > 0x100000:
        return m.group(0)
    return "%s(%s+0x%x)" % (m.group(0), syms[i][1], a - keys[i])
for line in sys.stdin:
    sys.stdout.write(re.sub(r"\b[0-9a-f]{16}\b", name, line))' "$1"
}

# vt_l1_run SCRIPT OUTDIR: boot L1 (vt_l1_qemu's QEMU, -accel tcg -cpu EPYC), run `sh SCRIPT DIR`
# inside it (DIR on L1's tmpfs) and copy DIR to OUTDIR (which must exist; shared over 9p).
# Everything is bounded by VT_L1_TIMEOUT, and L1 is stopped early when its console stays silent
# for VT_L1_STALL s. Sets VT_L1_RESULT: pass, fail (the scenario failed, or L1's console has
# kernel errors), skip (no SVM in this QEMU's CPU model, kvm_amd did not load, no /dev/kvm),
# froze (no console line for VT_L1_STALL s: where.txt has each vCPU's RIPs and local APIC), timeout, noboot (QEMU or L1's /init
# failed before the scenario); VT_L1_REASON (one line), VT_L1_RC (the scenario's status, or
# -), VT_L1_SECS (wall time of the run), VT_L1_UP (L1 uptime at the scenario's start and end).
# Returns 0 pass, 77 skip (the caller prints "SKIP: $VT_L1_REASON" and exits 77), 1 otherwise,
# after showing L1's console (the last lines and any kernel report) on stdout.
vt_l1_run() {
    local script=$1 out=$2 share rc t0 last size=-1 now stall=${VT_L1_STALL:-45} st
    local VT_IMAGE VT_SMP=${VT_L1_SMP:-2} VT_MEM=${VT_L1_MEM:-2048} VT_CPU=${VT_L1_CPU:-EPYC}
    local VT_TCG_SINGLE=${VT_L1_SINGLE:-0} VT_PORTS=0 VT_GUEST_RUN=/etc/vt/l1-run
    local VT_TCG_KEEP=${VT_L1_KEEP-sched,irq,timer,kvm} VT_APPEND="nokaslr ${VT_L1_TICK-lapic=notscdeadline nohz=off highres=off} ${VT_L1_APPEND:-}"
    local VT_TIMEOUT=${VT_L1_TIMEOUT:-600} VT_LOG_PREFIX=${VT_LOG_PREFIX:-vt-l1} VT_QEMU_BIN
    local -a VT_QEMU_EXTRA
    local ignore="$VT_L1_LOG_IGNORE${VT_LOG_IGNORE:+|$VT_LOG_IGNORE}"
    VT_L1_RESULT=noboot VT_L1_REASON= VT_L1_RC=- VT_L1_SECS=- VT_L1_UP=-
    [ -n "${VT_RUNDIR:-}" ] || { VT_L1_REASON="VT_RUNDIR is not set"; echo "$VT_L1_REASON"; return 1; }
    [ -f "$script" ] && [ -d "$out" ] || { VT_L1_REASON="no script $script or no dir $out"; echo "$VT_L1_REASON"; return 1; }
    vt_l1_image >"$VT_RUNDIR.image.out" 2>&1; rc=$?
    if [ $rc != 0 ]; then
        VT_L1_REASON=$(sed -n 's/^\(SKIP\|FAIL\): //p' "$VT_RUNDIR.image.out" | head -n1)
        [ $rc = 77 ] && VT_L1_RESULT=skip
        cat "$VT_RUNDIR.image.out"; rm -f "$VT_RUNDIR.image.out"
        return $rc
    fi
    rm -f "$VT_RUNDIR.image.out"
    VT_IMAGE=$VT_L1_IMAGE
    vt_l1_qemu
    VT_QEMU_BIN=$VT_L1_QEMU_BIN
    mkdir -p "$VT_RUNDIR/l1" || return 1
    VT_RUNDIR=$(cd "$VT_RUNDIR" && pwd)
    share=$VT_RUNDIR/l1
    out=$(cd "$out" && pwd)
    case "$share$out" in *,*) VT_L1_REASON="the run and output dirs must not contain ','"; echo "$VT_L1_REASON"; return 1 ;; esac
    rm -f "$share/status" "$share/scenario.log" "$VT_RUNDIR/where.txt"
    cp "$script" "$share/scenario.sh"
    printf '%s\n' "${VT_L1_ENV:-}" >"$share/env"
    VT_QEMU_EXTRA=("${VT_L1_QEMU_FW[@]}" -virtfs "local,path=$share,mount_tag=vtrun,security_model=none,id=vtrun"
                   -virtfs "local,path=$out,mount_tag=vtout,security_model=none,id=vtout")
    t0=$(vt_now)
    vt_guest_start || { VT_L1_REASON="L1's QEMU did not start: $(head -c 300 "$VT_RUNDIR/qemu.stderr")"; echo "$VT_L1_REASON"; return 1; }
    last=$(date +%s)
    while kill -0 "$VT_TIMEOUT_PID" 2>/dev/null; do
        now=$(date +%s)
        # Progress: any console output until the first heartbeat, then only heartbeats (a
        # kernel repeating its soft-lockup report every 28 s is no sign of life).
        st=$(grep -ac 'VT-L1: beat' "$VT_RUNDIR/console.log" 2>/dev/null)
        [ "${st:-0}" != 0 ] || st=x$(stat -c %s "$VT_RUNDIR/console.log" 2>/dev/null || echo 0)
        [ "$st" = "$size" ] || { size=$st; last=$now; }
        if [ $((now - last)) -ge "$stall" ] && [ ! -s "$share/status" ]; then
            VT_L1_RESULT=froze
            VT_L1_REASON="L1 wrote no heartbeat on its console for $stall s (last heartbeat: $(tr -d '\r' <"$VT_RUNDIR/console.log" | grep -a 'VT-L1: beat' | tail -n1 | sed 's/.*beat //'))"
            { echo "L1 froze, $(vt_secs "$t0" "$(vt_now)") s after QEMU started:"
              VT_LOG_PREFIX=l1 vt_guest_where 2>&1
              # The local APICs too: an interrupt pending in one (IRR) while its CPU sits
              # halted with IF set is an interrupt request QEMU lost (VT_L1_TICK above).
              vt_qmp_py "$VT_RUNDIR/qmp.sock" 10 "print(hmp('info registers -a'))
for i in range($VT_SMP):
    print(hmp('info lapic %d' % i))" 2>&1
            } >"$VT_RUNDIR/where.txt"
            if [ -s "$share/kallsyms" ]; then
                vt_l1_symbolize "$share/kallsyms" <"$VT_RUNDIR/where.txt" >"$VT_RUNDIR/where.sym.txt" 2>&1 &&
                    mv "$VT_RUNDIR/where.sym.txt" "$VT_RUNDIR/where.txt"
            fi
            vt_guest_stop
            break
        fi
        sleep 1
    done
    vt_guest_wait
    VT_L1_SECS=$(vt_secs "$t0" "$(vt_now)")
    VT_L1_UP="$(tr -d '\r' <"$VT_RUNDIR/console.log" | sed -n 's/^VT-L1: scenario start up=//p' | head -n1)-$(sed -n 's/^done rc=[0-9]* up=//p' "$share/status" 2>/dev/null)"
    st=$(cat "$share/status" 2>/dev/null)
    case "$st" in
    skip\ *) VT_L1_RESULT=skip VT_L1_REASON=${st#skip } ;;
    done\ rc=*)
        VT_L1_RC=${st#done rc=}; VT_L1_RC=${VT_L1_RC%% *}
        if [ "$VT_L1_RC" != 0 ]; then
            VT_L1_RESULT=fail VT_L1_REASON="the scenario exited $VT_L1_RC"
        elif ! VT_LOG_IGNORE=$ignore vt_check_console "$VT_RUNDIR/console.log" 2>"$VT_RUNDIR/console-check.txt"; then
            VT_L1_RESULT=fail VT_L1_REASON="L1's console: $(grep -v '^ ' "$VT_RUNDIR/console-check.txt" | head -n1)"
        else
            VT_L1_RESULT=pass
        fi ;;
    *)
        if [ "$VT_L1_RESULT" != froze ]; then
            if [ "$VT_QEMU_RC" = 124 ] || [ "$VT_QEMU_RC" = 137 ]; then
                VT_L1_RESULT=timeout VT_L1_REASON="L1 still ran after $VT_TIMEOUT s"
            elif tr -d '\r' <"$VT_RUNDIR/console.log" | grep -aq '^VT-L1: scenario start'; then
                VT_L1_RESULT=fail VT_L1_REASON="L1 ended (QEMU status $VT_QEMU_RC) before the scenario did"
            else
                VT_L1_REASON="L1 ended (QEMU status $VT_QEMU_RC) before the scenario started"
            fi
        fi ;;
    esac
    case "$VT_L1_RESULT" in
    pass) return 0 ;;
    skip) return 77 ;;
    esac
    echo "L1 $VT_L1_RESULT after $VT_L1_SECS s: $VT_L1_REASON"
    echo "L1's console ($VT_RUNDIR/console.log), kernel reports and the last 40 lines:"
    tr -d '\r' <"$VT_RUNDIR/console.log" |
        grep -a -m 20 -E 'BUG:|WARNING:|Oops|soft lockup|rcu: INFO|rcu_.*stall|hung_task|Call Trace|RIP: 0010|Kernel panic' |
        sed 's/^/    ! /'
    tr -d '\r' <"$VT_RUNDIR/console.log" | tail -n 40 | sed 's/^/    | /'
    [ ! -s "$VT_RUNDIR/where.txt" ] || grep -E '^l1: guest vCPUs' "$VT_RUNDIR/where.txt" | sed 's/^/    /'
    return 1
}

# vt_kvm_begin [TOOL...]: the frame of an e2e-kvm test that runs its own L1 scenario (ME set):
# a SKIP (exit 77) when a tool is missing; T0; WORK (/tmp/vt-ME.XXXXXX: removed at the exit,
# kept and named with VT_KEEP=1 or KEEP=1); fail=0; the L1 image (exit with vt_l1_image's status
# when it cannot be made; T_IMAGE its seconds); OUT=WORK/out and VT_RUNDIR=WORK/l1 for
# vt_kvm_scenario.
vt_kvm_begin() {
    local t rc
    for t in qemu-system-x86_64 busybox cpio depmod timeout trace-cmd jq ldd awk "$@"; do
        command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
    done
    T0=$(vt_now)
    WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
    KEEP=${VT_KEEP:-0}
    trap vt_kvm_cleanup EXIT
    trap 'exit 1' INT TERM HUP
    fail=0
    t=$(vt_now)
    vt_l1_image >"$WORK/image.out"; rc=$?
    if [ $rc != 0 ]; then
        sed "s/^/$ME: /" "$WORK/image.out"
        exit $rc
    fi
    T_IMAGE=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: L1 image $VT_L1_IMAGE"
    vt_l1_qemu
    echo "$ME: L1's QEMU: $VT_L1_QEMU_SAYS"
    OUT=$WORK/out VT_RUNDIR=$WORK/l1
    mkdir -p "$OUT"
}

vt_kvm_cleanup() {
    vt_guest_stop 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}

# vt_kvm_scenario SCRIPT: vt_l1_run SCRIPT OUT, and what came of it: the run's line, a SKIP
# (exit 77) with its reason, then what L1 and L2 said. Returns vt_l1_run's status.
vt_kvm_scenario() {
    local rc
    vt_l1_run "$1" "$OUT"; rc=$?
    echo "$ME: L1 run: $VT_L1_RESULT in $VT_L1_SECS s (L1 uptime at the scenario's start and end: $VT_L1_UP)"
    if [ $rc = 77 ]; then
        echo "$ME: SKIP: $VT_L1_REASON"
        exit 77
    fi
    echo "  L1 and L2 said:"
    tr -d '\r' <"$VT_RUNDIR/console.log" | grep -aE '^(VT-INIT|VT-L1|L1):' | grep -v 'VT-L1: beat' | sed 's/^/    /'
    return $rc
}

# vt_kvm_end: the end of an e2e-kvm test begun with vt_kvm_begin: its timings (T_IMAGE, VT_L1_SECS,
# the whole test), then PASS and exit 0, or, when a check failed (fail=1), FAIL and exit 1 with
# the work dir kept.
vt_kvm_end() {
    echo "$ME: timings: image $T_IMAGE s, L1 run $VT_L1_SECS s, whole test $(vt_secs "$T0" "$(vt_now)") s"
    if [ "$fail" = 0 ]; then echo "$ME: PASS"; exit 0; fi
    KEEP=1
    echo "$ME: FAIL"
    exit 1
}

# vt_l1_guest_run OUTDIR: an e2e collector scenario with the guest under KVM inside L1
# (tests/e2e/l1/scenario-guest.sh: L2 with setup's ports, vt-e2e-guest's lines before, during
# and after `record`), through vt_l1_run. The lines come from the arrays VT_L1_PRE, VT_L1_WORK
# (record's COMMAND sends them) and VT_L1_POST; VT_L1_ENV as for vt_l1_run (REC_ARGS, L2_*,
# SCN_NAME, SCN_SETUP_AUTO, ...). OUTDIR gets rec/ (the recording), record.rc, record.log,
# *.answers, l2-NAME-console.log. Returns as vt_l1_run.
vt_l1_guest_run() {
    local script=${VT_RUNDIR:?VT_RUNDIR is not set}.scenario.sh ph line
    {
        echo "# generated by vt_l1_guest_run for ${VT_LOG_PREFIX:-?}"
        for ph in pre work post; do
            declare -p "VT_L1_${ph^^}" >/dev/null 2>&1 || continue
            local -n lines="VT_L1_${ph^^}"
            [ "${#lines[@]}" -gt 0 ] || continue
            echo "cat >/tmp/scn-$ph <<'VT_SCN_LINES'"
            for line in "${lines[@]}"; do printf '%s\n' "$line"; done
            echo "VT_SCN_LINES"
        done
        cat "$VT_E2E_DIR/l1/scenario-guest.sh"
    } >"$script" || return 1
    vt_l1_run "$script" "$1"
}
