#!/bin/bash
# l1-trials.sh: run scenarios in L1 (vt_l1_run, lib.sh) under several configurations, several
# times each, one line per run, for finding what makes L1 freeze or hang and what does not.
#
# Usage: tests/e2e/l1-trials.sh [-n RUNS] [-d DIR] [-s SCENARIO] NAME SETTINGS [NAME SETTINGS]...
#   NAME       the configuration's name in the table
#   SETTINGS   bash assignments made before each run of it, e.g.
#              'VT_L1_SMP=1 VT_L1_ENV="REC_SECS= REC_QMP=1"' (VT_L1_* of lib.sh; VT_L1_ENV
#              lines go to L1's env: L1_*, L2_*, REC_* of tests/e2e/l1/)
#   -n RUNS    runs per configuration (default 1); the configurations take turns
#   -d DIR     where each run's files go (DIR/NAME.I/{run,out}; default a new /tmp dir, kept)
#   -s FILE    the scenario (default tests/e2e/l1/scenario-record.sh)
# Prints "NAME I RESULT SECS L1-UPTIMES REASON" per run (RESULT as VT_L1_RESULT) and appends it
# to DIR/table.txt; a run that froze has DIR/NAME.I/run/where.txt.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/lib.sh"
RUNS=1
DIR=
SCEN=$HERE/l1/scenario-record.sh
while getopts n:d:s: o; do
    case $o in
    n) RUNS=$OPTARG ;;
    d) DIR=$OPTARG ;;
    s) SCEN=$OPTARG ;;
    *) exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] && [ $(($# % 2)) = 0 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
[ -n "$DIR" ] || DIR=$(mktemp -d /tmp/vt-l1-trials.XXXXXX)
mkdir -p "$DIR"
echo "l1-trials: $DIR"
vt_l1_image || exit $?
for ((i = 1; i <= RUNS; i++)); do
    set -- "$@"
    for ((a = 1; a <= $#; a += 2)); do
        name=${!a}
        b=$((a + 1))
        settings=${!b}
        d=$DIR/$name.$i
        rm -rf "$d"
        mkdir -p "$d/out"
        (
            eval "$settings"
            VT_RUNDIR=$d/run
            vt_l1_run "$SCEN" "$d/out" >"$d/runner.log" 2>&1
            printf '%-24s %2d %-7s %7s %-14s %s\n' "$name" "$i" "$VT_L1_RESULT" "$VT_L1_SECS" \
                "$VT_L1_UP" "$VT_L1_REASON"
        ) | tee -a "$DIR/table.txt"
    done
done
