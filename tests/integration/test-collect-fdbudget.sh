#!/bin/sh
# Proves (issue 37, item 9): the open-file budget is checked per guest when its
# agent says how many vCPUs it has. Under an RLIMIT_NOFILE of 256 (soft) and
# 400 (hard), the collector records two guests: "big", whose ports it cannot
# count beforehand (--listen: it makes them after the HELLO), and whose agent
# says 256 vCPUs; and "small", 2 vCPUs over FIFOs. Before, the start-up guess
# counted 2 vCPUs for big; its 256 ports then took every descriptor, small
# failed too, and nothing was written. Now:
#  - big fails alone, with one message naming the limit (400, raised from 256
#    first) and the `ulimit -n` it needs (at least 4 + 5 per vCPU: 1284);
#  - small's file is exact (the fixture's events per CPU, the manifest's bytes,
#    pages and events as the agent sent them);
#  - the manifest names big's problem; the exit status is 3 (files written, a
#    guest dropped).
echo "collect: a 256-vCPU guest that does not fit the open-file limit fails alone, with the limit and the ulimit -n it needs; the other records exact"
. "$VT_SRCDIR/tests/integration/collect-lib.sh"
need_tools
command -v prlimit >/dev/null 2>&1 || { echo "SKIP: prlimit (util-linux) is not installed"; exit 77; }
# The fake agent (not the collector) serves 256 ports: ~520 descriptors.
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 1200 ] || ulimit -n 1200 2>/dev/null ||
	{ echo "SKIP: cannot raise the open-file limit to 1200 (it is $(ulimit -n))"; exit 77; }

pb=$WORK/pbig ps=$WORK/psmall out=$WORK/out
mkdir -p "$pb" "$ps"
fake small --fifo "$ps" --fixture "$DATA/cap-guest" --repeat 1 --retime
SMALL=$FAKE_PID
fake big --connect "$pb" --fixture "$DATA/cap-guest" --cpus 256 --repeat 1 --retime
BIG=$FAKE_PID

# The collector alone runs under the short limit (prlimit execs it: same pid).
printf '#!/bin/sh\nexec prlimit --nofile=256:400 -- "%s" "$@"\n' "$COLLECT" >"$WORK/lim"
chmod +x "$WORK/lim"
COLLECT=$WORK/lim
COLLECT_LIMIT=90 collect rec --chardev-dir "$pb" --listen --name big --chardev-dir "$ps" --name small \
	-o "$out" -d 3 --stop-timeout 5
fake_end $SMALL
fake_end $BIG

msg=$(grep "guest big:.*open-file limit" "$WORK/rec.log")
echo "big: ${msg:-no message about the open-file limit}"
[ -n "$msg" ] || { show "$WORK/rec.log"; fail "big's failure does not name the open-file limit"; }
echo "$msg" | grep -q "256 vCPUs" || fail "the message does not say big's 256 vCPUs"
echo "$msg" | grep -q "open-file limit of 400" || fail "the message does not name the limit of 400 (the hard one, raised to)"
need=$(echo "$msg" | sed -nE 's/.*`ulimit -n ([0-9]+)`.*/\1/p')
[ -n "$need" ] || fail "the message does not say the \`ulimit -n\` big needs"
[ "$need" -ge 1284 ] || fail "it asks for ulimit -n $need, less than 256 vCPUs' ports and spool files (4 + 5 x 256 = 1284)"
grep -q "guest big: 256 vCPUs: the guests need about [0-9]* open files: the limit is raised from 256 to the hard limit, 400" \
	"$WORK/rec.log" || { show "$WORK/rec.log"; fail "the soft limit's raise to the hard one is not said"; }
other=$(grep "error:" "$WORK/rec.log" | grep -v "guest big:")
[ -z "$other" ] || { show "$WORK/rec.log"; fail "other errors: $other"; }

check_exact "$out" small "$DATA/cap-guest" 1
echo "small: exact ($ORACLE_CPU0 + $ORACLE_CPU1 events, bytes and pages as sent)"
[ ! -f "$out/guest-big.dat" ] || fail "a file was written for big"
guest_json "$out" big '.problems' | grep -q "open-file limit" ||
	fail "the manifest does not name big's problem (problems: $(guest_json "$out" big '.problems'))"
[ $RC = 3 ] || { show "$WORK/rec.log"; fail "exit $RC, want 3 (files written, a guest dropped)"; }
echo "exit 3; the manifest names big's problem"
echo "PASS"
