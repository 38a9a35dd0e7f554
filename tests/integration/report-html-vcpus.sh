#!/bin/sh
# Proves: `report --html` draws a state strip under each vCPU's lane from report --vcpus' own
# state machine: the page's data holds, per vCPU, every interval of its states (in the guest,
# exit per reason, exit to QEMU per reason, halted, preempted per task, unknown) exactly as the
# fixture was built, to the nanosecond; summed per state they equal `report --vcpus --json`'s
# leaves for every vCPU; and headless Chromium draws them: in a screenshot, each interval's
# middle pixel has its state's colour (green in the guest, grey halted, red preempted, ...);
# hovering over an interval (Chromium driven over its DevTools pipe) names its exit reason or the
# preempting task, and its span.
# Bounded: a vCPU with 299999 intervals keeps at most 65536, contiguous, which hold them all.
# Fixture: report-vcpus.sh's KVM recording (VT_VCPUS_FIXTURE=DIR builds it only).
# VT_KEEP_SHOT=FILE keeps the screenshot.
echo "report --html: a state strip per vCPU, the exact intervals of report --vcpus, drawn in their colours"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
	{ echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "SKIP: jq is not installed"; exit 77; }

run=$WORK/run
mkdir -p "$run"
out=$(VT_VCPUS_FIXTURE=$run sh "$VT_SRCDIR/tests/integration/report-vcpus.sh" 2>&1) ||
	{ echo "$out"; fail "building the report-vcpus fixture"; }
page=$WORK/timeline.html
"$COLLECT" report --html "$page" "$run" >/dev/null 2>"$WORK/html.err" || { cat "$WORK/html.err"; fail "report --html exited $?"; }
"$COLLECT" report --vcpus --json "$run" >"$WORK/vcpus.json" || fail "report --vcpus --json exited $?"

