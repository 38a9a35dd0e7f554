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
#include "daemon/daemon.h"
#include "record/record.h"
#include "report/report.h"
#include "setup/list.h"
#include "setup/setup.h"
#include "store/output.h"
#include "vt_suggest.h"

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *what;
} commands[] = {
	{ "check", check_main, "say whether this host can record a guest with an exact clock" },
	{ "daemon", daemon_main, "follow every guest, keep the last minutes, seal snapshots" },
	{ "join", join_main, "join a migrated guest's two recordings into one" },
	{ "list", list_main, "list the guests on this host with trace ports, and their agents" },
	{ "record", record_main, "record guests (and host events) into trace.dat files" },
	{ "recover", recover_main, "write the files of a recording that was killed" },
	{ "report", report_main, "summarise a recording: events, losses, clock, analyses" },
	{ "setup", setup_main, "make a guest's trace ports: QEMU arguments, libvirt, hot-plug" },
	{ "snapshot", snapshot_main, "ask the daemon to seal a guest's last minutes" },
};

#define NR_COMMANDS	(sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	unsigned int i;

	fprintf(f, "Usage: virtio-trace-collect COMMAND [OPTION]...\n"
		"       virtio-trace-collect help COMMAND\n\n"
		"Guest and host kernel events on one timeline, over virtio-serial ports.\n\n"
		"Commands:\n");
	for (i = 0; i < NR_COMMANDS; i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].what);
	fprintf(f, "\nOptions:\n"
		"  -h, --help     this list (COMMAND --help: that command's options)\n"
		"  -V, --version  the version\n\n"
		"virtio-trace-collect(1) is the overview; virtio-trace-collect-COMMAND(1) each command.\n");
}

static const struct command *find(const char *name)
{
	unsigned int i;

	for (i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* An unknown command: the closest names, from lib/suggest.c. */
static int unknown(const char *name)
{
	char hint[VT_SUGGEST_MAX * VT_SUGGEST_NAME_MAX + 32] = "";
	struct vt_suggest sg;
	unsigned int i;

	vt_suggest_init(&sg, name);
	for (i = 0; i < NR_COMMANDS; i++)
		vt_suggest_add(&sg, commands[i].name);
	vt_suggest_add(&sg, "help");
	vt_suggest_format(&sg, hint, sizeof(hint));
	/* A beginning of names ("rec"): those it begins. */
	for (i = 0; !sg.nr && name[0] && i < NR_COMMANDS; i++)
		if (!strncmp(commands[i].name, name, strlen(name)))
			snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint), "%s%s",
				 hint[0] ? " or " : "did you mean ", commands[i].name);
	if (!sg.nr && hint[0])
		snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint), "?");
	collect_usage("unknown command '%s'%s%s", name, hint[0] ? "; " : "", hint);
	fprintf(stderr, "Try 'virtio-trace-collect --help' for the list of commands.\n");
	return EXIT_USAGE;
}

static int run(const struct command *c, int argc, char **argv)
{
	collect_cmd = c->name;	/* every message says which */
	return c->run(argc, argv);
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("virtio-trace-collect %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		/* help COMMAND: that command's --help */
		char *args[] = { argv[2], "--help", NULL };

		if (argc > 3) {
			collect_usage("help takes one command, not %d", argc - 2);
			return EXIT_USAGE;
		}
		c = find(argv[2]);
		return c ? run(c, 2, args) : unknown(argv[2]);
	}
	c = find(argv[1]);
	return c ? run(c, argc - 1, argv + 1) : unknown(argv[1]);
}
