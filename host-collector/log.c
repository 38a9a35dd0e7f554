// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The collector's one voice on stderr: every message starts with the
 * program's and the subcommand's names ("virtio-trace-collect record: "),
 * then "error: " or "warning: " where it is one; and the status line that
 * record redraws in place (a message first clears it, so the two never share
 * a line).
 *
 * Messages quote what others chose: a path from a process's command line (a
 * local user's fake QEMU), a guest's name, what an agent or a QMP peer said.
 * Each is formatted whole, then made safe (collect_vput_safe()): no escape
 * sequence reaches the terminal and no newline starts a forged message.
 */
#include <stdarg.h>
#include <stdio.h>

#include "collect.h"
#include "text.h"

int collect_quiet;
int collect_verbose;
const char *collect_cmd;
static bool status_shown;

static void prefix(void)
{
	fprintf(stderr, "virtio-trace-collect%s%s: ", collect_cmd ? " " : "",
		collect_cmd ? collect_cmd : "");
}

/**
 * collect_usage() - a usage error on stderr, in the collector's voice
 * @fmt: printf format: what was wrong (the option, its value, what it takes)
 *
 * Printed whatever --quiet says; the caller exits with EXIT_USAGE.
 */
void collect_usage(const char *fmt, ...)
{
	va_list ap;

	collect_status_clear();
	prefix();
	va_start(ap, fmt);
	collect_vput_safe(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/**
 * collect_log() - a message on stderr, prefixed with the program name
 * @level: L_ERR .. L_DEBUG
 * @fmt: printf format
 */
void collect_log(int level, const char *fmt, ...)
{
	va_list ap;

	if ((level == L_DEBUG && !collect_verbose) || (level == L_INFO && collect_quiet))
		return;
	collect_status_clear();
	va_start(ap, fmt);
	prefix();
	if (level == L_ERR)
		fputs("error: ", stderr);
	else if (level == L_WARN)
		fputs("warning: ", stderr);
	collect_vput_safe(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/**
 * collect_status() - draw the status line, in place of the one before
 * @fmt: printf format
 */
void collect_status(const char *fmt, ...)
{
	va_list ap;

	fputs("\r\033[K", stderr);
	va_start(ap, fmt);
	collect_vput_safe(stderr, fmt, ap);
	va_end(ap);
	status_shown = true;
}

/**
 * collect_status_clear() - erase the status line, if one is shown
 */
void collect_status_clear(void)
{
	if (!status_shown)
		return;
	fputs("\r\033[K", stderr);
	status_shown = false;
}

static const char *const msg_names[GMSG_NR] = {
	[GMSG_AGENT_ERROR] = "error reports from the agent",
	[GMSG_SYNC] = "clock sync warnings",
	[GMSG_AGENT_NOTICE] = "warnings from the agent",
	[GMSG_REFUSED] = "connections to its ports refused",
};

/**
 * collect_msg_name() - what guest_log() counts under a kind, for messages
 * @kind: the kind
 *
 * Return: its description.
 */
const char *collect_msg_name(enum guest_msg kind)
{
	return kind < GMSG_NR ? msg_names[kind] : "?";
}
