# Shared by the daemon's e2e tests (test-daemon-libvirt*.sh; sourced after lib.sh, agent-lib.sh
# and libvirt-lib.sh; the caller sets ME, N, DOM and DESC). A daemon of the test's own on a state
# directory in the work dir follows the one domain DOM of a libvirt of libvirt-lib.sh's.
#   de_begin               tools, root, the work dir, the build, the image, libvirt up
#   de_domain ON_REBOOT    DOM defined (vt.agent_keep=1: its agent serves one child after
#                          another) with its channels added by `setup --domain --apply`
#   de_daemon_start ARGS   `daemon --domains DOM --host-events sched:sched_switch ARGS` in the
#                          background ($DAEMON_PID), its log in WORK/daemon.log
#   de_status, de_state, de_status_pid ($PID), de_wait_state STATE SECS
#   de_start_domain        virsh start; T_ATTACH: seconds from its return to "attached"
#   de_boot                wait for vt-e2e-guest's hello
#   de_settled             the child attached and the same one for 4 s (60 s at most)
#   de_new_child OLD WHAT  a child other than OLD attached after WHAT, settled
#   de_markers PREFIX      N markers per guest CPU
#   de_snapshot BEFORE AFTER REASON [PREFIX]  `snapshot DOM`, PREFIX's markers written while it
#                          waits; SNAP (its directory), T_LATE (seconds past the --after time,
#                          as the client saw it; the daemon's log line's figures are printed,
#                          from DE_LOG, WORK/daemon.log unless set)
#   de_check_snap DIR "PREFIXES" "ABSENT"  exactly N markers of each PREFIX per CPU, none of
#                          ABSENT's; merged with host.dat in order, host sched_switch in it
#   de_end                 SIGTERM the daemon (exit 0 wanted), the verdict
DAEMON_PID= DEFINED=0 KEEP=${VT_KEEP:-0} fail=0
bad() { echo "$ME: FAIL: $*"; fail=1; }

de_cleanup() {
    [ -n "$DAEMON_PID" ] && stop_pid "$DAEMON_PID"
    [ "$DEFINED" = 1 ] && libvirt_forget "$DOM"
    libvirt_down
    if [ "$KEEP" = 1 ]; then echo "$ME: kept $WORK"; else rm -rf "$WORK"; fi
}

de_begin() {
    local t rc
    for t in libvirtd virtlogd virsh qemu-system-x86_64 busybox cpio depmod timeout strip trace-cmd jq; do
        command -v "$t" >/dev/null || { echo "$ME: SKIP: $t not found"; exit 77; }
    done
    [ "$(id -u)" = 0 ] || { echo "$ME: SKIP: needs root (a system libvirtd and its qemu user)"; exit 77; }
    T0=$(vt_now)
    WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
    chmod 755 "$WORK"	# QEMU runs as libvirt's qemu user: it must reach the kernel and the FIFOs
    STATE=$WORK/state
    trap de_cleanup EXIT
    trap 'exit 1' INT TERM HUP
    vt_collect_build; rc=$?
    [ $rc = 0 ] || exit $rc
    vt_collect_image "$WORK" libvirt-guest; rc=$?
    [ $rc = 0 ] || exit $rc
    libvirt_boot_files
    libvirt_up
    libvirt_stale "$DOM" "$DESC"
}

de_domain() {
    mkfifo "$WORK/ports/vt-test.in" "$WORK/ports/vt-test.out"
    libvirt_domain_xml "$WORK/domain.xml" "$DOM" "$DESC" \
        "vt.run=/etc/vt/agent-run vt.ports=4 vt.agent_keep=1" "$1"
    V define "$WORK/domain.xml" >/dev/null || { echo "$ME: FAIL: libvirt refused the domain"; exit 1; }
    DEFINED=1
    "$COLLECT" setup --domain "$DOM" --connect "$URI" --apply --dir "$WORK/ports" >"$WORK/setup.log" 2>&1 ||
        { cat "$WORK/setup.log"; echo "$ME: FAIL: setup --apply exited $?"; exit 1; }
}

de_daemon_start() {
    local i
    "$COLLECT" daemon --state-dir "$STATE" --connect "$URI" --domains "$DOM" \
        --host-events sched:sched_switch "$@" >>"$WORK/daemon.log" 2>&1 &
    DAEMON_PID=$!
    echo "$ME: daemon $DAEMON_PID started"
    for ((i = 0; i < 100; i++)); do
        [ -S "$STATE/control.sock" ] && "$COLLECT" daemon --status --state-dir "$STATE" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    bad "the daemon does not answer --status 10 s after its start"
}

