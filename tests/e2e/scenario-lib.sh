# shellcheck shell=bash
# tests/e2e/scenario-lib.sh: the frame of the collector scenarios (test-collect-*.sh): one TCG
# guest booted with the ports `virtio-trace-collect setup` prints, the static trace-agent as a
# daemon and vt-e2e-guest on the extra port "vt-test" (see vt_collect_image in agent-lib.sh),
# `virtio-trace-collect record` on the host, then exact checks of what it wrote.
# Source lib.sh and agent-lib.sh first, set ME, then:
#   scn_begin                         build, image (SCN_IMAGE names it, default collect-guest;
#                                     VT_AGENT_PRE as in vt_collect_image), WORK; cleanup on exit
#   scn_ports [pipe|unix]             setup-made ports in $PORTS; SETUP_ARGS (edit it before scn_boot)
#   scn_boot                          start the guest (VT_* as in lib.sh) and wait for vt-e2e-guest
#   scn_script FILE LINE...           FILE: a COMMAND for record that sends each LINE to vt-e2e-guest
#                                     and fails unless every answer starts with "ok"; a LINE "!CMD"
#                                     runs CMD on the host instead
#   scn_record ARG...                 record -o $OUT --quiet ARG..., bounded; sets CRC
#   scn_end                           quit vt-e2e-guest, wait for power-off, check the console
#                                     (SCN_AGENT_END=SIGTERM with vt.agent_keep=1 in VT_APPEND)
#   scn_counts NAME CPUS [lossy]      per-CPU events: report = manifest = guest stats; no loss unless lossy
#   scn_result                        print PASS/FAIL and exit
# Every check failure goes through bad(), which prints "ME: FAIL: ..." and fails the test.

SCN_COLLECT_PID=
scn_cleanup() {
    [ -n "$SCN_COLLECT_PID" ] && kill -TERM "$SCN_COLLECT_PID" 2>/dev/null && wait "$SCN_COLLECT_PID" 2>/dev/null
    vt_guest_stop 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}

fail=0
bad() { echo "$ME: FAIL: $*"; fail=1; }

scn_begin() {
    local t rc
    for t in qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq; do
        command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
    done
    T0=$(vt_now)
    WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
    KEEP=${VT_KEEP:-0}
    trap scn_cleanup EXIT
    trap 'exit 1' INT TERM HUP
    vt_collect_build; rc=$?
    [ $rc = 0 ] || exit $rc
    t=$(vt_now)
    vt_collect_image "$WORK" "${SCN_IMAGE:-collect-guest}${VT_AGENT_ROOT:+-package}"; rc=$?
    [ $rc = 0 ] || exit $rc
    T_IMAGE=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: collector $COLLECT, agent ${VT_AGENT_ROOT:+from }${VT_AGENT_ROOT:-$VT_STATIC_AGENT}"
    RUN=$WORK/run PORTS=$WORK/run/ports OUT=$WORK/out
    mkdir -p "$RUN"
}

scn_ports() {
    vt_collect_ports "$COLLECT" "$PORTS" "${1:-pipe}" || exit 1
}

scn_boot() {
    local t
    VT_RUNDIR=$RUN VT_SMP=${VT_SMP:-2} VT_PORTS=0 VT_GUEST_RUN=/etc/vt/agent-run
    VT_APPEND="vt.ports=$((VT_SMP + 2)) ${VT_APPEND:-}" VT_TIMEOUT=${VT_TIMEOUT:-180}
    VT_QEMU_EXTRA=("${SETUP_ARGS[@]}" "${SCN_QEMU_EXTRA[@]+"${SCN_QEMU_EXTRA[@]}"}")
    t=$(vt_now)
    vt_guest_start || { echo "$ME: FAIL: QEMU did not start"; exit 1; }
    local up=1
    vt_test_say "$PORTS" hello 60 || up=0
    # A kernel that died before the guest answered, so before any of the test's commands, gets
    # one more boot (vt_guest_died); one that dies every time still fails the test.
    if [ $up = 0 ] && vt_guest_died; then
        vt_guest_boot_again "$ME" "before any of the test's commands" || { echo "$ME: FAIL: QEMU did not start"; exit 1; }
        up=1
        vt_test_say "$PORTS" hello 60 || up=0
    fi
    if [ $up = 0 ]; then
        # The markers and the first lines of any kernel report, then the end, then the vCPUs.
        tr -d '\r' <"$RUN/console.log" |
            grep -a -m 12 -E '^VT-INIT|BUG:|soft lockup|rcu: INFO|rcu_.*stall|Call Trace|RIP: 0010' |
            sed 's/^/    | /'
        tr -d '\r' <"$RUN/console.log" | tail -20
        kill -0 "$VT_QEMU_PID" 2>/dev/null && vt_guest_where
        echo "$ME: FAIL: vt-e2e-guest did not answer hello in 60 s"; exit 1
    fi
    T_BOOT=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: guest says: $ANSWER (boot ${T_BOOT} s)"
}

