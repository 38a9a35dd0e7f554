/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Option values, read and refused in one voice by every subcommand (opts.c):
 * a bad value's message names the option, the value and what it takes, as
 *   virtio-trace-collect record: --max-size '10X': a size in bytes, ...
 * Each returns 0, or -EINVAL after that message (the caller exits 2).
 */
#ifndef COLLECT_OPTS_H
#define COLLECT_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <getopt.h>

int opt_seconds(const char *opt, const char *arg, bool zero_ok, double max, double *out);
int opt_uint(const char *opt, const char *arg, unsigned long min, unsigned long max,
	     const char *what, unsigned long *out);
int opt_int64(const char *opt, const char *arg, int64_t *out);
int opt_size(const char *opt, const char *arg, uint64_t *out);
int opt_pid(const char *opt, const char *arg, int *out);
int opt_one_of(const char *opt, const char *arg, const char *const *allowed);

/**
 * struct opt_habit - a short option another tool's users type, refused with ours
 * @letter: the letter (trace-cmd's -b, say)
 * @say: what to say instead ("trace-cmd's buffer size is --buffer-size KB here")
 */
struct opt_habit {
	int letter;
	const char *say;
};

#define OPT_ERROR	(-2)	/* opt_next(): refused, said */

void opt_getopt_error(int c, int optopt, const char *arg, const struct option *longopts,
		      const struct opt_habit *habits);
int opt_next(int argc, char **argv, const char *shortopts, const struct option *longopts,
	     const struct opt_habit *habits);
void opt_try_help(void);

#endif
