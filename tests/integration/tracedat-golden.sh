#!/bin/sh
# Proves: trace-cmd report output of files built from the committed captures
# equals the golden outputs in tests/data (single v7/zstd file; merged host v7 +
# guest v6 with GUEST, TRACEID, TIME_SHIFT and a lost-events page), and
# trace-cmd dump --summary of a v6 file equals its golden output.
echo "golden: trace-cmd report/dump of files built from tests/data match the golden outputs"
. "$VT_SRCDIR/tests/integration/td-lib.sh"
need_trace_cmd

cd "$WORK" || fail "cd"
mkdat host.dat -i "$DATA/cap-host" --trace-id 0x1111 --guest vm1:0x2222:4001,4002
mkdat guest.dat -i "$DATA/cap-guest" -V 6 --trace-id 0x2222 --ts-peer 0x1111 \
	--ts-sample 0:2500000 --missed 1:3:77
mkdat host6.dat -i "$DATA/cap-host" -V 6 --no-cpustat

check() {
	gzip -dc "$DATA/$1.gz" >"$1.want" || fail "cannot read $DATA/$1.gz"
	if ! cmp -s "$1.want" "$1"; then
		diff -u "$1.want" "$1" | head -20
		fail "$1 differs from the golden file"
	fi
}

report report-host.txt host.dat
check report-host.txt
report report-merge.txt -i host.dat -i guest.dat
check report-merge.txt
trace-cmd dump --summary host6.dat >dump-host6.txt 2>&1 || fail "trace-cmd dump"
sed -i 's|file .*host6.dat:|file host6.dat:|' dump-host6.txt
check dump-host6.txt
echo "PASS"
