#!/bin/bash
# vt-suite: e2e
# test-libvirt-guest.sh: a libvirt domain traced by name. Starts its own virtlogd and libvirtd
# (no systemd; sockets and logs in the work dir) unless a libvirtd already runs (then uses it and
# leaves it running). Defines a 2-vCPU TCG domain (<domain type='qemu'>) that boots the collector
# e2e image directly (<kernel>, <initrd>, <cmdline>), with an extra pipe channel "vt-test" for
# vt-e2e-guest. Then: record --domain on the stopped domain fails naming `virsh start`;
# `setup --domain --apply` adds the channels and FIFOs and says "next boot"; a second apply
# changes nothing (the persistent XML is byte-identical); the domain starts; `record --domain
# NAME -e sched -e irq -e timer --host-events sched:sched_switch -- FLOOD` records it. Checks: exit
# 0; exactly N markers per guest CPU, each on its own CPU; `trace-cmd report -i host.dat -i
# guest-NAME.dat` merges guest markers and host sched_switch; the host file's GUEST option maps
# vCPU n to the thread QMP query-cpus-fast names (and /proc says that thread is "CPU n/TCG"), and
# the domain is not tainted after record --domain (virsh dominfo, its log; the test's own QMP
# query comes after that check);
# then `setup --apply --backend unix` rewrites them as unix channels with paths libvirt chooses
# and a second boot is recorded the same way (a user without access gets "permission denied");
# `setup --remove` restores the definition. Then the running domain with no reboot: it boots
# without trace channels and without an agent (its /init starts one when agent-ctl-path is
# hot-plugged, as udev and the package's unit do); `record --domain --wait` starts first and
# waits; `setup --apply --live` hot-plugs the three channels (unix sockets at paths libvirt
# chooses: libvirt hot-plugs no pipe) on the free ports 2..4 of its controller 0 and keeps them
# in the definition (a second one changes nothing); the recording
# is exact as above; `list` shows the domain, its ports, the agent's version and the guest's
# kernel; `setup --remove --live` unplugs them, the agent stops with exit status 0,
# the definition is as before, the guest booted once. Destroys and undefines the domain, stops the daemons
# it started (by pid), removes its files. Prints its time.
# Env: VT_BUILDDIR (default <repo>/build), VT_E2E_MARKERS (default 500), VT_KEEP=1 keeps the work
# dir. Exit: 0 pass, 1 fail, 77 skip.
echo "test-libvirt-guest: record --domain traces a libvirt TCG domain whose channels setup --domain --apply added: exact markers, merged report, GUEST vCPU map = QEMU's vCPU threads"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/libvirt-lib.sh"
VT_LOG_PREFIX=test-libvirt-guest
ME=test-libvirt-guest
N=${VT_E2E_MARKERS:-500}
DOM=vt-e2e-libvirt
DESC="virtio-trace e2e test domain (tests/e2e/test-libvirt-guest.sh)"

for t in libvirtd virtlogd virsh qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq; do
    command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "$ME: SKIP: needs root (a system libvirtd and its qemu user)"; exit 77; }

