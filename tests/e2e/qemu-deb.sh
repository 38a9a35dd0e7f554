#!/bin/bash
# qemu-deb.sh: fetch Debian bookworm-backports' QEMU (qemu-system-x86 with qemu-system-data and
# the seabios it wants) through a PRIVATE apt configuration (apt-lib.sh), unpack it with
# `dpkg -x` (never installed), and print its qemu-system-x86_64's path.
#
# The e2e-kvm pass runs its L1 guests with it (lib.sh, vt_l1_qemu): under Debian 12's QEMU 7.2,
# nested SVM under TCG stalled L2 in some runs and twice panicked L1 (tests/e2e/l1/README.md).
# The firmware to pass it is in ROOT/usr/share/seabios and ROOT/usr/share/qemu, ROOT being the
# binary's path less /usr/bin/qemu-system-x86_64.
#
# Usage: tests/e2e/qemu-deb.sh [--dir DIR] [--refresh] [--offline] [-q]
#   --dir DIR    the private apt tree (default: <repo>/.cache/apt-bookworm-backports): DIR/lists,
#                DIR/cache, DIR/qemu-VERSION (the unpacked packages)
#   --refresh    update the package lists even if they are recent
#   --offline    never ask the network: the newest QEMU already unpacked in DIR
#   -q           print only errors and the path
# Exit: 0 (path on stdout), 1 failure, 2 no QEMU to be had (archive unreachable, nothing
# unpacked before; the reason on stderr's last line).
set -euo pipefail

ME=qemu-deb
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SUITE=bookworm-backports
. "$HERE/apt-lib.sh"
apt_args "$@"
DIR=${DIR:-$REPO/.cache/apt-$SUITE}

say() { [ "$QUIET" = 1 ] || echo "$ME: $*" >&2; }
die() { echo "$ME: error: $*" >&2; exit 1; }

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
apt_private "$DIR" "$SUITE" || die "no private apt configuration in $DIR"

# A tree counts once its binary ran (the stamp "ok" is written after `--version` worked).
newest_unpacked() { ls -td "$DIR"/qemu-*/ok 2>/dev/null | head -n1 | sed 's|/ok$||' || true; }
binary() { echo "$1/root/usr/bin/qemu-system-x86_64"; }
fallback() {	# reason: use the newest unpacked QEMU or give up with status 2
	local d
	d=$(newest_unpacked)
	[ -n "$d" ] || { echo "$ME: no $SUITE QEMU: $1" >&2; exit 2; }
	say "$1: using the unpacked $(basename "$d")"
	binary "$d"
	exit 0
}

[ "$OFFLINE" = 0 ] || fallback "--offline"
if [ "$REFRESH" = 1 ] || ! apt_lists_fresh "$DIR"; then
	say "apt-get update (private lists in $DIR/lists, source: deb.debian.org $SUITE main)"
	apt_update "$DIR" || fallback "Debian's archive (deb.debian.org $SUITE) cannot be reached: $APT_ERR"
fi

# One apt-cache call for both (a failure is "not found" below, not an exit under pipefail).
read -r ver bios < <(apt-cache "${APT_OPTS[@]}" show --no-all-versions qemu-system-x86 seabios 2>/dev/null |
	awk '/^Package: / { p = $2 } /^Version: / { v[p] = $2 } END { print v["qemu-system-x86"], v["seabios"] }')
[ -n "$ver" ] && [ -n "$bios" ] || fallback "qemu-system-x86 or seabios not found in the $SUITE lists"
# The directory's name: the version with only [A-Za-z0-9.+~-] (the epoch's ':' goes).
tree=$DIR/qemu-$(echo "${ver#*:}" | tr -c 'A-Za-z0-9.+~\n-' _)
if [ -f "$tree/ok" ]; then
	say "qemu-system-x86 $ver: unpacked in $tree"
	binary "$tree"
	exit 0
fi
tmp=$(mktemp -d "$DIR/.dl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "downloading qemu-system-x86, qemu-system-data $ver and seabios $bios"
# apt-get checks each .deb against the signed lists' SHA256.
if ! (cd "$tmp" && timeout 600 apt-get -q "${APT_OPTS[@]}" download "qemu-system-x86=$ver" \
		"qemu-system-data=$ver" "seabios=$bios" >"$tmp/log" 2>&1); then
	fallback "apt-get download of QEMU $ver failed: $(grep -m1 '^[WE]:' "$tmp/log" | cut -c1-160)"
fi
mkdir "$tmp/root"
for f in "$tmp"/*.deb; do
	dpkg -x "$f" "$tmp/root" || die "dpkg -x $(basename "$f") failed"
done
out=$("$tmp/root/usr/bin/qemu-system-x86_64" --version 2>&1 | head -n1) ||
	fallback "the unpacked qemu-system-x86_64 does not run here: $out"
rm -rf "$tree"
mkdir "$tree"
mv "$tmp/root" "$tree/root"
echo "$out" >"$tree/ok"
# Keep the two newest trees.
ls -td "$DIR"/qemu-*/ | tail -n +3 | xargs -r rm -rf
say "$out in $tree"
binary "$tree"
