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
#include <stdio.h>

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

int opt_next(int argc, char **argv, const char *shortopts, const struct option *longopts,
	     const struct opt_habit *habits);
void opt_try_help(void);
int opt_u64(const char *opt, const char *arg, const char *what, uint64_t *out);

/**
 * enum opt_kind - what an option's value is, and how opt_parse() checks it
 * @KIND_FLAG: no value
 * @KIND_STRING: any word
 * @KIND_PATH: a path, not empty (opt_def.what: what it is, for the message)
 * @KIND_NAME: a guest's name (collect_name_ok())
 * @KIND_UINT: a whole number from opt_def.min to .max, counting opt_def.what
 * @KIND_U64: a whole number within 64 bits, counting opt_def.what
 * @KIND_INT64: an integer within 64 bits, signed, decimal or 0x hexadecimal
 * @KIND_SECONDS: seconds: more than 0 (opt_def.min 1) or from 0 (.min 0), at most .max (0: no limit)
 * @KIND_SIZE: bytes, with an optional K, M or G suffix
 * @KIND_PID: a process id
 * @KIND_CHOICE: one of opt_def.choices (the value is its index)
 */
enum opt_kind {
	KIND_FLAG, KIND_STRING, KIND_PATH, KIND_NAME, KIND_UINT, KIND_U64, KIND_INT64, KIND_SECONDS,
	KIND_SIZE, KIND_PID, KIND_CHOICE,
};

/**
 * struct opt_def - one option of a subcommand: one row of its table
 * @name: the long name, without "--"
 * @key: the short letter, or a value above 255 when there is none
 * @kind: what the value is
 * @arg: the value's name in --help ("SEC"), NULL for a flag
 * @help: --help's text for it, lines split by "\n"
 * @group: text printed before it in --help (a heading, a paragraph), or NULL
 * @min: the smallest value (KIND_UINT), or whether 0 is refused (KIND_SECONDS)
 * @max: the largest value (KIND_UINT, KIND_SECONDS; 0: no limit for seconds)
 * @what: what the number counts, or what the path is, for the message
 * @choices: KIND_CHOICE's words, NULL-terminated
 * @optional: the value may be left out (--live[=MS])
 * @left: the option column as --help prints it, when not the usual
 *	"  -X, --name ARG" (a GUEST's "  --ctl PATH --cpu PATH [--cpu PATH]...")
 * @unlisted: --help names it in another row's column (--cpu in --ctl's)
 * @help_only: listed in --help, not read here (record's -V, which main() reads)
 * @ok: KIND_STRING's check, or NULL: a value it returns false for is
 *	refused, the message saying it takes @what
 */
struct opt_def {
	const char *name;
	int key;
	enum opt_kind kind;
	const char *arg;
	const char *help;
	const char *group;
	unsigned long min, max;
	const char *what;
	const char *const *choices;
	bool optional;
	const char *left;
	bool unlisted;
	bool help_only;
	bool (*ok)(const char *arg);
};

/**
 * struct opt_cmd - a subcommand's declared command line
 * @name: the subcommand ("list")
 * @usage: what follows it on the usage line(s)
 * @about: the text between the usage and the options, or NULL
 * @tail: the text after the options (the exit status), or NULL
 * @defs: its options, ended by a row with a NULL name. A name given again is
 *	more help for that option, in another group; -h/--help is added last
 *	unless a row places it
 * @habits: letters another tool's users type, and what they are here, or NULL
 * @col: the column of the options' help (0: 25)
 * @in_order: options end at the first word that is not one ("+")
 * @narrow: an option without a letter is "  --name ARG" in --help, not
 *	"      --name ARG" (no column of letters: report's)
 */
struct opt_cmd {
	const char *name;
	const char *usage;
	const char *about;
	const char *tail;
	const struct opt_def *defs;
	const struct opt_habit *habits;
	int col;
	bool in_order;
	bool narrow;
};

/**
 * struct opt_val - an option's value, as opt_parse() read it
 * @s: the word as given (NULL for a flag, or an optional value left out)
 * @u: KIND_UINT's number
 * @u64: KIND_U64's number, KIND_SIZE's bytes
 * @i64: KIND_INT64's number
 * @d: KIND_SECONDS' seconds
 * @i: KIND_PID's pid, KIND_CHOICE's index
 */
struct opt_val {
	const char *s;
	union {
		unsigned long u;
		uint64_t u64;
		int64_t i64;
		double d;
		int i;
	};
};

#define OPT_HELP	(-3)	/* opt_parse(): --help (or --list-options) printed */

int opt_parse(const struct opt_cmd *cmd, int argc, char **argv, struct opt_val *v);
void opt_help(const struct opt_cmd *cmd, FILE *f);
void opt_list(const struct opt_cmd *cmd, FILE *f);
int opt_one_dir(int argc, char **argv, const char *synopsis);

#endif
