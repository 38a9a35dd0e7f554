#!/bin/bash
# kernel-deb.sh: fetch a Debian suite's linux-image-amd64 kernel package (the versioned .deb it
# depends on) through a PRIVATE apt configuration, and print the .deb's path.
#
# Usage: tests/e2e/kernel-deb.sh [--suite trixie] [--dir DIR] [--refresh] [--offline] [-q]
#   --suite NAME   Debian suite (default trixie: Debian 13, Linux 6.12)
#   --dir DIR      the private apt tree (default: $VT_APT_DIR or <repo>/.cache/apt-SUITE):
#                  DIR/sources.list, DIR/lists, DIR/cache, DIR/debs/SHA256.deb
#   --refresh      update the package lists even if they are recent
#   --offline      never ask the network: the newest .deb already in DIR/debs
#   -q             print only errors and the path
# The system's apt configuration (/etc/apt) is neither read for sources nor changed: apt runs with
# -o Dir::Etc::sourcelist=DIR/sources.list -o Dir::Etc::sourceparts=- and its own lists and cache.
# Lists younger than a day are reused; the .deb is kept under its sha256 (checked against the
# archive's), so a second run costs one apt-cache call and no network.  When the archive cannot be
# reached, the newest cached .deb is used.
# Exit: 0 (path on stdout), 1 failure, 2 no kernel to be had (archive unreachable, nothing cached;
# the reason on stderr's last line).
set -euo pipefail

ME=kernel-deb
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SUITE=trixie
. "$HERE/apt-lib.sh"
apt_args --suite-ok "$@"
case "$SUITE" in *[!a-z0-9-]*|'') echo "$ME: bad suite '$SUITE'" >&2; exit 1 ;; esac
DIR=${DIR:-${VT_APT_DIR:-$REPO/.cache/apt-$SUITE}}

say() { [ "$QUIET" = 1 ] || echo "$ME: $*" >&2; }
die() { echo "$ME: error: $*" >&2; exit 1; }
nokernel() { echo "$ME: $*" >&2; exit 2; }

mkdir -p "$DIR/debs"
DIR=$(cd "$DIR" && pwd)
apt_private "$DIR" "$SUITE" || die "no private apt configuration in $DIR"

newest_cached() { ls -t "$DIR"/debs/*.deb 2>/dev/null | head -n1 || true; }
fallback() {	# reason: use the newest cached .deb or give up with status 2
	local d
	d=$(newest_cached)
	[ -n "$d" ] || nokernel "no $SUITE kernel: $1"
	say "$1: using the cached $(basename "$d")"
	echo "$d"
	exit 0
}

if [ "$OFFLINE" = 1 ]; then
	fallback "--offline"
fi

if [ "$REFRESH" = 1 ] || ! apt_lists_fresh "$DIR"; then
	say "apt-get update (private lists in $DIR/lists, source: deb.debian.org $SUITE main)"
	apt_update "$DIR" || fallback "Debian's archive (deb.debian.org $SUITE) cannot be reached: $APT_ERR"
fi

# apt-cache costs ~0.7 s a call: its answer is kept, keyed by the state of the private lists.
key=$(stat -c '%n %s %Y' "$DIR"/lists/*_Packages* 2>/dev/null | sha256sum | cut -c1-16)
if [ -s "$DIR/resolve.$key" ]; then
	read -r pkg ver sum <"$DIR/resolve.$key"
else
	# (|| true: apt-cache failing is the "not found" below, not an exit under pipefail)
	pkg=$(apt-cache "${APT_OPTS[@]}" depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1) || true
	[ -n "$pkg" ] || fallback "linux-image-amd64 not found in the $SUITE lists"
	info=$(apt-cache "${APT_OPTS[@]}" show --no-all-versions "$pkg" 2>/dev/null) || fallback "apt-cache show $pkg failed"
	ver=$(sed -n 's/^Version: //p' <<<"$info" | head -n1)
	sum=$(sed -n 's/^SHA256: //p' <<<"$info" | head -n1)
	rm -f "$DIR"/resolve.*
	echo "$pkg $ver $sum" >"$DIR/resolve.$key"
fi
[[ "$sum" =~ ^[0-9a-f]{64}$ ]] || die "no SHA256 for $pkg in the lists"
deb=$DIR/debs/$sum.deb
if [ -s "$deb" ]; then
	say "$pkg $ver: cached $deb"
	touch "$deb"
	echo "$deb"
	exit 0
fi
tmp=$(mktemp -d "$DIR/.dl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
say "downloading $pkg=$ver"
if ! (cd "$tmp" && timeout 600 apt-get -q "${APT_OPTS[@]}" download "$pkg=$ver" >"$tmp/log" 2>&1); then
	fallback "apt-get download $pkg=$ver failed: $(grep -m1 '^[WE]:' "$tmp/log" | cut -c1-160)"
fi
f=$(ls "$tmp"/*.deb 2>/dev/null | head -n1)
[ -f "$f" ] || die "apt-get download produced no .deb"
got=$(sha256sum "$f" | cut -d' ' -f1)
[ "$got" = "$sum" ] || die "sha256 of $(basename "$f") is $got, the archive says $sum"
mv "$f" "$deb"
# Keep the two newest kernels.
ls -t "$DIR"/debs/*.deb | tail -n +3 | xargs -r rm -f
say "$pkg $ver: $(stat -c %s "$deb") bytes in $deb"
echo "$deb"
