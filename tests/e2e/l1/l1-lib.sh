# shellcheck shell=sh
# /etc/vt/l1-lib.sh in the L1 image (tests/e2e/mkl1.sh): helpers for the scenarios that
# vt_l1_run (lib.sh) runs inside L1, where KVM is real. Busybox sh. A scenario is
#     . /etc/vt/l1-lib.sh
#     OUT=$1                          (L1's tmpfs; copied to the outer machine at the end)
#     l1_l2_start l2                  the L2 guest under KVM, ports from `setup`
#     l1_say hello 120                wait for vt-e2e-guest in L2
#                                     (or both at once: l1_l2_up l2)
#     l1_bounded 90 record virtio-trace-collect record --chardev-dir "$L2_PORTS" ...
#     l1_say quit 30; l1_l2_wait_off 60
#
# L2 is the e2e collector image (vt_collect_image: trace-agent as a daemon, vt-e2e-guest on the
# extra port vt-test), in /l2 of the L1 image. Configuration (set before l1_l2_start):
#   L2_SMP=2 L2_MEM=512 L2_TIMEOUT=240 (seconds, then SIGTERM to its QEMU)
#   L2_KEEP=sched,irq,timer   event systems L2's /init keeps enabled with one CPU online (as
#                   lib.sh's VT_TCG_KEEP: L2's code is run by the outer QEMU's TCG too); empty: none
#   L2_CPU=host,-xsave (with XSAVE, L2's 6.1 kernel prints a 60-line "XSAVE consistency
#                   problem" WARNING in its boot under nested SVM on TCG: its serial console,
#                   an I/O exit per character, then costs 20-35 s of a 30 s boot)
#   L2_ACCEL=kvm    L2_APPEND (more kernel command line)    L2_QEMU_EXTRA (more
#                   QEMU words, split on blanks)    L2_NOPORTS=1: no virtio-serial at all (the
#                   FIFOs `setup` made stay, nobody on the guest's side)
#   L2_KERNEL=/l2/vmlinux L2_INITRD=/l2/initramfs.cpio   another L2 image (e.g. one on the 9p
#                   share, as tests/bench/bench-peer.sh --kvm brings its own)
#   L2_REBOOT=1     a reset or reboot restarts L2 (default: -no-reboot, it powers off)
#   L2_HMP=1        a second monitor (HMP) on FIFOs for l1_hmp, its output in L2_DIR/hmp.log
#                   (the collector's --qmp holds the QMP socket)
#   L2_MACHINE=pc   (q35 for a vIOMMU)    L2_QEMU_FIRST (QEMU words before every device:
#                   -device intel-iommu,... must come first)    L2_SERIAL_OPTS (appended to
#                   setup's virtio-serial-pci devices, e.g. ",iommu_platform=on,disable-legacy=on")
# After l1_l2_start: L2_DIR, L2_PORTS (the setup-made ports), L2_PID (L2's QEMU), L2_TPID (its
# timeout), L2_CONSOLE and L2_STDERR (live on the 9p share: what L2 and its QEMU said, copied
# to OUT by l1_l2_wait_off).
# Output lines start with "L1: ".

L1_LIVE=${L1_LIVE:-/mnt/run}

l1_log() { echo "L1: $*"; }
l1_up() { cut -d' ' -f1 /proc/uptime; }

