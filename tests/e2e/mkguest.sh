#!/bin/bash
# mkguest.sh: build the virtio-trace test guest (Debian kernel + busybox initramfs) into a cache.
#
# Usage: tests/e2e/mkguest.sh [options]
#   --out DIR            image dir to fill (default: CACHE/image): vmlinux, bzImage, initramfs.cpio[.gz],
#                        config, System.map, guest.env (hard links into the cache)
#   --cache DIR          cache dir (default: $VT_CACHE or <repo>/.cache/guest)
#   --overlay DIR        copy DIR's tree over the initramfs root (repeatable; later wins)
#   --modules "M ..."    modules loaded at boot, in this order with their dependencies first
#                        (default: virtio_pci virtio_console)
#   --extra-modules "M ..."  modules put in the image but not loaded (guest: modprobe NAME)
#                        (default: e1000 virtio_blk virtio_net qemu_fw_cfg)
#   --compress none|gzip|lz4|zstd|xz   initramfs compression (default: none, fastest to boot)
#   --kernel-pkg NAME    Debian kernel package (default: what linux-image-amd64 depends on)
#   --deb FILE           use this linux-image .deb instead of downloading one (default: $VT_KERNEL_DEB;
#                        debian:SUITE fetches that suite's kernel with kernel-deb.sh;
#                        Debian 12's /lib/modules and Debian 13's /usr/lib/modules layouts both work,
#                        modules built into the kernel are skipped).  Without --out, the image dir is
#                        then CACHE/image@PACKAGE_VERSION, so the default image is left alone
#   --offline            do not ask apt; use the newest kernel already in the cache
#   --force              rebuild the initramfs even if the cache has it
#   -q, --quiet          print only errors and the final line
# The kernel is cached by the .deb's sha256, the initramfs by a hash of all its inputs.
# The .deb is never installed: it is unpacked with dpkg-deb -x.
# Exit status: 0 ok, 1 failure, 2 no kernel available (apt or network failed, nothing cached);
# the message is on stderr.  The image dir is printed on stdout.
set -euo pipefail

ME=mkguest
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

CACHE=${VT_CACHE:-$REPO/.cache/guest}
OUT=
OVERLAYS=()
BOOT_MODULES="virtio_pci virtio_console"
EXTRA_MODULES="e1000 virtio_blk virtio_net qemu_fw_cfg"
COMPRESS=none
KPKG=
DEB=
[ -z "${VT_KERNEL_DEB:-}" ] || DEB=$VT_KERNEL_DEB
OFFLINE=0
FORCE=0
QUIET=0
INIT_SRC=$HERE/guest/init

say() { [ "$QUIET" = 1 ] || echo "$ME: $*" >&2; }
die() { echo "$ME: error: $*" >&2; exit 1; }
die_kernel() { echo "$ME: error: $*" >&2; exit 2; }  # no kernel to be had: callers may skip
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found (apt-get install $2)"; }

while [ $# -gt 0 ]; do
    case "$1" in
    --out) OUT=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --overlay) [ -d "$2" ] || die "overlay '$2' is not a directory"; OVERLAYS+=("$(cd "$2" && pwd)"); shift 2 ;;
    --modules) BOOT_MODULES=$2; shift 2 ;;
    --extra-modules) EXTRA_MODULES=$2; shift 2 ;;
    --compress) COMPRESS=$2; shift 2 ;;
    --kernel-pkg) KPKG=$2; shift 2 ;;
    --deb) DEB=$2; shift 2 ;;
    --offline) OFFLINE=1; shift ;;
    --force) FORCE=1; shift ;;
    -q|--quiet) QUIET=1; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
done
case "$DEB" in
'') ;;
debian:*)  # a suite's current kernel, through kernel-deb.sh's private apt configuration
    DEB=$("$HERE/kernel-deb.sh" -q --suite "${DEB#debian:}") || exit $? ;;
*)
    [ -f "$DEB" ] || die "no such kernel package: $DEB"
    DEB=$(cd "$(dirname "$DEB")" && pwd)/$(basename "$DEB") ;;
