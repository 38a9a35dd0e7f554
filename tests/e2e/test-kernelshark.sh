#!/bin/bash
# vt-suite: e2e
# test-kernelshark.sh: KernelShark opens what the collector records. A fake guest (vt-fake-agent
# serving the guest fixture, retimed to the recording) and host sched_switch events are recorded
# for 2 s; KernelShark (Debian's kernelshark) opens host.dat and appends guest-NAME.dat under
# Xvfb, and a screenshot is taken. Checks:
#   - the screenshot has one CPU row label per CPU of each file, in two stream colours (host
#     first: as many rows as host.dat's CPUs, then as many as the guest file's);
#   - every CPU row's graph is drawn: at least 0.1% of its band is not white (an empty row has
#     0%; the guest's 2 s of events can be a small part of the host's range when the machine is
#     loaded and the recording's setup takes long);
#   - the session KernelShark writes when it quits (Ctrl+Q) lists the two files as streams 0
#     and 1 with CPU plots for every CPU.
# It needs no guest: an e2e test because it needs an X server and GUI packages that `make check`
# must not require, and keeps a screenshot to look at (printed at the end).
# Env: VT_BUILDDIR (default <repo>/build), VT_KEEP=1 keeps the work directory.
# Exit: 0 pass, 1 fail, 77 skip (no kernelshark, Xvfb, xdotool, ImageMagick; not root; KernelShark
# does not start).
echo "test-kernelshark: KernelShark shows the host's and the guest's CPU rows from a recording"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
B=${VT_BUILDDIR:-$REPO/build}
ME=test-kernelshark
say() { echo "$ME: $*"; }
skip() { say "SKIP: $*"; exit 77; }

for t in kernelshark Xvfb xdotool import convert jq trace-cmd; do
    command -v "$t" >/dev/null 2>&1 ||
        skip "$t is not installed (scripts/install-deps.sh installs kernelshark xvfb xdotool imagemagick)"
done
[ "$(id -u)" = 0 ] || skip "not root (host events need tracefs)"
COLLECT=$B/host-collector/virtio-trace-collect FAKE=$B/tests/tools/vt-fake-agent
[ -x "$COLLECT" ] && [ -x "$FAKE" ] || skip "no build in $B (set VT_BUILDDIR; make check builds vt-fake-agent)"

WORK=$(mktemp -d /tmp/vt-$ME.XXXXXX) || exit 1
PIDS=() MOUNTED=0 FAILED=0
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    [ "$MOUNTED" = 1 ] && umount /sys/kernel/tracing 2>/dev/null
    if [ "${VT_KEEP:-0}" = 1 ] || [ "$FAILED" = 1 ]; then
        say "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
bad() { say "FAIL: $*"; FAILED=1; exit 1; }

if ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && MOUNTED=1 || skip "cannot mount tracefs"
fi
[ -w /sys/kernel/tracing/instances ] || skip "no writable tracefs instances"

# The recording.
OUT=$WORK/out
mkdir -p "$WORK/ports"
"$FAKE" --name vmks --fifo "$WORK/ports" --fixture "$REPO/tests/data/cap-guest" --retime --repeat 7 \
    2>"$WORK/fake.log" &
PIDS+=($!)
for _ in $(seq 100); do grep -q 'ports ready' "$WORK/fake.log" && break; sleep 0.1; done
timeout 60 "$COLLECT" record --chardev-dir "$WORK/ports" --name vmks -o "$OUT" --duration 2 \
    --host-events sched:sched_switch --sync probe >"$WORK/record.log" 2>&1
rc=$?
[ $rc = 0 ] && [ -f "$OUT/host.dat" ] && [ -f "$OUT/guest-vmks.dat" ] ||
    { sed 's/^/    | /' "$WORK/record.log"; bad "record exited $rc or wrote no host.dat/guest-vmks.dat"; }
