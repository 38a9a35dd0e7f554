#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-perfkvm.sh: perf kvm names a KVM guest's kernel functions with the files
# `report --perf-kvm` writes. Inside L1 (nested SVM under TCG, see test-kvm-collect.sh)
# tests/e2e/l1/scenario-kvm-perfkvm.sh records L2 (its kallsyms come), writes
# `report --perf-kvm DIR`, runs `dd if=/dev/zero of=/dev/null bs=1` in L2 (kernel-heavy: a read
# and a write system call per byte) and, in L1 (F = --guestkallsyms=DIR/l2.kallsyms
# --guestmodules=DIR/l2.modules),
#     perf kvm --guest -o a.data record -a sleep 3        a: recorded without our files
#     perf kvm --guest F -o b.data record -a sleep 3      b: recorded with them, at the same time
#     perf kvm --guest [F] -i X.data report --stdio -n --sort dso,sym -v   a with F, b with F, b without
# L1 has no hardware PMU under TCG, so perf falls back to cpu-clock; KVM attributes a host timer
# interrupt that ends a guest run to the guest (perf_guest_state: the sample's IP is the guest's
# RIP, its mode guest kernel or user by the guest's CPL). Checks:
#   1. both records exit 0 with samples;
#   2. b with our files: at least VT_PERFKVM_MIN (20) guest kernel samples ([g]) in named
#      functions, each named as our kallsyms name its address (the greatest text symbol at or
#      below it), 3 or more functions of dd's system-call path among them, and perf says
#      "Using .../l2.kallsyms for symbols";
#   3. b without our files: as many guest kernel samples, none named;
#   4. a with our files: guest samples, none named, and (strace) l2.kallsyms never opened: perf
#      kvm record writes the guest's kernel and module maps into perf.data from the files it is
#      given, and a report cannot add them later; b's report opens it;
#   5. the guest's module maps in b.data (this side's `perf report -D`) equal l2.modules: each
#      module at its address with its size;
#   6. L2's console is clean.
# Env: as test-kvm-collect.sh (VT_KEEP=1 keeps the work dir); VT_L1_RECHECK=DIR runs the checks
# again on a kept work dir, without L1. Exit: 0 pass, 1 fail, 77 skip (no perf on this machine:
# mkl1.sh puts it in L1 only when it is here).
echo "test-kvm-perfkvm: perf kvm --guest under real KVM (nested SVM in a TCG L1) names the guest's kernel functions with report --perf-kvm's files"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
ME=test-kvm-perfkvm
VT_LOG_PREFIX=$ME