esac
case "$COMPRESS" in
none) CEXT=""; CCMD="cat" ;;
gzip) CEXT=.gz; CCMD="gzip -n -6" ;;
lz4) CEXT=.lz4; CCMD="lz4 -l -9 -q" ;;  # the kernel wants the legacy lz4 format
zstd) CEXT=.zst; CCMD="zstd -q -19 -T0" ;;
xz) CEXT=.xz; CCMD="xz --check=crc32 -6 -T0" ;;
*) die "--compress: none, gzip, lz4, zstd or xz" ;;
esac
[ "$COMPRESS" = none ] || need "${CCMD%% *}" "$COMPRESS"

need sha256sum coreutils
need cpio cpio
need depmod kmod
[ -f "$INIT_SRC" ] || die "missing $INIT_SRC"
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || die "busybox not found (apt-get install busybox-static)"
! grep -qa '/ld-linux' "$BUSYBOX" || die "$BUSYBOX is dynamically linked: install busybox-static"

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
if [ -z "$OUT" ] && [ -n "$DEB" ]; then
    OUT=$CACHE/image@$(dpkg-deb -f "$DEB" Package | sed 's/^linux-image-//')_$(dpkg-deb -f "$DEB" Version)
fi
OUT=${OUT:-$CACHE/image}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# One mkguest at a time per cache (safe to run twice, even concurrently).
exec 9>"$CACHE/.lock"
flock 9

TMP=
cleanup() { [ -z "$TMP" ] || rm -rf "$TMP"; }
trap cleanup EXIT
newtmp() { TMP=$(mktemp -d "$CACHE/.tmp.XXXXXX"); }