T0=$(vt_now)
WORK=$(mktemp -d /tmp/vt-test-libvirt-guest.XXXXXX)
chmod 755 "$WORK"	# QEMU runs as libvirt's qemu user: it must reach the kernel and the FIFOs
KEEP=${VT_KEEP:-0}
COLLECT_PID= DEFINED=0
cleanup() {
    [ -n "$COLLECT_PID" ] && kill -TERM "$COLLECT_PID" 2>/dev/null && wait "$COLLECT_PID" 2>/dev/null
    [ "$DEFINED" = 1 ] && libvirt_forget "$DOM"
    libvirt_down
    if [ "$KEEP" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail=0
bad() { echo "$ME: FAIL: $*"; fail=1; }

vt_collect_build; rc=$?
[ $rc = 0 ] || exit $rc
t=$(vt_now)
vt_collect_image "$WORK" libvirt-guest; rc=$?
[ $rc = 0 ] || exit $rc
T_IMAGE=$(vt_secs "$t" "$(vt_now)")
libvirt_boot_files

# --- libvirt: the running one, else our own (FACTS.md §6) ---
t=$(vt_now)
libvirt_up
T_DAEMON=$(vt_secs "$t" "$(vt_now)")

libvirt_stale "$DOM" "$DESC"

# The domain: the e2e image booted directly, as lib.sh boots it, plus the vt-test port.
mkfifo "$WORK/ports/vt-test.in" "$WORK/ports/vt-test.out"
libvirt_domain_xml "$WORK/domain.xml" "$DOM" "$DESC" "vt.run=/etc/vt/agent-run vt.ports=4" destroy
V define "$WORK/domain.xml" >/dev/null || { echo "$ME: FAIL: libvirt refused the domain"; exit 1; }
DEFINED=1

# Before setup: the domain is not running, and record says what to do.
"$COLLECT" record --domain "$DOM" --connect "$URI" -d 1 -o "$WORK/out0" >"$WORK/rec0.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "domain $DOM is not running: start it" "$WORK/rec0.log" ||
    { sed 's/^/    | /' "$WORK/rec0.log"; bad "record of a stopped domain: exit $rc, want 1 and 'not running'"; }

V dumpxml --inactive "$DOM" >"$WORK/def0.xml"
"$COLLECT" setup --domain "$DOM" --connect "$URI" --apply --dir "$WORK/ports" >"$WORK/setup1.log" 2>&1 ||
    { cat "$WORK/setup1.log"; echo "$ME: FAIL: setup --apply exited $?"; exit 1; }
sed "s/^/$ME: setup: /" "$WORK/setup1.log"
grep -q "takes effect at the next boot" "$WORK/setup1.log" || bad "setup --apply does not say 'next boot'"
V dumpxml --inactive "$DOM" >"$WORK/def1.xml"
n=$(grep -c "<target type='virtio' name='\(trace-path-cpu[01]\|agent-ctl-path\)'/>" "$WORK/def1.xml")
[ "$n" = 3 ] || bad "the definition has $n trace channels after apply, want 3"
for p in trace-path-cpu0 trace-path-cpu1 agent-ctl-path; do
    for s in in out; do
        [ -p "$WORK/ports/$p.$s" ] || bad "no FIFO $WORK/ports/$p.$s"
    done
done
"$COLLECT" setup --domain "$DOM" --connect "$URI" --apply --dir "$WORK/ports" >"$WORK/setup2.log" 2>&1 ||
    bad "the second setup --apply exited $?"
grep -q "nothing changed" "$WORK/setup2.log" || bad "the second apply did not say 'nothing changed': $(cat "$WORK/setup2.log")"
V dumpxml --inactive "$DOM" >"$WORK/def2.xml"
cmp -s "$WORK/def1.xml" "$WORK/def2.xml" || bad "the second apply changed the definition"

# check_unix_live: the running domain's unix channels are where libvirt put them, and a user
# who may not use them gets a permission error that says so, before anything is written.
check_unix_live() {
    local p n rc
    V dumpxml "$DOM" >"$WORK/live-unix.xml"
    for p in trace-path-cpu0 trace-path-cpu1 agent-ctl-path; do
        grep -qE "<source mode='bind' path='/[^']*/domain-[0-9]+-$DOM/$p'/>" "$WORK/live-unix.xml" ||
            bad "the live XML has no libvirt-chosen socket for $p"
    done
    n=$(grep -c "domain-[0-9]*-$DOM/" "$WORK/live-unix.xml")
    echo "$ME: live XML: $n channel sockets in $(sed -n "s|.*path='\(/[^']*/domain-[0-9]*-$DOM\)/agent-ctl-path'.*|\1|p" "$WORK/live-unix.xml")"
    if command -v setpriv >/dev/null; then
        local nobody="setpriv --reuid=65534 --regid=65534 --clear-groups" why
        # A copy nobody can run wherever the tree is, with the libvirt module it loads from beside it.
        if ! why=$(vt_for_user "$WORK" "$nobody" "$COLLECT" \
                   $(ls "$(dirname "$COLLECT")"/virtio-trace-collect-libvirt.so 2>/dev/null)); then
            echo "$ME: record as nobody: not tried: $why"
            return
        fi
        $nobody "$WORK/for-user/${COLLECT##*/}" record --domain "$DOM" \
            --connect "$URI" -d 1 -o "$WORK/nobody-out" >"$WORK/nobody.log" 2>&1
        rc=$?
        echo "$ME: record as nobody: exit $rc: $(grep -m1 -i 'permission' "$WORK/nobody.log")"
        [ $rc = 1 ] && grep -q "permission denied" "$WORK/nobody.log" && [ ! -e "$WORK/nobody-out" ] ||
            { sed 's/^/    | /' "$WORK/nobody.log"; bad "record as nobody: exit $rc, want 1 with 'permission denied' and no output"; }
    fi
}

