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

/**
 * opt_getopt_error() - what getopt_long() refused, in the collector's voice
 * @c: what it returned: '?' (an unknown option) or ':' (a value missing)
 * @optopt: its optopt (the short option, 0 for a long one)
 * @arg: argv[optind - 1], the word it refused
 *
 * For getopt_long() with opterr 0 and an option string starting ":"
 * (after "+" where there is one).
 */
void opt_getopt_error(int c, int optopt, const char *arg)
{
	char opt[3] = { '-', (char)optopt, '\0' };
	const char *name = optopt ? opt : arg;

	if (c == ':')
		collect_usage("option '%s' needs a value", name);
	else
		collect_usage("unknown option '%s'", name);
}
