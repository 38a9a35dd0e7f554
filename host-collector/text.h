/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Text that came from a guest, made safe to log and store; text anyone chose,
 * made safe to print; and guest names that become file names (text.c).
 */
#ifndef COLLECT_TEXT_H
#define COLLECT_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

void collect_sanitize(char *dst, size_t size, const char *src, bool keep_newlines);
size_t collect_utf8_len(const unsigned char *s, size_t n);
size_t collect_text_safe(char *dst, size_t size, const char *src);
void collect_fput_safe(FILE *f, const char *s);
void collect_vput_safe(FILE *f, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void collect_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool collect_name_ok(const char *s);
bool collect_name_reserved(const char *s);

#endif
