#!/bin/bash
# vt-suite: e2e
# test-kernelshark-combo.sh: KernelShark's own KVMCombo plugin (Debian's plugin-kvm_combo.so)
# reads our files and draws its combined host/guest plot. The recording is report-vcpus.sh's
# KVM fixture (host.dat with kvm_entry/kvm_exit, sched events and the GUEST option mapping
# guest fx's vCPU 0 and 1 to host threads 5001 and 5002; guest-fx.dat with its TRACEID and
# TIME_SHIFT). Under Xvfb:
#   1. as a user does it: `kernelshark -i host.dat -a guest-fx.dat`, menu Plots > "KVM Combo
#      plots" (the plugin's dialog; xdotool clicks), "all" vCPUs, Apply, Ctrl+Q. The session
#      KernelShark saves holds the combos the plugin built from our GUEST option: guest stream 1
#      vCPU 0 over host stream 0 task 5001, vCPU 1 over task 5002, exactly;
#   2. that session, reopened with only the combos shown (`kernelshark -s`): a screenshot has the
#      four rows (guest CPU 0, host CPU0/KVM-5001, guest CPU 1, host CPU1/KVM-5002) in the two
#      streams' colours, every row's graph drawn;
#   3. the same session with the plugin off: the plot differs from 2's in at least 1000 pixels
#      (the plugin's bridges between each host kvm_entry and kvm_exit and its gaps on the guest
#      row), so what 2 shows is the plugin's drawing, not only KernelShark's own task rows.
# An e2e test: it needs an X server and GUI packages that `make check` must not require.
# Env: VT_BUILDDIR (default <repo>/build), VT_KEEP=1 keeps the work directory (the screenshots).
# Exit: 0 pass, 1 fail, 77 skip (no kernelshark, Xvfb, xdotool, ImageMagick, jq; KernelShark does
# not start).
echo "test-kernelshark-combo: KernelShark's KVMCombo plugin opens host.dat with the guest file and draws the combined plot"
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
B=${VT_BUILDDIR:-$REPO/build}
ME=test-kernelshark-combo
say() { echo "$ME: $*"; }
skip() { say "SKIP: $*"; exit 77; }

for t in kernelshark Xvfb xdotool import convert identify jq; do
	command -v "$t" >/dev/null 2>&1 ||
		skip "$t is not installed (scripts/install-deps.sh installs kernelshark xvfb xdotool imagemagick jq)"
done
PLUGIN=$(dpkg -L kernelshark 2>/dev/null | grep '/plugin-kvm_combo\.so$' | head -1)
[ -n "$PLUGIN" ] || skip "Debian's kernelshark has no plugin-kvm_combo.so"
{ [ -x "$B/tests/tools/vt-mkkvm" ] && [ -x "$B/tests/tools/vt-mkdat" ]; } ||
	skip "no vt-mkkvm/vt-mkdat in $B/tests/tools (make check builds them)"

WORK=$(mktemp -d /tmp/vt-$ME.XXXXXX) || exit 1
PIDS=() FAILED=0
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	if [ "${VT_KEEP:-0}" = 1 ] || [ "$FAILED" = 1 ]; then
		say "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
bad() { say "FAIL: $*"; FAILED=1; exit 1; }

RUN=$WORK/run
mkdir -p "$RUN"
VT_SRCDIR=$REPO VT_BUILDDIR=$B VT_VCPUS_FIXTURE=$RUN sh "$REPO/tests/integration/report-vcpus.sh" >"$WORK/fixture.log" 2>&1 ||
	{ sed 's/^/    | /' "$WORK/fixture.log"; bad "building the report-vcpus fixture"; }

exec 5>"$WORK/display"
Xvfb -displayfd 5 -screen 0 1280x1024x24 -nolisten tcp >"$WORK/xvfb.log" 2>&1 &
PIDS+=("$!")
exec 5>&-
for _ in $(seq 100); do [ -s "$WORK/display" ] && break; sleep 0.1; done
[ -s "$WORK/display" ] || skip "Xvfb did not start: $(tail -1 "$WORK/xvfb.log")"
DISPLAY=:$(head -1 "$WORK/display")
export DISPLAY
export KS_USER_CACHE_DIR=$WORK/ks HOME=$WORK XDG_RUNTIME_DIR=$WORK/xdg
mkdir -p "$KS_USER_CACHE_DIR" && mkdir -m 700 "$XDG_RUNTIME_DIR"
printf '[General]\nnoRootWarn=true\n' >"$KS_USER_CACHE_DIR/setting.ini"
SESSION=$KS_USER_CACHE_DIR/lastsession.json

