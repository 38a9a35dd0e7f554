#!/bin/bash
# vt-suite: e2e-kvm
# test-kvm-exits.sh: `record --kvm-exits` and `report --exits` on real kvm_exit/kvm_entry. L1
# (TCG, -cpu EPYC: nested SVM) runs the e2e guest as L2 under -accel kvm -cpu host,-xsave
# -smp 2 with the ports `setup` prints and an e1000 at 00:05.0 whose driver is not loaded;
#     virtio-trace-collect record --chardev-dir PORTS --name e2e --qemu-pid L2PID \
#         --kvm-exits -e irq -- WORK
# runs in L1 while WORK has the guest load e1000, bring its link up and write to its serial
# console (tests/e2e/l1/scenario-guest.sh through vt_l1_guest_run). The host events are L1's:
# the exits of L2's vCPUs. The recording comes back over 9p, and this side checks, against an
# independent count from `trace-cmd report -t -i host.dat` (each kvm_exit's own vcpu, reason
# and guest rip, and the thread it ran on):
#   - exits per reason, all guests and per vCPU, equal report --exits's (--json and text);
#   - the vCPU -> host thread map report uses (the GUEST option) is the thread on which each
#     vCPU's exits ran, one thread per vCPU;
#   - per reason, the exits timed (an entry of the same thread followed), their total time
#     exactly, and p50 and p99 of the handling time: never below the exact nearest-rank value,
#     above it by less than 1/64;
#   - io and npf (MMIO) exits resolved by guest rip to guest kernel functions through the
#     guest's kallsyms (`trace-cmd dump --kallsyms` of guest-e2e.dat, resolved here as
#     libtraceevent does): per reason and function start the same counts as report's, and
#     e1000's register accesses as npf exits in e1000_* functions (the module, loaded while
#     recording: its symbols come with the kallsyms sent after the stop), port I/O of the
#     serial console as io exits in the 8250 driver; the text table lists them;
#   - on this KVM host `setup` (--accel auto) prints -accel kvm and no reason;
#   - record exited 0, the clock method is kvm, L1's and L2's consoles are clean.
# The tables by reason and by guest function are printed (VT_KEEP=1 keeps them with the run).
# Env: VT_BUILDDIR, VT_STATIC_AGENT, VT_KEEP=1, VT_L1_* (lib.sh). Exit: 0 pass, 1 fail,
# 77 skip (no SVM in this QEMU, kvm_amd does not load, no /dev/kvm in L1, no kernel to be had).
echo "test-kvm-exits: record --kvm-exits and report --exits on real VM exits (a guest under KVM nested in a TCG L1): per reason, per vCPU, handling time p50/p99, io and MMIO exits by guest function (e1000)"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
. "$HERE/agent-lib.sh"
. "$HERE/scenario-lib.sh"
ME=test-kvm-exits
VT_LOG_PREFIX=$ME

scn_kvm_begin
# The serial console: each character an io exit (8250 port I/O); e1000: MMIO (npf) exits.
VT_L1_WORK=("sh modprobe e1000 && ip link set eth0 up && sleep 0.5 && echo E2E-SERIAL-0123456789abcdefghijklmnopqrstuvwxyz && ip link set eth0 down")
VT_L1_ENV="REC_ARGS=\"--kvm-exits -e irq\"
SCN_SETUP_AUTO=1
L2_QEMU_EXTRA=\"-device e1000,addr=0x5,romfile=\""
scn_kvm_run
echo "$ME: guest work: $(cat "$KOUT/work.answers" 2>/dev/null)"
[ "$CRC" = 0 ] || { sed 's/^/    | /' "$KOUT/record.log"; bad "record exited $CRC, want 0"; }
scn_kvm_end

# setup on a KVM host: -accel kvm, nothing on stderr.
read -r a1 a2 <"$KOUT/setup-auto.args"
echo "$ME: setup --accel auto in L1 (kvm_amd): exit $(cat "$KOUT/setup-auto.rc"), first line '$a1 $a2'," \
     "stderr: '$(head -c 200 "$KOUT/setup-auto.err")'"
[ "$a1 $a2" = "-accel kvm" ] && [ ! -s "$KOUT/setup-auto.err" ] || bad "setup on a KVM host did not print -accel kvm alone"

