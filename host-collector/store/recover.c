// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * `recover DIR`: the finish alone, on whatever a killed `record` left in
 * DIR/.spool (see finish.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "opts.h"
#include "output.h"

/**
 * recover_main() - the `recover` subcommand
 * @argc: arguments from "recover" on
 * @argv: their values
 *
 * Return: the exit status (collect.h).
 */
int recover_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int fd, ret;

	if (argc != 2 || argv[1][0] == '-') {
		if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			printf("Usage: virtio-trace-collect recover DIR\n"
			       "Write the trace.dat files and manifest.json from what a killed\n"
			       "record left in DIR/.spool. No page that reached the spool is lost.\n"
			       "No link is followed; only the spool's own files are removed.\n");
			return EXIT_OK;
		}
		if (argc > 1 && argv[1][0] == '-')
			opt_getopt_error('?', argv[1][1] != '-' ? argv[1][1] : 0, argv[1], longopts,
					 NULL);
		else if (argc > 2)
			collect_usage("'%s': one recording's directory only (DIR is '%s')", argv[2],
				      argv[1]);
		else
			collect_usage("give a recording's directory: recover DIR");
		opt_try_help();
		return EXIT_USAGE;
	}
	fd = output_open_dir(argv[1], false, NULL);
	if (fd < 0) {
		log_err("%s: %s", argv[1], fd == -ELOOP ? "a symbolic link: refused (give the "
			"directory it points to)" : strerror(-fd));
		return EXIT_FAIL;
	}
	ret = output_finalise(fd, argv[1], false, false, true);
	if (ret != EXIT_FAIL && !collect_quiet)
		manifest_summary(fd, argv[1], ret, stderr);
	close(fd);
	return ret;
}