# l1_stacks PID WHY: every thread of PID with its state, wchan, system call (number and
# arguments, /proc/TID/syscall) and kernel stack, then what its fds are, on stdout.
l1_stacks() {
    l1_log "stacks of $1 ($(cat "/proc/$1/comm" 2>/dev/null)) at up=$(l1_up): $2"
    for t in /proc/"$1"/task/*; do
        [ -d "$t" ] || continue
        echo "  tid ${t##*/} $(cat "$t/comm" 2>/dev/null) $(grep '^State' "$t/status" 2>/dev/null | tr -s '\t ' ' ')" \
             "wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1-4 "$t/syscall" 2>/dev/null)"
        sed 's/^/      /' "$t/stack" 2>/dev/null
    done
    echo "  fds: $(for f in /proc/"$1"/fd/*; do printf '%s=%s ' "${f##*/}" "$(readlink "$f")"; done)"
    # The tracefs instances it reads: how full each CPU's buffer is against buffer_percent.
    for i in $(for f in /proc/"$1"/fd/*; do readlink "$f"; done | sed -n 's|^\(/sys/kernel/tracing/instances/[^/]*\)/.*|\1|p' | sort -u); do
        echo "  instance ${i##*/}: buffer_size_kb $(cat "$i/buffer_size_kb") buffer_percent" \
             "$(cat "$i/buffer_percent" 2>/dev/null) tracing_on $(cat "$i/tracing_on")" \
             "$(for c in "$i"/per_cpu/cpu*; do printf '%s: %s; ' "${c##*/}" "$(grep -E '^(entries|bytes|read events):' "$c/stats" | tr '\n' ' ')"; done)"
    done
}

# l1_bounded SECS LABEL CMD...: run CMD; after SECS show its stacks and SIGTERM it; after 20 s
# more (stacks every 5 s) SIGKILL it; 10 s later say that it survives SIGKILL and leave it.
# Returns CMD's status (137 when it survives SIGKILL) and sets L1_STOPPED to what it took:
# "" (it ended by itself), term, kill or unkillable. Prints "L1: LABEL exited N after S s".
l1_bounded() {
    _secs=$1 _label=$2
    shift 2
    _t0=$(l1_up)
    "$@" &
    _p=$!
    _n=0
    L1_STOPPED=
    while kill -0 "$_p" 2>/dev/null; do
        _n=$((_n + 1))
        if [ -z "$L1_STOPPED" ] && [ $((_n / 5)) -ge "$_secs" ]; then
            L1_STOPPED="term"
            l1_stacks "$_p" "$_label still running after $_secs s: SIGTERM"
            kill -TERM "$_p"
        elif [ "$L1_STOPPED" = term ] && [ $((_n % 25)) = 0 ]; then
            l1_stacks "$_p" "$_label still running after SIGTERM"
            if [ $((_n / 5)) -ge $((_secs + 20)) ]; then
                l1_log "$_label: SIGKILL"
                kill -KILL "$_p"
                L1_STOPPED="kill"
            fi
        elif [ "$L1_STOPPED" = kill ] && [ $((_n / 5)) -ge $((_secs + 30)) ]; then
            L1_STOPPED="unkillable"
            l1_stacks "$_p" "$_label survives SIGKILL"
            l1_log "$_label: giving up on it"
            return 137
        fi
        usleep 200000
    done
    wait "$_p"
    _rc=$?
    l1_log "$_label exited $_rc after $(awk -v a="$_t0" -v b="$(l1_up)" 'BEGIN { printf "%.1f", b - a }') s${L1_STOPPED:+ (stopped: $L1_STOPPED)}"
    return "$_rc"
}

