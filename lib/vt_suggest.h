/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "Did you mean ...?": the names closest to a misspelt one (suggest.c), by
 * edit distance, for an event, tracer or clock that does not exist. The
 * agent offers them for the guest's names, the collector for the host's.
 */
#ifndef VT_SUGGEST_H
#define VT_SUGGEST_H

#include <stddef.h>

#define VT_SUGGEST_MAX		3	/* names kept */
#define VT_SUGGEST_NAME_MAX	256	/* longer names are never suggested */

/**
 * struct vt_suggest - the closest names seen so far
 * @word: what was asked for (not copied: it must outlive @s)
 * @limit: the largest distance worth suggesting
 * @best: the closest names, nearest first (ties: the first seen)
 * @dist: their distances
 * @nr: how many
 */
struct vt_suggest {
	const char *word;
	unsigned int limit;
	char best[VT_SUGGEST_MAX][VT_SUGGEST_NAME_MAX];
	unsigned int dist[VT_SUGGEST_MAX];
	unsigned int nr;
};

unsigned int vt_edit_distance(const char *a, const char *b);
void vt_suggest_init(struct vt_suggest *s, const char *word);
void vt_suggest_add(struct vt_suggest *s, const char *name);
size_t vt_suggest_format(const struct vt_suggest *s, char *buf, size_t size);

#endif
