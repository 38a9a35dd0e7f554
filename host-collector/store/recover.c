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

/* recover's command line: no option but --help (opts.h). */
static const struct opt_def recover_opts[] = {
	{ NULL },
};

static const struct opt_cmd recover_cmd = {
	.name = "recover",
	.usage = "DIR",
	.about =
"Write the trace.dat files and manifest.json from what a killed\n"
"record left in DIR/.spool. No page that reached the spool is lost.\n"
"No link is followed; only the spool's own files are removed.\n",
	.tail = "Exit status: 0 written cleanly; 1 nothing written; 2 usage error; 3 written,\n"
"with problems (see DIR/manifest.json).\n",
	.defs = recover_opts,
	.col = 14,
};

/**
 * recover_main() - the `recover` subcommand
 * @argc: arguments from "recover" on
 * @argv: their values
 *
 * Return: the exit status (collect.h).
 */
int recover_main(int argc, char **argv)
{
	struct opt_val v;
	int fd, ret, c;

	optind = 1;
	while ((c = opt_parse(&recover_cmd, argc, argv, &v)) != -1)
		return c == OPT_HELP ? EXIT_OK : EXIT_USAGE;	/* opt_parse() said why */
	if (opt_one_dir(argc, argv, "recover DIR") < 0)
		return EXIT_USAGE;
	fd = output_open_dir(argv[optind], false, NULL);
	if (fd < 0) {
		log_err("%s: %s", argv[optind], fd == -ELOOP ? "a symbolic link: refused (give the "
			"directory it points to)" : strerror(-fd));
		return EXIT_FAIL;
	}
	ret = output_finalise(fd, argv[optind], false, false, true);
	if (ret != EXIT_FAIL && !collect_quiet)
		manifest_summary(fd, argv[optind], ret, stderr);
	close(fd);
	return ret;
}
