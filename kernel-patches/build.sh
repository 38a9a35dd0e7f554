#!/bin/bash
# kernel-patches/build.sh: build a small x86_64 guest kernel from Debian's linux-source-6.1, once
# unpatched and once with kernel-patches/series applied, from the same tree and the same config.
#
# Usage: kernel-patches/build.sh [options]
#   --cache DIR     cache dir (default: $VT_KERNEL_CACHE or <repo>/.cache/kernel)
#   --tarball FILE  kernel source (default: /usr/src/linux-source-6.1.tar.xz)
#   --jobs N        make -jN (default 2)
#   --force         rebuild even when the cache has this build
#   -q, --quiet     print only errors and the result
# Config: `make tinyconfig`, then kernel-patches/config.fragment merged with
# scripts/kconfig/merge_config.sh, then olddefconfig; every line of the fragment must survive
# in the final .config or the build fails.  Only vmlinux is built (QEMU boots it by PVH).
# The result is cached by a hash of (tarball sha256, fragment, series and patches, this script):
#   CACHE/out/HASH/unpatched/{vmlinux,config,System.map,release}
#   CACHE/out/HASH/patched/{vmlinux,config,System.map,release}
#   CACHE/out/HASH/build-times   (seconds: unpatched cold vmlinux build, patched incremental
#                                 build, everything including extraction and config)
# The output dir CACHE/out/HASH is printed on stdout; CACHE/out/current links to it.
# Runs twice and concurrently safely: one build at a time per cache (flock CACHE/build.lock).
# Missing build tools are installed with apt-get when run as root.
# Exit: 0 ok, 1 failure, 2 the kernel source is not available.
set -euo pipefail

ME=kpatch-build
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)

CACHE=${VT_KERNEL_CACHE:-$REPO/.cache/kernel}
TARBALL=/usr/src/linux-source-6.1.tar.xz
JOBS=2
FORCE=0
QUIET=0
FRAGMENT=$HERE/config.fragment
SERIES=$HERE/series

say() { [ "$QUIET" = 1 ] || echo "$ME: $*" >&2; }
die() { echo "$ME: error: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--cache) CACHE=$2; shift 2 ;;
	--tarball) TARBALL=$2; shift 2 ;;
	--jobs) JOBS=$2; shift 2 ;;
	--force) FORCE=1; shift ;;
	-q|--quiet) QUIET=1; shift ;;
	-h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done

# Tools and source: install what is missing when we may.
need_pkgs=()
for t in gcc:gcc make:make bc:bc bison:bison flex:flex xz:xz-utils perl:perl flock:util-linux; do
	command -v "${t%%:*}" >/dev/null 2>&1 || need_pkgs+=("${t#*:}")
done
[ -f /usr/include/libelf.h ] || [ -f /usr/include/gelf.h ] || need_pkgs+=(libelf-dev)
[ -f /usr/include/openssl/opensslv.h ] || need_pkgs+=(libssl-dev)
if [ "$TARBALL" = /usr/src/linux-source-6.1.tar.xz ] && [ ! -f "$TARBALL" ]; then
	need_pkgs+=(linux-source-6.1)
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		say "installing ${need_pkgs[*]}"
		apt-get install -y -q "${need_pkgs[@]}" >&2 ||
			{ apt-get update -q >&2 && apt-get install -y -q "${need_pkgs[@]}" >&2; } ||
			die "apt-get install ${need_pkgs[*]} failed"
	else
		die "missing: ${need_pkgs[*]} (apt-get install them as root)"
	fi
fi
[ -f "$TARBALL" ] || { echo "$ME: error: no kernel source $TARBALL" >&2; exit 2; }
[ -f "$FRAGMENT" ] || die "missing $FRAGMENT"
[ -f "$SERIES" ] || die "missing $SERIES"

mkdir -p "$CACHE/out"
CACHE=$(cd "$CACHE" && pwd)

# The tarball's sha256 is cached by (path, size, mtime): hashing 130 MiB costs ~0.5 s.
tar_sha() {
	local stamp f
	stamp=$(stat -c '%s %Y' "$TARBALL")
	f=$CACHE/tarball-sha.$(echo "$TARBALL $stamp" | sha256sum | cut -c1-16)
	if [ ! -s "$f" ]; then
		sha256sum <"$TARBALL" | cut -d' ' -f1 >"$f.$$" && mv "$f.$$" "$f"
	fi
	cat "$f"
}
PATCHES=()
while read -r p _; do
	case "$p" in ''|'#'*) continue ;; esac
	[ -f "$HERE/$p" ] || die "series names $p, which is missing"
	PATCHES+=("$p")
done <"$SERIES"
KEY=$( {
	echo "tarball $(tar_sha)"
	echo "fragment $(sha256sum <"$FRAGMENT")"
	echo "series $(sha256sum <"$SERIES")"
	for p in "${PATCHES[@]+"${PATCHES[@]}"}"; do echo "patch $p $(sha256sum <"$HERE/$p")"; done
	echo "build.sh $(sha256sum <"$0")"
} | sha256sum | cut -c1-16)
OUT=$CACHE/out/$KEY

done_already() { [ -s "$OUT/patched/vmlinux" ] && [ -s "$OUT/unpatched/vmlinux" ] && [ -s "$OUT/build-times" ]; }

