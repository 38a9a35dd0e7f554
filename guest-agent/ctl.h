/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef AGENT_CTL_H
#define AGENT_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "agent.h"

/**
 * struct agent_opts - what main() parsed
 * @ports: where the ports are and what they are called
 * @tracefs: tracefs mount point
 * @instance: default private instance name, or NULL for the top level
 * @wait_ms: how long to wait for the ports to appear
 * @once: exit when the first host session ends
 * @no_splice: move pages into the ports with read() + write() (benchmarks)
 * @meta_flags: VT_META_* flags for metadata requests
 * @buffer_percent: the recorded buffer's buffer_percent while streaming (1-100)
 * @keep_s: keep an instance the agent made this long after a recording, for
 *	the next one (0: remove it with each recording's end)
 * @buffer_budget_kb: what every CPU's ring buffer together may grow to while
 *	recording, unless the host says (0: each stays at its START size)
 */
struct agent_opts {
	struct ports ports;
	const char *tracefs;
	const char *instance;
	unsigned int wait_ms;
	bool once;
	bool no_splice;
	unsigned int meta_flags;
	unsigned int buffer_percent;
	unsigned int keep_s;
	unsigned int buffer_budget_kb;
};

int agent_run(const struct agent_opts *o);

#endif