# ks LOG ARGS...: start KernelShark, wait for its window (and a first paint); $KS and $WIN are set.
ks() {
	local log=$1
	shift
	kernelshark -geometry 1280x1024+0+0 "$@" >"$log" 2>&1 &
	KS=$!
	PIDS+=("$KS")
	WIN=
	for _ in $(seq 60); do
		kill -0 $KS 2>/dev/null || { sed 's/^/    | /' "$log"; skip "kernelshark exited at start"; }
		WIN=$(xdotool search --onlyvisible --name 'Kernel Shark' 2>/dev/null | head -1)
		[ -n "$WIN" ] && break
		sleep 1
	done
	[ -n "$WIN" ] || { sed 's/^/    | /' "$log"; skip "KernelShark shows no window after 60 s"; }
	sleep 3	# the data loaded and drawn
}
# quit: Ctrl+Q as a user does; KernelShark saves the session.
quit() {
	rm -f "$SESSION"
	xdotool windowfocus --sync "$WIN" key ctrl+q 2>/dev/null
	for _ in $(seq 50); do [ -s "$SESSION" ] && break; sleep 0.1; done
	for _ in $(seq 30); do kill -0 $KS 2>/dev/null || break; sleep 0.1; done
	kill $KS 2>/dev/null	# it has saved: it sometimes lingers under Xvfb
	wait $KS 2>/dev/null
	[ -s "$SESSION" ] || bad "no session in $SESSION after Ctrl+Q"
}

# 1. The plugin's dialog, driven as a user drives it.
ks "$WORK/ks1.log" -i "$RUN/host.dat" -a "$RUN/guest-fx.dat"
grep -v 'failed to initialize on stream .*guest-fx.dat' "$WORK/ks1.log" | grep -i 'kvm_combo' &&
	bad "the plugin did not load on host.dat"
xdotool windowactivate --sync "$WIN" 2>/dev/null
xdotool mousemove 109 10 click 1	# the menu bar's "Plots"
sleep 1
import -window root "$WORK/menu.png" 2>/dev/null
xdotool mousemove 175 84 click 1	# its third item, "KVM Combo plots" (the plugin's)
DLG=
for _ in $(seq 20); do
	DLG=$(xdotool search --onlyvisible --name 'KVM Combo plots' 2>/dev/null | head -1)
	[ -n "$DLG" ] && break
	sleep 0.5
done
[ -n "$DLG" ] || bad "no 'KVM Combo plots' dialog from the Plots menu (see $WORK/menu.png)"
sleep 1
import -window root "$WORK/dialog.png" 2>/dev/null
xdotool mousemove --window "$DLG" 85 98 click 1	# "all" vCPUs
sleep 0.5
h=$(xdotool getwindowgeometry "$DLG" | sed -n 's/.*Geometry: [0-9]*x\([0-9]*\)/\1/p')
xdotool mousemove --window "$DLG" 41 $((h - 24)) click 1	# Apply
sleep 2
import -window root "$WORK/applied.png" 2>/dev/null
quit
combos=$(jq -c '.ComboPlots' "$SESSION")
say "the dialog's combos: $combos"
# [[guest stream, KSHARK_CPU_DRAW|KSHARK_GUEST_DRAW, vCPU], [host stream, KSHARK_TASK_DRAW|KSHARK_HOST_DRAW, tid]]
[ "$combos" = '[[[1,10,0],[0,5,5001]],[[1,10,1],[0,5,5002]]]' ] ||
	bad "the plugin's combos differ from the GUEST option's map (vCPU 0 = 5001, vCPU 1 = 5002); screenshots in $WORK"

# 2. The session with only the combos shown, a taller graph pane.
jq '.Splitter = [700, 300] | (.["data streams"][] | .CPUPlots) = [] | (.["data streams"][] | .TaskPlots) = []' \
	"$SESSION" >"$WORK/combo.json" || bad "cannot edit the session"