sha() { sha256sum "$@" | cut -d' ' -f1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

###############################################################################
# 1. Which kernel: package name, version and the .deb's sha256 (from apt's metadata).
#    apt-cache takes ~0.7 s per call here (no pkgcache.bin), so the answer is cached,
#    keyed by the state of apt's package lists.
###############################################################################
KSHA=
KVER=
resolve_apt() {
    local lists key f pkg out
    lists=$(stat -c '%n %s %Y' /var/lib/apt/lists/*Packages* 2>/dev/null || true)
    key=$(printf '%s\n%s\n' "$lists" "$KPKG" | sha256sum | cut -c1-16)
    f=$CACHE/resolve/$key
    if [ -n "$lists" ] && [ -s "$f" ]; then
        read -r KPKG KVER KSHA <"$f"
        say "kernel: $KPKG $KVER (apt lists unchanged)"
        return 0
    fi
    pkg=$KPKG
    if [ -z "$pkg" ]; then
        pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
              sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1)
        [ -n "$pkg" ] || return 1
    fi
    out=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null) || return 1
    KVER=$(sed -n 's/^Version: //p' <<<"$out" | head -n1)
    KSHA=$(sed -n 's/^SHA256: //p' <<<"$out" | head -n1)
    [ -n "$KVER" ] && [ -n "$KSHA" ] || return 1
    KPKG=$pkg
    mkdir -p "$CACHE/resolve"
    echo "$KPKG $KVER $KSHA" >"$f.tmp" && mv "$f.tmp" "$f"
    say "kernel: $KPKG $KVER (from apt-cache; linux-image-amd64 -> $KPKG)"
}

newest_cached_kernel() {
    local d best="" bt=0 t
    for d in "$CACHE"/kernels/*/.complete; do
        [ -e "$d" ] || continue
        t=$(stat -c %Y "$d")
        if [ "$t" -gt "$bt" ]; then bt=$t; best=$(basename "$(dirname "$d")"); fi
    done
    echo "$best"
}

if [ -n "$DEB" ]; then
    say "kernel: using local package $DEB"
    KSHA=$(sha "$DEB")
    KPKG=$(dpkg-deb -f "$DEB" Package)
    KVER=$(dpkg-deb -f "$DEB" Version)
elif [ "$OFFLINE" = 1 ]; then
    KSHA=$(newest_cached_kernel)
    [ -n "$KSHA" ] || die_kernel "--offline: no kernel in $CACHE/kernels"
    say "kernel: offline, newest cached kernel ${KSHA:0:12}"
else
    need apt-cache apt
    if ! resolve_apt; then
        if [ "$(id -u)" = 0 ]; then
            say "apt-cache knows no linux-image-amd64: running apt-get update once"
            apt-get update -qq >&2 || die_kernel "apt-get update failed"
            resolve_apt || die_kernel "cannot resolve the kernel package ${KPKG:-of linux-image-amd64} with apt-cache"
        else
            KSHA=$(newest_cached_kernel)
            [ -n "$KSHA" ] || die_kernel "cannot resolve linux-image-amd64 with apt-cache (run apt-get update as root)"
            say "kernel: apt-cache failed, using newest cached kernel ${KSHA:0:12}"
        fi
    fi
fi

###############################################################################
# 2. Kernel: download, unpack, extract vmlinux, depmod.  Keyed by the .deb's sha256.
###############################################################################
KDIR=$CACHE/kernels/$KSHA

# extract_vmlinux BZIMAGE OUT: write the decompressed kernel ELF to OUT.
# The bzImage setup header (boot protocol >= 2.08) gives the compressed payload's place:
#   0x1f1 u8 setup_sects (0 means 4), 0x202 "HdrS", 0x206 u16 version,
#   0x248 u32 payload_offset (from the protected-mode code at (setup_sects+1)*512),
#   0x24c u32 payload_length.  The payload's last 4 bytes are the decompressed size (LE).
# If the header is unusable, fall back to scanning for an xz / zstd / gzip magic.
u32le() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
extract_vmlinux() {
    local img=$1 out=$2 sects ver off len dec want fmt
    local size
    size=$(stat -c %s "$img")
    off=; len=
    if [ "$(od -An -c -j $((0x202)) -N4 "$img" | tr -d ' ')" = HdrS ]; then
        ver=$(od -An -tu2 -j $((0x206)) -N2 "$img" | tr -d ' ')
        sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$img" | tr -d ' ')
        [ "$sects" != 0 ] || sects=4
        if [ "$ver" -ge $((0x208)) ]; then
            off=$(( (sects + 1) * 512 + $(u32le "$img" $((0x248))) ))
            len=$(u32le "$img" $((0x24c)))
            [ $((off + len)) -le "$size" ] || { off=; len=; }
        fi
    fi
    try_payload() { # off len(0 = to the end) -> decompress into $out, check the size trailer
        local o=$1 l=$2 m
        m=$(od -An -tx1 -j "$o" -N6 "$img" | tr -d ' \n')
        case "$m" in
        fd377a585a00*) fmt=xz; dec="xz -dc --single-stream" ;;
        28b52ffd*) fmt=zstd; dec="zstd -dcq" ;;
        1f8b08*) fmt=gzip; dec="gzip -dcq" ;;
        *) return 1 ;;
        esac
        command -v "${dec%% *}" >/dev/null || die "${dec%% *} is needed to unpack a $fmt kernel"
        if [ "$l" -gt 0 ]; then
            want=$(u32le "$img" $((o + l - 4)))
            tail -c +$((o + 1)) "$img" | head -c $((l - 4)) | $dec >"$out" 2>/dev/null || true
        else
            want=
            tail -c +$((o + 1)) "$img" | $dec >"$out" 2>/dev/null || true
        fi
        [ "$(od -An -c -N4 "$out" 2>/dev/null | tr -d ' ')" = 177ELF ] || return 1
        [ -z "$want" ] || [ "$(stat -c %s "$out")" = "$want" ] || return 1
        say "vmlinux: $fmt payload at offset $o, $(stat -c %s "$out") bytes"
    }
    if [ -n "$off" ] && try_payload "$off" "$len"; then
        return 0
    fi
    say "vmlinux: setup header unusable, scanning for a compressed payload"
    local cand
    for cand in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00|\x28\xb5\x2f\xfd|\x1f\x8b\x08' "$img" | cut -d: -f1); do
        try_payload "$cand" 0 && return 0
    done
    return 1
}

if [ -e "$KDIR/.complete" ]; then
    say "kernel: cached in $KDIR"
else
    need dpkg-deb dpkg
    t0=$(now)
    newtmp
    if [ -z "$DEB" ]; then
        need apt-get apt
        say "downloading $KPKG=$KVER with apt-get download"
        if ! (cd "$TMP" && apt-get download -q -o APT::Sandbox::User=root "$KPKG=$KVER" >&2); then
            alt=$(newest_cached_kernel)
            [ -n "$alt" ] || die_kernel "apt-get download $KPKG=$KVER failed"
            say "warning: apt-get download $KPKG=$KVER failed: using the newest cached kernel ${alt:0:12}"
            KSHA=$alt
            KDIR=$CACHE/kernels/$KSHA
        fi
    fi
