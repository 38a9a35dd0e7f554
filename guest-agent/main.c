// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * trace-agent: stream a guest's ftrace ring buffers to the host through
 * virtio-serial ports, driven by the host over a control port.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "ctl.h"
#include "vt_meta.h"

static const char short_usage[] =
	"Usage: trace-agent [OPTION]...  (trace-agent --help lists the options)\n";

static void usage(FILE *f)
{
	fprintf(f,
"Usage: trace-agent [OPTION]...\n"
"Stream this machine's ftrace ring buffers to the host through virtio-serial\n"
"ports, one data port per CPU plus a control port, as virtio-trace-collect(1)\n"
"directs. Runs until SIGTERM or SIGINT and puts back every tracefs setting it\n"
"changed before it exits.\n"
"\n"
"  -d, --port-dir DIR       use stand-in ports DIR/NAME (FIFOs or unix sockets)\n"
"                           instead of virtio-serial ports (for tests)\n"
"  -p, --port-prefix PFX    data ports are PFX0, PFX1, ... (default trace-path-cpu;\n"
"                           trace-cmd's naming is trace-pipe-cpu)\n"
"  -c, --ctl-port NAME      control port name (default agent-ctl-path)\n"
"  -t, --tracefs DIR        tracefs mount point, mounted if absent\n"
"                           (default /sys/kernel/tracing)\n"
"  -i, --instance NAME      default private instance (default virtio-trace)\n"
"  -T, --top-level          default to the top-level buffer instead\n"
"      --keep-instance SEC  keep an instance the agent made this long after a\n"
"                           recording, for the next one (default 60; 0 removes\n"
"                           it with each recording's end)\n"
"  -w, --wait SEC           wait this long for the ports to appear (default 30)\n"
"  -1, --once               exit when the host says bye or goes away\n"
"      --no-splice          move pages into the ports with read()+write()\n"
"      --no-kallsyms        leave /proc/kallsyms out of the metadata\n"
"      --buffer-percent N   wake the data threads when the ring buffer is N%%\n"
"                           full, 1 to 100 (default 10; put back afterwards)\n"
"      --buffer-budget KB   grow each CPU's ring buffer while the kernel fills it\n"
"                           faster than its port drains, up to KB for every CPU\n"
"                           together (default 0: fixed sizes; each resize stops\n"
"                           recording on every CPU a moment, uncounted)\n"
"  -v, --verbose            log every control message\n"
"  -q, --quiet              log only warnings and errors\n"
"  -V, --version            print the version and exit\n"
"  -h, --help               print this help and exit\n"
"\n"
"Exit status: 0 after a signal or a bye with --once; 1 when the ports never\n"
"appeared or tracefs is unusable; 2 for a usage error.\n"
"See trace-agent(8) and virtio-trace-protocol(5).\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port-dir", required_argument, NULL, 'd' },
		{ "port-prefix", required_argument, NULL, 'p' },
		{ "ctl-port", required_argument, NULL, 'c' },
		{ "tracefs", required_argument, NULL, 't' },
		{ "instance", required_argument, NULL, 'i' },
		{ "top-level", no_argument, NULL, 'T' },
		{ "wait", required_argument, NULL, 'w' },
		{ "once", no_argument, NULL, '1' },
		{ "no-splice", no_argument, NULL, 'S' },
		{ "no-kallsyms", no_argument, NULL, 'K' },
		{ "buffer-percent", required_argument, NULL, 'B' },
		{ "keep-instance", required_argument, NULL, 'k' },
		{ "buffer-budget", required_argument, NULL, 'b' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct agent_opts o = {
		.ports = { .prefix = "trace-path-cpu", .ctl_name = "agent-ctl-path" },
		.tracefs = "/sys/kernel/tracing",
		.instance = AGENT_DEFAULT_INSTANCE,
		.wait_ms = 30000,
		.buffer_percent = AGENT_BUFFER_PERCENT,
		.keep_s = AGENT_KEEP_INSTANCE_S,
	};
	char *end;
	long v;
	int c;

	while ((c = getopt_long(argc, argv, "d:p:c:t:i:Tw:1vqVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.ports.dir = optarg;
			break;
		case 'p':
			o.ports.prefix = optarg;
			break;
		case 'c':
			o.ports.ctl_name = optarg;
			break;
		case 't':
			o.tracefs = optarg;
			break;
		case 'i':
			o.instance = optarg;
			break;
		case 'T':
			o.instance = NULL;
			break;
		case 'w':
			v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 86400) {
				fprintf(stderr, "trace-agent: --wait takes seconds, 0 to 86400\n");
				return 2;
			}
			o.wait_ms = v * 1000;
			break;
		case '1':
			o.once = true;
			break;
		case 'S':
			o.no_splice = true;
			break;
		case 'K':
			o.meta_flags |= VT_META_NO_KALLSYMS;
			break;
		case 'B':
			v = strtol(optarg, &end, 10);
			/* 0 would make a blocking splice spin on Debian 6.1's kernel. */
			if (*end || v < 1 || v > 100) {
				fprintf(stderr, "trace-agent: --buffer-percent takes 1 to 100\n");
				return 2;
			}
			o.buffer_percent = v;
			break;
		case 'k':
			v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 0 || v > 86400) {
				fprintf(stderr, "trace-agent: --keep-instance takes seconds, 0 to 86400\n");
				return 2;
			}
			o.keep_s = v;
			break;
		case 'b':
			v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 0 || v > (long)UINT32_MAX) {
				fprintf(stderr, "trace-agent: --buffer-budget takes KiB, 0 to %u\n",
					UINT32_MAX);
				return 2;
			}
			o.buffer_budget_kb = (unsigned int)v;
			break;
		case 'v':
			agent_verbose++;
			break;
		case 'q':
			agent_quiet = true;
			break;
		case 'V':
			printf("trace-agent %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			/* getopt named the option; the whole help would bury that line. */
			fputs(short_usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "trace-agent: unexpected argument '%s'\n", argv[optind]);
		fputs(short_usage, stderr);
		return 2;
	}
	return agent_run(&o) < 0 ? 1 : 0;
}