# de_status: the status, also appended (stamped with seconds since the test began) to status.log.
de_status() {
    local out rc
    out=$("$COLLECT" daemon --status --state-dir "$STATE" 2>&1)
    rc=$?
    echo "$out" | sed "s/^/$(vt_secs "$T0" "$(vt_now)") /" >>"$WORK/status.log"
    echo "$out"
    return $rc
}
de_state() { de_status | awk -v n="$DOM" '$1 == n { print $2 }'; }
de_status_pid() { PID=$(de_status | awk -v n="$DOM" '$1 == n { print $3 }'); }

de_wait_state() {	# STATE SECS
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [ "$(de_state)" = "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

de_start_domain() {
    local t i
    V start "$DOM" >/dev/null || { tail -n5 "/var/log/libvirt/qemu/$DOM.log" 2>/dev/null; echo "$ME: FAIL: the domain did not start"; exit 1; }
    t=$(vt_now)
    T_BOOT0=$t
    T_ATTACH=never
    for ((i = 0; i < 100; i++)); do
        [ "$(de_state)" = attached ] && { T_ATTACH=$(vt_secs "$t" "$(vt_now)"); break; }
        sleep 0.1
    done
    echo "$ME: attached $T_ATTACH s after virsh start returned"
}

de_boot() {
    vt_test_say "$WORK/ports" hello 120 ||
        { tr -d '\r' <"$WORK/console.log" | tail -20; echo "$ME: FAIL: vt-e2e-guest did not answer hello in 120 s"; exit 1; }
    echo "$ME: guest says: $ANSWER ($(vt_secs "$T_BOOT0" "$(vt_now)") s after virsh start)"
}

de_settled() {
    local i line since= last= end
    end=$(awk -v t="$(vt_now)" 'BEGIN { printf "%.0f", t + 60 }')
    while [ "$(date +%s)" -lt "$end" ]; do
        line=$(de_status | awk -v n="$DOM" '$1 == n { print $2, $3 }')
        if [ "${line% *}" = attached ] && [ "$line" = "$last" ]; then
            [ -n "$since" ] || since=$(vt_now)
            awk -v a="$since" -v b="$(vt_now)" 'BEGIN { exit !(b - a >= 4) }' && return 0
        else
            since=
        fi
        last=$line
        sleep 0.2
    done
    return 1
}

# de_new_child OLD WHAT: after WHAT, a child other than OLD is attached (60 s at most), and
# settles; prints how long after T_BOOT0 it came.
de_new_child() {
    local i
    for ((i = 0; i < 300; i++)); do
        de_status_pid
        [ -n "$PID" ] && [ "$PID" != 0 ] && [ "$PID" != "$1" ] && [ "$(de_state)" = attached ] && break
        sleep 0.2
    done
    if [ -n "$PID" ] && [ "$PID" != "$1" ]; then
        echo "$ME: after $2: a new child $PID (was $1), $(vt_secs "$T_BOOT0" "$(vt_now)") s later"
    else
        bad "after $2 the child is still $1: $(tail -n 2 "$WORK/status.log" | tr '\n' ' ')"
    fi
    de_settled || bad "the child did not settle after $2: $(tail -n 3 "$WORK/status.log")"
}

de_markers() {
    vt_test_say "$WORK/ports" "flood $1 $N 0 64" 60
    # No instance yet (the child is still setting up): once more.
    [[ $ANSWER == "err written=0 "* ]] && sleep 3 && vt_test_say "$WORK/ports" "flood $1 $N 0 64" 60
    [[ $ANSWER == ok* ]] || bad "flood $1: $ANSWER"
    echo "$ME: $1: $N markers per CPU at $(vt_secs "$T0" "$(vt_now)") s: $ANSWER"
}

de_snapshot() {	# BEFORE AFTER REASON [PREFIX]
    local t rc el
    SNAP= SNAP_REASON=$3
    t=$(vt_now)
    "$COLLECT" snapshot "$DOM" --before "$1" --after "$2" --reason "$3" --state-dir "$STATE" \
        >"$WORK/snapshot-$3.out" 2>&1 &
    local spid=$!
    [ -z "${4:-}" ] || de_markers "$4"
    wait $spid
    rc=$?
    el=$(vt_secs "$t" "$(vt_now)")
    T_LATE=$(awk -v e="$el" -v a="$2" 'BEGIN { printf "%.2f", e - a }')
    echo "$ME: snapshot $3 (--before $1 --after $2): exit $rc after $el s ($T_LATE s past --after): $(cat "$WORK/snapshot-$3.out")"
    [ $rc = 0 ] || { bad "snapshot $3 exited $rc"; return 1; }
    SNAP=$(tail -n1 "$WORK/snapshot-$3.out")
    [ -d "$SNAP" ] || { bad "snapshot $3 printed no directory"; SNAP=; return 1; }
    # The daemon's own figures: how late it stopped the child and sealed, past the window's end.
    echo "$ME: snapshot $3: daemon: $(grep -F ": snapshot $SNAP (" "${DE_LOG:-$WORK/daemon.log}" | tail -n1 |
        sed -n 's/.*): \(sealed .*\)$/\1/p')"
}

# de_order MERGED: the timestamps of `trace-cmd report`'s merged lines never go backwards;
# sets BACKWARDS (how many do) and prints the first few.
de_order() {
    BACKWARDS=$(awk '/^ *[^ ]+\.dat: / {
        for (j = 2; j <= NF; j++) if ($j ~ /^[0-9]+\.[0-9]+:$/) { ts = substr($j, 1, length($j) - 1) + 0; break }
        if (n && ts < prev) { bad++; if (bad <= 3) print "backwards: " $0 > "/dev/stderr" }
        prev = ts; n++
    } END { print bad + 0 }' "$1")
}

de_check_snap() {	# DIR "PREFIXES" "ABSENT"
    local d=$1 g=$1/guest-$DOM.dat rep=$WORK/report-$SNAP_REASON.txt p cpu n line
    [ -s "$d/snapshot.json" ] && [ -s "$d/manifest.json" ] && [ -s "$g" ] && [ -s "$d/host.dat" ] ||
        { bad "snapshot $d: files missing: $(ls "$d" | tr '\n' ' ')"; return 1; }
    trace-cmd report -i "$g" >"$WORK/guest-$SNAP_REASON.txt" 2>&1 || bad "trace-cmd report of $g failed"
    line="$SNAP_REASON:"
    for p in $2; do
        for cpu in 0 1; do
            n=$(grep -cE "\[00$cpu\] .*$p cpu$cpu " "$WORK/guest-$SNAP_REASON.txt")
            line+=" $p/cpu$cpu $n"
            [ "$n" = "$N" ] || bad "snapshot $SNAP_REASON: $n markers $p on cpu$cpu, want $N"
        done
    done
    for p in $3; do
        n=$(grep -cE " $p cpu[0-9]+ " "$WORK/guest-$SNAP_REASON.txt")
        line+=" $p $n"
        [ "$n" = 0 ] || bad "snapshot $SNAP_REASON: $n markers $p, want none (an earlier snapshot's)"
    done
    trace-cmd report -i "$d/host.dat" -i "$g" >"$rep" 2>"$rep.err" ||
        bad "merged trace-cmd report failed: $(head -3 "$rep.err")"
    de_order "$rep"
    n=$(grep -E '^ *host.dat: ' "$rep" | grep -c sched_switch)
    echo "$ME: $line; merged: $(wc -l <"$rep") lines, $n host sched_switch, $BACKWARDS timestamps backwards"
    [ "$BACKWARDS" = 0 ] || bad "snapshot $SNAP_REASON: $BACKWARDS timestamps go backwards in the merged report"
    [ "$n" -gt 0 ] || bad "snapshot $SNAP_REASON: no host sched_switch in the merged report"
    jq -e --arg g "$DOM" '.guest == $g' "$d/snapshot.json" >/dev/null ||
        bad "snapshot $SNAP_REASON: snapshot.json does not name $DOM"
}

de_end() {
    local rc
    if [ -n "$DAEMON_PID" ]; then
        kill -TERM "$DAEMON_PID"
        wait "$DAEMON_PID"
        rc=$?
        DAEMON_PID=
        [ $rc = 0 ] || bad "the daemon exited $rc on SIGTERM, want 0"
    fi
    echo "$ME: whole test $(vt_secs "$T0" "$(vt_now)") s"
    if [ $fail = 0 ]; then echo "$ME: PASS"; exit 0; fi
    sed 's/^/    daemon| /' "$WORK/daemon.log" | tail -n 40
    KEEP=1
    echo "$ME: FAIL"
    exit 1
}
