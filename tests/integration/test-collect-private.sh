#!/bin/sh
# Proves (issue 28): what a recording writes is private unless shared on purpose, checked as
# the user nobody (setpriv), with host.dat holding the host's kernel addresses:
#   priv:  record at umask 000 into a new DIR: DIR 0700, every directory in it 0700 and every
#          file 0600 (host.dat, guest-NAME.dat, manifest.json, bad-pages/, the spool of a
#          --keep-spool run), all root's; nobody can neither list DIR nor read host.dat even
#          when given the path; `report --html` writes its page 0600 (umask 000);
#   share: --mode 0644 at umask 077: files 0644, directories 0755, exactly; nobody reads
#          host.dat with trace-cmd (the kernel addresses it holds included) and the html 0644;
#   sudo:  SUDO_UID/SUDO_GID of nobody: DIR and everything in it nobody's, 0600/0700;
#          nobody reads it all, the user daemon nothing;
#   kill:  --mode 0640, killed (SIGKILL) while recording, then `recover` at umask 000: the
#          files it writes are 0640 as the run's were, the directories 0750.
echo "collect: outputs are 0600/0700 (perf's modes) at any umask, --mode shares them, sudo gives them to the user, recover keeps the modes"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
command -v setpriv >/dev/null 2>&1 || { echo "SKIP: setpriv is not installed"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (files of root, read as another user)"; exit 77; }
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null && id daemon >/dev/null 2>&1 ||
	{ echo "SKIP: no user nobody, group nogroup or user daemon"; exit 77; }
[ -d /sys/kernel/tracing/instances ] || { echo "SKIP: no tracefs instances for host events"; exit 77; }
NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
DAEMON="setpriv --reuid=daemon --regid=daemon --clear-groups"
# nobody and daemon read only what the collector wrote under $WORK: that they can reach it
# at all (or the refusals below would prove nothing) is checked (collect-lib.sh)
for_user "$NOBODY"
for_user "$DAEMON"

# rec RUN UMASK ENV... -- ARGS...: one recording of guest pg (a bad page on cpu0) into
# $WORK/RUN/out, with host events, at UMASK, with environment ENV
rec() {
	r=$1 um=$2
	shift 2
	env=
	while [ "$1" != -- ]; do env="$env $1"; shift; done
	shift
	mkdir -p "$WORK/$r" "$WORK/$r/p"
	chmod 0711 "$WORK/$r"
	fake pg-$r --fifo "$WORK/$r/p" --fixture "$DATA/cap-guest" --repeat 3 --retime --bad-page 1
	# shellcheck disable=SC2086
	(umask "$um"; exec env $env "$COLLECT" record --chardev-dir "$WORK/$r/p" --name pg-$r -o "$WORK/$r/out" \
		-d 2 --host-events sched:sched_switch "$@" >"$WORK/$r.log" 2>&1)
	RC=$?
	fake_end $FAKE_PID
	[ $RC = 0 ] || [ $RC = 3 ] || { show "$WORK/$r.log"; fail "run $r: record exited $RC"; }
	[ -f "$WORK/$r/out/host.dat" ] || { show "$WORK/$r.log"; fail "run $r: no host.dat"; }
}

# modes DIR: "MODE USER:GROUP TYPE NAME" of DIR and everything below it, sorted
modes() {
	find "$1" -printf '%m %u:%g %y %P\n' | sort -k4
}

# all_are DIR FILEMODE DIRMODE OWNER: every file and directory under DIR (DIR too) has those
all_are() {
	modes "$1" >"$WORK/modes"
	awk -v f="$2" -v d="$3" -v o="$4" '($3 == "f" && $1 != f) || ($3 == "d" && $1 != d) || $2 != o ||
		($3 != "f" && $3 != "d")' "$WORK/modes" >"$WORK/odd"
	[ -s "$WORK/odd" ] && { cat "$WORK/odd"; return 1; }
	return 0
}

# the host's kernel addresses are in host.dat (what /proc/kallsyms shows nobody as zeros)
addr=$(awk '$3 == "commit_creds" { print $1; exit }' /proc/kallsyms)

# priv
rec priv 000 -- --keep-spool
out=$WORK/priv/out
all_are "$out" 600 700 root:root || fail "run priv: not every file 0600 and directory 0700, root's (umask 000)"
for f in host.dat guest-pg-priv.dat manifest.json bad-pages/pg-priv-cpu0.bad .spool/options; do
	[ -f "$out/$f" ] || fail "run priv: no $f"
done
echo "run priv: $(modes "$out" | wc -l) files and directories, all 0600/0700 root's; e.g. $(modes "$out" | grep ' host.dat$')"
if [ -n "$addr" ] && [ "$addr" != 0000000000000000 ]; then
	trace-cmd dump --kallsyms "$out/host.dat" 2>/dev/null | grep -q "^$addr .* commit_creds" ||
		fail "run priv: host.dat holds no commit_creds at $addr (the check below would prove nothing)"
fi
$NOBODY ls "$out" >/dev/null 2>&1 && fail "run priv: nobody can list $out"
$NOBODY cat "$out/host.dat" >/dev/null 2>&1 && fail "run priv: nobody can read host.dat"
$NOBODY cat "$out/guest-pg-priv.dat" >/dev/null 2>&1 && fail "run priv: nobody can read guest-pg-priv.dat"
chmod 0711 "$out"	# even given the way in, each file says no
for f in host.dat guest-pg-priv.dat manifest.json bad-pages/pg-priv-cpu0.bad; do
	$NOBODY cat "$out/$f" >/dev/null 2>&1 && fail "run priv: nobody can read $f through a traversable DIR"
done
chmod 0700 "$out"
(umask 000; "$COLLECT" report --html "$WORK/priv/page.html" "$out" >/dev/null 2>&1) || fail "run priv: report --html failed"
[ "$(stat -c '%a %U' "$WORK/priv/page.html")" = "600 root" ] ||
	fail "run priv: report --html wrote $(stat -c '%a %U' "$WORK/priv/page.html"), want 600 root"

# share
rec share 077 -- --mode 0644
out=$WORK/share/out
all_are "$out" 644 755 root:root || fail "run share: --mode 0644 at umask 077: not every file 0644 and directory 0755"
$NOBODY trace-cmd report -i "$out/host.dat" >"$WORK/share.txt" 2>/dev/null || fail "run share: nobody cannot read host.dat with --mode 0644"
if [ -n "$addr" ] && [ "$addr" != 0000000000000000 ]; then
	$NOBODY trace-cmd dump --kallsyms "$out/host.dat" 2>/dev/null | grep -q "^$addr .* commit_creds" ||
		fail "run share: nobody does not see the kernel addresses that --mode 0644 shares"
fi
(umask 077; "$COLLECT" report --html "$WORK/share/page.html" "$out" >/dev/null 2>&1) || fail "run share: report --html failed"
[ "$(stat -c %a "$WORK/share/page.html")" = 644 ] || fail "run share: report --html wrote mode $(stat -c %a "$WORK/share/page.html"), want 644 (the recording's)"
"$COLLECT" record --chardev-dir "$WORK/share/p" --mode 0755 -o "$WORK/x" -d 1 >/dev/null 2>&1
[ $? = 2 ] || fail "--mode 0755 (execute bits) is not a usage error"
"$COLLECT" record --chardev-dir "$WORK/share/p" --mode 0444 -o "$WORK/x" -d 1 >/dev/null 2>&1
[ $? = 2 ] || fail "--mode 0444 (not the owner's write) is not a usage error"

# sudo
rec sudo 022 SUDO_UID=65534 SUDO_GID=65534 -- --keep-spool
out=$WORK/sudo/out
all_are "$out" 600 700 nobody:nogroup || fail "run sudo: not everything nobody:nogroup's, 0600/0700"
$NOBODY trace-cmd report -i "$out/guest-pg-sudo.dat" >/dev/null 2>&1 || fail "run sudo: nobody (SUDO_UID) cannot read its guest file"
$DAEMON cat "$out/host.dat" >/dev/null 2>&1 && fail "run sudo: the user daemon can read host.dat"

# kill
mkdir -p "$WORK/kill/p"
chmod 0711 "$WORK/kill"
fake pg-kill --fifo "$WORK/kill/p" --fixture "$DATA/cap-guest" --repeat 0 --retime --rate 65536
"$COLLECT" record --chardev-dir "$WORK/kill/p" --name pg-kill -o "$WORK/kill/out" --mode 0640 >"$WORK/kill.log" 2>&1 &
k=$!
track $k
T_COLLECTORS="$T_COLLECTORS $k"
wait_log "$WORK/kill.log" "guest pg-kill: recording" 10 "run kill: never recording"
sleep 1
kill -KILL $k
wait $k 2>/dev/null
fake_end $FAKE_PID
(umask 000; "$COLLECT" recover "$WORK/kill/out" >"$WORK/recover.log" 2>&1)
rc=$?
[ $rc = 0 ] || [ $rc = 3 ] || { show "$WORK/recover.log"; fail "run kill: recover exited $rc"; }
[ -f "$WORK/kill/out/guest-pg-kill.dat" ] || { show "$WORK/recover.log"; fail "run kill: recover wrote no guest file"; }
all_are "$WORK/kill/out" 640 750 root:root || fail "run kill: recover at umask 000 did not keep --mode 0640 (directories 0750)"
echo "run kill: recover wrote $(modes "$WORK/kill/out" | grep ' guest-pg-kill.dat$')"
echo "PASS"
