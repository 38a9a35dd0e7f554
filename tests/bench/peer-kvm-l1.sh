# shellcheck shell=sh
# peer-kvm-l1.sh: bench-peer.sh --kvm's scenario, run by vt_l1_run inside L1 (busybox sh):
#     sh peer-kvm-l1.sh OUT
# L1 has real KVM (tests/e2e/l1/README.md). It loads vhost_vsock and starts one L2 guest under
# KVM with 2 vCPUs, the ports `virtio-trace-collect setup` prints (ours) and a vhost-vsock-pci
# device (trace-cmd's), booted from the image bench-peer --kvm put on the share (/mnt/run/l2/:
# trace-agent, Debian's trace-cmd, vt-e2e-guest, tests/bench/peer-guest.sh with vt.peer_vsock=1).
# Then the same loads go through each mode in turn, in one L2 boot, the order rotated every repeat:
#   tc-vsock     `trace-cmd record -e HOSTEV -o trace.dat -A peer@CID -e sched -e irq -b 4096 LOAD`
#                against `trace-cmd agent` in L2: trace-cmd's vsock transport and the time sync it
#                negotiates, all defaults (its messages time out after 5 s)
#   tc-vsock-nt  the same with trace-cmd's own --notimeout on both ends (the guest's second agent,
#                `trace-cmd agent -p 824 --notimeout`; `-A peer@CID:824`)
#   ours         `virtio-trace-collect record --chardev-dir PORTS --name peer --qemu-pid L2PID
#                -e sched -e irq --buffer-size 4096 --host-events HOSTEV --no-kallsyms-cache
#                -o DIR -- LOAD` (a boot's first recording; the agent keeps its instance between
#                recordings, its default)
#   ours-kc      the same with --kallsyms-cache DIR (the package's default: the boot's first
#                ours-kc session fills it)
#   null         no recorder: LOAD alone, into an instance with tracing on (the floor this
#                machine puts under setup, teardown and the writers)
#   raw-w4k, raw-w64k, raw-splice, raw-vmsplice
#                the transport's own ceiling, no ftrace and no recorder: `vt-e2e-guest portw`
#                writes N KiB (rounded up to MiB; PEER_RAW_MIB) into each data port
#                trace-path-cpuK at once, one writer per port pinned to vCPU K, with write() of
#                4 KiB or 64 KiB buffers or, as trace-agent moves pages, splice() from a 1 MiB
#                pipe (refilled by tee(), or by vmsplice(): see vt-e2e-guest.c); here one
#                busybox `dd bs=1M iflag=fullblock` per port reads the port's FIFO as fast as
#                it can and counts the MiB (flat load only: no paced session in these modes)
#   raw-*-busy   the same with a busy loop pinned beside each writer (`vt-e2e-guest load burn`),
#                as ours' flood keeps every vCPU busy: the ceiling of a guest whose CPUs are busy
# LOAD (the recorder's COMMAND): wait until the recorded buffer's tracing_on reads 1, CLK clock
# rounds, N 1 KiB markers per vCPU (vt-e2e-guest flood, one pinned writer per vCPU) at RATE per
# second per vCPU (0: flat out), CLK clock rounds. A clock round: a host marker "vtclk ping T"
# in the recorder's host buffer, one guest marker "vtclkT cpuN 0" on each vCPU, a host marker
# "vtclk pong T" (the merged report must place each guest marker between the two).
# Meanwhile an instance of L1's own (vtpeer-clk, x86-tsc) records kvm:kvm_write_tsc_offset and,
# every 0.25 s, KVM's debugfs tsc-offset of each vCPU between two markers: the truth each file's
# offsets are held against.
# Each session's files go to OUT's share as /mnt/out/s/NNN-MODE-LOAD/ with row0 (key=value: the
# figures measured here) and done; bench-peer's side (tests/bench/peer-kvm-eval.py) reads them as
# they come and, for a ceiling step, writes the verdict back (verdict: ok, short R, lost, failed).
# A session is bounded by PEER_BOUND seconds. L2 found gone before a session is booted again
# (a line "event l2-gone ..." in /mnt/out/events).
# Env (VT_L1_ENV): PEER_MODES, PEER_REPEATS=3, PEER_N=20000, PEER_PACE=2048, PEER_SECS=4,
# PEER_CLK=5, PEER_CEIL_MODES ("" = no ceiling search), PEER_CEIL_REPEATS=3 (searches per mode),
# PEER_CEIL_MAX=65536, PEER_CID=3,
# PEER_HOSTEV=sched:sched_process_fork,sched:sched_process_exit, PEER_TRIES=3 (tc-vsock-nt
# sessions that failed are run again, up to this many times in all; tc-vsock's are not),
# PEER_BOUND=600, PEER_VERDICT_WAIT=900, PEER_RAW_MIB (MiB per port in the raw-* modes; default
# PEER_N KiB rounded up).
. /etc/vt/l1-lib.sh
OUT=$1
S=/mnt/out/s
P=/tmp/peer
T=/sys/kernel/tracing
CLKI=$T/instances/vtpeer-clk
mkdir -p "$S" "$P"
MODES=${PEER_MODES:-tc-vsock tc-vsock-nt ours ours-kc null}
REPEATS=${PEER_REPEATS:-3}
N=${PEER_N:-20000}
PACE=${PEER_PACE:-2048}
SECS=${PEER_SECS:-4}
CLK=${PEER_CLK:-5}
CID=${PEER_CID:-3}
HOSTEV=${PEER_HOSTEV:-sched:sched_process_fork,sched:sched_process_exit}
TRIES=${PEER_TRIES:-3}
BOUND=${PEER_BOUND:-600}
rc=0