# The page's strips, in host ns: the recording starts at 1000000 (the first strip's start).
python3 - "$page" >"$WORK/strips.txt" <<'PY' || fail "decoding the page's strips"
import base64, json, re, struct, sys
page = open(sys.argv[1]).read()
d = json.loads(re.search(r'<script id="vt-data" type="application/json">(.*?)</script>', page, re.S).group(1))
def arr(b, t):
    raw = base64.b64decode(b)
    return struct.unpack("<%d%s" % (len(raw) // struct.calcsize(t), t), raw)
t0 = 1000000 - arr(d["vstrips"][0]["s"], "d")[0]
for S in d["vstrips"]:
    s, e, k, m = arr(S["s"], "d"), arr(S["e"], "d"), arr(S["k"], "i"), arr(S["m"], "i")
    for i in range(len(s)):
        kind, name = d["vstates"][k[i]]
        print("%s|%d|%d|%s|%s|%d" % (S["label"], s[i] + t0, e[i] + t0, kind, name, m[i]))
PY
# The construction (report-vcpus.sh's events): each vCPU's states, interval by interval.
cat >"$WORK/want.txt" <<'EOF'
guest fx vcpu0|1000000|1010000|guest|in the guest|0
guest fx vcpu0|1010000|1011000|exit|exit EPT_VIOLATION|0
guest fx vcpu0|1011000|1020000|guest|in the guest|0
guest fx vcpu0|1020000|1020500|exit|exit IO_INSTRUCTION|0
guest fx vcpu0|1020500|1023500|qemu|exit to QEMU KVM_EXIT_IO|0
guest fx vcpu0|1023500|1030000|guest|in the guest|0
guest fx vcpu0|1030000|1030300|exit|exit HLT|0
guest fx vcpu0|1030300|1040000|halted|halted|0
guest fx vcpu0|1040000|1040400|preempted|preempted by swapper/0[0]|0
guest fx vcpu0|1040400|1041000|exit|exit HLT|0
guest fx vcpu0|1041000|1050000|guest|in the guest|0
guest fx vcpu0|1050000|1050100|exit|exit EXTERNAL_INTERRUPT|0
guest fx vcpu0|1050100|1060100|preempted|preempted by stress-ng[900]|0
guest fx vcpu0|1060100|1065100|preempted|preempted by guest other vCPU 0|0
guest fx vcpu0|1065100|1066000|exit|exit EXTERNAL_INTERRUPT|0
guest fx vcpu0|1066000|1070000|guest|in the guest|0
guest fx vcpu0|1070000|1080000|unknown|unknown|0
guest fx vcpu0|1080000|1090000|guest|in the guest|0
guest fx vcpu0|1090000|1100000|exit|exit HLT|0
guest fx vcpu1|1000000|1000500|unknown|unknown|0
guest fx vcpu1|1000500|1002500|exit|exit npf|0
guest fx vcpu1|1002500|1050000|guest|in the guest|0
guest fx vcpu1|1050000|1050300|exit|exit hlt|0
guest fx vcpu1|1050300|1060000|halted|halted|0
guest fx vcpu1|1060000|1061000|preempted|preempted by swapper/1[0]|0
guest fx vcpu1|1061000|1062000|exit|exit hlt|0
guest fx vcpu1|1062000|1070000|guest|in the guest|0
guest fx vcpu1|1070000|1070100|exit|exit io|0
guest fx vcpu1|1070100|1075100|qemu|exit to QEMU KVM_EXIT_IO|0
guest fx vcpu1|1075100|1080000|guest|in the guest|0
guest fx vcpu1|1080000|1080200|exit|exit msr|0
guest fx vcpu1|1080200|1080300|qemu|exit to QEMU restart|0
guest fx vcpu1|1080300|1100000|guest|in the guest|0
guest other vcpu0|1000000|1065100|unknown|unknown|0
guest other vcpu0|1065100|1070000|preempted|preempted by guest fx vCPU 0|0
guest other vcpu0|1070000|1100000|unknown|unknown|0
EOF
diff -u "$WORK/want.txt" "$WORK/strips.txt" || fail "the page's strips differ from the construction"
echo "strips: $(wc -l <"$WORK/strips.txt") intervals, as built"

# Summed per state, the strips are report --vcpus' states (its JSON leaves), for every vCPU.
jq -r '.vcpus.guests[] | .name as $g | .vcpus[] | "guest \($g) vcpu\(.vcpu)" as $l | .states | to_entries[] |
	if (.value | type) == "object" then .key as $k | .value | to_entries[] | "\($l)|\($k).\(.key)|\(.value)"
	else "\($l)|\(.key)|\(.value)" end | select(endswith("|0") | not)' "$WORK/vcpus.json" | sort >"$WORK/json-sums.txt"
awk -F'|' '{ k = $4; n = $5
	if (k == "exit") { sub(/^exit /, "", n); k = "exit_kernel." n }
	else if (k == "qemu") { sub(/^exit to QEMU /, "", n); k = "exit_userspace." n }
	else if (k == "preempted") { sub(/^preempted by /, "", n); k = "preempted." n }
	s[$1 "|" k] += $3 - $2 }
	END { for (x in s) print x "|" s[x] }' "$WORK/strips.txt" | sort >"$WORK/strip-sums.txt"
[ -s "$WORK/json-sums.txt" ] || fail "report --vcpus --json has no states"
diff -u "$WORK/json-sums.txt" "$WORK/strip-sums.txt" || fail "the strips' sums differ from report --vcpus --json"
echo "sums: $(wc -l <"$WORK/json-sums.txt") states equal report --vcpus --json's"

# Drawn: open on a fixed window (#t=FROM,TO, ns from the page's first item) and check the pixels.
win=$(python3 - "$page" <<'PY'
import base64, json, re, struct, sys
d = json.loads(re.search(r'<script id="vt-data" type="application/json">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
s0 = struct.unpack("<d", base64.b64decode(d["vstrips"][0]["s"])[:8])[0]
print("%d,%d" % (s0 - 1000, s0 + 101000))
PY
)
cr() { timeout 120 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--user-data-dir="$WORK/profile" --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND" \
	--enable-logging=stderr --v=0 "$@" "file://$page#t=$win"; }
cr --window-size=1400,420 --dump-dom >"$WORK/dom.html" 2>"$WORK/dom.err" || fail "chromium --dump-dom exited $?"
strips=$(sed -n 's/.*data-vt-strips="\([^"]*\)".*/\1/p' "$WORK/dom.html" | head -1)
echo "strip rows: $strips"
[ "$(echo "$strips" | tr ';' '\n' | cut -d: -f1,4 | tr '\n' ' ')" = "guest fx vcpu0:19 guest fx vcpu1:14 guest other vcpu0:3 " ] ||
	fail "want the strips of fx vcpu0 (19), fx vcpu1 (14), other vcpu0 (3)"
cr --window-size=1400,420 --screenshot="$WORK/shot.png" >/dev/null 2>"$WORK/shot.err" || fail "chromium --screenshot exited $?"
cat "$WORK/dom.err" "$WORK/shot.err" | grep -E 'CONSOLE|Uncaught' >"$WORK/console.txt"
if [ -s "$WORK/console.txt" ]; then
	cat "$WORK/console.txt"
	fail "the page logged to the console"
fi
python3 - "$WORK/shot.png" "$strips" "$win" "$WORK/strips.txt" <<'PY' || fail "the strips are not drawn in their states' colours"
import struct, sys, zlib
png = open(sys.argv[1], "rb").read()
pos, idat = 8, b""
while pos < len(png):
    n, typ = struct.unpack(">I4s", png[pos:pos + 8])
    data = png[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", data[:10])
        bpp = 3 if ctype == 2 else 4
    elif typ == b"IDAT":
        idat += data
    pos += 12 + n
raw, rows, prev, stride = zlib.decompress(idat), [], None, w * bpp
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i] if prev else 0
        c = prev[i - bpp] if prev and i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(bytes(line)); prev = line
def px(x, y): return tuple(rows[y][x * bpp:x * bpp + 3])
top = next(y for y in range(h) if px(w - 5, y) == (0xf6, 0xf7, 0xf9))
v0, v1 = (int(x) for x in sys.argv[3].split(","))
ys = {r.rsplit(":", 3)[0]: top + int(r.rsplit(":", 3)[1]) + 6 for r in sys.argv[2].split(";")}
first = None
def kind_of(c):
    r, g, b = c
    if c == (0x2f, 0x9e, 0x44): return "guest"
    if c == (0xce, 0xd4, 0xda): return "halted"
    if c == (0x49, 0x50, 0x57): return "unknown"
    if r > 150 and g < 110 and b < 110: return "preempted"
    if r > 200 and 60 <= g <= 200 and b < 90: return "exit"
    if b > 150 and r > 90 and g < 140: return "qemu"
    return "?"
bad = checked = 0
for line in open(sys.argv[4]):
    label, s, e, kind, name, m = line.rstrip("\n").split("|")
    s, e = int(s), int(e)
    if first is None: first = s
    # the page's times are from its first item; the window was set from the first strip's start
    rel = lambda t: t - first + v0 + 1000
    x0 = 170 + (rel(s) - v0) / (v1 - v0) * (w - 170)
    x1 = 170 + (rel(e) - v0) / (v1 - v0) * (w - 170)
    if x1 - x0 < 5:
        continue	# too narrow to tell its colour from its neighbours' edges
    got = kind_of(px(int((x0 + x1) / 2), ys[label]))
    checked += 1
    if got != kind:
        bad += 1
        print("  %s %d..%d %s: pixel %s looks %s" % (label, s, e, kind, px(int((x0 + x1) / 2), ys[label]), got))
print("pixels: %d intervals wide enough to check, %d in the wrong colour" % (checked, bad))
sys.exit(1 if bad or checked < 25 else 0)
PY
echo "screenshot: $WORK/shot.png"
[ -z "${VT_KEEP_SHOT:-}" ] || cp "$WORK/shot.png" "$VT_KEEP_SHOT"

# Hovering: Chromium driven over its DevTools pipe (Input.dispatchMouseEvent), the tip read back.
# In the middle of an interval the tip names its state (the exit reason, the preempting task) and
# its span.
cat >"$WORK/hover.py" <<'PY'
import json, os, subprocess, sys, time
chrome, url, profile, strips, win = sys.argv[1:6]
want = [l.rstrip("\n").split("|") for l in open(sys.argv[6])]
r1, w1 = os.pipe()
r2, w2 = os.pipe()
def fds():
    os.dup2(r1, 3)
    os.dup2(w2, 4)
p = subprocess.Popen([chrome, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                      "--no-first-run", "--user-data-dir=" + profile, "--remote-debugging-pipe",
                      "--window-size=1400,420", "--proxy-server=127.0.0.1:9",
                      "--host-resolver-rules=MAP * ~NOTFOUND", "about:blank"],
                     pass_fds=(3, 4), preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(r1)
os.close(w2)
buf, mid = b"", [0]
def call(method, params=None, session=None):
    global buf
    mid[0] += 1
    m = {"id": mid[0], "method": method, "params": params or {}}
    if session:
        m["sessionId"] = session
    os.write(w1, json.dumps(m).encode() + b"\0")
    while True:
        while b"\0" in buf:
            msg, buf = buf.split(b"\0", 1)
            r = json.loads(msg)
            if r.get("id") == mid[0]:
                if "error" in r:
                    raise SystemExit("DevTools: %s: %s" % (method, r["error"]))
                return r.get("result", {})
        d = os.read(r2, 1 << 16)
        if not d:
            raise SystemExit("chromium closed its DevTools pipe")
        buf += d
def js(expr, s):
    return call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, s)["result"].get("value")
bad = 0
try:
    t = call("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = call("Target.attachToTarget", {"targetId": t, "flatten": True})["sessionId"]
    call("Page.navigate", {"url": url}, s)
    for _ in range(200):
        if js("document.body && document.body.getAttribute('data-vt-strips')", s):
            break
        time.sleep(0.05)
    top = js("document.getElementById('c').getBoundingClientRect().top", s)
    w = js("window.innerWidth", s)
    ys = {r.rsplit(":", 3)[0]: int(r.rsplit(":", 3)[1]) for r in strips.split(";")}
    v0, v1 = (int(x) for x in win.split(","))
    for label, rel_mid, name, span in want:
        x = 170 + (float(rel_mid) - v0) / (v1 - v0) * (w - 170)
        call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": top + ys[label] + 6}, s)
        tip = js("var t = document.getElementById('tip'); t.style.display === 'block' ? t.textContent : ''", s)
        ok = tip.split("\n")[0] == label + ": " + name and tip.split("\n")[1].endswith("(" + span + ")")
        print("  hover %s at %.0f: %s%s" % (label, x, json.dumps(tip), "" if ok else "  <- want " + name + ", " + span))
        bad += not ok
finally:
    try:
        call("Browser.close")
    except BaseException:
        pass
    p.wait(timeout=30)
sys.exit(1 if bad else 0)
PY
# label|middle (ns from the page's first item, as #t= counts)|the state's name|its span
s0=${win%,*}
s0=$((s0 + 1000 - 1000000))
printf '%s\n' "guest fx vcpu0|$((s0 + 1055100))|preempted by stress-ng[900]|10.000 us" \
	"guest fx vcpu0|$((s0 + 1062600))|preempted by guest other vCPU 0|5.000 us" \
	"guest fx vcpu0|$((s0 + 1022000))|exit to QEMU KVM_EXIT_IO|3.000 us" \
	"guest fx vcpu0|$((s0 + 1035150))|halted|9.700 us" \
	"guest fx vcpu1|$((s0 + 1001500))|exit npf|2.000 us" \
	"guest fx vcpu1|$((s0 + 1072600))|exit to QEMU KVM_EXIT_IO|5.000 us" >"$WORK/hover.want"
timeout 120 python3 "$WORK/hover.py" "$CHROMIUM" "file://$page#t=$win" "$WORK/profile-hover" "$strips" "$win" "$WORK/hover.want" ||
	fail "hovering does not name the state under the pointer"

# Bounded: 150000 entries and exits of one vCPU (700 ns in the guest, 300 ns in the exit, every
# 1000th stay 50 us) keep at most 65536 intervals, still contiguous from the first record to the
# last, and each says how many it holds: together, every one of the 299999.
h=$WORK/big-fixture big=$WORK/big
mkdir -p "$h/formats" "$big"
cp -r "$DATA/kvm-exits/formats/kvm" "$h/formats/"
for f in header_page header_event uname; do cp "$DATA/cap-host/$f" "$h/"; done
echo '[local] global' >"$h/trace_clock"
echo 1 >"$h/nr_cpus"
awk 'BEGIN { t = 1000000; for (i = 0; i < 150000; i++) {
	print "0 " t " 5001 entry 0 1000"; t += (i % 1000 == 999) ? 50000 : 700
	print "0 " t " 5001 exit 0 48 1000"; t += 300 } }' >"$WORK/big.events"
"$TOOLS/vt-mkkvm" -o "$h" --exit-id "$(sed -n 's/^ID: //p' "$h/formats/kvm/kvm_exit")" \
	--entry-id "$(sed -n 's/^ID: //p' "$h/formats/kvm/kvm_entry")" --cpus 1 <"$WORK/big.events" || fail "vt-mkkvm (big)"
mkdat "$big/host.dat" -i "$h" --trace-id 0x42 --guest big:0x99:5001
printf '{"tool":"fixture","version":"0","host":{"file":"host.dat"},"guests":[%s]}\n' \
	'{"name":"big","file":null,"trace_id":"0x0000000000000099"}' >"$big/manifest.json"
"$COLLECT" report --html "$WORK/big.html" "$big" >/dev/null 2>"$WORK/big.err" || { cat "$WORK/big.err"; fail "report --html (big) exited $?"; }
python3 - "$WORK/big.html" <<'PY' || fail "the big vCPU's strip is not bounded, contiguous and complete"
import base64, json, re, struct, sys
d = json.loads(re.search(r'<script id="vt-data" type="application/json">(.*?)</script>', open(sys.argv[1]).read(), re.S).group(1))
def arr(b, t):
    raw = base64.b64decode(b)
    return struct.unpack("<%d%s" % (len(raw) // struct.calcsize(t), t), raw)
S = d["vstrips"][0]
s, e, m = arr(S["s"], "d"), arr(S["e"], "d"), arr(S["m"], "i")
gaps = sum(1 for i in range(1, len(s)) if s[i] != e[i - 1])
held = len(s) + sum(m)
span = e[-1] - s[0]
want = 150000 * 1000 + 150 * 49300 - 300
print("big: %d intervals kept, holding %d, %d gaps, span %d ns (want <= 65536, 299999, 0, %d)" % (len(s), held, gaps, span, want))
sys.exit(0 if len(s) <= 65536 and held == 299999 and gaps == 0 and span == want and len(s) >= 150 else 1)
PY
echo "PASS"