cpus() { trace-cmd report -i "$1" 2>/dev/null | sed -n 's/^cpus=//p' | head -1; }
hcpus=$(cpus "$OUT/host.dat") gcpus=$(cpus "$OUT/guest-vmks.dat")
hev=$(trace-cmd report -i "$OUT/host.dat" 2>/dev/null | grep -c ' \[[0-9]*\] ')
gev=$(trace-cmd report -i "$OUT/guest-vmks.dat" 2>/dev/null | grep -c ' \[[0-9]*\] ')
say "recorded: host.dat $hcpus CPUs, $hev events; guest-vmks.dat $gcpus CPUs, $gev events"
[ "${hcpus:-0}" -ge 1 ] && [ "${gcpus:-0}" -ge 1 ] && [ "$hev" -gt 0 ] && [ "$gev" -gt 0 ] ||
    bad "a file is empty"

# KernelShark under Xvfb. Its cache directory holds the session it writes on quitting and the
# setting that keeps its "running as root" dialog from covering the window.
exec 5>"$WORK/display"
Xvfb -displayfd 5 -screen 0 1280x1024x24 -nolisten tcp >"$WORK/xvfb.log" 2>&1 &
PIDS+=($!)
exec 5>&-
for _ in $(seq 100); do [ -s "$WORK/display" ] && break; sleep 0.1; done
[ -s "$WORK/display" ] || skip "Xvfb did not start: $(tail -1 "$WORK/xvfb.log")"
export DISPLAY=:$(head -1 "$WORK/display")
export KS_USER_CACHE_DIR=$WORK/ks HOME=$WORK XDG_RUNTIME_DIR=$WORK/xdg
mkdir -p "$KS_USER_CACHE_DIR" && mkdir -m 700 "$XDG_RUNTIME_DIR"
printf '[General]\nnoRootWarn=true\n' >"$KS_USER_CACHE_DIR/setting.ini"
t0=$(date +%s.%N)
kernelshark -geometry 1280x1024+0+0 -i "$OUT/host.dat" -a "$OUT/guest-vmks.dat" >"$WORK/ks.log" 2>&1 &
KS=$!
PIDS+=($KS)

# labels SHOT: the CPU row labels, "Y0 Y1 R,G,B" top to bottom: boxes of one pale, saturated
# colour 25-80 px tall in the column (within the left 120 px) that has the most of them (table
# cells in the stream's colour are shorter).
labels() {
    convert "$1" -crop 120x1024+0+0 txt:- | awk '
    NR > 1 {
        split($1, p, /[,:]/); x = p[1]; y = p[2]
        c = $2; gsub(/[()]/, "", c); split(c, v, ","); r = v[1]; g = v[2]; b = v[3]
        mx = r; if (g > mx) mx = g; if (b > mx) mx = b
        mn = r; if (g < mn) mn = g; if (b < mn) mn = b
        col = (mx - mn >= 25 && mn >= 100) ? r "," g "," b : ""
        if (col != "" && col == cur[x] && y == last[x] + 1) {
            run[x]++
        } else {
            if (run[x] >= 25 && run[x] <= 80) { out[x] = out[x] " " (last[x] - run[x] + 1) ":" last[x] ":" cur[x]; n[x]++ }
            run[x] = col != "" ? 1 : 0; cur[x] = col
        }
        last[x] = y
    }
    END {
        for (x in n) if (n[x] > best) { best = n[x]; bx = x }
        k = split(out[bx], e, " ")
        for (i = 1; i <= k; i++) { split(e[i], f, ":"); print f[1], f[2], f[3] }
    }'
}
want=$((hcpus + gcpus)) shot=$WORK/kernelshark.png
found=0
for _ in $(seq 60); do
    kill -0 $KS 2>/dev/null || { sed 's/^/    | /' "$WORK/ks.log"; skip "kernelshark exited at start"; }
    if xdotool search --onlyvisible --name 'Kernel Shark' >/dev/null 2>&1; then
        import -window root "$shot" 2>/dev/null && labels "$shot" >"$WORK/labels" &&
            [ "$(wc -l <"$WORK/labels")" -ge "$want" ] && { found=1; break; }
    fi
    sleep 1