up() { read -r UP _ </proc/uptime; }
event() { echo "event $*" >>/mnt/out/events; l1_log "$*"; }

modprobe vhost_vsock 2>/tmp/vhost.err || { event "vhost_vsock did not load: $(tr '\n' ' ' </tmp/vhost.err)"; exit 1; }
[ -c /dev/vhost-vsock ] || { event "no /dev/vhost-vsock"; exit 1; }
{
    echo "trace-cmd: $(trace-cmd --version 2>&1 | grep -m1 version)"
    echo "collector: $(virtio-trace-collect --version 2>&1 | head -n1)"
    echo "tsc_khz: $(dmesg | sed -n 's/.*tsc: Refined TSC clocksource calibration: \([0-9.]*\) MHz.*/\1/p; s/.*tsc: Detected \([0-9.]*\) MHz.*/\1/p' | tail -n1 | awk '{ printf "%d", $1 * 1000 }')"
    echo "l1: $(grep -c ^processor /proc/cpuinfo) CPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource), trace_clock $(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)"
    echo "l1_tsc: $(dmesg | grep -iE 'tsc.*unstable|Marking TSC' | head -n2 | tr '\n' ';')"
    # How much slower L1 (TCG) runs than the outer machine: a busybox shell loop and 10 starts of
    # the collector, timed here and by bench-peer on the outside.
    up; a=$UP; i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; up
    echo "calib_loop: $(awk -v a="$a" -v b="$UP" 'BEGIN { printf "%.2f", b - a }')"
    up; a=$UP; for i in 1 2 3 4 5 6 7 8 9 10; do virtio-trace-collect --version >/dev/null; done; up
    echo "calib_start: $(awk -v a="$a" -v b="$UP" 'BEGIN { printf "%.2f", b - a }')"
} >/mnt/out/info
sed 's/^/L1: /' /mnt/out/info

# The truth: KVM's offset writes and debugfs readings in an instance of our own.
mkdir -p "$CLKI"
echo x86-tsc >"$CLKI/trace_clock"
echo 2048 >"$CLKI/buffer_size_kb"
echo 0 >"$CLKI/tracing_on"
echo 1 >"$CLKI/events/kvm/kvm_write_tsc_offset/enable" || event "cannot enable kvm:kvm_write_tsc_offset in $CLKI"
clk_start() {
    echo >"$CLKI/trace"
    echo 1 >"$CLKI/tracing_on"
    rm -f "$P/clkstop"
    (
        while [ ! -e "$P/clkstop" ]; do
            s=
            echo "vtpeer-dbg0" >"$CLKI/trace_marker"
            for v in /sys/kernel/debug/kvm/"$L2_PID"-*/vcpu*; do
                o=
                read -r o <"$v/tsc-offset" 2>/dev/null
                s="$s ${v##*/}=$o"
            done
            echo "vtpeer-dbg$s" >"$CLKI/trace_marker"
            usleep 250000
        done
    ) &
    CLKPID=$!
}
clk_stop() {
    touch "$P/clkstop"
    wait "$CLKPID" 2>/dev/null
    echo 0 >"$CLKI/tracing_on"
    cat "$CLKI/trace" >"$1/clk.txt"
    grep -E '^(entries|overrun):' "$CLKI/per_cpu/cpu0/stats" "$CLKI/per_cpu/cpu1/stats" 2>/dev/null |
        tr '\n' ' ' >"$1/clk.stats"
}

