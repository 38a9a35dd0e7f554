// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The names closest to a misspelt one. The distance is the optimal string
 * alignment one (insertions, deletions, substitutions and swaps of two
 * neighbours each cost 1), case-insensitive, so that "sched_swich",
 * "sched_swtich" and "Sched_switch" are each one step from "sched_switch".
 * A name is worth suggesting within 1 + len/4 steps of the word: close
 * enough to be a typo, not any name of the same length.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "vt_suggest.h"

static int lc(char c)
{
	return tolower((unsigned char)c);
}

/**
 * vt_edit_distance() - the optimal string alignment distance, case-insensitive
 * @a: one string
 * @b: the other
 *
 * Strings longer than VT_SUGGEST_NAME_MAX - 1 count as that far from anything.
 *
 * Return: the distance.
 */
unsigned int vt_edit_distance(const char *a, const char *b)
{
	unsigned int rows[3][VT_SUGGEST_NAME_MAX];
	unsigned int *pp, *p, *c;
	size_t la = strlen(a), lb = strlen(b), i, j;

	if (la >= VT_SUGGEST_NAME_MAX || lb >= VT_SUGGEST_NAME_MAX)
		return VT_SUGGEST_NAME_MAX;
	pp = rows[0];
	p = rows[1];
	c = rows[2];
	for (j = 0; j <= lb; j++)
		p[j] = j;
	for (i = 1; i <= la; i++) {
		unsigned int *t;

		c[0] = i;
		for (j = 1; j <= lb; j++) {
			unsigned int cost = lc(a[i - 1]) != lc(b[j - 1]);
			unsigned int v = p[j - 1] + cost;

			if (p[j] + 1 < v)
				v = p[j] + 1;
			if (c[j - 1] + 1 < v)
				v = c[j - 1] + 1;
			if (i > 1 && j > 1 && lc(a[i - 1]) == lc(b[j - 2]) && lc(a[i - 2]) == lc(b[j - 1]) &&
			    pp[j - 2] + 1 < v)
				v = pp[j - 2] + 1;
			c[j] = v;
		}
		t = pp;
		pp = p;
		p = c;
		c = t;
	}
	return p[lb];
}

/**
 * vt_suggest_init() - start looking for the names closest to @word
 * @s: the state
 * @word: the misspelt name (must outlive @s)
 */
void vt_suggest_init(struct vt_suggest *s, const char *word)
{
	memset(s, 0, sizeof(*s));
	s->word = word;
	s->limit = 1 + strlen(word) / 4;
}

/**
 * vt_suggest_add() - consider one existing name
 * @s: the state
 * @name: the name (copied when kept)
 */
void vt_suggest_add(struct vt_suggest *s, const char *name)
{
	unsigned int d, i, k;

	if (strlen(name) >= VT_SUGGEST_NAME_MAX)
		return;
	d = vt_edit_distance(s->word, name);
	if (d > s->limit || d == 0)
		return;
	for (i = 0; i < s->nr; i++) {
		if (!strcmp(s->best[i], name))
			return;
		if (d < s->dist[i])
			break;
	}
	if (i >= VT_SUGGEST_MAX)
		return;
	k = s->nr < VT_SUGGEST_MAX ? s->nr : VT_SUGGEST_MAX - 1;
	for (; k > i; k--) {
		memcpy(s->best[k], s->best[k - 1], sizeof(s->best[k]));
		s->dist[k] = s->dist[k - 1];
	}
	strcpy(s->best[i], name);
	s->dist[i] = d;
	if (s->nr < VT_SUGGEST_MAX)
		s->nr++;
}

/**
 * vt_suggest_format() - "did you mean A?" or "did you mean A, B or C?"
 * @s: the state
 * @buf: where to write it ("" when nothing is close)
 * @size: its size
 *
 * Only the names at the smallest distance found are offered.
 *
 * Return: the length written (cut at @size - 1).
 */
size_t vt_suggest_format(const struct vt_suggest *s, char *buf, size_t size)
{
	size_t n = 0;
	unsigned int i, nr = 0;

	if (!size)
		return 0;
	buf[0] = '\0';
	while (nr < s->nr && s->dist[nr] == s->dist[0])
		nr++;
	for (i = 0; i < nr && n < size; i++) {
		int w = snprintf(buf + n, size - n, "%s%s", !i ? "did you mean " :
				 i + 1 == nr ? " or " : ", ", s->best[i]);

		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (nr && n < size)
		n += snprintf(buf + n, size - n, "?");
	return n < size ? n : size - 1;
}
