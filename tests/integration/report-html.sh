#!/bin/sh
# Proves: `report --html` writes one self-contained page (no src/href, a CSP of 'none' but
# inline script and style) that headless Chromium, with every network route closed, loads
# without a console message, and whose canvas shows every lane that has events: the page
# reports its lanes in the DOM (data-vt-lanes: label:y:height:items), and in a screenshot each
# such lane's region holds several distinct colours (task slices, ticks), not a blank stripe.
# Fixture: tests/data/cap-host as host.dat (two pages flagged lossy: shaded spans) and
# tests/data/cap-guest as a guest with two clock-sync epochs in its manifest.
# VT_HTML_FILE=PAGE checks that page instead (e.g. demo-out/timeline.html).
echo "report --html: a self-contained timeline page, loaded by headless Chromium offline: lanes present and drawn, no console errors"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
COLLECT=$VT_BUILDDIR/host-collector/virtio-trace-collect
CHROMIUM=$(command -v chromium || command -v chromium-browser) ||
	{ echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }

page=${VT_HTML_FILE:-}
if [ -z "$page" ]; then
	run=$WORK/run
	mkdir -p "$run"
	mkdat "$run/host.dat" -i "$DATA/cap-host" --trace-id 0x42 --missed 0:2:100 --missed 1:3:5
	mkdat "$run/guest-fx.dat" -i "$DATA/cap-guest" --trace-id 0x1234
	# Epochs in host TSC at 1000000 kHz (1 tick = 1 ns here): at the guest's start and a bit later.
	# The guest's first timestamp in ns ("S.U" is microseconds; a counter clock prints ns).
	first=$(trace-cmd report -i "$run/guest-fx.dat" 2>/dev/null | sed -nE 's/.*\] *([0-9.]+): .*/\1/p' | head -1 |
		awk '{ if (index($1, ".")) { sub(/\./, "", $1); print $1 "000" } else print $1 }')
	first=${first:-1}
	cat >"$run/manifest.json" <<JSON
{"tool":"fixture","version":"0","host_tsc":{"khz":1000000},"host":{"file":"host.dat","cpus":[{"cpu":0},{"cpu":1}]},
 "guests":[{"name":"fx","file":"guest-fx.dat","trace_id":"0x0000000000001234","cpus":[{"cpu":0},{"cpu":1}],
  "sync":{"method":"probe","bound_ns":40000,"epochs":[{"cpu":0,"host_tsc_from":$first,"bound_ns":40000},
   {"cpu":0,"host_tsc_from":$((first + 5000000)),"bound_ns":25000}]}}]}
JSON
	page=$WORK/timeline.html
	"$COLLECT" report --html "$page" "$run" >/dev/null 2>"$WORK/html.err" || { cat "$WORK/html.err"; fail "report --html exited $?"; }
fi
[ -s "$page" ] || fail "no page written"
echo "page: $(wc -c <"$page") bytes"
# Self-contained: nothing to fetch.
if grep -qiE '<(script|img|link|iframe)[^>]* (src|href)=|url\(' "$page"; then
	fail "the page refers to something outside itself"
fi
grep -q "default-src 'none'" "$page" || fail "no Content-Security-Policy default-src 'none'"

cr() { timeout 120 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--user-data-dir="$WORK/profile" --proxy-server=127.0.0.1:9 --host-resolver-rules="MAP * ~NOTFOUND" \
	--enable-logging=stderr --v=0 "$@" "file://$page"; }
cr --dump-dom >"$WORK/dom.html" 2>"$WORK/dom.err" || fail "chromium --dump-dom exited $?"
lanes=$(sed -n 's/.*data-vt-lanes="\([^"]*\)".*/\1/p' "$WORK/dom.html" | head -1)
bands=$(sed -n 's/.*data-vt-bands="\([^"]*\)".*/\1/p' "$WORK/dom.html" | head -1)
[ -n "$lanes" ] || { grep CONSOLE "$WORK/dom.err"; fail "the page did not draw (no data-vt-lanes)"; }
echo "lanes: $lanes"
echo "bands: $bands"
height=$(echo "$lanes" | tr ';' '\n' | awk -F: '{ h = $(NF-2) + $(NF-1); if (h > m) m = h } END { print m + 140 }')
cr --window-size=1400,"$height" --screenshot="$WORK/shot.png" >/dev/null 2>"$WORK/shot.err" || fail "chromium --screenshot exited $?"
cat "$WORK/dom.err" "$WORK/shot.err" | grep -E 'CONSOLE|Uncaught' >"$WORK/console.txt"
if [ -s "$WORK/console.txt" ]; then
	cat "$WORK/console.txt"
	fail "the page logged to the console"
fi
# Each lane with items: several distinct colours in its region of the screenshot (left of x=172
# are the labels). The page's body starts below the toolbar: find the canvas's top as the first
# row of the axis background (#f6f7f9).
python3 - "$WORK/shot.png" "$lanes" <<'PY' || fail "blank lanes in the screenshot"
import struct, sys, zlib
png = open(sys.argv[1], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, w = 8, b"", 0
while pos < len(png):
    n, typ = struct.unpack(">I4s", png[pos:pos + 8])
    data = png[pos + 8:pos + 8 + n]
    if typ == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", data[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
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
def px(x, y): return rows[y][x * bpp:x * bpp + 3]
top = next(y for y in range(h) if px(w - 5, y) == b"\xf6\xf7\xf9")
bad = 0
for lane in sys.argv[2].split(";"):
    label, y, hh, items = lane.rsplit(":", 3)
    y0 = top + int(y)
    cols = {px(x, yy) for yy in range(y0 + 2, min(y0 + int(hh) - 3, h)) for x in range(172, w - 2, 2)}
    ok = int(items) == 0 or len(cols) >= 4
    print("  %-24s items %7s, %3d colours%s" % (label, items, len(cols), "" if ok else "  <- BLANK"))
    bad += not ok
sys.exit(1 if bad else 0)
PY
n=$(echo "$lanes" | tr ';' '\n' | wc -l)
[ -n "$VT_HTML_FILE" ] || [ "$n" = 4 ] || fail "$n lanes, want 4 (host cpu0-1, guest fx vcpu0-1)"
[ -n "$VT_HTML_FILE" ] || [ "${bands#guest fx:*:2}" != "$bands" ] || fail "no sync band with 2 epochs for guest fx: '$bands'"
echo "screenshot: $WORK/shot.png"
[ -z "${VT_KEEP_SHOT:-}" ] || cp "$WORK/shot.png" "$VT_KEEP_SHOT"
echo "PASS"