BOOT=0
l2_boot() {
    BOOT=$((BOOT + 1))
    L2_APPEND="vt.peer_vsock=1" L2_KEEP=sched,irq L2_TIMEOUT=${PEER_L2_TIMEOUT:-14400}
    L2_KERNEL=/mnt/run/l2/vmlinux L2_INITRD=/mnt/run/l2/initramfs.cpio
    L2_QEMU_EXTRA="-device vhost-vsock-pci,guest-cid=$CID -d cpu_reset,guest_errors -D $L1_LIVE/l2-qemu-b$BOOT.log"
    export L2_APPEND L2_KEEP L2_TIMEOUT L2_KERNEL L2_INITRD L2_QEMU_EXTRA
    l1_l2_start "peer-b$BOOT" || return 1
    up; T0=$UP
    l1_say hello 300 || { tail -n 30 "$L2_CONSOLE" | sed 's/^/    L2: /'; return 1; }
    HZ=${ANSWER##*hz=}
    up
    event "l2-boot $BOOT pid=$L2_PID answered after $(awk -v a="$T0" -v b="$UP" 'BEGIN { printf "%.1f", b - a }') s"
    grep -a PEER "$L2_CONSOLE" | sed 's/^/    /'
    l1_say "ls $T/instances" 10 && GINST=${ANSWER#ok}
    HINST=$(ls $T/instances | tr '\n' ' ')
    KCACHE=$P/kcache-b$BOOT
    mkdir -p "$KCACHE"
    VHOST=
    for p in /proc/[0-9]*; do
        c=
        read -r c <"$p/comm" 2>/dev/null
        [ "$c" = "vhost-$L2_PID" ] && VHOST="$VHOST $p/stat"
    done
    KVMDIR=$(ls -d /sys/kernel/debug/kvm/"$L2_PID"-* 2>/dev/null | head -n1)
    event "l2-boot $BOOT: vhost workers:${VHOST:- none}; KVM debugfs ${KVMDIR:-none}"
}
l2_boot || { event "L2 did not come up"; exit 1; }

# The load: a script each recorder runs as its COMMAND (busybox sh; L2_PORTS fixed per boot).
write_load() {
cat >"$P/load.sh" <<EOF
# load.sh INSTANCE N RATE DIR COMMS CLK HOSTMARKER
say() {
    ANSWER=
    exec 7<>"$L2_PORTS/vt-test.in" 8<>"$L2_PORTS/vt-test.out"
    echo "\$1" >&7
    read -r -t "\${2:-60}" ANSWER <&8
    _r=\$?
    exec 7>&- 8<&-
    return \$_r
}
INST=\$1 NN=\$2 RATE=\$3 DIR=\$4 COMMS=\$5 NCLK=\$6 HMS=\$7
hm=/dev/null
# rounds TAG: NCLK clock rounds (host marker, one guest marker per vCPU, host marker).
rounds() {
    [ "\$hm" != /dev/null ] || for f in \$HMS; do [ -w "\$f" ] && hm=\$f; done
    k=1
    while [ \$k -le "\$NCLK" ]; do
        echo "vtclk ping \$1\$k" >"\$hm"
        say "flood vtclk\$1\$k 1 0 64" 30
        echo "vtclk pong \$1\$k" >"\$hm"
        k=\$((k + 1))
    done
}
say "instance \$INST"
say "waiton 120" && { read -r u _ </proc/uptime; echo "\$u" >"\$DIR/on"; }
echo "\$ANSWER" >"\$DIR/waiton"
rounds a
say "ticks \$COMMS" && echo "\$ANSWER" >"\$DIR/g_on"
say cpustat && echo "\$ANSWER" >"\$DIR/c_on"
say "ticks vt-e2e-guest" && echo "\$ANSWER" >"\$DIR/w_on"
read -r u _ </proc/uptime; echo "\$u" >"\$DIR/fl0"
say "flood peer \$NN \$RATE 1024" 900
echo "\$ANSWER" >"\$DIR/flood"
say "ticks \$COMMS" && echo "\$ANSWER" >"\$DIR/g_end"
say cpustat && echo "\$ANSWER" >"\$DIR/c_end"
say "ticks vt-e2e-guest" && echo "\$ANSWER" >"\$DIR/w_end"
rounds b
read -r u _ </proc/uptime; echo "\$u" >"\$DIR/end"
EOF
}
write_load

# hostio: CPU ticks of L2's QEMU outside its vCPU threads (the chardevs' and devices' I/O) and of
# its vhost worker threads (VHOST, found at boot): the host side of either transport beyond the
# recorder. cat skips a thread that is gone; the comm ("CPU 0/KVM") may hold blanks.
hostio() {
    # shellcheck disable=SC2086
    cat /proc/"$L2_PID"/task/*/stat $VHOST 2>/dev/null | awk '{
        l = index($0, "("); r = 0
        for (i = length($0); i > l; i--) if (substr($0, i, 1) == ")") { r = i; break }
        if (substr($0, l + 1, r - l - 1) ~ /^CPU [0-9]+\/KVM$/) next
        split(substr($0, r + 2), f, " "); s += f[12] + f[13]
    } END { print s + 0 }'
}
val() { echo "$1" | sed -n "s/.*$2=\([0-9]*\).*/\1/p"; }
# vmstat: L2's VM exits from KVM's debugfs (summed over its vCPUs): "exits io mmio halt irq".
vmstat() {
    _s=
    for _f in exits io_exits mmio_exits halt_exits irq_exits; do
        _v=-
        [ -n "$KVMDIR" ] && read -r _v <"$KVMDIR/$_f" 2>/dev/null
        _s="$_s ${_v:--}"
    done
    echo $_s
}
# l1cpu: L1's own CPU time in ticks: "busy idle" (busy: user nice system irq softirq).
l1cpu() {
    read -r _c _u _n _sy _i _w _irq _si _ </proc/stat
    echo "$((_u + _n + _sy + _irq + _si)) $((_i + _w))"
}

# wchar_start FILE / wchar_stop: every 0.05 s, a line "UPTIME WCHAR" in FILE: the bytes L2's QEMU
# has written (/proc/PID/io wchar: the ports' data into their FIFOs, with the few bytes of its
# console and of vt-test), for the delivery rate of the ours* and raw-* modes
# (peer-kvm-eval.py). No fork in the loop: builtin reads, a read -t on a FIFO as the sleep.
wchar_start() {
    rm -f "$P/wstop"
    [ -p "$P/wsleep" ] || mkfifo "$P/wsleep"
    (
        while [ ! -e "$P/wstop" ]; do
            read -r _u _ </proc/uptime
            while read -r _k _v; do [ "$_k" = wchar: ] && _w=$_v; done <"/proc/$L2_PID/io"
            echo "$_u $_w"
            read -r -t 0.05 _ <>"$P/wsleep"
        done
    ) >"$1" &
    WPID=$!
    # Its first line before the session starts: the baseline the rate is counted from.
    while [ ! -s "$1" ]; do read -r -t 0.01 _ <>"$P/wsleep"; done
}
wchar_stop() {
    touch "$P/wstop"
    wait "$WPID" 2>/dev/null
}

# raw MODE N DIR: the raw-* modes' transfer (see the top); DIR/flood gets vt-e2e-guest's answer
# (written=BYTES ns=WRITERS), DIR/raw "mib=M got=G l1s=S": G MiB read of M per port, S seconds
# in L1 from the command to the last reader's end.
raw() {
    case ${1%-busy} in
    raw-w4k) _how="write 4096" ;;
    raw-w64k) _how="write 65536" ;;
    raw-splice) _how="splice 1048576" ;;
    raw-vmsplice) _how="vmsplice 1048576" ;;
    *) event "unknown mode $1"; return 1 ;;
    esac
    _mib=${PEER_RAW_MIB:-$((($2 + 1023) / 1024))} _ports= _pids= _c=0
    while [ $_c -lt "${L2_SMP:-2}" ]; do
        _ports="$_ports trace-path-cpu$_c"
        dd if="$L2_PORTS/trace-path-cpu$_c.out" of=/dev/null bs=1048576 count=$_mib iflag=fullblock \
            2>"$3/dd$_c" &
        _pids="$_pids $!"
        _c=$((_c + 1))
    done
    up; _t0=$UP
    echo "$_t0" >"$3/on"
    echo "$_t0" >"$3/fl0"
    # -busy: a busy loop per vCPU beside its writer, as ours' flood keeps every vCPU busy
    # (L1's two CPUs then run L2's busy vCPUs and QEMU's side of the ports alike).
    case $1 in *-busy)
        _c=0
        while [ $_c -lt "${L2_SMP:-2}" ]; do
            l1_say "sh vt-e2e-guest load burn $_c 600000 vtburn$_c >/dev/null 2>&1 &" 30 >/dev/null
            _c=$((_c + 1))
        done ;;
    esac
    l1_say "portw $_how $((_mib * 1024))$_ports" "$BOUND"
    echo "$ANSWER" >"$3/flood"
    case $1 in *-busy)
        l1_say 'sh for p in /proc/[0-9]*; do read c <$p/comm; case $c in vtburn*) kill ${p#/proc/};; esac; done 2>/dev/null' 30 >/dev/null ;;
    esac
    # The readers end once every byte came: bounded like a recorder, they count what did.
    _n=0
    for _p in $_pids; do
        while kill -0 "$_p" 2>/dev/null && [ $_n -lt $((BOUND * 5)) ]; do usleep 200000; _n=$((_n + 1)); done
        kill "$_p" 2>/dev/null
    done
    up
    # shellcheck disable=SC2086
    wait $_pids
    _got=0
    for _f in "$3"/dd*; do
        _r=$(sed -n 's/^\([0-9]*\)+[0-9]* records in/\1/p' "$_f")
        _got=$((_got + ${_r:-0}))
    done
    echo "mib=$((_mib * ${L2_SMP:-2})) got=$_got l1s=$(awk -v a="$_t0" -v b="$UP" 'BEGIN { printf "%.2f", b - a }')" >"$3/raw"
    echo "$UP" >"$3/end"
    [ "$_got" = $((_mib * ${L2_SMP:-2})) ]
}