jq '(.["data streams"][] | .plugins.registered) |= map(if .[0] == "kvm_combo" then [.[0], false] else . end)' \
	"$WORK/combo.json" >"$WORK/noplugin.json" || bad "cannot edit the session"
ks "$WORK/ks2.log" -s "$WORK/combo.json"
SHOT=$WORK/kvm-combo.png
import -window root "$SHOT" || bad "cannot take a screenshot"
quit
ks "$WORK/ks3.log" -s "$WORK/noplugin.json"
import -window root "$WORK/no-plugin.png" || bad "cannot take a screenshot"
quit
say "screenshots: $SHOT (the combos), $WORK/no-plugin.png (the plugin off); kept with VT_KEEP=1 or on failure"

# labels SHOT: the row labels, "Y0 Y1 R,G,B" top to bottom (as test-kernelshark.sh finds them):
# boxes of one pale, saturated colour 25-40 px tall (a combo's guest and host rows are 34 px; the
# table's cells 20) in the column left of the label text (x < 29) that has the most of them.
labels() {
	convert "$1" -crop 29x1024+0+0 txt:- | awk '
	NR > 1 {
		split($1, p, /[,:]/); x = p[1]; y = p[2]
		c = $2; gsub(/[()]/, "", c); split(c, v, ","); r = v[1]; g = v[2]; b = v[3]
		mx = r; if (g > mx) mx = g; if (b > mx) mx = b
		mn = r; if (g < mn) mn = g; if (b < mn) mn = b
		col = (mx - mn >= 25 && mn >= 100) ? r "," g "," b : ""
		if (col != "" && col == cur[x] && y == last[x] + 1) {
			run[x]++
		} else {
			if (run[x] >= 25 && run[x] <= 40) { out[x] = out[x] " " (last[x] - run[x] + 1) ":" last[x] ":" cur[x]; n[x]++ }
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
labels "$SHOT" >"$WORK/labels"
say "rows: $(tr '\n' ';' <"$WORK/labels" | sed 's/;$//; s/;/; /g') (y0 y1 colour)"
[ "$(wc -l <"$WORK/labels")" = 4 ] || bad "$(wc -l <"$WORK/labels") rows, want 4 (two combos of a guest and a host row)"
pattern=$(awk '{ if (!($3 in id)) id[$3] = ++k; printf "%s", id[$3] }' "$WORK/labels")
[ "$pattern" = 1212 ] || bad "row colours $pattern, want guest/host alternating (1212)"
width=$(identify -format %w "$SHOT")
i=0
while read -r y0 y1 colour; do
	mid=$(((y0 + y1) / 2)) i=$((i + 1))
	right=$(convert "$SHOT" -crop 200x1+0+$mid txt:- |
		awk -v c="($colour" 'index($2, c) == 1 { split($1, p, /[,:]/); m = p[1] } END { print m + 0 }')
	x=$((right + 15))
	f=$(convert "$SHOT" -crop $((width - 30 - x))x$((y1 - y0))+$x+"$y0" +repage -colorspace gray -threshold 97% \
		-format '%[fx:1-mean]' info:)
	say "row $i (rgb($colour)): $(awk -v f="$f" 'BEGIN { printf "%.2f", 100 * f }')% of its graph drawn"
	awk -v f="$f" 'BEGIN { exit !(f >= 0.01) }' || bad "row $i (y $y0-$y1) is blank"
done <"$WORK/labels"

# 3. What the plugin drew: the graph with and without it.
read -r top _ < <(head -1 "$WORK/labels")
read -r _ bottom _ < <(tail -1 "$WORK/labels")
n=$(convert "$SHOT" "$WORK/no-plugin.png" -compose difference -composite \
	-crop $((width - 160))x$((bottom - top + 20))+150+$((top - 10)) +repage -colorspace gray -threshold 5% \
	-format '%[fx:round(mean*w*h)]' info:)
say "the plugin's drawing: $n pixels of the plot differ with it off"
[ "${n:-0}" -ge 1000 ] || bad "the plot with the plugin is the plot without it ($n pixels differ)"
say "PASS"
