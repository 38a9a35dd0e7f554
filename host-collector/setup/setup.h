/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The `setup` subcommand (setup.c). */
#ifndef SETUP_SETUP_H
#define SETUP_SETUP_H

int setup_main(int argc, char **argv);

#endif