# session LOAD MODE N RATE CLK: one recording; its dir on the share in SDIR.
NS=0
session() {
    load=$1 mode=$2 n=$3 rate=$4 clk=$5
    NS=$((NS + 1))
    id=$(printf '%03d' "$NS")
    d=$P/s/$id-$mode-$load
    mkdir -p "$d"
    if ! kill -0 "$L2_PID" 2>/dev/null; then
        event "l2-gone before session $id (boot $BOOT, pid $L2_PID): $(tail -n 3 "$L2_CONSOLE" | tr '\n' ' ') qemu: $(tr '\n' ' ' <"$L2_STDERR")"
        cp "$L2_CONSOLE" "$L2_STDERR" /mnt/out/ 2>/dev/null
        l2_boot && write_load || { event "L2 did not come back"; return 1; }
    fi
    case $mode in
    tc-*) inst=- comms="trace-cmd ksoftirqd/* kworker/*" hm=$T/trace_marker ;;
    ours*) inst=virtio-trace comms="trace-agent ksoftirqd/* kworker/*" hm="$T/instances/virtio-trace-collect-*/trace_marker" ;;
    null | raw-*) inst=nullrec comms="ksoftirqd/* kworker/*" hm=/dev/null ;;
    *) event "unknown mode $mode"; return 1 ;;
    esac
    l1_say "ticks $comms" 30 >/dev/null; g0=$(val "$ANSWER" ticks)
    l1_say cpustat 30 >/dev/null; c0=$ANSWER
    l1_say "ticks vt-e2e-guest" 30 >/dev/null; w0=$(val "$ANSWER" ticks)
    h0=$(hostio)
    x0=$(vmstat)
    l0=$(l1cpu)
    clk_start
    case $mode in ours* | raw-*) wchar_start "$d/wchar" ;; esac
    up; t0=$UP
    hev=
    case $mode in
    tc-*)
        for e in $(echo "$HOSTEV" | tr , ' '); do hev="$hev -e $e"; done
        target=peer@$CID extra=
        [ "$mode" = tc-vsock-nt ] && target=peer@$CID:824 extra=--notimeout
        # trace-cmd writes trace-peer.dat beside -o's file, and its temporary files in the cwd.
        cd "$d" || return 1
        # shellcheck disable=SC2086
        l1_bounded "$BOUND" "$mode" time -f '%U %S' -o "$d/time" \
            trace-cmd record $extra $hev -o "$d/trace.dat" -A "$target" -e sched -e irq -b 4096 \
            sh "$P/load.sh" "$inst" "$n" "$rate" "$d" "$comms" "$clk" "$hm" >"$d/rec.log" 2>&1
        rrc=$?
        cd / ;;
    ours*)
        kc=--no-kallsyms-cache
        [ "$mode" = ours-kc ] && kc="--kallsyms-cache $KCACHE"
        # shellcheck disable=SC2086
        l1_bounded "$BOUND" "$mode" time -f '%U %S' -o "$d/time" \
            virtio-trace-collect record --chardev-dir "$L2_PORTS" --name peer --qemu-pid "$L2_PID" \
            -e sched -e irq --buffer-size 4096 --host-events "$HOSTEV" $kc -o "$d/out" -q -- \
            sh "$P/load.sh" "$inst" "$n" "$rate" "$d" "$comms" "$clk" "$hm" >"$d/rec.log" 2>&1
        rrc=$? ;;
    raw-*)
        raw "$mode" "$n" "$d"
        rrc=$? ;;
    null)
        l1_bounded "$BOUND" "$mode" time -f '%U %S' -o "$d/time" \
            sh "$P/load.sh" "$inst" "$n" "$rate" "$d" "$comms" "$clk" "$hm" >"$d/rec.log" 2>&1
        rrc=$? ;;
    esac
    up; t1=$UP
    case $mode in ours* | raw-*) wchar_stop ;; esac
    stopped=$L1_STOPPED
    sleep 0.5	# the guest's trace-cmd reaps its recorders
    l1=$(l1cpu)
    x1=$(vmstat)
    clk_stop "$d"
    h1=$(hostio)
    l1_say "ticks $comms" 30 >/dev/null; g1=$(val "$ANSWER" ticks)
    l1_say cpustat 30 >/dev/null; c1=$ANSWER
    l1_say "ticks vt-e2e-guest" 30 >/dev/null; w1=$(val "$ANSWER" ticks)
    # What the session left behind: tracefs instances in L1 and in L2 that were not there at boot.
    left=
    for i in $(ls $T/instances); do
        case " $HINST " in *" $i "*) ;; *) left="$left host:$i"; rmdir "$T/instances/$i" 2>/dev/null ;; esac
    done
    # (virtio-trace is trace-agent's instance, which it keeps for a minute after a recording by
    # design: not a leftover.)
    if l1_say "ls $T/instances" 10 >/dev/null; then
        for i in ${ANSWER#ok}; do
            case " $GINST virtio-trace " in *" $i "*) ;; *) left="$left guest:$i"; l1_say "sh rmdir $T/instances/$i" 10 >/dev/null ;; esac
        done
    fi
    # trace-cmd names the time sync it negotiated (ours: the manifest, read on the other side).
    tsync=$(sed -n 's/^Negotiated \([^ ]*\) time sync protocol.*/\1/p' "$d/rec.log" | head -n1)
    {
        echo "load=$load mode=$mode n=$n rate=$rate clk=$clk id=$id boot=$BOOT rc=$rrc stopped=${stopped:-no}"
        echo "t0=$t0 t1=$t1 on=$(cat "$d/on" 2>/dev/null) end=$(cat "$d/end" 2>/dev/null) time=$(cat "$d/time" 2>/dev/null | tail -n1 | tr ' ' ,)"
        echo "g0=$g0 g1=$g1 w0=$w0 w1=$w1 h0=$h0 h1=$h1 hz=$HZ"
        echo "c0_busy=$(val "$c0" busy) c1_busy=$(val "$c1" busy) c0_idle=$(val "$c0" idle) c1_idle=$(val "$c1" idle)" \
            "c0_steal=$(val "$c0" steal) c1_steal=$(val "$c1" steal)"
        echo "tsync=${tsync:--} left=$(echo $left | tr ' ' ,)"
        echo "x0=$(echo $x0 | tr ' ' ,) x1=$(echo $x1 | tr ' ' ,) l0=$(echo $l0 | tr ' ' ,) l1=$(echo $l1 | tr ' ' ,)"
    } >"$d/row0"
    echo "$L2_PID" >"$d/l2pid"
    SDIR=$S/${d##*/}
    rm -rf "$SDIR"
    cp -a "$d" "$SDIR" && touch "$SDIR/done"
    rm -rf "$d"
    l1_log "session $id $load $mode: rc=$rrc$([ -z "$left" ] || echo ", left$left") ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
}