scn_script() {
    local f=$1 line
    shift
    {
        echo '#!/bin/bash'
        echo "exec 7<>'$PORTS/vt-test.in' 8<>'$PORTS/vt-test.out'"
        echo 'rc=0'
        for line in "$@"; do
            [ "${line#!}" = "$line" ] || { echo "${line#!}"; continue; }
            printf 'echo %q >&7\n' "$line"
            echo 'read -r -t 120 answer <&8 || answer="no answer"'
            printf 'echo %q" -> $answer" >>%q\n' "$line" "$f.answers"
            echo '[[ $answer == ok* ]] || rc=1'
        done
        echo 'exit $rc'
    } >"$f"
    chmod +x "$f"
}

scn_record() {
    local t
    t=$(vt_now)
    timeout -k 5 "${SCN_RECORD_TIMEOUT:-150}" "$COLLECT" record -o "$OUT" --quiet "$@" >"$WORK/record.log" 2>&1 &
    SCN_COLLECT_PID=$!
    [ -z "${SCN_AFTER_START:-}" ] || "$SCN_AFTER_START"
    wait "$SCN_COLLECT_PID"
    CRC=$?
    SCN_COLLECT_PID=
    T_REC=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: record exited $CRC after ${T_REC} s"
}

scn_end() {
    vt_test_say "$PORTS" quit 30 || bad "vt-e2e-guest did not answer quit"
    vt_agent_wait_off 60 || fail=1
    T_RUN=$(vt_secs "$T0" "$(vt_now)")
    echo "  guest console:"
    tr -d '\r' <"$RUN/console.log" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    /'
    vt_check_console "$RUN/console.log" || fail=1
    grep -aq "E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after ${SCN_AGENT_END:-BYE}" "$RUN/console.log" ||
        bad "the guest side did not end cleanly"
}

# scn_counts NAME CPUS [lossy]: WORK/guest.txt is `trace-cmd report` of OUT/guest-NAME.dat. Per CPU
# in CPUS: the report's events = the manifest's = the events the guest's ring buffer handed out
# (stats read_events). Without "lossy": nothing lost or overrun anywhere.
scn_counts() {
    local name=$1 cpus=$2 mode=${3:-exact} cpu cnt man rd ov lip
    [ -s "$OUT/manifest.json" ] && [ -s "$OUT/guest-$name.dat" ] ||
        { bad "record wrote no guest-$name.dat or manifest"; return 1; }
    trace-cmd report -i "$OUT/guest-$name.dat" >"$WORK/guest.txt" 2>"$WORK/guest.err" ||
        bad "trace-cmd report of guest-$name.dat failed: $(head -3 "$WORK/guest.err")"
    for cpu in $cpus; do
        cnt=$(grep -cE "^ *.* \[$(printf %03d "$cpu")\] " "$WORK/guest.txt")
        man=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .events")
        rd=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.read_events")
        ov=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .stats.overrun + .stats.commit_overrun + .stats.dropped_events")
        lip=$(scn_m ".guests[0].cpus[] | select(.cpu == $cpu) | .lost_events_in_pages")
        echo "$ME: cpu$cpu: report $cnt events, manifest $man, guest read_events $rd," \
             "overrun $ov, lost in pages $lip"
        [ "$cnt" = "$man" ] || bad "cpu$cpu: report has $cnt events, manifest $man"
        [ "$rd" = "$man" ] || bad "cpu$cpu: the guest handed out $rd events, the host recorded $man"
        if [ "$mode" != lossy ]; then
            [ "$ov" = 0 ] && [ "$lip" = 0 ] || bad "cpu$cpu: overrun $ov, lost in pages $lip (want 0)"
        fi
    done
}

scn_m() { jq -r "$1" "$OUT/manifest.json"; }

scn_result() {
    echo "$ME: timings: image ${T_IMAGE:-?} s, boot ${T_BOOT:-?} s, record ${T_REC:-?} s, whole test ${T_RUN:-?} s"
    if [ "$fail" = 0 ]; then echo "$ME: PASS"; exit 0; fi
    KEEP=1
    echo "$ME: FAIL"
    exit 1
}

