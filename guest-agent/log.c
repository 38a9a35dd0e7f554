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
void (*agent_log_hook)(int level, const char *text);

/**
 * agent_log() - log a line to stderr, prefixed with the program name
 * @level: LOG_ERR_ .. LOG_DEBUG_, with LOG_LOCAL_ or-ed in or not
 * @fmt: printf format
 *
 * Warnings and errors also go to agent_log_hook, when one is set, unless
 * LOG_LOCAL_ says the host learns of them otherwise.
 */
void agent_log(int level, const char *fmt, ...)
{
	bool local = level & LOG_LOCAL_;
	char text[1024];
	va_list ap;

	level &= ~LOG_LOCAL_;
	if (level == LOG_DEBUG_ && agent_verbose < 1)
		return;
	if (level == LOG_INFO_ && agent_quiet)
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(stderr, "trace-agent: %s\n", text);
	if (level <= LOG_WARN_ && !local && agent_log_hook)
		agent_log_hook(level, text);
}
