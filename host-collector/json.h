/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A small JSON reader for manifest.json and QMP (RFC 8259), and a writer.
 *
 * The manifest is our own format but is read back as untrusted input: it may
 * have been edited, truncated by a full disk, or copied from elsewhere. The
 * parser is iterative (no recursion), bounds nesting depth, node count and
 * string length, validates UTF-8, decodes every escape (surrogate pairs
 * included) and allocates everything from one arena that json_free() releases
 * at once. Numbers keep their text, so 64-bit integers come back exactly.
 */
#ifndef COLLECT_JSON_H
#define COLLECT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum json_type {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

/**
 * struct json_value - one node of a parsed document
 * @type: what it is
 * @key: the member name when the parent is an object, else NULL
 * @key_len: bytes in @key (it may hold an escaped NUL)
 * @str: a string's decoded UTF-8 text, NUL-terminated; a number's text
 * @len: bytes in @str
 * @count: members or elements of an object or array
 * @child: the first member or element
 * @next: the next sibling
 */
struct json_value {
	enum json_type type;
	const char *key;
	size_t key_len;
	const char *str;
	size_t len;
	size_t count;
	struct json_value *child;
	struct json_value *next;
};

/**
 * struct json_limits - bounds on what json_parse() accepts
 * @max_depth: nesting of arrays and objects (0: JSON_DEFAULT_DEPTH)
 * @max_nodes: values in the whole document (0: JSON_DEFAULT_NODES)
 * @max_string: bytes in one string, key or number (0: JSON_DEFAULT_STRING)
 */
struct json_limits {
	unsigned int max_depth;
	size_t max_nodes;
	size_t max_string;
};

#define JSON_DEFAULT_DEPTH	64
#define JSON_DEFAULT_NODES	(1u << 20)
#define JSON_DEFAULT_STRING	(1u << 20)

/**
 * struct json_error - where and why parsing stopped
 * @offset: byte offset in the input
 * @line: 1-based line of @offset
 * @msg: what was wrong
 */
struct json_error {
	size_t offset;
	unsigned int line;
	char msg[80];
};

struct json_doc;

struct json_doc *json_parse(const char *text, size_t len, const struct json_limits *lim,
			    struct json_error *err);
void json_free(struct json_doc *doc);
const struct json_value *json_root(const struct json_doc *doc);

const struct json_value *json_get(const struct json_value *obj, const char *key);
const struct json_value *json_at(const struct json_value *arr, size_t index);
bool json_is(const struct json_value *v, enum json_type type);
const char *json_string(const struct json_value *v);
int json_u64(const struct json_value *v, uint64_t *out);
int json_i64(const struct json_value *v, int64_t *out);
int json_double(const struct json_value *v, double *out);
int json_bool(const struct json_value *v, bool *out);

/*
 * A streaming JSON writer (json.c): strings escaped (bytes that are not
 * printable ASCII as \u00XX), always valid UTF-8 out. report --json, list
 * --json and the QMP commands setup sends use it compact (jw_begin());
 * manifest.json indented (jw_begin_pretty()), where jw_inline() keeps a
 * small object or array on one line. json_write_string_html() is the same
 * escaper for JSON inside an HTML <script> (report --html).
 */
struct jw {
	FILE *f;
	unsigned int depth;
	unsigned int inline_at;		/* pretty: the depth of the outermost one-line value, 0: none */
	bool pretty;
	bool need_comma[64];
};

void json_write_string(FILE *f, const char *s);
void json_write_string_html(FILE *f, const char *s);
void jw_begin(struct jw *w, FILE *f);
void jw_begin_pretty(struct jw *w, FILE *f);
void jw_obj(struct jw *w, const char *key);
void jw_arr(struct jw *w, const char *key);
void jw_inline(struct jw *w, const char *key, char open);
void jw_end(struct jw *w, char close);
void jw_str(struct jw *w, const char *key, const char *s);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
void jw_dbl(struct jw *w, const char *key, double v);
void jw_fixed(struct jw *w, const char *key, double v, int decimals);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);

#endif
