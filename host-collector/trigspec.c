// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A trigger's event, SYSTEM:EVENT[ if FILTER]: trigger-guest-filter's value,
 * checked once for both record and the daemon (which checks its configuration
 * before any child runs), and the daemon's trigger-host-filter.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "collect.h"
#include "text.h"
#include "trigspec.h"

#define TRIGSPEC_FILTER_MAX	4096	/* the protocol's, with the NUL */

/* One event or system name, no glob: what a guest's name may be (collect_name_ok()). */
static bool name_ok(const char *s, size_t len)
{
	char name[COLLECT_NAME_MAX];

	if (len >= sizeof(name))
		return false;
	memcpy(name, s, len);
	name[len] = '\0';
	return collect_name_ok(name);
}

/* The filter after "if": not empty, printable ASCII, within the protocol's bound. */
static bool filter_ok(const char *f)
{
	if (!*f || strlen(f) >= TRIGSPEC_FILTER_MAX)
		return false;
	for (; *f; f++)
		if (*f < 0x20 || *f > 0x7e)
			return false;
	return true;
}

/**
 * trigspec_split() - split SYSTEM:EVENT[ if FILTER], saying nothing
 * @spec: the value
 * @t: filled; @t->filter points into @spec ("" for none)
 *
 * Return: 0, or -EINVAL when @spec is not of that form.
 */
int trigspec_split(const char *spec, struct trigspec *t)
{
	const char *colon = strchr(spec, ':'), *end = spec + strcspn(spec, " \t"), *f;

	if (!colon || colon > end || !name_ok(spec, (size_t)(colon - spec)) ||
	    !name_ok(colon + 1, (size_t)(end - colon - 1)))
		return -EINVAL;
	f = end + strspn(end, " \t");
	if (*f) {
		if (strncmp(f, "if", 2) || (f[2] != ' ' && f[2] != '\t'))
			return -EINVAL;
		f += 2 + strspn(f + 2, " \t");
		if (!filter_ok(f))
			return -EINVAL;
	}
	snprintf(t->system, sizeof(t->system), "%.*s", (int)(colon - spec), spec);
	snprintf(t->event, sizeof(t->event), "%.*s", (int)(end - colon - 1), colon + 1);
	t->filter = f;
	return 0;
}

/**
 * trigspec_parse() - check and split SYSTEM:EVENT[ if FILTER]
 * @spec: the value
 * @t: filled; @t->filter points into @spec
 * @what: the option or FILE:LINE, for the message
 *
 * Return: 0, or -EINVAL after the usage message.
 */
int trigspec_parse(const char *spec, struct trigspec *t, const char *what)
{
	if (trigspec_split(spec, t) == 0)
		return 0;
	collect_usage("%s '%s': SYSTEM:EVENT, or SYSTEM:EVENT if FILTER (one event, no glob; the "
		      "filter in the kernel's syntax, printable ASCII)", what, spec);
	return -EINVAL;
}