# l1_l2_start NAME [DIR]: make NAME's ports with `virtio-trace-collect setup --create` and start
# L2 with them under KVM, bounded by L2_TIMEOUT. DIR (default NAME) names its directory
# /run/vt/DIR and its console l2-DIR-console.log: a second QEMU of the same guest (a migration's
# destination, the same devices on ports of its own). Returns 1 when QEMU did not start.
l1_l2_start() {
    L2_NAME=$1
    _dir=${2:-$1}
    L2_DIR=/run/vt/$_dir
    L2_PORTS=$L2_DIR/ports
    L2_CONSOLE=$L1_LIVE/l2-$_dir-console.log
    L2_STDERR=$L1_LIVE/l2-$_dir-qemu.stderr
    mkdir -p "$L2_DIR"
    # --accel kvm: no check of /dev/kvm here (scenario-guest.sh's SCN_SETUP_AUTO makes one).
    virtio-trace-collect setup --vcpus "${L2_SMP:-2}" --dir "$L2_PORTS" --name "$L2_NAME" --create --accel kvm \
        >"$L2_DIR/setup.args" || { l1_log "setup exited $?"; return 1; }
    mkfifo "$L2_PORTS/vt-test.in" "$L2_PORTS/vt-test.out"
    _keep=${L2_KEEP-sched,irq,timer}
    _append="console=ttyS0 loglevel=5 trace_clock=x86-tsc panic=-1 idle=halt vt.run=/etc/vt/agent-run"
    [ -z "$_keep" ] || _append="$_append maxcpus=1 trace_event=$(echo "$_keep" | sed 's/,/:*,/g'):* vt.keep=$_keep"
    # setup prints one option or value per line, quoted for sh: join the lines, or busybox's
    # eval stops at the first newline.
    if [ "${L2_NOPORTS:-0}" = 1 ]; then
        set -- -name "$L2_NAME,debug-threads=on"
        _append="$_append vt.ports=0"
    else
        # Only the ports: the accelerator is L2_ACCEL's (setup's -accel is checked elsewhere).
        grep -v '^-accel ' "$L2_DIR/setup.args" |
            sed "s/^\(-device virtio-serial-pci,.*\)\$/\1${L2_SERIAL_OPTS:-}/" >"$L2_DIR/setup.qemu"
        eval "set -- $(tr '\n' ' ' <"$L2_DIR/setup.qemu")"
        set -- "$@" -chardev "pipe,id=vttest,path=$L2_PORTS/vt-test" \
            -device "virtserialport,bus=vtser0.0,nr=30,chardev=vttest,name=vt-test"
        _append="$_append vt.ports=$((${L2_SMP:-2} + 2))"
    fi
    [ -z "${L2_APPEND:-}" ] || _append="$_append $L2_APPEND"
    [ "${L2_REBOOT:-0}" = 1 ] || set -- "$@" -no-reboot
    if [ "${L2_HMP:-0}" = 1 ]; then
        mkfifo "$L2_DIR/hmp.in" "$L2_DIR/hmp.out"
        cat "$L2_DIR/hmp.out" >"$L2_DIR/hmp.log" &
        set -- "$@" -chardev "pipe,id=hmp,path=$L2_DIR/hmp" -mon chardev=hmp,mode=readline
    fi
    # shellcheck disable=SC2086
    timeout "${L2_TIMEOUT:-240}" qemu-system-x86_64 -machine "${L2_MACHINE:-pc}" -accel "${L2_ACCEL:-kvm}" \
        -cpu "${L2_CPU:-host,-xsave}" ${L2_QEMU_FIRST:-} \
        -smp "${L2_SMP:-2}" -m "${L2_MEM:-512}" -nodefaults -no-user-config -display none \
        -serial "file:$L2_CONSOLE" -pidfile "$L2_DIR/qemu.pid" \
        -kernel "${L2_KERNEL:-/l2/vmlinux}" -initrd "${L2_INITRD:-/l2/initramfs.cpio}" -append "$_append" "$@" ${L2_QEMU_EXTRA:-} \
        </dev/null >"$L2_STDERR" 2>&1 &
    L2_TPID=$!
    L2_PID=
    _n=0
    while [ $_n -lt 300 ]; do
        [ -s "$L2_DIR/qemu.pid" ] && { read -r L2_PID <"$L2_DIR/qemu.pid"; break; }
        kill -0 "$L2_TPID" 2>/dev/null || break
        usleep 100000
        _n=$((_n + 1))
    done
    if [ -z "$L2_PID" ]; then
        l1_log "L2's QEMU did not start:"
        sed 's/^/    /' "$L2_STDERR"
        return 1
    fi
    l1_log "L2 $L2_NAME: QEMU pid $L2_PID (-machine ${L2_MACHINE:-pc} -accel ${L2_ACCEL:-kvm} -cpu ${L2_CPU:-host,-xsave} -smp ${L2_SMP:-2}${L2_QEMU_FIRST:+ $L2_QEMU_FIRST}${L2_QEMU_EXTRA:+ $L2_QEMU_EXTRA}) at up=$(l1_up)"
}

