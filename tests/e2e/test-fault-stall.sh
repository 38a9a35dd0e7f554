#!/bin/bash
# vt-suite: e2e
# test-fault-stall.sh: the collector does not read for 60 s (SIGSTOP) in the middle of a
# recording: test-collect-stall.sh's checks with a 60 s stall and a modest rate (1500 1 KiB
# markers per second per CPU, 64 s): while the host does not read, each port still takes
# about 32 MiB into its virtqueue, less than the 90 MiB written, so the ring buffer
# overwrites. The guest keeps running (its paced flood ends on time), and what was lost is
# counted exactly: per CPU the guest's overrun = the events lost according to the pages =
# trace-cmd report's "EVENTS DROPPED" lines, and it covers exactly the markers missing.
# Takes about 80 s. Env: as test-collect-stall.sh. Exit: 0 pass, 1 fail, 77 skip.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export VT_STALL_SECS=60 VT_STALL_RATE=1500 VT_STALL_N=96000 VT_STALL_ME=test-fault-stall
export VT_TIMEOUT=${VT_TIMEOUT:-240} SCN_RECORD_TIMEOUT=${SCN_RECORD_TIMEOUT:-200}
exec "$HERE/test-collect-stall.sh"
