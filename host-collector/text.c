// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Text that came from a guest, made safe to log and store, and guest names
 * that become file names. Used by the session (as text arrives) and by the
 * spool's reader (the spool was made from guest data too).
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "collect.h"
#include "text.h"

/**
 * collect_sanitize() - make guest text safe to log and store
 * @dst: destination
 * @size: its size
 * @src: the text
 * @keep_newlines: keep '\n' (multi-line stats text) or turn it into a space
 *
 * Anything but printable ASCII becomes '?'.
 */
void collect_sanitize(char *dst, size_t size, const char *src, bool keep_newlines)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < size; i++) {
		unsigned char c = src[i];

		if (c == '\n' && keep_newlines)
			dst[i] = c;
		else if (c == '\n' || c == '\t')
			dst[i] = ' ';
		else
			dst[i] = c >= 0x20 && c < 0x7f ? c : '?';
	}
	if (size)
		dst[i] = '\0';
}

/**
 * collect_name_ok() - whether a guest name is usable: it becomes part of file
 * and directory names (guest-NAME.dat, .spool/guest-NAME, setup's DIR)
 * @s: the name
 *
 * Return: true for 1 to COLLECT_NAME_MAX - 1 of [A-Za-z0-9_.-], not starting
 * with '.' or '-'.
 */
bool collect_name_ok(const char *s)
{
	size_t i, len = strlen(s);

	if (!len || len >= COLLECT_NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	return true;
}

/**
 * collect_name_reserved() - whether a usable name may still not name a guest
 * @s: the name
 *
 * "host" (in any case) is the host trace's: its bad pages, its entry in
 * report's timeline and output, and host.dat would stand next to the guest's.
 *
 * Return: true when @s may not name a guest.
 */
bool collect_name_reserved(const char *s)
{
	return !strcasecmp(s, "host");
}
