// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tc-fifo-shim: an LD_PRELOAD shim for the host side of trace-cmd 3.1.6's
 * virtio-serial FIFO path, used by tests/bench/bench-peer.sh only (never by
 * the product). In that path `trace-cmd record -A` reads each guest CPU's FIFO
 * with libtracefs 1.6.4's tracefs_cpu_pipe(), which splices with the
 * tcpu's pipe_size; a tcpu made by tracefs_cpu_alloc_fd() never sets it, so
 * every call is splice(len 0), returns 0, nothing is drained and the guest's
 * writes to the port block. This shim answers tracefs_cpu_pipe() with
 * tracefs_cpu_write(), which sets up its splice pipe first (pipe_size =
 * F_GETPIPE_SZ) and then moves FIFO -> pipe -> file: one more splice hop
 * than a fixed tracefs_cpu_pipe() would make, no copy.
 *
 * Build: cc -shared -fPIC -o tc-fifo-shim.so tc-fifo-shim.c -ltracefs
 */
#include <stdbool.h>

struct tracefs_cpu;
int tracefs_cpu_write(struct tracefs_cpu *tcpu, int wfd, bool nonblock);

int tracefs_cpu_pipe(struct tracefs_cpu *tcpu, int wfd, bool nonblock)
{
	return tracefs_cpu_write(tcpu, wfd, nonblock);
}
