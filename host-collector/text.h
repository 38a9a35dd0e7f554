/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text that came from a guest, made safe to log and store, and guest names
 * that become file names (text.c).
 */
#ifndef COLLECT_TEXT_H
#define COLLECT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

void collect_sanitize(char *dst, size_t size, const char *src, bool keep_newlines);
bool collect_name_ok(const char *s);
bool collect_name_reserved(const char *s);

#endif
