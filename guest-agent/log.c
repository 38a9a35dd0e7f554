// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * trace-agent's log: every file logs through agent_log(); main() sets the
 * verbosity. Kept apart from main.c so that nothing calls back into it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "agent.h"

int agent_verbose;
bool agent_quiet;

/**
 * agent_log() - log a line to stderr, prefixed with the program name
 * @level: LOG_ERR_ .. LOG_DEBUG_
 * @fmt: printf format
 */
void agent_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level == LOG_DEBUG_ && agent_verbose < 1)
		return;
	if (level == LOG_INFO_ && agent_quiet)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "trace-agent: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