# ---- The same scenarios with the guest under KVM, inside L1 ----------------------------------
# A test that also runs under KVM (VT_E2E_KVM=1: its test-kvm-*.sh of the e2e-kvm suite) calls
#   scn_kvm_begin                     tools, WORK, the L1 image (the build's collector, the e2e
#                                     image as L2); COLLECT for the checks on this side
#   VT_L1_PRE=(LINE...) VT_L1_WORK=(LINE...) VT_L1_POST=(LINE...) VT_L1_ENV="REC_ARGS=... L2_..."
#   scn_kvm_run                       L1 boots, L2 runs under -accel kvm with setup's ports, the
#                                     lines go to vt-e2e-guest before, during (record's COMMAND)
#                                     and after `record --qemu-pid`; everything comes back here:
#                                     OUT (the recording), CONSOLE (L2's), CRC (record's status)
#   scn_kvm_end                       scn_end's checks on L2's console
# instead of scn_begin, scn_ports, scn_boot, scn_record and scn_end; the checks that follow are
# the TCG test's, on OUT and CONSOLE. VT_L1_RECHECK=DIR (a work dir kept with VT_KEEP=1) runs
# no L1: the checks run again on DIR/out, e.g. with another collector (VT_COLLECT).
scn_kvm_begin() {
    local t rc
    for t in qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq python3 ldd; do
        command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
    done
    T0=$(vt_now)
    WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
    KEEP=${VT_KEEP:-0}
    # The caller's VT_L1_ENV (e.g. L1_KALLSYMS=1) goes after the test's own lines.
    SCN_L1_ENV_USER=${VT_L1_ENV:-}
    trap scn_cleanup EXIT
    trap 'exit 1' INT TERM HUP
    vt_collect_build; rc=$?
    [ $rc = 0 ] || exit $rc
    t=$(vt_now)
    if [ -z "${VT_L1_RECHECK:-}" ]; then
        vt_l1_image >"$WORK/image.out"; rc=$?
        [ $rc = 0 ] || { sed "s/^/$ME: /" "$WORK/image.out"; exit $rc; }
    fi
    T_IMAGE=$(vt_secs "$t" "$(vt_now)")
    echo "$ME: collector $COLLECT, L1 image ${VT_L1_IMAGE:-none} (L2 under KVM inside it)"
    RUN=$WORK/l1 KOUT=$WORK/out OUT=$WORK/out/rec CONSOLE=$WORK/out/l2-e2e-console.log
    mkdir -p "$KOUT"
}

scn_kvm_run() {
    local rc
    if [ -n "${VT_L1_RECHECK:-}" ]; then
        cp -a "$VT_L1_RECHECK/out/." "$KOUT/" || { bad "no $VT_L1_RECHECK/out"; scn_result; }
        CRC=$(cat "$KOUT/record.rc" 2>/dev/null || echo none)
        echo "$ME: the checks again on $VT_L1_RECHECK/out (no L1 run); record exited $CRC there"
        T_REC=- T_BOOT=-
        return 0
    fi
    VT_RUNDIR=$RUN
    VT_L1_ENV="${VT_L1_ENV:-}
$SCN_L1_ENV_USER"
    vt_l1_guest_run "$KOUT"; rc=$?
    T_REC=$VT_L1_SECS
    echo "$ME: L1 run: $VT_L1_RESULT in $VT_L1_SECS s (L1 uptime at the scenario's start and end: $VT_L1_UP)"
    if [ $rc = 77 ]; then
        echo "$ME: SKIP: $VT_L1_REASON"
        exit 77
    fi
    echo "  L1 said:"
    tr -d '\r' <"$RUN/console.log" | grep -aE '^(VT-L1|L1):|^    (record|work):' | grep -v 'VT-L1: beat' | sed 's/^/    /'
    CRC=$(cat "$KOUT/record.rc" 2>/dev/null || echo none)
    T_BOOT="(in L1)"
    echo "$ME: record exited $CRC (in L1)"
    if [ $rc != 0 ]; then
        bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"
        scn_result
    fi
}

scn_kvm_end() {
    T_RUN=$(vt_secs "$T0" "$(vt_now)")
    [ -s "$CONSOLE" ] || { bad "no L2 console came out of L1"; return; }
    echo "  L2's console:"
    tr -d '\r' <"$CONSOLE" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    /'
    VT_LOG_IGNORE=$VT_L1_LOG_IGNORE vt_check_console "$CONSOLE" || fail=1
    grep -aq "E2E: vt-e2e-guest rc=0, trace-agent exit status 0 after BYE" "$CONSOLE" ||
        bad "the guest side did not end cleanly"
    # Under KVM, record --qemu-pid reads the vCPUs' TSC offsets: the clock method says the guest
    # really ran under KVM.
    local m
    m=$(jq -r '.guests[0].sync.method' "$OUT/manifest.json" 2>/dev/null)
    echo "$ME: the guest's clock: $m ($(jq -r '.guests[0].sync.why' "$OUT/manifest.json" 2>/dev/null))"
    [ "$m" = kvm ] || bad "the clock method is '$m', want kvm (was the guest under KVM?)"
}
