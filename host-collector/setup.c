// SPDX-License-Identifier: GPL-2.0-or-later
/* `setup`: printed QEMU arguments and libvirt XML for the ports (end-to-end issue). */
#include <stdio.h>

#include "collect.h"

/**
 * setup_main() - the setup subcommand
 * @argc: argument count
 * @argv: arguments
 *
 * Return: an exit status.
 */
int setup_main(int argc, char **argv)
{
	fprintf(stderr, "virtio-trace-collect setup: not implemented yet\n");
	return EXIT_USAGE;
}
