// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Option values read and refused in one voice (see opts.h). Numbers are read
 * whole: "10X", "", "1e" or a value out of range is refused with what the
 * option takes, never taken in part or as 0.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect.h"
#include "opts.h"
#include "vt_suggest.h"

/**
 * opt_seconds() - a duration in seconds
 * @opt: the option, as the help names it ("--duration")
 * @arg: its value
 * @zero_ok: 0 is allowed
 * @max: the largest value, 0 for none
 * @out: set to the value
 *
 * Return: 0, or -EINVAL after the message.
 */
int opt_seconds(const char *opt, const char *arg, bool zero_ok, double max, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end == arg || *end || errno || !isfinite(v) || v < 0 || (!zero_ok && v == 0) ||
	    (max && v > max)) {
		if (max)
			collect_usage("%s '%s': seconds, %s0 to %g", opt, arg, zero_ok ? "" : "more than ",
				      max);
		else
			collect_usage("%s '%s': seconds, %s0", opt, arg, zero_ok ? "0 or more than " :
				      "more than ");
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/**
 * opt_uint() - a whole number in a range
 * @opt: the option
 * @arg: its value
 * @min: the smallest value
 * @max: the largest
 * @what: what it counts ("KiB per CPU"), for the message
 * @out: set to the value
 *
 * Return: 0, or -EINVAL after the message.
 */
int opt_uint(const char *opt, const char *arg, unsigned long min, unsigned long max,
	     const char *what, unsigned long *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (end == arg || *end || errno || arg[0] == '-' || v < min || v > max) {
		collect_usage("%s '%s': %s, a whole number from %lu to %lu", opt, arg, what, min, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/**
 * opt_int64() - any 64-bit integer, decimal or 0x hexadecimal, with a sign
 * @opt: the option
 * @arg: its value
 * @out: set to the value
 *
 * Return: 0, or -EINVAL after the message.
 */
int opt_int64(const char *opt, const char *arg, int64_t *out)
{
	long long v;
	char *end;

	errno = 0;
	v = strtoll(arg, &end, 0);
	if (end == arg || *end || errno) {
		collect_usage("%s '%s': an integer (decimal, or hexadecimal with 0x), within 64 bits",
			      opt, arg);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/**
 * opt_size() - a size in bytes, with an optional K, M or G suffix (and B)
 * @opt: the option
 * @arg: its value
 * @out: set to the bytes
 *
 * Return: 0, or -EINVAL after the message.
 */
int opt_size(const char *opt, const char *arg, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (end != arg && !errno && isfinite(v) && v > 0) {
		switch (*end) {
		case 'k': case 'K': v *= 1024; end++; break;
		case 'm': case 'M': v *= 1024 * 1024; end++; break;
		case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
		}
		if (*end == 'B' || *end == 'b')
			end++;
		if (!*end && v >= 1 && v < 18446744073709551616.0) {
			*out = (uint64_t)v;
			return 0;
		}
	}
	collect_usage("%s '%s': a size in bytes, more than 0, with an optional K, M or G suffix "
		      "(e.g. 512M)", opt, arg);
	return -EINVAL;
}

/**
 * opt_pid() - a process id
 * @opt: the option
 * @arg: its value
 * @out: set to the pid
 *
 * Return: 0, or -EINVAL after the message.
 */
int opt_pid(const char *opt, const char *arg, int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (end == arg || *end || errno || arg[0] == '-' || !v || v > 0x3fffffff) {
		collect_usage("%s '%s': a process id, a whole number above 0", opt, arg);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

/**
 * opt_one_of() - one word of a set
 * @opt: the option
 * @arg: its value
 * @allowed: the words, NULL-terminated
 *
 * Return: the index of @arg in @allowed, or -EINVAL after a message that
 * lists them.
 */
int opt_one_of(const char *opt, const char *arg, const char *const *allowed)
{
	char list[512];
	size_t n = 0;
	int i;

	for (i = 0; allowed[i]; i++)
		if (!strcmp(arg, allowed[i]))
			return i;
	list[0] = '\0';
	for (i = 0; allowed[i] && n < sizeof(list); i++)
		n += snprintf(list + n, sizeof(list) - n, "%s%s", i ? (allowed[i + 1] ? ", " : " or ") : "",
			      allowed[i]);
	collect_usage("%s '%s': one of %s", opt, arg, list);
	return -EINVAL;
}

/* The closest long options to @word ("--bogus=1": "--bogus"), as "; did you mean --x?". */
static void suggest_long(const char *word, const struct option *longopts, char *hint, size_t size)
{
	char name[VT_SUGGEST_NAME_MAX], cand[VT_SUGGEST_NAME_MAX];
	struct vt_suggest sg;
	size_t n;

	hint[0] = '\0';
	if (!longopts || strncmp(word, "--", 2) != 0)
		return;
	n = strcspn(word, "=");
	if (n >= sizeof(name))
		return;
	memcpy(name, word, n);
	name[n] = '\0';
	vt_suggest_init(&sg, name);
	for (; longopts->name; longopts++) {
		snprintf(cand, sizeof(cand), "--%s", longopts->name);
		vt_suggest_add(&sg, cand);
	}
	n = snprintf(hint, size, "; ");
	if (!vt_suggest_format(&sg, hint + n, size - n))
		hint[0] = '\0';
}

/**
 * opt_getopt_error() - what getopt_long() refused, in the collector's voice
 * @c: what it returned: '?' (an unknown option) or ':' (a value missing)
 * @optopt: its optopt (the short option, 0 for a long one)
 * @arg: argv[optind - 1], the word it refused
 * @longopts: the subcommand's long options, for "did you mean" (or NULL)
 * @habits: letters another tool's users type, and what they are here (or NULL)
 *
 * For getopt_long() with opterr 0 and an option string starting ":"
 * (after "+" where there is one): opt_next() calls it.
 */
void opt_getopt_error(int c, int optopt, const char *arg, const struct option *longopts,
		      const struct opt_habit *habits)
{
	char opt[3] = { '-', (char)optopt, '\0' };
	char hint[VT_SUGGEST_MAX * VT_SUGGEST_NAME_MAX + 32];
	const char *name = opt;

	/* A long option's optopt is its value (a letter for --vcpus): name the word. */
	if (!optopt || !strncmp(arg, "--", 2))
		name = arg;

	for (; name == opt && habits && habits->letter; habits++)
		if (habits->letter == optopt) {
			collect_usage("%s: %s", name, habits->say);
			return;
		}
	if (c == ':') {
		collect_usage("option '%s' needs a value", name);
		return;
	}
	if (name == arg && strchr(arg, '=') && longopts) {
		size_t n = strcspn(arg, "=");
		const struct option *lo, *hit = NULL;
		int nr = 0;

		/* A known option (or its one abbreviation) given a value it does not take. */
		for (lo = longopts; lo->name; lo++)
			if (n > 2 && !strncmp(lo->name, arg + 2, n - 2)) {
				hit = lo;
				nr++;
				if (strlen(lo->name) == n - 2) {
					nr = 1;
					break;
				}
			}
		if (nr == 1 && hit->has_arg == no_argument) {
			collect_usage("option '--%s' takes no value, not '%s'", hit->name, arg + n + 1);
			return;
		}
	}
	suggest_long(name, longopts, hint, sizeof(hint));
	collect_usage("unknown option '%s'%s", name, hint);
}

/**
 * opt_next() - the next option, getopt_long()'s refusals in the collector's voice
 * @argc: as for getopt_long()
 * @argv: as for getopt_long()
 * @shortopts: the short options, as for getopt_long() (without the ":")
 * @longopts: the long options
 * @habits: letters another tool's users type, and what they are here (or NULL)
 *
 * An unknown option (with the closest long ones) or a value missing is said
 * here, once, for every subcommand; the caller adds opt_try_help() and exits
 * with EXIT_USAGE.
 *
 * Return: as getopt_long(), or OPT_ERROR after the message.
 */
int opt_next(int argc, char **argv, const char *shortopts, const struct option *longopts,
	     const struct opt_habit *habits)
{
	char spec[128];
	bool plus = shortopts[0] == '+';
	int c;

	snprintf(spec, sizeof(spec), "%s:%s", plus ? "+" : "", shortopts + plus);
	opterr = 0;
	c = getopt_long(argc, argv, spec, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	opt_getopt_error(c, optopt, argv[optind - 1], longopts, habits);
	return OPT_ERROR;
}

/**
 * opt_try_help() - the line after a usage error: where the options are listed
 */
void opt_try_help(void)
{
	fprintf(stderr, "Try 'virtio-trace-collect %s --help'.\n", collect_cmd ? collect_cmd : "");
}
