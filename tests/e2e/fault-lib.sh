# shellcheck shell=bash
# tests/e2e/fault-lib.sh: what the fault scenarios (test-fault-*.sh, issue 14) share on top of
# scenario-lib.sh: one real TCG guest ("e2e") takes the fault; a bystander guest recorded in
# the same run, a vt-fake-agent on the host serving the tests/data/cap-guest fixture at a
# paced rate through FIFO ports, must come out exact. (A second TCG guest would double the
# cost on the 2-core machines the suite runs on; the collector cannot tell the two apart:
# both are an agent behind chardevs.)  Source lib.sh, agent-lib.sh and scenario-lib.sh first.
#   fl_begin                      scn_begin, and the fake agent, vt-mkdat and the oracle
#   fl_bystander NAME K RATE      start the bystander: the fixture K times, RATE bytes/s per
#                                 CPU; BYS_ARGS (--chardev-dir DIR --name NAME) for record
#   fl_bystander_check NAME K     its file holds the fixture's events K times per CPU exactly,
#                                 the manifest's bytes/pages are what it sent, no problems
#   fl_counts NAME CPUS           per CPU of guest NAME: report events = manifest events, and
#                                 the guest's markers PREFIX cpuK I seen are 0..n-1 (no gap)
#   fl_stats NAME CPUS            per CPU: the guest's read_events = manifest events, nothing
#                                 overrun or lost (the agent ran to the end)
#   fl_qmp SOCK JSON              one QMP command; the answer line in QMP_ANSWER
#   fl_report                     `virtio-trace-collect report OUT` into WORK/report.txt
#   fl_end EXPECT                 quit vt-e2e-guest, wait for power-off, console free of kernel
#                                 errors, and its E2E line matches the extended regex EXPECT

FIXTURE=$VT_REPO/tests/data/cap-guest

fl_begin() {
    local b=${VT_BUILDDIR:-$VT_REPO/build} c
    for c in perl; do
        command -v "$c" >/dev/null || { echo "$ME: SKIP: $c not found"; exit 77; }
    done
    scn_begin
    make -C "$b" -s tests/tools/vt-fake-agent tests/tools/vt-mkdat >&2 ||
        { echo "$ME: FAIL: cannot build vt-fake-agent"; exit 1; }
    FAKE=$b/tests/tools/vt-fake-agent
    "$b/tests/tools/vt-mkdat" -i "$FIXTURE" -o "$WORK/oracle.dat" >/dev/null &&
        trace-cmd report -i "$WORK/oracle.dat" >"$WORK/oracle.txt" 2>/dev/null ||
        { echo "$ME: FAIL: no oracle for $FIXTURE"; exit 1; }
    for c in 0 1; do
        eval "ORACLE_CPU$c=$(fl_cpu_events "$WORK/oracle.txt" $c)"
    done
    fl_qmp_script
    FL_FAKE_PIDS=
    trap 'fl_cleanup' EXIT
}

FL_UMOUNT=
fl_cleanup() {
    local p
    for p in $FL_FAKE_PIDS; do kill -TERM "$p" 2>/dev/null; done
    [ -n "${SCN_COLLECT_PID:-}" ] && kill -TERM "$SCN_COLLECT_PID" 2>/dev/null && wait "$SCN_COLLECT_PID" 2>/dev/null
    SCN_COLLECT_PID=
    [ -z "$FL_UMOUNT" ] || umount "$FL_UMOUNT" || umount -l "$FL_UMOUNT"
    scn_cleanup
}

# fl_cpu_events REPORT CPU: event lines of that CPU in a trace-cmd report
fl_cpu_events() {
    grep -cE -- "-[0-9]+ +\[$(printf %03d "$2")\] *[0-9]+(\.[0-9]+)?: " "$1"
}

