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
#include "text.h"
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
			collect_usage("%s '%s': seconds, %s0 and at most %g", opt, arg,
				      zero_ok ? "from " : "more than ", max);
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
 * opt_u64() - a whole number within 64 bits
 * @opt: the option
 * @arg: its value
 * @what: what it counts ("nanoseconds"), for the message
 * @out: set to the value
 *
 * Return: 0, or -EINVAL after the message.
 */
int opt_u64(const char *opt, const char *arg, const char *what, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (end == arg || *end || errno || arg[0] == '-' || arg[0] == '+' || arg[0] == ' ') {
		collect_usage("%s '%s': %s, a whole number from 0 to %llu", opt, arg, what,
			      (unsigned long long)UINT64_MAX);
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

/*
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
static void opt_getopt_error(int c, int optopt, const char *arg,
			     const struct option *longopts, const struct opt_habit *habits)
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

/**
 * opt_one_dir() - the one recording's directory a subcommand takes after its options
 * @argc: as getopt_long() had it
 * @argv: as getopt_long() left it (optind at the first word that is no option)
 * @synopsis: the usage line's end, for the message ("recover DIR")
 *
 * Return: 0, or -EINVAL after the message and opt_try_help().
 */
int opt_one_dir(int argc, char **argv, const char *synopsis)
{
	if (argc - optind == 1)
		return 0;
	if (argc - optind > 1)
		collect_usage("'%s': one recording's directory only (DIR is '%s')", argv[optind + 1],
			      argv[optind]);
	else
		collect_usage("give a recording's directory: %s", synopsis);
	opt_try_help();
	return -EINVAL;
}

/* Where opt_parse() keeps the getopt form of the table it reads. */
#define OPT_MAX		64

static const struct opt_def *def_named(const struct opt_cmd *cmd, const char *name)
{
	const struct opt_def *d;

	for (d = cmd->defs; d->name; d++)
		if (!strcmp(d->name, name))
			return d;
	return NULL;
}

static const struct opt_def *def_of(const struct opt_cmd *cmd, int key)
{
	const struct opt_def *d;

	for (d = cmd->defs; d->name; d++)
		if (d->key == key)
			return d;
	return NULL;
}

/* One value, read and checked as its kind says; the message names the option. */
static int opt_value(const struct opt_def *d, const char *arg, struct opt_val *v)
{
	char opt[64];
	int ret;

	/* Named as the user may have typed it: "-o/--output". */
	if (d->key > 0 && d->key < 256)
		snprintf(opt, sizeof(opt), "-%c/--%s", d->key, d->name);
	else
		snprintf(opt, sizeof(opt), "--%s", d->name);
	memset(v, 0, sizeof(*v));
	v->s = arg;
	if (!arg)
		return 0;	/* a flag, or an optional value not given */
	switch (d->kind) {
	case KIND_FLAG:
		return 0;
	case KIND_STRING:
		if (d->ok && !d->ok(arg)) {
			collect_usage("%s '%s': %s", opt, arg, d->what);
			return -EINVAL;
		}
		return 0;
	case KIND_PATH:
		if (!*arg) {
			collect_usage("%s '': %s", opt, d->what ? d->what : "a path, not empty");
			return -EINVAL;
		}
		return 0;
	case KIND_NAME:
		if (!collect_name_ok(arg)) {
			collect_usage("%s '%s': a guest's name, of [A-Za-z0-9_.-]", opt, arg);
			return -EINVAL;
		}
		return 0;
	case KIND_UINT:
		return opt_uint(opt, arg, d->min, d->max, d->what, &v->u);
	case KIND_U64:
		return opt_u64(opt, arg, d->what, &v->u64);
	case KIND_INT64:
		return opt_int64(opt, arg, &v->i64);
	case KIND_SECONDS:
		return opt_seconds(opt, arg, d->min == 0, (double)d->max, &v->d);
	case KIND_SIZE:
		return opt_size(opt, arg, &v->u64);
	case KIND_PID:
		return opt_pid(opt, arg, &v->i);
	case KIND_CHOICE:
		ret = opt_one_of(opt, arg, d->choices);
		if (ret < 0)
			return ret;
		v->i = ret;
		return 0;
	}
	return 0;
}

/**
 * opt_parse() - the next option of a subcommand's table, its value read and checked
 * @cmd: the subcommand's table
 * @argc: as for getopt_long()
 * @argv: as for getopt_long()
 * @v: set to the value (v->s the word; v->u, v->u64, v->d or v->i as the kind reads it)
 *
 * The table is the one place an option is declared: getopt's spelling, the
 * value's check and --help (opt_help()) come from it. A refused option or
 * value is said here, in the one voice (the caller adds nothing but its exit).
 * --help prints opt_help() on stdout.
 *
 * Return: the option's key, -1 at the end of the options, OPT_HELP after
 * --help, or OPT_ERROR after a message and opt_try_help().
 */
int opt_parse(const struct opt_cmd *cmd, int argc, char **argv, struct opt_val *v)
{
	struct option lo[OPT_MAX + 2];
	char spec[2 * OPT_MAX + 4];
	const struct opt_def *d;
	size_t n = 0, nl = 0;
	int c;

	if (optind == 1 && argc == 2 && !strcmp(argv[1], "--list-options")) {
		opt_list(cmd, stdout);
		return OPT_HELP;
	}
	if (cmd->in_order)
		spec[n++] = '+';
	for (d = cmd->defs; d->name && nl < OPT_MAX; d++) {
		if (def_named(cmd, d->name) != d || d->help_only)
			continue;	/* its help in another group: the first row is it */
		lo[nl++] = (struct option){ d->name, d->kind == KIND_FLAG ? no_argument :
					    d->optional ? optional_argument : required_argument,
					    NULL, d->key };
		if (d->key > 0 && d->key < 256) {
			spec[n++] = (char)d->key;
			if (d->kind != KIND_FLAG)
				spec[n++] = ':';
		}
	}
	if (!def_named(cmd, "help")) {
		lo[nl++] = (struct option){ "help", no_argument, NULL, 'h' };
		spec[n++] = 'h';
	}
	lo[nl] = (struct option){ NULL, 0, NULL, 0 };
	spec[n] = '\0';
	c = opt_next(argc, argv, spec, lo, cmd->habits);
	if (c == 'h') {
		opt_help(cmd, stdout);
		return OPT_HELP;
	}
	if (c == -1)
		return -1;
	d = c == OPT_ERROR ? NULL : def_of(cmd, c);
	if (!d || opt_value(d, optarg, v) < 0) {
		opt_try_help();
		return OPT_ERROR;
	}
	return c;
}

/* Text @s, its lines from column @col (the first one where the cursor is). */
static void put_indented(FILE *f, const char *s, int col)
{
	const char *nl;

	for (;;) {
		nl = strchr(s, '\n');
		fprintf(f, "%.*s\n", nl ? (int)(nl - s) : (int)strlen(s), s);
		if (!nl || !nl[1])
			return;
		s = nl + 1;
		fprintf(f, "%*s", col, "");
	}
}

/**
 * opt_help() - a subcommand's --help, from its table
 * @cmd: the table
 * @f: where to print it
 *
 * The usage lines and the text before and after the options are the table's;
 * each option is "  -X, --name ARG" (or "      --name ARG") with its help
 * from column cmd->col, under its group's heading.
 */
void opt_help(const struct opt_cmd *cmd, FILE *f)
{
	static const struct opt_def help = { "help", 'h', KIND_FLAG, NULL, "print this help and exit" };
	bool own_help = def_named(cmd, "help") != NULL;
	const struct opt_def *d;
	int col = cmd->col ? cmd->col : 25, n;
	char left[128];

	fprintf(f, "Usage: virtio-trace-collect %s %s\n", cmd->name, cmd->usage);
	if (cmd->about)
		fprintf(f, "\n%s", cmd->about);
	fprintf(f, "\n");
	for (d = cmd->defs; ; d++) {
		if (!d->name && own_help)
			break;
		if (!d->name)
			d = &help;	/* -h, --help last, unless the table places it */
		if (d->group)
			fputs(d->group, f);
		if (d->unlisted)
			continue;
		if (d->left)
			n = snprintf(left, sizeof(left), "%s", d->left);
		else if (cmd->narrow && !(d->key > 0 && d->key < 256))
			n = snprintf(left, sizeof(left), "  --%s%s%s%s", d->name,
			     d->arg ? (d->optional ? "[=" : " ") : "", d->arg ? d->arg : "",
			     d->arg && d->optional ? "]" : "");
		else
			n = snprintf(left, sizeof(left), "  %c%c%s--%s%s%s%s",
			     d->key > 0 && d->key < 256 ? '-' : ' ',
			     d->key > 0 && d->key < 256 ? d->key : ' ',
			     d->key > 0 && d->key < 256 ? ", " : "  ", d->name,
			     d->arg ? (d->optional ? "[=" : " ") : "", d->arg ? d->arg : "",
			     d->arg && d->optional ? "]" : "");
		if (n + 1 > col)
			fprintf(f, "%s\n%*s", left, col, "");
		else
			fprintf(f, "%-*s", col, left);
		put_indented(f, d->help, col);
		if (d == &help)
			break;
	}
	if (cmd->tail)
		fprintf(f, "\n%s", cmd->tail);
}

/**
 * opt_list() - a subcommand's table, one option a line, for the tests
 * @cmd: the table
 * @f: where to print it
 *
 * What `SUB --list-options` prints (not in --help: the tests read it to check
 * the bash completion against the table): per option read, tab-separated,
 * "--name", "-X" or "-", its kind, "none", "required" or "optional" for its
 * value, and a choice's words split by "," (else "-").
 */
void opt_list(const struct opt_cmd *cmd, FILE *f)
{
	static const char *const kinds[] = {
		[KIND_FLAG] = "flag", [KIND_STRING] = "string", [KIND_PATH] = "path",
		[KIND_NAME] = "name", [KIND_UINT] = "uint", [KIND_U64] = "u64",
		[KIND_INT64] = "int64", [KIND_SECONDS] = "seconds", [KIND_SIZE] = "size",
		[KIND_PID] = "pid", [KIND_CHOICE] = "choice",
	};
	const struct opt_def *d;
	int i;

	for (d = cmd->defs; d->name; d++) {
		if (def_named(cmd, d->name) != d || d->help_only)
			continue;
		fprintf(f, "--%s\t", d->name);
		if (d->key > 0 && d->key < 256)
			fprintf(f, "-%c\t", d->key);
		else
			fprintf(f, "-\t");
		fprintf(f, "%s\t%s\t", kinds[d->kind], d->kind == KIND_FLAG ? "none" :
			d->optional ? "optional" : "required");
		for (i = 0; d->choices && d->choices[i]; i++)
			fprintf(f, "%s%s", i ? "," : "", d->choices[i]);
		fprintf(f, "%s\n", d->choices ? "" : "-");
	}
	if (!def_named(cmd, "help"))
		fprintf(f, "--help\t-h\tflag\tnone\t-\n");
}
