// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Text that came from a guest, made safe to log and store; text that anyone
 * chose, made safe to print (every log line, and the tables that carry a path
 * or name another user or a guest picked); and guest names that become file
 * names. Used by the session (as text arrives), by the spool's reader (the
 * spool was made from guest data too), by log.c and by the tables.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "collect.h"
#include "text.h"

/* A printed line's length bound, before and after it is made safe. */
#define TEXT_LINE_MAX	8192

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
 * collect_utf8_len() - the length of the valid UTF-8 sequence at @s
 * @s: the bytes
 * @n: how many there are (at least 1)
 *
 * Overlong forms, surrogates and code points past U+10FFFF are invalid.
 *
 * Return: 1 to 4, or 0 when @s starts no valid sequence.
 */
size_t collect_utf8_len(const unsigned char *s, size_t n)
{
	unsigned int cp, need, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 1, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		need = 2, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		need = 3, cp = s[0] & 0x07;
	else
		return 0;
	if (n < need + 1)
		return 0;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need + 1;
}

/*
 * The next character of @p (@left bytes) as a terminal may see it: how many
 * bytes it takes, and in *@shown the one byte that stands for it, or 0 when
 * it is shown as it is. A terminal acts on C0 controls (ESC starts its
 * sequences, BEL rings, CR and BS overwrite what we wrote), DEL, and the C1
 * controls (U+0080..U+009F, which some terminals read as ESC [ and the like):
 * each is one '?'. A newline or tab becomes a space, so that text cannot
 * start a line of its own (a forged "virtio-trace-collect ...: " message) nor
 * push a table's columns. A byte that starts no valid UTF-8 is one '?';
 * valid UTF-8 is kept.
 */
static size_t next_char(const unsigned char *p, size_t left, char *shown)
{
	size_t n = collect_utf8_len(p, left);

	*shown = 0;
	if (!n)
		n = 1, *shown = '?';
	else if (*p == '\n' || *p == '\t')
		*shown = ' ';
	else if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] <= 0x9f))
		*shown = '?';
	return n;
}

/**
 * collect_text_safe() - text anyone chose, made safe to print on a terminal
 * @dst: destination, NUL-terminated
 * @size: its size (at least 4)
 * @src: the text
 *
 * The one rule for everything we print that another user or a guest could
 * have chosen (a path from a process's command line, a guest's name or
 * kernel, a message that quotes them): control characters (C0, DEL, C1) and
 * bytes that are no valid UTF-8 become '?', a newline or tab a space; valid
 * UTF-8 is kept. Text already made safe passes unchanged (nothing is escaped
 * twice). Cut at a character's end, with "...", when @dst is too small.
 *
 * Return: the length of @dst.
 */
size_t collect_text_safe(char *dst, size_t size, const char *src)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t left = strlen(src), o = 0, cut = 0, n;
	char shown;

	while (left) {
		n = next_char(p, left, &shown);
		if (o + (shown ? 1 : n) >= size) {
			/* Back to the last character's end that leaves room for "...". */
			memcpy(dst + cut, "...", 3);
			o = cut + 3;
			break;
		}
		if (shown)
			dst[o++] = shown;
		else
			memcpy(dst + o, p, n), o += n;
		if (o + 3 < size)
			cut = o;
		p += n;
		left -= n;
	}
	dst[o] = '\0';
	return o;
}

/**
 * collect_fput_safe() - collect_text_safe()'s rule, for text of any length
 * @f: where it goes
 * @s: the text, or NULL (nothing)
 */
void collect_fput_safe(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t left = strlen((const char *)p), n;
	char shown;

	while (left) {
		n = next_char(p, left, &shown);
		if (shown)
			fputc(shown, f);
		else
			fwrite(p, 1, n, f);
		p += n;
		left -= n;
	}
}

/**
 * collect_vput_safe() - @fmt's text, formatted whole, then made safe
 * (collect_text_safe()) and written
 * @f: where it goes
 * @fmt: printf format
 * @ap: its arguments
 *
 * Every log line and the status line (log.c) and the tables' lines
 * (collect_line()) leave this way, at most TEXT_LINE_MAX bytes each.
 */
void collect_vput_safe(FILE *f, const char *fmt, va_list ap)
{
	char raw[TEXT_LINE_MAX], safe[TEXT_LINE_MAX];

	if (vsnprintf(raw, sizeof(raw), fmt, ap) >= (int)sizeof(raw))
		memcpy(raw + sizeof(raw) - 4, "...", 4);	/* cut: say so */
	collect_text_safe(safe, sizeof(safe), raw);
	fputs(safe, f);
}

/**
 * collect_line() - a line of a table or a hint on @f, made safe
 * @f: where it goes (stdout)
 * @fmt: printf format, without the newline (this adds it)
 *
 * For the text outputs that carry a path, name or string that another user or
 * a guest chose (list's table and hints): the same rule as every log line.
 */
void collect_line(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	collect_vput_safe(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
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