done
win=$(xdotool search --onlyvisible --name 'Kernel Shark' 2>/dev/null | head -1)
[ -n "$win" ] || { sed 's/^/    | /' "$WORK/ks.log"; skip "KernelShark shows no window after 60 s"; }
sleep 1	# a last repaint
import -window root "$shot" && labels "$shot" >"$WORK/labels" || bad "cannot take a screenshot"
say "window after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s; screenshot $shot (kept with VT_KEEP=1 or on failure)"
sed 's/^/    | /' "$WORK/ks.log"

# Rows by colour, in screen order: the host's stream first.
awk '{ if (!($3 in n)) order[++k] = $3; n[$3]++ } END { for (i = 1; i <= k; i++) printf "%s %d\n", order[i], n[order[i]] }' \
    "$WORK/labels" >"$WORK/colours"
say "CPU row labels: $(tr '\n' ' ' <"$WORK/labels" | sed 's/ $//') (y0 y1 colour)"
say "streams by label colour: $(awk '{ printf "%srgb(%s) %d rows", (NR > 1 ? ", " : ""), $1, $2 }' "$WORK/colours")"
[ "$found" = 1 ] || bad "$(wc -l <"$WORK/labels") CPU rows found, want $want"
[ "$(wc -l <"$WORK/colours")" = 2 ] || bad "$(wc -l <"$WORK/colours") stream colours, want 2"
read -r _ hrows < <(sed -n 1p "$WORK/colours")
read -r _ grows < <(sed -n 2p "$WORK/colours")
[ "$hrows" = "$hcpus" ] && [ "$grows" = "$gcpus" ] ||
    bad "rows: $hrows in the first colour, $grows in the second; want $hcpus (host) and $gcpus (guest)"

# Every row's graph band (right of its label, the upper 60 % above the row's axis) is drawn.
width=$(identify -format %w "$shot")
i=0
while read -r y0 y1 colour; do
    mid=$(((y0 + y1) / 2)) i=$((i + 1))
    right=$(convert "$shot" -crop 200x1+0+$mid txt:- |
        awk -v c="($colour" 'index($2, c) == 1 { split($1, p, /[,:]/); m = p[1] } END { print m + 0 }')
    x=$((right + 15)) h=$(((y1 - y0) * 6 / 10))
    f=$(convert "$shot" -crop $((width - 30 - x))x$h+$x+$y0 +repage -colorspace gray -threshold 97% \
        -format '%[fx:1-mean]' info:)
    say "row $i (rgb($colour)): $(awk -v f="$f" 'BEGIN { printf "%.2f", 100 * f }')% of its graph drawn"
    awk -v f="$f" 'BEGIN { exit !(f >= 0.001) }' || bad "row $i (y $y0-$y1) is blank"
done <"$WORK/labels"

# Quit as a user does; KernelShark saves the session.
xdotool windowfocus --sync "$win" key ctrl+q 2>/dev/null
for _ in $(seq 50); do kill -0 $KS 2>/dev/null || break; sleep 0.1; done
kill -0 $KS 2>/dev/null && bad "KernelShark did not quit on Ctrl+Q"
S=$KS_USER_CACHE_DIR/lastsession.json
[ -f "$S" ] || bad "no session in $S"
jq -r '.["data streams"][] | "\(.["stream id"]) \(.data.file) \(.CPUPlots | length)"' "$S" >"$WORK/streams" ||
    bad "cannot read $S"
say "session streams: $(tr '\n' ';' <"$WORK/streams" | sed 's/;$//; s/;/; /g') (id file cpu-plots)"
printf '0 %s %s\n1 %s %s\n' "$OUT/host.dat" "$hcpus" "$OUT/guest-vmks.dat" "$gcpus" >"$WORK/streams.want"
diff -u "$WORK/streams.want" "$WORK/streams" || bad "the session's streams differ"
say "PASS"