fl_bystander() {
    local name=$1 dir=$WORK/bys-$1 i
    mkdir -p "$dir"
    "$FAKE" --name "$name" --fifo "$dir" --fixture "$FIXTURE" --repeat "$2" --rate "$3" --retime \
        2>"$WORK/$name.fake" &
    FL_FAKE_PIDS="$FL_FAKE_PIDS $!"
    eval "FL_PID_$name=$!"
    for ((i = 0; i < 100; i++)); do
        grep -q 'ports ready' "$WORK/$name.fake" 2>/dev/null && break
        sleep 0.1
    done
    grep -q 'ports ready' "$WORK/$name.fake" || { bad "bystander $name has no ports"; return 1; }
    BYS_ARGS=(--chardev-dir "$dir" --name "$name")
}

# fl_g NAME JQ: a value from guest NAME's manifest entry
fl_g() { jq -r --arg n "$1" ".guests[] | select(.name == \$n) | $2" "$OUT/manifest.json" 2>/dev/null; }

fl_bystander_check() {
    local name=$1 k=$2 pid cpu got want sb sp mb mp i
    eval "pid=\${FL_PID_$name:-}"
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ -s "$OUT/guest-$name.dat" ] || { bad "no guest-$name.dat for the bystander"; return 1; }
    trace-cmd report -i "$OUT/guest-$name.dat" >"$WORK/$name.txt" 2>"$WORK/$name.err" ||
        bad "trace-cmd report of guest-$name.dat failed: $(head -3 "$WORK/$name.err")"
    for cpu in 0 1; do
        got=$(fl_cpu_events "$WORK/$name.txt" $cpu)
        eval "want=\$((ORACLE_CPU$cpu * k))"
        sb=$(awk -v c="cpu$cpu" '$2 == "total" && $3 == c { print $7 }' "$WORK/$name.fake")
        sp=$(awk -v c="cpu$cpu" '$2 == "total" && $3 == c { print $5 }' "$WORK/$name.fake")
        mb=$(fl_g "$name" ".cpus[] | select(.cpu == $cpu) | .bytes")
        mp=$(fl_g "$name" ".cpus[] | select(.cpu == $cpu) | .pages")
        echo "$ME: bystander $name cpu$cpu: report $got events (fixture x$k: $want)," \
             "manifest $mp pages $mb bytes, the fake sent $sp pages $sb bytes"
        [ "$got" = "$want" ] || bad "bystander $name cpu$cpu: $got events, want $want"
        [ -n "$sb" ] && [ "$mb" = "$sb" ] && [ "$mp" = "$sp" ] ||
            bad "bystander $name cpu$cpu: manifest $mp pages $mb bytes, sent $sp pages $sb bytes"
    done
    [ -z "$(fl_g "$name" '.problems // empty')" ] || bad "bystander $name has problems: $(fl_g "$name" .problems)"
}