perf_here=
for f in /usr/bin/perf $(ls /usr/bin/perf_[0-9]* 2>/dev/null | sort -rV); do
    [ -x "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && { perf_here=$f; break; }
done
[ -n "$perf_here" ] || { echo "$ME: SKIP: no perf binary here (/usr/bin/perf or perf_X.Y: apt-get install linux-perf), so none in L1"; exit 77; }

bad() { echo "$ME: FAIL: $*"; fail=1; }
OUT_L1=/tmp/vt-out  # the scenario's OUT inside L1, as perf names it
if [ -n "${VT_L1_RECHECK:-}" ]; then
    # The checks again on a work dir kept with VT_KEEP=1, without L1.
    T0=$(vt_now) T_IMAGE=- VT_L1_SECS=- fail=0 KEEP=0
    WORK=$(mktemp -d "/tmp/vt-$ME.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
    OUT=$VT_L1_RECHECK/out VT_L1_LOG_IGNORE=${VT_L1_LOG_IGNORE:-}
    [ -d "$OUT" ] || { echo "$ME: FAIL: no $OUT"; exit 1; }
    echo "$ME: the checks again on $OUT (no L1 run)"
else
    vt_kvm_begin
    VT_L1_ENV="PERF_SECS=3
${VT_L1_ENV:-}"
    vt_kvm_scenario "$HERE/l1/scenario-kvm-perfkvm.sh"; rc=$?
    [ $rc = 0 ] || { bad "the run in L1: $VT_L1_RESULT: $VT_L1_REASON"; KEEP=1; echo "$ME: FAIL"; exit 1; }
fi

# 0. The recording and report --perf-kvm.
[ "$(cat "$OUT/record.rc" 2>/dev/null)" = 0 ] || { sed 's/^/    | /' "$OUT/record.log"; bad "record exited $(cat "$OUT/record.rc" 2>/dev/null)"; }
[ "$(cat "$OUT/pk.rc" 2>/dev/null)" = 0 ] || { sed 's/^/    | /' "$OUT/pk.log"; bad "report --perf-kvm exited $(cat "$OUT/pk.rc" 2>/dev/null)"; }
KS=$OUT/pk/l2.kallsyms MODS=$OUT/pk/l2.modules
[ -s "$KS" ] && [ -s "$MODS" ] || { bad "no l2.kallsyms or l2.modules from report --perf-kvm"; echo "$ME: FAIL"; KEEP=1; exit 1; }
[ ! -e "$OUT/perf.absent" ] || { bad "perf is here ($perf_here) but not in the L1 image"; echo "$ME: FAIL"; KEEP=1; exit 1; }
echo "$ME: perf in L1: $(cat "$OUT/perf-version"); our files: $(wc -l <"$KS") kallsyms lines, $(wc -l <"$MODS") modules"

# 1. Both perf records ran and sampled.
for r in a b; do
    n=$(sed -n 's/.*(\([0-9]*\) samples) \]$/\1/p' "$OUT/perf-record-$r.log")
    echo "$ME: perf kvm --guest record ($r: $([ $r = a ] && echo without || echo with) our files): exit $(cat "$OUT/perf-record-$r.rc"), ${n:-no} samples"
    [ "$(cat "$OUT/perf-record-$r.rc")" = 0 ] && [ "${n:-0}" -gt 0 ] ||
        { sed 's/^/    | /' "$OUT/perf-record-$r.log"; bad "perf kvm record ($r) exited $(cat "$OUT/perf-record-$r.rc") with ${n:-no} samples"; }
done

# The guest's lines of a report (perf -v: OVERHEAD SAMPLES DSO IP ORIGIN [g] SYMBOL), as
# "SAMPLES DSO IP ORIGIN SYMBOL"; [g] is perf's mark of a guest kernel sample.
guest_lines() { awk '$1 ~ /%$/ && $6 == "[g]" { print $2, $3, $4, $5, $7 }' "$OUT/report-$1.txt"; }
named() { guest_lines "$1" | awk '$5 !~ /^0x/ { n += $1 } END { print n + 0 }'; }
all_g() { guest_lines "$1" | awk '{ n += $1 } END { print n + 0 }'; }
for r in a-files b-files b-nofiles; do
    [ "$(cat "$OUT/report-$r.rc" 2>/dev/null)" = 0 ] || { sed 's/^/    | /' "$OUT/report-$r.err"; bad "perf kvm report $r exited $(cat "$OUT/report-$r.rc" 2>/dev/null)"; }
done

# 2. Recorded and reported with our files: guest kernel functions named, each at an address our
# kallsyms gives that name (the greatest text symbol at or below the sample's address).
G_B=$(all_g b-files) N_B=$(named b-files)
echo "$ME: recorded and reported with our files: $G_B guest kernel samples, $N_B of them in named functions; the most sampled:"
guest_lines b-files | awk '$5 !~ /^0x/' | head -n 15 | sed "s/^/$ME:   | /"
[ "$N_B" -ge "${VT_PERFKVM_MIN:-20}" ] || bad "$N_B guest kernel samples named, want at least ${VT_PERFKVM_MIN:-20}"
awk '$2 ~ /^[tTwW]$/ { print $1 }' "$KS" | sort -u >"$WORK/text.addr"
guest_lines b-files | awk '$5 !~ /^0x/' >"$WORK/b-named"
awk -v work="$WORK" '
    FILENAME == work "/text.addr" { if (prev != "") nxt[prev] = $1; prev = $1; next }
    FILENAME ~ /kallsyms$/ { byname[$3] = byname[$3] " " $1; next }
    {
        ip = $3; sub(/^0x/, "", ip); while (length(ip) < 16) ip = "0" ip
        ok = 0; split(byname[$5], a, " ")
        for (i in a) if ("x" a[i] <= "x" ip && (nxt[a[i]] == "" || "x" ip < "x" nxt[a[i]])) ok = 1
        if (!ok) { printf "%s at %s: our kallsyms give %s there\n", $5, $3, (byname[$5] == "" ? "no such name" : "another function"); bad++ }
        n++
    }
    END { printf "%d named lines, %d not where our kallsyms put them\n", n, bad; exit bad > 0 }
' "$WORK/text.addr" "$KS" "$WORK/b-named" >"$WORK/where.txt" ||
    { sed 's/^/    | /' "$WORK/where.txt" | head -n 10; bad "guest samples named otherwise than our kallsyms say"; }
echo "$ME: check 2: $(tail -n1 "$WORK/where.txt")"
# The system-call path of dd's read(2) of /dev/zero and write(2) to /dev/null.
syscall_fns=$(awk '{ print $5 }' "$WORK/b-named" | grep -xE 'entry_SYSCALL_64.*|do_syscall_64|x64_sys_call|__x64_sys_(read|write)|ksys_(read|write)|vfs_(read|write)|read_zero|read_iter_zero|write_null|iov_iter_zero|__clear_user|clear_user|syscall_(enter_from|exit_to)_user_mode.*|__fdget_pos|__fget_light|rw_verify_area|security_file_permission' | sort -u)
echo "$ME: the system-call path seen: $(echo "$syscall_fns" | tr '\n' ' ')"
[ "$(echo "$syscall_fns" | grep -c .)" -ge 3 ] || bad "fewer than 3 functions of dd's system-call path named: $(echo "$syscall_fns" | tr '\n' ' ')"
grep -q "^Using $OUT_L1/pk/l2.kallsyms for symbols" "$OUT/report-b-files.err" ||
    bad "perf did not say 'Using $OUT_L1/pk/l2.kallsyms for symbols': $(head -n 3 "$OUT/report-b-files.err" | tr '\n' ' ')"

# 3. The same perf.data without our files: the same guest samples, none named.
G_BN=$(all_g b-nofiles) N_BN=$(named b-nofiles)
echo "$ME: the same perf.data reported without our files: $G_BN guest kernel samples, $N_BN named (e.g. $(guest_lines b-nofiles | head -n1 | awk '{ print $2, $5 }'))"
[ "$N_BN" = 0 ] || bad "$N_BN guest samples named without our files"
[ "$G_BN" = "$G_B" ] || bad "without our files perf reports $G_BN guest kernel samples, with them $G_B"

# 4. Recorded without our files, reported with them: perf kvm writes the guest's kernel and
# module maps into perf.data at record time, so the report does not even open the files.
G_A=$(all_g a-files) N_A=$(named a-files)
echo "$ME: recorded without our files, reported with them: $G_A guest kernel samples, $N_A named"
[ "$G_A" -gt 0 ] || bad "no guest kernel samples in the recording made without our files"
[ "$N_A" = 0 ] || bad "$N_A guest samples named in a recording made without our files"
if [ -f "$OUT/report-b-files.strace" ]; then
    ob=$(grep -c "openat(AT_FDCWD, \"$OUT_L1/pk/l2.kallsyms\", O_RDONLY) = [0-9]" "$OUT/report-b-files.strace")
    oa=$(grep -c "openat(AT_FDCWD, \"$OUT_L1/pk/l2.kallsyms\", O_RDONLY) = [0-9]" "$OUT/report-a-files.strace")
    echo "$ME: strace: the report opens l2.kallsyms $ob times with a recording made with our files, $oa without"
    [ "$ob" -gt 0 ] || bad "perf kvm report did not open l2.kallsyms"
    [ "$oa" = 0 ] || bad "perf kvm report opened l2.kallsyms $oa times for a recording made without it"
fi

# 5. Our modules file, as perf kvm record read it: a guest (pid 0) kernel-module map per line of
# l2.modules, at its address with its size, in perf-b.data (this side's perf reads it).
awk '{ printf "%s 0x%s 0x%x\n", $1, substr($NF, 3), $2 }' "$MODS" | sort >"$WORK/mods.want"
"$perf_here" report -D -i "$OUT/perf-b.data" 2>/dev/null |
    sed -n 's/.*PERF_RECORD_MMAP 0\/0: \[\(0x[0-9a-f]*\)(\(0x[0-9a-f]*\)) @ 0\]: x .*\/\([^/]*\)\.ko$/\3 \1 \2/p' |
    awk '{ gsub(/-/, "_", $1); print }' | sort >"$WORK/mods.got"
echo "$ME: the guest's module maps perf kvm record made from l2.modules: $(wc -l <"$WORK/mods.got") of $(wc -l <"$WORK/mods.want") ($(awk '{ print $1 }' "$WORK/mods.got" | tr '\n' ' '))"
diff "$WORK/mods.want" "$WORK/mods.got" >"$WORK/mods.diff" ||
    { sed 's/^/    | /' "$WORK/mods.diff"; bad "the guest's module maps in perf.data differ from l2.modules (< ours, > perf's)"; }

# 6. L2's console.
if [ -f "$OUT/l2-l2-console.log" ]; then
    VT_LOG_IGNORE=$VT_L1_LOG_IGNORE vt_check_console "$OUT/l2-l2-console.log" 2>"$WORK/l2-check.txt" ||
        bad "L2's console: $(head -n 5 "$WORK/l2-check.txt" | tr '\n' ' ')"
else
    bad "no L2 console came out"
fi

vt_kvm_end
