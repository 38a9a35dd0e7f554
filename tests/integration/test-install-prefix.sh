#!/bin/sh
# Proves: `./configure --prefix=P && make install` puts the bash completion, the agent's systemd
# unit and its udev rule under P, and nothing outside it: Debian's bash-completion.pc spells its
# datadir out (/usr/share), and the completion went there whatever --prefix said (issue 41).
# Configures a scratch build of the tree (nothing compiled) and installs only those data files.
echo "install-prefix: configure --prefix=P installs the bash completion, the unit and the udev rule under P"
: "${VT_SRCDIR:?run through make check}"
export LC_ALL=C
command -v pkg-config >/dev/null && pkg-config --exists bash-completion ||
	{ echo "SKIP: no bash-completion.pc (apt-get install bash-completion): nothing to get wrong"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vt-prefix.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
P=$WORK/prefix
mkdir -p "$WORK/b" "$WORK/dest"
(cd "$WORK/b" && "$VT_SRCDIR/configure" -q --prefix="$P" >"$WORK/configure.log" 2>&1) ||
	{ tail -20 "$WORK/configure.log"; echo "FAIL: configure failed"; exit 1; }
make -s -C "$WORK/b" guest-agent/trace-agent.service >"$WORK/make.log" 2>&1 &&
make -s -C "$WORK/b" DESTDIR="$WORK/dest" install-dist_bashcompletionDATA \
	install-dist_udevrulesDATA install-systemdsystemunitDATA >>"$WORK/make.log" 2>&1 ||
	{ tail -20 "$WORK/make.log"; echo "FAIL: make install of the data files failed"; exit 1; }
fail=0
(cd "$WORK/dest" && find . -type f | sed 's|^\.||' | sort) >"$WORK/files"
cat "$WORK/files"
for f in share/bash-completion/completions/virtio-trace-collect lib/systemd/system/trace-agent.service \
	lib/udev/rules.d/90-trace-agent.rules; do
	grep -qx "$P/$f" "$WORK/files" || { echo "FAIL: $P/$f was not installed"; fail=1; }
done
n=$(grep -vc "^$P/" "$WORK/files")
[ "$n" = 0 ] || { echo "FAIL: $n files installed outside $P"; fail=1; }
[ "$(wc -l <"$WORK/files")" = 3 ] || { echo "FAIL: $(wc -l <"$WORK/files") files, want 3"; fail=1; }
[ $fail = 0 ] && echo "PASS: 3 files, all under the prefix"
exit $fail
