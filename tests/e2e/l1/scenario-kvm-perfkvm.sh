# shellcheck shell=sh
# scenario-kvm-perfkvm.sh: run by vt_l1_run inside L1 for test-kvm-perfkvm.sh. L2 under KVM
# with the ports `setup` prints; once vt-e2e-guest answers:
#   1. virtio-trace-collect record --chardev-dir PORTS --name l2 --qemu-pid L2PID -e sched:sched_switch
#      -o OUT/rec -- sh /tmp/wait.sh   (until the guest's kallsyms are in, then 1 s more),
#      then virtio-trace-collect report --perf-kvm OUT/pk OUT/rec: OUT/pk/l2.kallsyms, l2.modules;
#   2. in L2, a kernel-heavy busy loop in the background: dd if=/dev/zero of=/dev/null bs=1
#      (a read and a write system call per byte);
#   3. in L1, perf kvm --guest [FILES] -o OUT/perf-X.data record -a sleep PERF_SECS, twice at the
#      same time: without our files (X = a) and with FILES = --guestkallsyms=OUT/pk/l2.kallsyms
#      --guestmodules=OUT/pk/l2.modules (X = b); then perf kvm --guest [FILES] -i ... report
#      --stdio -n --sort dso,sym -v as a-files (a with FILES), b-files and b-nofiles, those with
#      FILES under strace -e trace=openat when L1 has strace (which files perf opens);
#   4. the loop killed, quit L2 and wait for it to power off.
# OUT gets rec/ (the recording), record.log/.rc, pk/, pk.log/.rc, perf-version,
# perf-record-{a,b}.log/.rc, perf-{a,b}.data, report-{a-files,b-files,b-nofiles}.txt/.err/.rc, report-{a,b}-files.strace,
# l2pid, l2-threads ("TID COMM"), l2-l2-console.log. Without perf in the image: perf.absent, and
# steps 2-3 are left out.
# Env (VT_L1_ENV): PERF_SECS=3, REC_BOUND=150, L2_* (l1-lib.sh). Exit: 1 only when L2 did not
# come up or power off, or a command had to be killed.
. /etc/vt/l1-lib.sh
OUT=$1
rc=0
l1_l2_up l2 || exit 1
# 1. A recording that holds the guest's kallsyms (4 MB through nested TCG: 3 to 10 s).
cat >/tmp/wait.sh <<WAIT
n=0
while [ \$n -lt 900 ]; do
    [ "\$(stat -c %s "$OUT/rec/.spool/guest-l2/meta.bin" 2>/dev/null || echo 0)" -ge 1048576 ] && break
    usleep 100000
    n=\$((n + 1))
done
echo "L1: the guest's whole metadata in after \$((n / 10)) s"
sleep 1
WAIT
l1_bounded "${REC_BOUND:-150}" record virtio-trace-collect record --chardev-dir "$L2_PORTS" --name l2 \
    --qemu-pid "$L2_PID" -e sched:sched_switch -o "$OUT/rec" -- sh /tmp/wait.sh >"$OUT/record.log" 2>&1
echo $? >"$OUT/record.rc"
[ -z "$L1_STOPPED" ] || { l1_log "FAIL: record had to be stopped ($L1_STOPPED)"; rc=1; }
sed 's/^/    record: /' "$OUT/record.log" | tail -n 20
virtio-trace-collect report --perf-kvm "$OUT/pk" "$OUT/rec" >"$OUT/pk.log" 2>&1
echo $? >"$OUT/pk.rc"
l1_log "report --perf-kvm exited $(cat "$OUT/pk.rc"): $(ls -l "$OUT/pk" 2>&1 | tail -n +2 | tr -s ' ' | cut -d' ' -f1,5,9 | tr '\n' ' ')"

if ! command -v perf >/dev/null; then
    l1_log "no perf in the L1 image"
    : >"$OUT/perf.absent"
else
    perf --version >"$OUT/perf-version" 2>&1
    # 2. The guest's kernel busy: a read and a write system call per byte.
    l1_say "sh dd if=/dev/zero of=/dev/null bs=1 </dev/null >/dev/null 2>&1 & echo \$! >/tmp/busy.pid" 30 || rc=1
    sleep 1
    # 3. perf in L1: perf kvm writes the guest kernel's map into perf.data at record time, from
    # the --guestkallsyms it is given then; a report cannot add it later. So: once recorded
    # without our files (A), once with them (B); each reported with them (strace: does perf
    # open them) and B without them too.
    pk="--guestkallsyms=$OUT/pk/l2.kallsyms --guestmodules=$OUT/pk/l2.modules"
    # shellcheck disable=SC2086
    perf_rec() {
        l1_bounded 60 "perf-record-$1" perf kvm --guest $2 -o "$OUT/perf-$1.data" record -a sleep "${PERF_SECS:-3}" \
            >"$OUT/perf-record-$1.log" 2>&1
        echo $? >"$OUT/perf-record-$1.rc"
        [ -z "$L1_STOPPED" ] || { l1_log "FAIL: perf record $1 had to be stopped ($L1_STOPPED)"; : >"$OUT/perf-record-$1.stopped"; }
    }
    # perf_rep NAME DATA FILES: perf kvm report of perf-DATA.data, with FILES as perf kvm options.
    # shellcheck disable=SC2086
    perf_rep() {
        _st=
        [ -n "$3" ] && command -v strace >/dev/null && _st="strace -f -e trace=openat -o $OUT/report-$1.strace"
        l1_bounded 90 "perf-report-$1" $_st perf kvm --guest $3 -i "$OUT/perf-$2.data" report --stdio -n \
            --sort dso,sym -v >"$OUT/report-$1.txt" 2>"$OUT/report-$1.err"
        echo $? >"$OUT/report-$1.rc"
        l1_log "perf kvm report $1 exited $(cat "$OUT/report-$1.rc"), $(grep -c ' \[g\] ' "$OUT/report-$1.txt") guest" \
            "kernel lines; perf said: $(grep -v '^build id event' "$OUT/report-$1.err" | head -n 3 | tr '\n' ' ')"
    }
    # Side by side, over the same seconds of the same loop (perf startup under TCG takes 5-10 s).
    perf_rec a "" &
    perf_rec b "$pk"
    wait $!
    ! ls "$OUT"/perf-record-*.stopped >/dev/null 2>&1 || rc=1
    l1_say "sh kill \$(cat /tmp/busy.pid)" 30 || rc=1
    perf_rep a-files a "$pk"
    perf_rep b-files b "$pk"
    perf_rep b-nofiles b ""
fi
l1_say quit 60 || rc=1
l1_l2_wait_off "$([ "$rc" = 0 ] && echo 90 || echo 10)" || rc=1
exit $rc
