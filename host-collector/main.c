// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-trace-collect: record guests' ftrace streams (and host events) into
 * trace.dat files that trace-cmd and KernelShark show on one timeline.
 *
 * One subcommand per folder's job, dispatched from one table; each takes
 * argv from its own name on and returns the exit status (collect.h).
 */
#include <stdio.h>
#include <string.h>

#include "check/check.h"
#include "collect.h"
#include "record/record.h"
#include "report/report.h"
#include "setup/list.h"
#include "setup/setup.h"
#include "store/output.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "check", check_main },
	{ "join", join_main },
	{ "list", list_main },
	{ "record", record_main },
	{ "recover", recover_main },
	{ "report", report_main },
	{ "setup", setup_main },
};

int main(int argc, char **argv)
{
	unsigned int i;

	if (argc < 2) {
		record_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		record_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("virtio-trace-collect %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name)) {
			collect_cmd = commands[i].name;	/* every message says which */
			return commands[i].run(argc - 1, argv + 1);
		}
	fprintf(stderr, "virtio-trace-collect: unknown command '%s'\n", argv[1]);
	record_usage(stderr);
	return EXIT_USAGE;
}