# l1_l2_up NAME: l1_l2_start NAME, its QEMU's pid in OUT/l2pid, vt-e2e-guest's hello within
# 150 s, then L2's QEMU threads ("TID COMM") in OUT/l2-threads. When L2 does not answer: the last
# lines of its console, its end, and 1 returned, as when its QEMU did not start.
l1_l2_up() {
    l1_l2_start "$1" || return 1
    echo "$L2_PID" >"$OUT/l2pid"
    if ! l1_say hello 150; then
        l1_log "L2 did not answer; its console:"
        tail -n 20 "$L2_CONSOLE" | sed 's/^/    /'
        l1_l2_wait_off 1
        return 1
    fi
    for t in /proc/"$L2_PID"/task/*; do echo "${t##*/} $(cat "$t/comm")"; done >"$OUT/l2-threads"
}

# l1_say LINE SECS: send LINE to vt-e2e-guest in L2 (port vt-test) and set ANSWER to its
# reply; returns 1 when none came within SECS.
l1_say() {
    ANSWER=
    exec 7<>"$L2_PORTS/vt-test.in" 8<>"$L2_PORTS/vt-test.out"
    echo "$1" >&7
    read -r -t "$2" ANSWER <&8
    _rc=$?
    exec 7>&- 8<&-
    l1_log "L2 $1 -> ${ANSWER:-no answer in $2 s} (up=$(l1_up))"
    return $_rc
}

# l1_hmp COMMAND: send COMMAND to L2's HMP monitor (L2_HMP=1); its output goes to hmp.log.
l1_hmp() {
    echo "$1" >"$L2_DIR/hmp.in"
    l1_log "L2 HMP: $1 (up=$(l1_up))"
}

# l1_hmp_status WANT SECS: ask `info status` until it says WANT (running, paused); 1 after SECS.
l1_hmp_status() {
    _n=0
    while [ $_n -lt $(($2 * 20)) ]; do
        _seen=$(grep -c "VM status: $1" "$L2_DIR/hmp.log" 2>/dev/null)
        echo "info status" >"$L2_DIR/hmp.in"
        usleep 50000
        [ "$(grep -c "VM status: $1" "$L2_DIR/hmp.log" 2>/dev/null)" -gt "${_seen:-0}" ] && return 0
        _n=$((_n + 1))
    done
    return 1
}

# l1_kvm_offsets: "vcpuN OFFSET" of L2's vCPUs, from KVM's debugfs.
l1_kvm_offsets() {
    for f in /sys/kernel/debug/kvm/"$L2_PID"-*/vcpu*/tsc-offset; do
        [ -r "$f" ] || continue
        _v=${f%/tsc-offset}
        echo "${_v##*/} $(cat "$f")"
    done
}

# l1_l2_wait_off SECS: wait for L2 to power off; after SECS, its QEMU's stacks and SIGTERM.
# Copies L2's console to OUT. Returns 0 when L2 powered off by itself.
l1_l2_wait_off() {
    _n=0 _rc=0
    while kill -0 "$L2_TPID" 2>/dev/null && [ $_n -lt $(($1 * 5)) ]; do
        usleep 200000
        _n=$((_n + 1))
    done
    if kill -0 "$L2_TPID" 2>/dev/null; then
        l1_stacks "$L2_PID" "L2 did not power off in $1 s"
        kill -TERM "$L2_PID"
        _rc=1
    fi
    wait "$L2_TPID" 2>/dev/null
    _st=$?
    [ -z "${OUT:-}" ] || cp "$L2_CONSOLE" "$L2_STDERR" "$OUT/" 2>/dev/null
    l1_log "L2 $L2_NAME ended at up=$(l1_up) (status $_st$([ $_rc = 0 ] || echo ', stopped'))"
    [ ! -s "$L2_STDERR" ] || sed 's/^/    L2 QEMU: /' "$L2_STDERR" | head -n 20
    return $_rc
}