# fl_counts NAME CPUS PREFIX: per CPU, report events = manifest events; the markers
# "PREFIX cpuK I" on CPU K start at 0 and strictly increase, and every one missing in between
# is covered by the events the pages say were lost (lost_events_in_pages). Sets SEEN_cpuK.
fl_counts() {
    local name=$1 cpu cnt man seen order missing lip
    [ -s "$OUT/guest-$name.dat" ] || { bad "no guest-$name.dat"; return 1; }
    trace-cmd report -i "$OUT/guest-$name.dat" >"$WORK/$name.txt" 2>"$WORK/$name.err" ||
        bad "trace-cmd report of guest-$name.dat failed: $(head -3 "$WORK/$name.err")"
    grep -v '^$' "$WORK/$name.err" | grep -q . && bad "trace-cmd report warns: $(head -3 "$WORK/$name.err")"
    for cpu in $2; do
        cnt=$(fl_cpu_events "$WORK/$name.txt" "$cpu")
        man=$(fl_g "$name" ".cpus[] | select(.cpu == $cpu) | .events")
        lip=$(fl_g "$name" ".cpus[] | select(.cpu == $cpu) | .lost_events_in_pages")
        grep -oE "$3 cpu$cpu [0-9]+" "$WORK/$name.txt" | awk '{ print $3 }' >"$WORK/seq-$name-$cpu"
        seen=$(wc -l <"$WORK/seq-$name-$cpu")
        read -r order missing < <(awk 'NR == 1 && $1 != 0 { m += $1 }
            NR > 1 { if ($1 <= p) o++; else m += $1 - p - 1 } { p = $1 } END { print o + 0, m + 0 }' "$WORK/seq-$name-$cpu")
        eval "SEEN_cpu$cpu=$seen"
        echo "$ME: $name cpu$cpu: report $cnt events, manifest $man; $seen $3 markers, $missing missing" \
             "in between, $order out of order; lost in pages $lip"
        [ "$cnt" = "$man" ] || bad "$name cpu$cpu: report has $cnt events, manifest $man"
        [ "$order" = 0 ] || bad "$name cpu$cpu: $order markers out of order"
        [ "$missing" -le "${lip:-0}" ] || bad "$name cpu$cpu: $missing markers missing, only $lip events lost in pages"
    done
}

fl_stats() {
    local name=$1 cpu man rd ov
    for cpu in $2; do
        man=$(fl_g "$name" ".cpus[] | select(.cpu == $cpu) | .events")
        rd=$(fl_g "$name" ".cpus[] | select(.cpu == $cpu) | .stats.read_events")
        ov=$(fl_g "$name" ".cpus[] | select(.cpu == $cpu) | .stats.overrun + .stats.commit_overrun + .stats.dropped_events + .lost_events_in_pages")
        echo "$ME: $name cpu$cpu: guest read_events $rd, manifest $man, lost $ov"
        [ "$rd" = "$man" ] || bad "$name cpu$cpu: the guest handed out $rd events, the host recorded $man"
        [ "$ov" = 0 ] || bad "$name cpu$cpu: $ov events overrun or lost"
    done
}

# fl_qmp SOCK JSON; QMP (WORK/qmp.pl SOCK JSON) also serves the COMMAND scripts' "!" lines.
fl_qmp() {
    QMP_ANSWER=$(perl "$WORK/qmp.pl" "$1" "$2" 2>&1)
    echo "$ME: qmp $2 -> $QMP_ANSWER"
    [[ $QMP_ANSWER == *'"return"'* ]]
}

fl_qmp_script() {
    cat >"$WORK/qmp.pl" <<'PL'
use IO::Socket::UNIX;
my ($path, $cmd) = @ARGV;
my $s = IO::Socket::UNIX->new(Peer => $path) or die "connect $path: $!\n";
<$s>;
print $s "{\"execute\":\"qmp_capabilities\"}\n";
while (<$s>) { last if /"return"|"error"/ }
print $s "$cmd\n";
while (<$s>) { if (/"return"|"error"/) { print; exit(/"return"/ ? 0 : 1) } }
exit 1;
PL
}

fl_report() {
    "$COLLECT" report "$OUT" >"$WORK/report.txt" 2>&1 || bad "virtio-trace-collect report exited $?"
}

fl_end() {
    local errs
    vt_test_say "$PORTS" quit 30 || bad "vt-e2e-guest did not answer quit"
    vt_agent_wait_off 60 || bad "the guest did not power off"
    T_RUN=$(vt_secs "$T0" "$(vt_now)")
    echo "  guest console:"
    tr -d '\r' <"$RUN/console.log" | grep -a -E '^(VT-INIT|E2E|trace-agent):' | sed 's/^/    /'
    errs=$(tr -d '\r' <"$RUN/console.log" |
        grep -aE 'BUG:|WARNING:|Kernel panic|Oops|general protection fault|soft lockup|hung_task' |
        { if [ -n "${VT_LOG_IGNORE:-}" ]; then grep -vE "$VT_LOG_IGNORE"; else cat; fi; } || true)
    [ -z "$errs" ] || bad "guest kernel errors: $(head -5 <<<"$errs")"
    tr -d '\r' <"$RUN/console.log" | grep -aqE "$1" || bad "no console line matches '$1'"
}