report() {
	local u p t
	read -r u p t <"$OUT/build-times"
	say "kernel $(cat "$OUT/patched/release") ($KEY): built in ${t:-?} s: unpatched vmlinux ${u} s, patched incremental ${p} s (-j$JOBS)"
	ln -sfn "out/$KEY" "$CACHE/current.new" && mv -T "$CACHE/current.new" "$CACHE/current"
	echo "$OUT"
}

if [ "$FORCE" = 0 ] && done_already; then
	say "cached: $OUT"
	report
	exit 0
fi

exec 9>"$CACHE/build.lock"
if ! flock -n 9; then
	say "another build holds $CACHE/build.lock; waiting"
	flock 9
fi
if [ "$FORCE" = 0 ] && done_already; then
	say "cached (built meanwhile): $OUT"
	report
	exit 0
fi

TREE=$CACHE/tree-$KEY
SRC=$TREE/linux-source-6.1
MK=(nice -n 10 make -s -j"$JOBS" ARCH=x86_64 KBUILD_BUILD_USER=vt KBUILD_BUILD_HOST=vt
    "KBUILD_BUILD_TIMESTAMP=2024-01-01 00:00:00 UTC")

rm -rf "$TREE" "$OUT"
mkdir -p "$TREE"
t0=$(now)
say "extracting $TARBALL into $TREE"
tar -C "$TREE" -xJf "$TARBALL"
[ -f "$SRC/Makefile" ] || SRC=$(dirname "$(ls -d "$TREE"/*/Makefile | head -n1)")
[ -f "$SRC/Makefile" ] || die "no kernel tree in $TREE"
t1=$(now)

check_config() { # check_config .config: every fragment line is there
	local line sym miss=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) grep -qxF "$line" "$1" || { echo "$ME: config: want '$line', got '$(grep -E "^(# )?${line%%=*}[= ]" "$1" || echo unset)'" >&2; miss=1; } ;;
		'# CONFIG_'*' is not set')
			sym=${line#\# }; sym=${sym%% *}
			! grep -q "^$sym=" "$1" || { echo "$ME: config: want '$line'" >&2; miss=1; } ;;
		esac
	done <"$FRAGMENT"
	return $miss
}

build_one() { # build_one NAME LOCALVERSION
	local name=$1 lv=$2 t d=$OUT/$1
	t=$(now)
	say "building $name vmlinux (make -j$JOBS, nice 10)"
	"${MK[@]}" -C "$SRC" LOCALVERSION="$lv" vmlinux >"$TREE/build-$name.log" 2>&1 ||
		{ tail -n 40 "$TREE/build-$name.log" >&2; die "$name build failed (log: $TREE/build-$name.log)"; }
	BUILD_SECS=$(secs "$t" "$(now)")
	mkdir -p "$d.tmp"
	cp "$SRC/vmlinux" "$d.tmp/vmlinux"
	cp "$SRC/.config" "$d.tmp/config"
	cp "$SRC/System.map" "$d.tmp/System.map"
	"${MK[@]}" -C "$SRC" LOCALVERSION="$lv" kernelrelease >"$d.tmp/release"
	mv "$d.tmp" "$d"
	say "$name: $(cat "$d/release") in $BUILD_SECS s"
}

say "config: tinyconfig + $(basename "$FRAGMENT")"
"${MK[@]}" -C "$SRC" tinyconfig >"$TREE/config.log" 2>&1 || { cat "$TREE/config.log" >&2; die "make tinyconfig failed"; }
(cd "$SRC" && ARCH=x86_64 scripts/kconfig/merge_config.sh -m .config "$FRAGMENT") >>"$TREE/config.log" 2>&1 ||
	{ cat "$TREE/config.log" >&2; die "merge_config.sh failed"; }
"${MK[@]}" -C "$SRC" olddefconfig >>"$TREE/config.log" 2>&1 || { cat "$TREE/config.log" >&2; die "olddefconfig failed"; }
check_config "$SRC/.config" || die "options of $(basename "$FRAGMENT") did not survive in .config"

mkdir -p "$OUT"
build_one unpatched -vt
T_UNPATCHED=$BUILD_SECS

for p in "${PATCHES[@]+"${PATCHES[@]}"}"; do
	say "applying $p"
	patch -d "$SRC" -p1 --forward --batch -s <"$HERE/$p" || die "$p does not apply"
done
"${MK[@]}" -C "$SRC" olddefconfig >>"$TREE/config.log" 2>&1 || die "olddefconfig after patching failed"
check_config "$SRC/.config" || die "options of $(basename "$FRAGMENT") did not survive after patching"
build_one patched -vt-kpatch
T_PATCHED=$BUILD_SECS
T_TOTAL=$(secs "$t0" "$(now)")
echo "$T_UNPATCHED $T_PATCHED $T_TOTAL" >"$OUT/build-times"
say "extract $(secs "$t0" "$t1") s, total $T_TOTAL s"

# Keep only this build tree (incremental rebuilds, checkpatch); older ones go.
for d in "$CACHE"/tree-*; do
	[ "$d" = "$TREE" ] || rm -rf "$d"
done
report