# boot_record PHASE [live]: start the domain, record it by name, let it power off, check the
# files. Sets T_BOOT_<PHASE> and T_REC_<PHASE>. With "live" the domain boots without trace
# channels and no agent: record --wait starts first, `setup --apply --live` hot-plugs the
# channels into the running domain (the guest's /init starts the agent, vt.hotplug=), and
# `setup --remove --live` unplugs them before the guest leaves (the agent stops with its port).
boot_record() {
    local phase=$1 live=${2:-} t crc i cpu cnt man mk mkother mm hs c tid comm G OUT QPID up th n
    local end_line="E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after BYE"
    t=$(vt_now)
    LOG_AT=$(cat "/var/log/libvirt/qemu/$DOM.log" 2>/dev/null | wc -l)
    V start "$DOM" >/dev/null || { tail -n5 "/var/log/libvirt/qemu/$DOM.log" 2>/dev/null; echo "$ME: FAIL: the domain did not start"; exit 1; }
    VT_QEMU_PID=$(cat "/run/libvirt/qemu/$DOM.pid" 2>/dev/null)
    VT_RUNDIR=$WORK
    # A guest that died or hung in its boot (vt_guest_died in lib.sh) boots once more.
    up=1
    vt_test_say "$WORK/ports" hello 60 || up=0
    if [ $up = 0 ] && [ -n "$VT_QEMU_PID" ] && vt_guest_died; then
        vt_guest_say_died "$ME" "before any of the test's commands"
        V destroy "$DOM" >/dev/null 2>&1
        V start "$DOM" >/dev/null || { echo "$ME: FAIL: the domain did not start again"; exit 1; }
        up=1
        vt_test_say "$WORK/ports" hello 60 || up=0
    fi
    if [ $up = 0 ]; then
        tr -d '\r' <"$WORK/console.log" | tail -20
        echo "$ME: FAIL: vt-e2e-guest did not answer hello in 60 s"; exit 1
    fi
    T_BOOT=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: guest says: $ANSWER (boot ${T_BOOT} s)"

    cat >"$WORK/flood" <<SH
#!/bin/bash
exec 7<>"$WORK/ports/vt-test.in" 8<>"$WORK/ports/vt-test.out"
echo "flood vt-e2e $N 0 64" >&7
read -r -t 120 answer <&8 || answer="no answer"
echo "\$answer" >"$WORK/flood.answer"
sleep 0.5
[[ \$answer == ok* ]]
SH
    chmod +x "$WORK/flood"
    [ "$phase" = unix ] && check_unix_live
    if [ -n "$live" ]; then
        end_line="E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after its port was unplugged"
        vt_test_say "$WORK/ports" "sh test -e /dev/virtio-ports/agent-ctl-path && echo E2E: before: control port || echo E2E: before: no control port" 30 ||
            bad "vt-e2e-guest did not run the check"
        n=$(V dumpxml "$DOM" | grep -c "<target type='virtio' name='\(trace-path-cpu[01]\|agent-ctl-path\)'[^>]*/>")
        [ "$n" = 0 ] || bad "the running domain has $n trace channels before the hot-plug, want 0"
    fi
    OUT=$WORK/out-$phase
    t=$(vt_now)
    timeout -k 5 200 "$COLLECT" record --domain "$DOM" --connect "$URI" ${live:+--wait=120} -e sched -e irq -e timer \
        --host-events sched:sched_switch --sync-probes 50 -o "$OUT" --verbose -- "$WORK/flood" 2>&1 |
        while IFS= read -r l; do echo "$(vt_secs "$t" "$(vt_now)") $l"; done >"$WORK/record-$phase.log" &
    COLLECT_PID=$!
    if [ -n "$live" ]; then
        # record waits for the channels (the domain has none); then they are hot-plugged.
        for ((i = 0; i < 100; i++)); do
            grep -q 'waiting for its trace ports to appear' "$WORK/record-$phase.log" && break
            sleep 0.1
        done
        grep -q "guest $DOM: waiting for its trace ports to appear" "$WORK/record-$phase.log" ||
            bad "record --wait did not say it waits for the ports"
        th=$(vt_now)
        T_PLUG_AT=$(vt_secs "$t" "$th")
        "$COLLECT" setup --domain "$DOM" --connect "$URI" --apply --live \
            >"$WORK/setup-live.log" 2>&1 || bad "setup --apply --live exited $?"
        T_PLUG=$(vt_secs "$th" "$(vt_now)")
        sed "s/^/$ME: setup: /" "$WORK/setup-live.log"
        grep -q "hot-plugged 3 channels (trace-path-cpu0..1, agent-ctl-path) into the running domain on virtio-serial controller 0, ports 2..4, and kept them in its persistent definition (unix sockets, paths chosen by libvirt)" "$WORK/setup-live.log" ||
            bad "setup --apply --live did not hot-plug 3 channels on controller 0 ports 2..4"
        n=$(V dumpxml "$DOM" | grep -c "<target type='virtio' name='\(trace-path-cpu[01]\|agent-ctl-path\)'[^>]*/>")
        [ "$n" = 3 ] || bad "the running domain has $n trace channels after the hot-plug, want 3"
        n=$(V dumpxml --inactive "$DOM" | grep -c "<target type='virtio' name='\(trace-path-cpu[01]\|agent-ctl-path\)'[^>]*/>")
        [ "$n" = 3 ] || bad "the definition has $n trace channels after the hot-plug, want 3"
        "$COLLECT" setup --domain "$DOM" --connect "$URI" --apply --live \
            >"$WORK/setup-live2.log" 2>&1 || bad "the second --apply --live exited $?"
        grep -q 'nothing changed' "$WORK/setup-live2.log" || bad "the second --apply --live: $(cat "$WORK/setup-live2.log")"
    fi
    wait "$COLLECT_PID"
    crc=$?
    COLLECT_PID=
    T_REC=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: record exited $crc after ${T_REC} s; flood: $(cat "$WORK/flood.answer" 2>/dev/null)"
    [ $crc = 0 ] || { sed 's/^/    | /' "$WORK/record-$phase.log"; bad "record exited $crc, want 0"; }
    # record --domain asks QEMU nothing through libvirt (a custom monitor command would taint the
    # domain): its taint flags are still empty here, before this test's own query-cpus-fast below.
    V dominfo "$DOM" >"$WORK/dominfo-$phase.txt" 2>&1 || bad "virsh dominfo failed"
    if grep -qi 'taint' "$WORK/dominfo-$phase.txt" ||
        tail -n +"$((LOG_AT + 1))" "/var/log/libvirt/qemu/$DOM.log" 2>/dev/null | grep -aqi 'tainted'; then
        cat "$WORK/dominfo-$phase.txt" | sed "s/^/$ME:   /"
        tail -n +"$((LOG_AT + 1))" "/var/log/libvirt/qemu/$DOM.log" 2>/dev/null | grep -ai 'taint' | sed "s/^/$ME:   /"
        bad "record --domain tainted the domain"
    else
        echo "$ME: the domain is not tainted after record --domain (virsh dominfo, its log)"
    fi

    # QEMU's own view of its vCPU threads, for the GUEST option check.
    V qemu-monitor-command "$DOM" '{"execute":"query-cpus-fast"}' >"$WORK/cpus.json" ||
        bad "qemu-monitor-command query-cpus-fast failed"
    jq -r '.return[] | "\(."cpu-index") \(."thread-id")"' "$WORK/cpus.json" | sort -n >"$WORK/qmp-map.txt"
    QPID=$(cat "/run/libvirt/qemu/$DOM.pid" 2>/dev/null)
    while read -r c tid; do
        comm=$(cat "/proc/${QPID:-0}/task/$tid/comm" 2>/dev/null)
        [[ $comm == "CPU $c/"* ]] || bad "QMP's thread $tid for vCPU $c is '$comm' in /proc/${QPID:-?}/task, want 'CPU $c/...'"
    done <"$WORK/qmp-map.txt"


    # Where record's time went (-v lines, stamped with seconds since it started).
    grep -E 'waiting for|trace-agent .*CPUs|clock sync at (start|stop) done|: recording$|stopping$|wrote ' \
        "$WORK/record-$phase.log" | sed "s/^/$ME:   /"
    if [ -n "$live" ]; then
        T_ANSWER=$(awk '/trace-agent .*CPUs/ { print $1; exit }' "$WORK/record-$phase.log")
        echo "$ME: live: hot-plug at ${T_PLUG_AT} s of record's run took ${T_PLUG} s; the agent answered at ${T_ANSWER:-?} s"
        # list: the domain with its ports, and the agent (it runs on until its port goes) answering.
        th=$(vt_now)
        "$COLLECT" list --connect "$URI" "$DOM" >"$WORK/list-live.txt" 2>&1 || bad "list exited $?"
        echo "$ME: list took $(vt_secs "$th" "$(vt_now)") s:"
        sed "s/^/$ME:   /" "$WORK/list-live.txt"
        grep -qE "^$DOM +libvirt +2 vCPUs \+ control +trace-agent [0-9.]+ +[0-9]+\.[0-9]+\.[0-9]+-" "$WORK/list-live.txt" ||
            bad "list does not show the domain with its ports, an answering trace-agent and its kernel"
        # Unplugged while the guest runs: the agent stops with its port, the definition is as before.
        "$COLLECT" setup --domain "$DOM" --connect "$URI" --remove --live >"$WORK/remove-live.log" 2>&1 ||
            bad "setup --remove --live exited $?"
        sed "s/^/$ME: setup: /" "$WORK/remove-live.log"
        grep -q 'unplugged 3 channels from the running domain' "$WORK/remove-live.log" ||
            bad "setup --remove --live did not unplug 3 channels"
        n=$(V dumpxml "$DOM" | grep -c "<target type='virtio' name='\(trace-path-cpu[01]\|agent-ctl-path\)'[^>]*/>")
        [ "$n" = 0 ] || bad "the running domain has $n trace channels after --remove --live, want 0"
        V dumpxml --inactive "$DOM" >"$WORK/def-live1.xml"
        cmp -s "$WORK/def-live0.xml" "$WORK/def-live1.xml" ||
            { diff -u "$WORK/def-live0.xml" "$WORK/def-live1.xml" | head -20; bad "--remove --live did not restore the definition"; }
        for ((i = 0; i < 100; i++)); do
            grep -aq 'E2E: trace-agent exit status' "$WORK/console.log" && break
            sleep 0.1
        done
    fi

    # The guest leaves: vt-e2e-guest quits, the agent had its BYE, /init powers off.
    vt_test_say "$WORK/ports" quit 30 || bad "vt-e2e-guest did not answer quit"
    for ((i = 0; i < 600; i++)); do
        [ "$(V domstate "$DOM" 2>/dev/null)" = "shut off" ] && break
        sleep 0.1
    done
    if [ "$(V domstate "$DOM" 2>/dev/null)" != "shut off" ]; then
        bad "the domain did not power off within 60 s"
        # Where the vCPUs are (see vt_guest_where in lib.sh), twice.
        for i in 1 2; do
            V qemu-monitor-command --hmp "$DOM" "info registers -a" 2>&1 | tr -d '\r' |
                grep -oE 'CPU#[0-9]+|RIP=[0-9a-f]+' | paste -sd' ' | sed "s/^/$ME: guest vCPUs: /"
        done
    fi
    echo "  guest console:"
    tr -d '\r' <"$WORK/console.log" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    /'
    vt_check_console "$WORK/console.log" || fail=1
    grep -aq "$end_line" "$WORK/console.log" || bad "the guest side did not end cleanly"
    if [ -n "$live" ]; then
        [ "$(tr -d '\r' <"$WORK/console.log" | grep -ac '^VT-INIT: start')" = 1 ] || bad "the guest booted more than once"
        grep -aq '^E2E: before: no control port' "$WORK/console.log" || bad "the guest had a control port before the hot-plug"
        grep -aq '^VT-INIT: hotplug agent-ctl-path appeared: starting /etc/vt/agent-hotplug' "$WORK/console.log" ||
            bad "the guest's listener did not start the agent when agent-ctl-path appeared"
    fi

    G=$OUT/guest-$DOM.dat
    [ -s "$OUT/manifest.json" ] && [ -s "$G" ] && [ -s "$OUT/host.dat" ] ||
        { bad "record wrote no files ($(ls "$OUT" 2>/dev/null | tr '\n' ' '))"; echo "$ME: FAIL"; KEEP=1; exit 1; }
    trace-cmd report -i "$G" >"$WORK/guest.txt" 2>"$WORK/guest.err" ||
        bad "trace-cmd report of the guest file failed: $(head -3 "$WORK/guest.err")"
    trace-cmd report -i "$OUT/host.dat" -i "$G" >"$WORK/merged.txt" 2>"$WORK/merged.err" ||
        bad "merged trace-cmd report failed: $(head -3 "$WORK/merged.err")"
    M() { jq -r "$1" "$OUT/manifest.json"; }
    for cpu in 0 1; do
        cnt=$(grep -cE "^ *.* \[00$cpu\] " "$WORK/guest.txt")
        man=$(M ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
        mk=$(grep -cE "\[00$cpu\] .*vt-e2e cpu$cpu " "$WORK/guest.txt")
        mkother=$(grep -E "vt-e2e cpu$cpu " "$WORK/guest.txt" | grep -cvE "\[00$cpu\] ")
        mm=$(grep -E "^ *$(basename "$G"): .*vt-e2e cpu$cpu " "$WORK/merged.txt" | grep -c .)
        echo "$ME: cpu$cpu: report $cnt events, manifest $man; markers $mk on cpu$cpu, $mkother elsewhere, $mm in the merged report"
        [ "$cnt" = "$man" ] || bad "cpu$cpu: report has $cnt events, manifest $man"
        [ "$mk" = "$N" ] && [ "$mkother" = 0 ] || bad "cpu$cpu: $mk markers on cpu$cpu and $mkother elsewhere, want $N and 0"
        [ "$mm" = "$N" ] || bad "cpu$cpu: $mm markers in the merged report, want $N"
    done
    hs=$(grep -E '^ *host.dat: ' "$WORK/merged.txt" | grep -c 'sched_switch')
    echo "$ME: merged report: $(wc -l <"$WORK/merged.txt") lines, $hs host sched_switch"
    [ "$hs" -gt 0 ] || bad "the merged report lacks host sched_switch"
    [ "$(M '.guests[0].name')" = "$DOM" ] || bad "the manifest names the guest '$(M '.guests[0].name')', want $DOM"

    # The GUEST option: vCPU -> host thread, as QMP says, and /proc agrees those are the vCPU threads.
    trace-cmd dump --options "$OUT/host.dat" >"$WORK/options.txt" 2>&1 || bad "trace-cmd dump --options host.dat failed"
    sed -n '/Option GUEST/,/Option [A-Z]/p' "$WORK/options.txt" >"$WORK/guest-opt.txt"
    grep -q "$DOM" "$WORK/guest-opt.txt" || { cat "$WORK/options.txt"; bad "no GUEST option naming $DOM"; }
    # trace-cmd 3.1.6 prints each pair as "  VCPU TID [guest cpu, host pid]".
    sed -n 's/^[[:space:]]*\([0-9]\+\)[[:space:]]\+\([0-9]\+\)[[:space:]]*\[guest cpu, host pid\].*/\1 \2/p' \
        "$WORK/guest-opt.txt" | sort -n >"$WORK/dat-map.txt"
    echo "$ME: GUEST option map: $(tr '\n' ',' <"$WORK/dat-map.txt"); QMP: $(tr '\n' ',' <"$WORK/qmp-map.txt"); QEMU pid ${QPID:-?}"
    [ -s "$WORK/qmp-map.txt" ] && [ "$(wc -l <"$WORK/qmp-map.txt")" = 2 ] || bad "QMP named $(wc -l <"$WORK/qmp-map.txt") vCPU threads, want 2"
    cmp -s "$WORK/dat-map.txt" "$WORK/qmp-map.txt" ||
        { sed 's/^/    | /' "$WORK/guest-opt.txt"; bad "the GUEST option's vCPU map differs from QMP's"; }
    [ "$(awk '{print $2}' "$WORK/qmp-map.txt" | sort -u | wc -l)" = 2 ] || bad "the two vCPUs share a thread"
    eval "T_BOOT_$phase=\$T_BOOT T_REC_$phase=\$T_REC"
}

echo "$ME: boot 1: pipe channels in $WORK/ports"
boot_record pipe

# The same domain with unix channels whose paths libvirt chooses: apply rewrites ours.
"$COLLECT" setup --domain "$DOM" --connect "$URI" --apply --backend unix >"$WORK/setup-unix.log" 2>&1 ||
    bad "setup --apply --backend unix exited $?"
sed "s/^/$ME: setup: /" "$WORK/setup-unix.log"
grep -q "rewrote" "$WORK/setup-unix.log" || bad "apply --backend unix did not say it rewrote the channels"
V dumpxml --inactive "$DOM" >"$WORK/def-unix.xml"
n=$(grep -c "<channel type='unix'>" "$WORK/def-unix.xml")
[ "$n" = 3 ] || bad "the definition has $n unix channels, want 3"
echo "$ME: boot 2: unix channels, paths chosen by libvirt"
boot_record unix

echo "$ME: setup --remove:"
"$COLLECT" setup --domain "$DOM" --connect "$URI" --remove >"$WORK/setup3.log" 2>&1 || bad "setup --remove exited $?"
sed "s/^/$ME: setup: /" "$WORK/setup3.log"
V dumpxml --inactive "$DOM" >"$WORK/def3.xml"
cmp -s "$WORK/def0.xml" "$WORK/def3.xml" ||
    { diff -u "$WORK/def0.xml" "$WORK/def3.xml" | head -20; bad "setup --remove did not restore the definition"; }

# The running domain traced with no reboot: it boots without trace channels and no agent (its
# /init starts one when agent-ctl-path is hot-plugged), and gets them while it runs.
echo "$ME: boot 3: no trace channels; hot-plugged while it runs (setup --apply --live), unplugged (--remove --live)"
sed -e 's|vt.run=/etc/vt/agent-run vt.ports=4|vt.run=/etc/vt/agent-run vt.ports=1 vt.hotplug=/etc/vt/agent-hotplug|' \
    "$WORK/def3.xml" >"$WORK/domain-live.xml"
grep -q 'vt.hotplug=' "$WORK/domain-live.xml" || bad "the live domain's command line has no vt.hotplug="
V define "$WORK/domain-live.xml" >/dev/null || bad "libvirt refused the live domain"
V dumpxml --inactive "$DOM" >"$WORK/def-live0.xml"
boot_record live live

T_RUN=$(vt_secs "$T0" "$(vt_now)")
echo "$ME: timings: image ${T_IMAGE} s, libvirt up ${T_DAEMON} s; pipe: boot to vt-e2e-guest" \
     "${T_BOOT_pipe:-?} s, record ${T_REC_pipe:-?} s; unix: boot ${T_BOOT_unix:-?} s, record" \
     "${T_REC_unix:-?} s; live: boot ${T_BOOT_live:-?} s, record with the hot-plug ${T_REC_live:-?} s;" \
     "whole test ${T_RUN} s"
if [ $fail = 0 ]; then echo "$ME: PASS"; exit 0; fi
KEEP=1
echo "$ME: FAIL"
exit 1
