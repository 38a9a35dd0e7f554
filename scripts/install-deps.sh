#!/bin/bash
# Install every Debian package that the build, the tests and the demo need.
# Safe to run twice: when everything is present it touches nothing.
# Needs root (or sudo), apt-get and no systemd.
set -eu

PKGS=(
	# build
	autoconf automake libtool pkg-config make gcc
	libtracefs-dev libtraceevent-dev libtracecmd-dev liburing-dev libzstd-dev
	libvirt-dev libxml2-dev libcmocka-dev
	# optional: tests/tools/vt-seccomp, the service's system call filter (test-collect-unit.sh)
	libseccomp-dev
	# systemd-nspawn: a real systemd booted to start and stop the collector's unit
	# (test-collect-systemd.sh); at the installed systemd's version (below)
	systemd-container
	# fuzzing (libFuzzer and the sanitizer runtimes)
	clang libclang-rt-14-dev
	# oracles and tools the tests run
	trace-cmd zstd jq man-db groff-base
	# manifest.json and report --json against doc/*.schema.json (test-manifest-schema.sh, demo.sh)
	python3-jsonschema
	# report --perfetto decoded against Perfetto's schema (test-report-perfetto.sh)
	protobuf-compiler
	# tests/e2e/test-kernelshark.sh: KernelShark under a virtual X server, screenshots
	kernelshark xvfb xdotool imagemagick
	# the Debian packages (scripts/test.sh builds, lints and installs them); bash-completion
	# tells configure where completions go
	dpkg-dev debhelper lintian bash-completion
	# report --html checked in headless Chromium (offline), its screenshot read by python3
	chromium python3
	# guests
	qemu-system-x86 busybox-static cpio kmod xz-utils
	# benchmarks: /usr/bin/time; perf and strace for tests/bench/bench-peer.sh --profile
	time linux-perf strace
	# tests/bench/bench-json.sh: jansson and json-c, against which the JSON reader is measured
	libjansson-dev libjson-c-dev
	# libvirt without systemd
	libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
	# kernel-patches/build.sh: the source and what building it needs
	linux-source-6.1 bc bison flex libelf-dev libssl-dev
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PKGS[@]} packages present"
	exit 0
fi

# systemd-container needs libsystemd-shared at its own version: take the installed systemd's
# (bookworm-security's), so that installing it does not upgrade systemd as well. It is installed
# on its own: an archive without that version leaves it out (test-collect-systemd then skips,
# saying so), not the other packages.
sd_version=$(dpkg-query -W -f='${Version}' systemd 2>/dev/null) || sd_version=
sd_pkg=
for i in "${!missing[@]}"; do
	if [ "${missing[$i]}" = systemd-container ]; then
		sd_pkg=systemd-container${sd_version:+=$sd_version}
		unset 'missing[i]'
	fi
done

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]} $sd_pkg"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ -n "$sd_pkg" ] && ! $SUDO apt-get install -y -qq --no-install-recommends "$sd_pkg" >/dev/null; then
	echo "install-deps: $sd_pkg could not be installed: test-collect-systemd will skip"
fi
echo "install-deps: done"