[ -s "$OUT/host.dat" ] && [ -s "$OUT/guest-e2e.dat" ] && [ -s "$OUT/manifest.json" ] ||
    { ls -la "$OUT" 2>&1 | sed 's/^/    /'; bad "no host.dat, guest-e2e.dat or manifest"; scn_result; }

# The oracle: trace-cmd's own decoding of host.dat (the kernel's print formats, -N: no plugin;
# nanosecond timestamps) and the guest's kallsyms.
trace-cmd report -N -t -i "$OUT/host.dat" >"$WORK/host.txt" 2>"$WORK/host.err" ||
    bad "trace-cmd report -i host.dat failed: $(head -3 "$WORK/host.err")"
trace-cmd dump --kallsyms -i "$OUT/guest-e2e.dat" >"$WORK/kallsyms.txt" 2>/dev/null ||
    bad "trace-cmd dump --kallsyms failed"
"$COLLECT" report --exits "$OUT" >"$WORK/exits.txt" 2>"$WORK/exits.err" || bad "report --exits exited $?: $(head -3 "$WORK/exits.err")"
"$COLLECT" report --json "$OUT" >"$WORK/report.json" 2>"$WORK/json.err" || bad "report --json exited $?"
grep -m3 -E ' kvm_(exit|entry): ' "$WORK/host.txt" | sed "s/^/$ME: trace-cmd: /"
python3 - "$WORK/host.txt" "$WORK/kallsyms.txt" "$WORK/report.json" "$WORK/exits.txt" >"$WORK/oracle.txt" 2>&1 <<'PY'
import bisect, json, re, sys
host, kallsyms, rep, text = sys.argv[1:5]
out = []
def fail(msg):
    out.append("FAIL " + msg)

# trace-cmd report -N -t (the kernel's print format, not plugin_kvm's "reason EXIT_MSR ..."):
# "COMM-TID [CPU] SECS.NANOS: kvm_exit: vcpu N reason R rip 0x... info1 ..."
undecoded = []
line_re = re.compile(r'^\s*(.*)-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?(\d+)\.(\d{9}):\s+(kvm_exit|kvm_entry):\s+(.*)$')
exits = []          # (ts, tid, vcpu, reason, rip)
events = []         # (ts, tid, kind, reason) in file order
for l in open(host, errors='replace'):
    m = line_re.match(l)
    if not m:
        continue
    tid, ts, kind, rest = int(m.group(2)), int(m.group(4)) * 10**9 + int(m.group(5)), m.group(6), m.group(7)
    if kind == 'kvm_exit':
        # SVM names with a blank ("DB excp") are one reason.
        f = re.match(r'vcpu (\d+) reason (.+?) rip 0x([0-9a-f]+) ', rest)
        if not f:
            undecoded.append(l.strip()[:160])
            continue
        exits.append((ts, tid, int(f.group(1)), f.group(2), int(f.group(3), 16)))
        events.append((ts, tid, 'x', f.group(2)))
    else:
        events.append((ts, tid, 'n', None))
if undecoded:
    fail("%d kvm_exit lines not as the kernel prints them, the first: %s" % (len(undecoded), undecoded[0]))
if not exits:
    fail("no kvm_exit in trace-cmd report of host.dat")

count = lambda pairs: {k: pairs.count(k) for k in set(pairs)}
by_reason = count([e[3] for e in exits])
by_vcpu = {}
threads = {}
for e in exits:
    by_vcpu.setdefault(e[2], []).append(e[3])
    threads.setdefault(e[2], set()).add(e[1])

# Handling times: exit -> the next entry of the same thread (report's rule: a later exit on
# the thread before any entry leaves the first untimed).
pending, times = {}, {}
for ts, tid, kind, reason in events:
    if kind == 'x':
        pending[tid] = (ts, reason)
    elif tid in pending:
        t0, r = pending.pop(tid)
        if ts >= t0:
            times.setdefault(r, []).append(ts - t0)