# failed DIR: the session delivered no guest file.
failed() {
    case ${1##*/} in
    *-tc-*) [ ! -s "$1/trace-peer.dat" ] ;;
    *-ours*) [ ! -s "$1/out/guest-peer.dat" ] ;;
    *) return 1 ;;
    esac
}
# run LOAD MODE N RATE CLK: a session, and for tc-vsock-nt up to TRIES in all until one delivers.
run() {
    tries=1
    [ "$2" = tc-vsock-nt ] && tries=$TRIES
    while :; do
        session "$@" || return 1
        failed "$SDIR" || return 0
        tries=$((tries - 1))
        [ $tries -gt 0 ] || return 0
        l1_log "$2 delivered nothing: again"
    done
}

set -- $MODES
NM=$#
r=0
while [ $r -lt "$REPEATS" ]; do
    m=0
    while [ $m -lt "$NM" ]; do
        set -- $MODES; shift $(((m + r) % NM)); run flat "$1" "$N" 0 "$CLK"
        set -- $MODES; shift $(((m + r + 1) % NM))
        case $1 in raw-*) ;; *) run paced "$1" $((PACE * SECS)) "$PACE" "$CLK" ;; esac
        m=$((m + 1))
    done
    r=$((r + 1))
done

# The lossless ceiling: paced 2 s sessions from PACE per vCPU, doubling while the verdict (from
# bench-peer's side, which reads the files) is ok, then one bisection step.
verdict() { # session dir -> VERDICT (ok, short R, lost, failed, none)
    _n=0
    VERDICT=none
    while [ $_n -lt "${PEER_VERDICT_WAIT:-900}" ]; do
        [ -s "$1/verdict" ] && { read -r VERDICT <"$1/verdict"; return 0; }
        sleep 1
        _n=$((_n + 1))
    done
}
lossless() { # MODE RATE -> 0 when ok
    run ceiling "$1" $(($2 * 2)) "$2" 0 || return 1
    verdict "$SDIR"
    l1_log "ceiling $1 $2/s: $VERDICT"
    case $VERDICT in ok) return 0 ;; esac
    return 1
}
# PEER_CEIL_REPEATS searches per mode, the modes interleaved: their spread.
search=1
while [ $search -le "${PEER_CEIL_REPEATS:-3}" ]; do
    for mode in ${PEER_CEIL_MODES-}; do
        ok=0 bad=0 rate=$PACE
        while [ $rate -le "${PEER_CEIL_MAX:-65536}" ]; do
            if lossless "$mode" $rate; then ok=$rate; rate=$((rate * 2)); else bad=$rate; break; fi
        done
        if [ $bad -gt 0 ] && [ $ok -gt 0 ]; then
            mid=$(((ok + bad) / 2))
            lossless "$mode" $mid && ok=$mid
        fi
        echo "ceiling mode=$mode search=$search ok=$ok bad=$bad" >>/mnt/out/ceilings
    done
    search=$((search + 1))
done

l1_say quit 30 || rc=1
l1_l2_wait_off 120 || rc=1
cp "$L2_CONSOLE" "$L2_STDERR" /mnt/out/ 2>/dev/null
touch /mnt/out/finished
exit $rc
