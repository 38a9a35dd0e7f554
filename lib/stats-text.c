// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `key: value` lines (vt_stats.h): a line matches when it starts with the key
 * and a colon right after it ("overrun" is not "commit overrun").
 */
#include <stdlib.h>
#include <string.h>

#include "vt_stats.h"

/**
 * vt_stats_line() - where @key's value starts
 * @text: the lines, NUL-terminated; NULL reads as none
 * @key: the key, without the colon
 *
 * Return: the first byte after "@key:" on the first line that has it, or NULL.
 */
const char *vt_stats_line(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':')
			return p + klen + 1;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return NULL;
}

/**
 * vt_stats_u64() - @key's value as a number
 * @text: the lines
 * @key: the key
 *
 * Return: the value, 0 when the line is absent.
 */
uint64_t vt_stats_u64(const char *text, const char *key)
{
	const char *v = vt_stats_line(text, key);

	return v ? strtoull(v, NULL, 10) : 0;
}