def rank(v, p):
    v = sorted(v)
    k = max(1, -(-len(v) * p // 100))
    return v[k - 1]

# Guest kallsyms as trace-cmd's loader takes them (no 'A'/'a', no '$' names) and
# libtraceevent's lookup: the symbol at or below, strictly below the next one's address.
syms = []
for l in open(kallsyms, errors='replace'):
    p = l.split()
    if len(p) < 3 or not re.match(r'^[0-9a-f]{8,16}$', p[0]) or len(p[1]) != 1:
        continue
    if p[1] in 'Aa' or p[2].startswith('$'):
        continue
    syms.append((int(p[0], 16), p[2], p[3].strip('[]') if len(p) > 3 else ''))
syms.sort()
addrs = [s[0] for s in syms]
names_at = {}
for a, n, mod in syms:
    names_at.setdefault(a, set()).add(n)
def resolve(rip):
    i = bisect.bisect_right(addrs, rip) - 1
    if i < 0 or rip == 0:
        return None
    j = i
    while j + 1 < len(addrs) and addrs[j + 1] == addrs[i]:
        j += 1
    if rip != addrs[i] and j + 1 >= len(addrs):
        return None
    return addrs[i]
funcs = {}
unresolved = 0
mods = {}
for a, n, mod in syms:
    if mod:
        mods.setdefault(a, mod)
for e in exits:
    s = resolve(e[4])
    if s is None:
        unresolved += 1
        continue
    funcs[(e[3], s)] = funcs.get((e[3], s), 0) + 1

r = json.load(open(rep))
h = [t for t in r.get('traces', []) if t.get('host')]
x = h[0].get('exits') if h else None
if not x:
    fail("report --json has no exits")
    print("\n".join(out)); sys.exit(0)
rr = {e['reason']: e for e in x['reasons']}
out.append("total exits: trace-cmd %d, report %d; entries report %d" % (len(exits), x['exits'], x['entries']))
if x['exits'] != len(exits):
    fail("report counts %d exits, trace-cmd %d" % (x['exits'], len(exits)))
out.append("TABLE by reason: %-12s %8s %8s %10s %10s %10s %10s %10s" % ("reason", "exits", "timed", "p50 ns", "exact", "p99 ns", "exact", "sum us"))
for reason in sorted(by_reason, key=lambda k: -by_reason[k]):
    e = rr.get(reason)
    if not e:
        fail("reason %s (%d exits) missing from report" % (reason, by_reason[reason]))
        continue
    if e['count'] != by_reason[reason]:
        fail("%s: report %d exits, trace-cmd %d" % (reason, e['count'], by_reason[reason]))
    tv = times.get(reason, [])
    if e.get('timed', 0) != len(tv) or e['time_ns'] != sum(tv):
        fail("%s: report timed %s, %d ns; trace-cmd %d, %d ns" % (reason, e.get('timed'), e['time_ns'], len(tv), sum(tv)))
    if tv:
        for p, key in ((50, 'p50_ns'), (99, 'p99_ns')):
            exact, got = rank(tv, p), e.get(key)
            if got is None or not (exact <= got <= exact + exact // 64):
                fail("%s: %s %s, exact %d" % (reason, key, got, exact))
        out.append("TABLE by reason: %-12s %8d %8d %10s %10d %10s %10d %10.1f" % (reason, e['count'], len(tv),
                   e.get('p50_ns'), rank(tv, 50), e.get('p99_ns'), rank(tv, 99), e['time_ns'] / 1000))
    else:
        out.append("TABLE by reason: %-12s %8d %8d" % (reason, e['count'], 0))
for reason in rr:
    if reason not in by_reason:
        fail("report has reason %s, trace-cmd none" % reason)

g = x['guests'][0] if x.get('guests') else None
if not g:
    fail("report has no guest in its exits")
else:
    for v in g['vcpus']:
        n = v['vcpu']
        want = count(by_vcpu.get(n, []))
        got = {e['reason']: e['count'] for e in v['reasons']}
        out.append("vcpu %d: host thread %s (trace-cmd: %s), %d exits: %s" % (n, v.get('host_thread'),
                   ",".join(map(str, sorted(threads.get(n, [])))), sum(got.values()),
                   " ".join("%s=%d" % kv for kv in sorted(got.items()))))
        if got != want:
            fail("vcpu %d: report %s, trace-cmd %s" % (n, got, want))
        if threads.get(n) != {v.get('host_thread')}:
            fail("vcpu %d: its exits ran on threads %s, the GUEST option says %s" % (n, threads.get(n), v.get('host_thread')))
    if set(by_vcpu) != {v['vcpu'] for v in g['vcpus']}:
        fail("vCPUs: trace-cmd %s, report %s" % (sorted(by_vcpu), [v['vcpu'] for v in g['vcpus']]))
    # io and npf exits by guest function: report's (start, count) against the oracle's.
    gf = {}
    for f in g['functions']:
        if 'start' not in f:
            fail("report's function %s has no start" % f['function'])
            continue
        s = int(f['start'], 16)
        gf[(f['reason'], s)] = f['count']
        if f['function'] not in names_at.get(s, ()):
            fail("report names %s for %s, the kallsyms %s" % (f['function'], f['start'], names_at.get(s)))
    for reason in ('io', 'npf'):
        mine = {k: v for k, v in funcs.items() if k[0] == reason}
        theirs = {k: v for k, v in gf.items() if k[0] == reason}
        if mine != theirs:
            diff = set(mine.items()) ^ set(theirs.items())
            fail("%s exits by function differ: %s" % (reason, sorted((k[0], hex(k[1]), v) for (k, v) in diff)[:6]))
        for (rs, s), n in sorted(mine.items(), key=lambda kv: -kv[1]):
            out.append("TABLE by function: %-4s %-36s %-8s %8d" % (rs, "/".join(sorted(names_at[s])), mods.get(s, ''), n))
    if sum(funcs.values()) + unresolved != len(exits) or x['unresolved_rip'] != unresolved:
        fail("unresolved rips: report %d, trace-cmd %d" % (x['unresolved_rip'], unresolved))
    e1k = sum(n for (rs, s), n in funcs.items() if rs == 'npf' and any(nm.startswith('e1000_') for nm in names_at[s]))
    e1k_mod = sum(n for (rs, s), n in funcs.items() if rs == 'npf' and mods.get(s) == 'e1000')
    ser = sum(n for (rs, s), n in funcs.items() if rs == 'io' and any('serial' in nm for nm in names_at[s]))
    out.append("npf exits in e1000_* functions: %d (in module e1000: %d); io exits in serial functions: %d; unresolved rips %d"
               % (e1k, e1k_mod, ser, unresolved))
    if e1k < 10 or e1k_mod < 10:
        fail("only %d npf exits in e1000_* functions (%d in the module)" % (e1k, e1k_mod))
    if ser < 10:
        fail("only %d io exits in serial functions" % ser)
    # The text report lists them too: per reason its exits and those resolved, then the top
    # functions with their count (e1000's first function among npf's).
    t = open(text, errors='replace').read()
    for reason in ('io', 'npf'):
        res = sum(n for (rs, s), n in funcs.items() if rs == reason)
        if not re.search(r'^    %s: %d exits, %d in a known function$' % (reason, by_reason.get(reason, 0), res), t, re.M):
            fail("the text report has no line '%s: %d exits, %d in a known function'" % (reason, by_reason.get(reason, 0), res))
    top = sorted(((n, s) for (rs, s), n in funcs.items() if rs == 'npf' and mods.get(s) == 'e1000'), reverse=True)
    if top and not any(re.search(r'^      %s +%d +[0-9.]+%%$' % (re.escape(m), top[0][0]), t, re.M) for m in names_at[top[0][1]]):
        fail("the text report has no line for %s (npf, %d)" % (sorted(names_at[top[0][1]]), top[0][0]))
print("\n".join(out))
PY
grep -v '^FAIL ' "$WORK/oracle.txt" | sed "s/^/$ME: /"
while IFS= read -r l; do bad "${l#FAIL }"; done < <(grep '^FAIL ' "$WORK/oracle.txt")
grep -q '^total exits: ' "$WORK/oracle.txt" || bad "the oracle did not get through: $(tail -n 3 "$WORK/oracle.txt" | tr '\n' ' ')"
grep -q '^Traceback' "$WORK/oracle.txt" && bad "the oracle stopped: $(tail -n 1 "$WORK/oracle.txt")"
echo "$ME: report --exits, all guests and the io and npf exits by guest function:"
sed -n '/^VM exits/,/^  guest e2e:$/p' "$WORK/exits.txt" | sed '$d; s/^/    /'
awk '/exits per guest function/ { on = 1; print; next }
     on && /^    [a-z_A-Z0-9]+: / { show = ($1 == "io:" || $1 == "npf:") }
     on && /^  [^ ]/ { on = 0 }
     on && show' "$WORK/exits.txt" | sed 's/^/    /'
scn_result
