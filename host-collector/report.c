// SPDX-License-Identifier: GPL-2.0-or-later
/* `report DIR`: a summary of a recorded run. */
#include <stdio.h>

#include "collect.h"

/**
 * report_main() - the report subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: an exit status.
 */
int report_main(int argc, char **argv)
{
	fprintf(stderr, "virtio-trace-collect report: not implemented yet\n");
	return EXIT_USAGE;
}