fi
if [ ! -e "$KDIR/.complete" ]; then
    if [ -z "$DEB" ]; then
        DEB=$(ls "$TMP"/*.deb 2>/dev/null | head -n1)
        [ -f "$DEB" ] || die "apt-get download produced no .deb"
        got=$(sha "$DEB")
        [ "$got" = "$KSHA" ] || die "sha256 of $DEB is $got, apt says $KSHA"
    fi
    t1=$(now)
    say "unpacking $(basename "$DEB") (dpkg-deb -x, not installing)"
    mkdir "$TMP/root"
    dpkg-deb -x "$DEB" "$TMP/root"
    vmlinuz=$(ls "$TMP"/root/boot/vmlinuz-* 2>/dev/null | head -n1)
    [ -f "$vmlinuz" ] || die "no /boot/vmlinuz-* in the package"
    KREL=${vmlinuz##*/vmlinuz-}
    # Debian 12 ships /lib/modules, Debian 13 (merged /usr) /usr/lib/modules.
    kmods=
    for d in "$TMP/root/lib/modules/$KREL" "$TMP/root/usr/lib/modules/$KREL"; do
        if [ -d "$d" ] && [ ! -L "$d" ]; then kmods=$d; break; fi
    done
    [ -n "$kmods" ] || die "no /lib/modules/$KREL or /usr/lib/modules/$KREL in the package"
    mkdir "$TMP/k"
    mv "$vmlinuz" "$TMP/k/bzImage"
    mv "$TMP/root/boot/config-$KREL" "$TMP/k/config"
    # Debian ships a placeholder System.map (the real one is in the -dbg package): keep only a real one.
    sm=$TMP/root/boot/System.map-$KREL
    if [ -f "$sm" ] && [ "$(stat -c %s "$sm")" -gt 4096 ]; then mv "$sm" "$TMP/k/System.map"; fi
    mkdir "$TMP/k/lib" "$TMP/k/lib/modules"
    mv "$kmods" "$TMP/k/lib/modules/"
    say "extracting vmlinux from the bzImage"
    extract_vmlinux "$TMP/k/bzImage" "$TMP/k/vmlinux" || die "cannot extract vmlinux from $vmlinuz"
    if command -v readelf >/dev/null && ! readelf -n "$TMP/k/vmlinux" | grep -q 'Unknown note type: (0x00000012)\|PHYS32_ENTRY'; then
        say "warning: vmlinux has no Xen PHYS32_ENTRY note: it cannot boot via PVH; use the bzImage"
    fi
    # The packages ship no modules.dep (the postinst makes it): make it for the image.
    say "depmod for $KREL"
    depmod -b "$TMP/k" "$KREL" || die "depmod failed"
    echo "$KREL" >"$TMP/k/release"
    printf '%s %s\n' "$KPKG" "$KVER" >"$TMP/k/package"
    touch "$TMP/k/.complete"
    mkdir -p "$CACHE/kernels"
    rm -rf "$KDIR"
    mv "$TMP/k" "$KDIR"
    rm -rf "$TMP"; TMP=
    t2=$(now)
    say "kernel ready in $KDIR (download $(secs "$t0" "$t1") s, unpack+extract+depmod $(secs "$t1" "$t2") s)"
fi
KREL=$(cat "$KDIR/release")
read -r KPKG KVER <"$KDIR/package"

###############################################################################
# 3. Initramfs, keyed by a hash of everything that goes into it.
###############################################################################
overlay_hash() {
    local d
    for d in "${OVERLAYS[@]+"${OVERLAYS[@]}"}"; do
        echo "overlay"
        tar -C "$d" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - . | sha256sum
    done
}
IHASH=$( {
    echo "mkguest $(sha "$0")"
    echo "init $(sha "$INIT_SRC")"
    echo "busybox $(sha "$BUSYBOX")"
    echo "kernel $KSHA"
    echo "boot $BOOT_MODULES"
    echo "extra $EXTRA_MODULES"
    echo "compress $COMPRESS"
    overlay_hash
} | sha256sum | cut -c1-24)
INITRD=$CACHE/initramfs/$IHASH.cpio$CEXT

