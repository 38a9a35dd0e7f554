/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The output directory and what ends a recording: the files made from the
 * spool (finish.c, output.c), and `recover` (recover.c), which does only that.
 */
#ifndef STORE_OUTPUT_H
#define STORE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

int output_open_dir(const char *out_dir, bool create, bool *created);
int output_previous(int out_fd, const char *out_dir, bool force);
int output_finalise(int out_fd, const char *out_dir, bool keep_spool, bool fsync, bool recovering);
int manifest_summary(int out_fd, const char *out_dir, int status, FILE *f);
int recover_main(int argc, char **argv);
int join_main(int argc, char **argv);

#endif