# order_modules MODDIR "names": print module paths (relative to MODDIR), dependencies first,
# using modules.dep (whose lists are in reverse load order: modprobe loads them last to first).
order_modules() {
    awk -v want="$2" -v builtin_file="$1/modules.builtin" '
        function nm(p) { sub(/.*\//, "", p); sub(/\.ko(\.[a-z0-9]+)?$/, "", p); gsub(/-/, "_", p); return p }
        function visit(n,   k, a, i) {
            if (n in seen) return
            seen[n] = 1
            if (!(n in path)) { if (!(n in builtin)) missing = missing " " n; return }
            k = split(deps[n], a, " ")
            for (i = 1; i <= k; i++) visit(a[i])
            print path[n]
        }
        BEGIN { while ((getline l < builtin_file) > 0) builtin[nm(l)] = 1 }
        {
            p = $1; sub(/:$/, "", p); n = nm(p); path[n] = p; deps[n] = ""
            for (i = NF; i >= 2; i--) deps[n] = deps[n] " " nm($i)
        }
        END {
            k = split(want, w, " ")
            for (i = 1; i <= k; i++) { x = w[i]; gsub(/-/, "_", x); visit(x) }
            if (missing != "") { print "unknown module(s):" missing > "/dev/stderr"; exit 3 }
        }' "$1/modules.dep"
}

if [ "$FORCE" = 0 ] && [ -s "$INITRD" ]; then
    say "initramfs: cached $(basename "$INITRD")"
    touch "$INITRD"  # mark as used (unused ones are pruned after 14 days)
else
    t0=$(now)
    newtmp
    R=$TMP/root
    M=$KDIR/lib/modules/$KREL
    say "initramfs: building (busybox $(basename "$BUSYBOX"), kernel $KREL, compress $COMPRESS)"
    mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,etc/vt,proc,sys,dev,tmp,root,run,mnt,lib/modules/"$KREL"}
    chmod 1777 "$R/tmp"
    # busybox and its applet links, made once per busybox binary (hundreds of ln -s take seconds)
    BBSKEL=$CACHE/busybox/$(sha "$BUSYBOX" | cut -c1-16)
    if [ ! -e "$BBSKEL/.complete" ]; then
        say "busybox: making the applet links in $BBSKEL"
        rm -rf "$BBSKEL.tmp"
        mkdir -p "$BBSKEL.tmp"/{bin,sbin,usr/bin,usr/sbin}
        cp "$BUSYBOX" "$BBSKEL.tmp/bin/busybox"
        "$BUSYBOX" --list-full | while read -r a; do
            [ "$a" = bin/busybox ] || [ -e "$BBSKEL.tmp/$a" ] || ln -s /bin/busybox "$BBSKEL.tmp/$a"
        done
        touch "$BBSKEL.tmp/.complete"
        rm -rf "$BBSKEL"
        mv "$BBSKEL.tmp" "$BBSKEL"
    fi
    cp -a "$BBSKEL/." "$R/"
    rm -f "$R/.complete"
    [ -e "$R/bin/sh" ] || die "busybox has no sh applet"
    # /dev/console must exist before /init runs (the kernel opens it for init's stdio).
    mknod -m 600 "$R/dev/console" c 5 1 2>/dev/null || say "note: cannot mknod dev/console (not root); /init reopens it"
    cp "$INIT_SRC" "$R/init"
    chmod 755 "$R/init"

    boot=$(order_modules "$M" "$BOOT_MODULES") || die "boot modules: cannot resolve '$BOOT_MODULES' in $M/modules.dep"
    all=$(order_modules "$M" "$BOOT_MODULES $EXTRA_MODULES") || die "extra modules: cannot resolve '$EXTRA_MODULES' in $M/modules.dep"
    extra=$(grep -vxF -f <(echo "$boot") <<<"$all" || true)
    : >"$R/etc/vt/modules.boot"
    for ko in $boot $extra; do
        dst=${ko%.ko*}.ko
        mkdir -p "$R/lib/modules/$KREL/$(dirname "$ko")"
        case "$ko" in
        *.ko) cp "$M/$ko" "$R/lib/modules/$KREL/$dst" ;;
        *.ko.xz) xz -dc "$M/$ko" >"$R/lib/modules/$KREL/$dst" ;;
        *.ko.zst) zstd -dcq "$M/$ko" >"$R/lib/modules/$KREL/$dst" ;;
        *.ko.gz) gzip -dc "$M/$ko" >"$R/lib/modules/$KREL/$dst" ;;
        *) die "unknown module file type: $ko" ;;
        esac
    done
    for ko in $boot; do echo "${ko%.ko*}.ko" >>"$R/etc/vt/modules.boot"; done
    cp "$M/modules.builtin" "$M/modules.order" "$R/lib/modules/$KREL/" 2>/dev/null || true
    cp "$M/modules.builtin.modinfo" "$R/lib/modules/$KREL/" 2>/dev/null || true
    depmod -b "$R" "$KREL" || die "depmod in the initramfs failed"
    rm -f "$R/lib/modules/$KREL"/*.bin "$R/lib/modules/$KREL/modules.builtin.modinfo"
    say "modules loaded at boot: $(sed 's|.*/||; s|\.ko$||' "$R/etc/vt/modules.boot" | tr '\n' ' ')"
    say "modules in the image only: $(for k in $extra; do n=${k##*/}; printf '%s ' "${n%.ko*}"; done)"
    printf 'KERNEL_RELEASE=%s\nKERNEL_PACKAGE=%s\nKERNEL_VERSION=%s\n' "$KREL" "$KPKG" "$KVER" >"$R/etc/vt/guest.env"

    for d in "${OVERLAYS[@]+"${OVERLAYS[@]}"}"; do
        say "overlay: $d"
        cp -a --remove-destination "$d/." "$R/"
    done
    [ -x "$R/init" ] || die "the overlay left /init not executable"

    mkdir -p "$CACHE/initramfs"
    (cd "$R" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | $CCMD >"$TMP/initrd"
    mv "$TMP/initrd" "$INITRD"
    find "$CACHE/initramfs" -name '*.cpio*' -mtime +14 -delete 2>/dev/null || true
    rm -rf "$TMP"; TMP=
    t1=$(now)
    say "initramfs: $(basename "$INITRD") $(stat -c %s "$INITRD") bytes in $(secs "$t0" "$t1") s"
fi

###############################################################################
# 4. The image dir: hard links (copies across file systems) and guest.env.
###############################################################################
place() { # src dst
    if [ "$1" -ef "$2" ]; then return 0; fi
    ln -f "$1" "$2.new" 2>/dev/null || cp "$1" "$2.new"
    mv -f "$2.new" "$2"
}
ENV_NEW=$(printf '%s\n' \
    "KERNEL_PACKAGE=$KPKG" "KERNEL_VERSION=$KVER" "KERNEL_RELEASE=$KREL" "DEB_SHA256=$KSHA" \
    "VMLINUX=$OUT/vmlinux" "BZIMAGE=$OUT/bzImage" "INITRAMFS=$OUT/initramfs.cpio$CEXT" \
    "KCONFIG=$OUT/config" "INITRAMFS_HASH=$IHASH")
if [ -f "$OUT/guest.env" ] && [ "$(cat "$OUT/guest.env")" = "$ENV_NEW" ] &&
   [ "$OUT/vmlinux" -ef "$KDIR/vmlinux" ] && [ "$OUT/initramfs.cpio$CEXT" -ef "$INITRD" ]; then
    say "image up to date in $OUT"
else
    place "$KDIR/vmlinux" "$OUT/vmlinux"
    place "$KDIR/bzImage" "$OUT/bzImage"
    place "$KDIR/config" "$OUT/config"
    if [ -f "$KDIR/System.map" ]; then place "$KDIR/System.map" "$OUT/System.map"; else rm -f "$OUT/System.map"; fi
    rm -f "$OUT"/initramfs.cpio*
    place "$INITRD" "$OUT/initramfs.cpio$CEXT"
    echo "$ENV_NEW" >"$OUT/guest.env.new" && mv "$OUT/guest.env.new" "$OUT/guest.env"
    say "image written to $OUT"
fi
echo "$OUT"
