// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * JSON for the collector: a small, bounded reader (see json.h), and the one
 * writer of manifest.json, report --json and list --json, with one escaper
 * (json_write_string()).
 *
 * The reader makes one pass over the input with an explicit stack of open
 * containers, so hostile nesting costs a bounded array, never the C stack.
 * It is kept rather than replaced by a library for measured reasons
 * (tests/bench/bench-json.sh, three runs on an idle machine, doc/benchmarks.md):
 * on a manifest of 1024 guests (8.2 MB) jansson 2.14 (libjansson-dev) took
 * 4.0-4.5x the time and json-c 0.16 3.9-4.4x, with 1.2x and 1.9x the memory
 * beyond the document; jansson gives back no integer past INT64_MAX (its
 * json_int_t is a long long: such a number fails the whole document), and a
 * manifest holds u64 values a guest chooses (its page timestamps, its TSC);
 * json-c at its strictest (JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8)
 * accepts 10 of 16 inputs RFC 8259 forbids, among them raw control
 * characters in strings (an ESC that clears a terminal), lone and encoded
 * surrogates and overlong UTF-8, which this reader and jansson refuse.
 * fuzz-json fuzzes the reader, the writer's round trip and the QMP replies
 * read through them.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "text.h"

#define ARENA_BLOCK	(64u << 10)

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	max_align_t data[];
};

/**
 * struct json_doc - a parsed document and the memory it lives in
 * @root: the top-level value
 * @blocks: arena blocks, newest first
 */
struct json_doc {
	struct json_value *root;
	struct arena_block *blocks;
};

struct frame {
	struct json_value *node;
	struct json_value *last;
};

struct parser {
	const char *s;
	size_t len, pos;
	struct json_limits lim;
	size_t nodes;
	struct json_doc *doc;
	struct frame *stack;
	unsigned int depth;
	struct json_error *err;
	const char *key;
	size_t key_len;
};

static void *arena_alloc(struct json_doc *doc, size_t size)
{
	struct arena_block *b = doc->blocks;
	size_t align = sizeof(max_align_t);
	void *p;

	size = (size + align - 1) / align * align;
	if (!b || b->size - b->used < size) {
		size_t bsize = size > ARENA_BLOCK ? size : ARENA_BLOCK;

		b = malloc(sizeof(*b) + bsize);
		if (!b)
			return NULL;
		b->size = bsize;
		b->used = 0;
		b->next = doc->blocks;
		doc->blocks = b;
	}
	p = (char *)b->data + b->used;
	b->used += size;
	return p;
}

static int fail(struct parser *p, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct parser *p, int err, const char *fmt, ...)
{
	va_list ap;
	size_t i;

	if (!p->err)
		return err;
	p->err->offset = p->pos;
	p->err->line = 1;
	for (i = 0; i < p->pos && i < p->len; i++)
		p->err->line += p->s[i] == '\n';
	va_start(ap, fmt);
	vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
	va_end(ap);
	return err;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
				   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
		p->pos++;
}

static int hex4(const char *s, unsigned int *out)
{
	unsigned int v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -EINVAL;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *d, unsigned int cp)
{
	if (cp < 0x80) {
		d[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		d[0] = 0xc0 | (cp >> 6);
		d[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		d[0] = 0xe0 | (cp >> 12);
		d[1] = 0x80 | ((cp >> 6) & 0x3f);
		d[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	d[0] = 0xf0 | (cp >> 18);
	d[1] = 0x80 | ((cp >> 12) & 0x3f);
	d[2] = 0x80 | ((cp >> 6) & 0x3f);
	d[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* A string at p->pos (the opening quote): decoded into the arena. */
static int parse_string(struct parser *p, const char **out, size_t *out_len)
{
	const char *s = p->s;
	size_t start = p->pos + 1, end = start, n = 0;
	char *d;

	/* Find the closing quote first: the decoded text is never longer. */
	while (end < p->len && s[end] != '"') {
		if ((unsigned char)s[end] < 0x20) {
			p->pos = end;
			return fail(p, -EINVAL, "control character in a string");
		}
		end += s[end] == '\\' ? 2 : 1;
	}
	if (end >= p->len) {
		p->pos = p->len;
		return fail(p, -EINVAL, "unexpected end of input in a string");
	}
	if (end - start > p->lim.max_string)
		return fail(p, -E2BIG, "string longer than %zu bytes", p->lim.max_string);
	d = arena_alloc(p->doc, end - start + 1);
	if (!d)
		return fail(p, -ENOMEM, "out of memory");
	p->pos = start;
	while (p->pos < end) {
		unsigned char c = s[p->pos];
		unsigned int cp, lo;
		size_t l;

		if (c != '\\') {
			l = collect_utf8_len((const unsigned char *)s + p->pos, end - p->pos);
			if (!l)
				return fail(p, -EINVAL, "invalid UTF-8 in a string");
			memcpy(d + n, s + p->pos, l);
			n += l;
			p->pos += l;
			continue;
		}
		c = s[p->pos + 1];
		p->pos += 2;
		switch (c) {
		case '"': d[n++] = '"'; continue;
		case '\\': d[n++] = '\\'; continue;
		case '/': d[n++] = '/'; continue;
		case 'b': d[n++] = '\b'; continue;
		case 'f': d[n++] = '\f'; continue;
		case 'n': d[n++] = '\n'; continue;
		case 'r': d[n++] = '\r'; continue;
		case 't': d[n++] = '\t'; continue;
		case 'u': break;
		default:
			p->pos -= 2;
			return fail(p, -EINVAL, "bad escape in a string");
		}
		if (end - p->pos < 4 || hex4(s + p->pos, &cp) < 0) {
			p->pos -= 2;
			return fail(p, -EINVAL, "bad \\u escape");
		}
		p->pos += 4;
		if (cp >= 0xdc00 && cp <= 0xdfff) {
			p->pos -= 6;
			return fail(p, -EINVAL, "lone low surrogate");
		}
		if (cp >= 0xd800 && cp <= 0xdbff) {
			if (end - p->pos < 6 || s[p->pos] != '\\' || s[p->pos + 1] != 'u' ||
			    hex4(s + p->pos + 2, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff) {
				p->pos -= 6;
				return fail(p, -EINVAL, "high surrogate without its low half");
			}
			p->pos += 6;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		}
		/* 6 escaped bytes (12 for a pair) always make room for 1 to 4 decoded. */
		n += put_utf8(d + n, cp);
	}
	d[n] = 0;
	p->pos = end + 1;
	*out = d;
	*out_len = n;
	return 0;
}

static size_t digits(const struct parser *p, size_t i)
{
	size_t start = i;

	while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
		i++;
	return i - start;
}

static int parse_number(struct parser *p, struct json_value *v)
{
	size_t i = p->pos, n;
	char *d;

	if (i < p->len && p->s[i] == '-')
		i++;
	n = digits(p, i);
	if (!n)
		return fail(p, -EINVAL, "bad number");
	if (n > 1 && p->s[i] == '0')
		return fail(p, -EINVAL, "leading zero in a number");
	i += n;
	if (i < p->len && p->s[i] == '.') {
		n = digits(p, ++i);
		if (!n)
			return fail(p, -EINVAL, "no digits after the decimal point");
		i += n;
	}
	if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
		i++;
		if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
			i++;
		n = digits(p, i);
		if (!n)
			return fail(p, -EINVAL, "no digits in an exponent");
		i += n;
	}
	if (i - p->pos > p->lim.max_string)
		return fail(p, -E2BIG, "number longer than %zu bytes", p->lim.max_string);
	d = arena_alloc(p->doc, i - p->pos + 1);
	if (!d)
		return fail(p, -ENOMEM, "out of memory");
	memcpy(d, p->s + p->pos, i - p->pos);
	d[i - p->pos] = 0;
	v->type = JSON_NUMBER;
	v->str = d;
	v->len = i - p->pos;
	p->pos = i;
	return 0;
}

static bool word(struct parser *p, const char *w)
{
	size_t n = strlen(w);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, w, n))
		return false;
	p->pos += n;
	return true;
}

static struct json_value *new_value(struct parser *p)
{
	struct json_value *v;

	if (p->nodes >= p->lim.max_nodes) {
		fail(p, -E2BIG, "more than %zu values", p->lim.max_nodes);
		return NULL;
	}
	v = arena_alloc(p->doc, sizeof(*v));
	if (!v) {
		fail(p, -ENOMEM, "out of memory");
		return NULL;
	}
	memset(v, 0, sizeof(*v));
	p->nodes++;
	return v;
}

static void attach(struct parser *p, struct json_value *v)
{
	struct frame *f;

	if (!p->depth) {
		p->doc->root = v;
		return;
	}
	f = &p->stack[p->depth - 1];
	v->key = p->key;
	v->key_len = p->key_len;
	p->key = NULL;
	if (f->last)
		f->last->next = v;
	else
		f->node->child = v;
	f->last = v;
	f->node->count++;
}

/* One value at p->pos; an opened container is pushed. Sets *opened. */
static int parse_value(struct parser *p, bool *opened)
{
	struct json_value *v;
	char c;
	int ret = 0;

	*opened = false;
	skip_ws(p);
	if (p->pos >= p->len)
		return fail(p, -EINVAL, "unexpected end of input");
	v = new_value(p);
	if (!v)
		return p->nodes >= p->lim.max_nodes ? -E2BIG : -ENOMEM;
	c = p->s[p->pos];
	switch (c) {
	case '{':
	case '[':
		if (p->depth >= p->lim.max_depth)
			return fail(p, -E2BIG, "nested deeper than %u", p->lim.max_depth);
		v->type = c == '{' ? JSON_OBJECT : JSON_ARRAY;
		p->pos++;
		attach(p, v);
		p->stack[p->depth].node = v;
		p->stack[p->depth].last = NULL;
		p->depth++;
		*opened = true;
		return 0;
	case '"':
		v->type = JSON_STRING;
		ret = parse_string(p, &v->str, &v->len);
		break;
	case 't':
		v->type = JSON_TRUE;
		if (!word(p, "true"))
			ret = fail(p, -EINVAL, "unexpected character");
		break;
	case 'f':
		v->type = JSON_FALSE;
		if (!word(p, "false"))
			ret = fail(p, -EINVAL, "unexpected character");
		break;
	case 'n':
		v->type = JSON_NULL;
		if (!word(p, "null"))
			ret = fail(p, -EINVAL, "unexpected character");
		break;
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			ret = parse_number(p, v);
		else
			ret = fail(p, -EINVAL, "unexpected character");
	}
	if (ret == 0)
		attach(p, v);
	return ret;
}

static int parse_key(struct parser *p)
{
	int ret;

	skip_ws(p);
	if (p->pos >= p->len || p->s[p->pos] != '"')
		return fail(p, -EINVAL, p->pos >= p->len ? "unexpected end of input" :
			    "expected a member name");
	ret = parse_string(p, &p->key, &p->key_len);
	if (ret < 0)
		return ret;
	skip_ws(p);
	if (p->pos >= p->len || p->s[p->pos] != ':')
		return fail(p, -EINVAL, "expected ':'");
	p->pos++;
	return 0;
}

static int parse_doc(struct parser *p)
{
	enum { VALUE, KEY, AFTER } state = VALUE;
	bool opened;
	int ret;

	for (;;) {
		struct frame *f;
		char close;

		switch (state) {
		case KEY:
			ret = parse_key(p);
			if (ret < 0)
				return ret;
			/* fallthrough */
		case VALUE:
			ret = parse_value(p, &opened);
			if (ret < 0)
				return ret;
			state = AFTER;
			if (!opened)
				break;
			/* An empty container closes at once. */
			f = &p->stack[p->depth - 1];
			close = f->node->type == JSON_OBJECT ? '}' : ']';
			skip_ws(p);
			if (p->pos < p->len && p->s[p->pos] == close) {
				p->pos++;
				p->depth--;
			} else {
				state = f->node->type == JSON_OBJECT ? KEY : VALUE;
			}
			break;
		case AFTER:
			skip_ws(p);
			if (!p->depth) {
				if (p->pos != p->len)
					return fail(p, -EINVAL, "text after the document");
				return 0;
			}
			f = &p->stack[p->depth - 1];
			close = f->node->type == JSON_OBJECT ? '}' : ']';
			if (p->pos >= p->len)
				return fail(p, -EINVAL, "unexpected end of input");
			if (p->s[p->pos] == ',') {
				p->pos++;
				state = f->node->type == JSON_OBJECT ? KEY : VALUE;
			} else if (p->s[p->pos] == close) {
				p->pos++;
				p->depth--;
			} else {
				return fail(p, -EINVAL, "expected ',' or '%c'", close);
			}
			break;
		}
	}
}

/**
 * json_parse() - parse a JSON document
 * @text: the input (need not be NUL-terminated; a NUL byte in it is an error)
 * @len: bytes in @text
 * @lim: bounds, NULL or zero fields for the defaults
 * @err: where parsing stopped and why, on failure (may be NULL)
 *
 * Return: the document, to be released with json_free(); NULL with errno set
 * (EINVAL malformed, E2BIG beyond a limit, ENOMEM) on failure.
 */
struct json_doc *json_parse(const char *text, size_t len, const struct json_limits *lim,
			    struct json_error *err)
{
	struct parser p = { .s = text, .len = len, .err = err };
	int ret;

	if (err)
		memset(err, 0, sizeof(*err));
	if (lim)
		p.lim = *lim;
	if (!p.lim.max_depth)
		p.lim.max_depth = JSON_DEFAULT_DEPTH;
	if (!p.lim.max_nodes)
		p.lim.max_nodes = JSON_DEFAULT_NODES;
	if (!p.lim.max_string)
		p.lim.max_string = JSON_DEFAULT_STRING;
	if (!text && len) {
		errno = EINVAL;
		return NULL;
	}
	p.doc = calloc(1, sizeof(*p.doc));
	p.stack = calloc(p.lim.max_depth, sizeof(*p.stack));
	if (!p.doc || !p.stack) {
		ret = -ENOMEM;
		goto err_free;
	}
	ret = parse_doc(&p);
	if (ret < 0)
		goto err_free;
	free(p.stack);
	return p.doc;

err_free:
	free(p.stack);
	json_free(p.doc);
	errno = -ret;
	return NULL;
}

/**
 * json_free() - release a document and every value in it
 * @doc: from json_parse(), or NULL
 */
void json_free(struct json_doc *doc)
{
	struct arena_block *b, *next;

	if (!doc)
		return;
	for (b = doc->blocks; b; b = next) {
		next = b->next;
		free(b);
	}
	free(doc);
}

/**
 * json_root() - the top-level value of a document
 * @doc: a parsed document
 *
 * Return: the root value, never NULL for a parsed document.
 */
const struct json_value *json_root(const struct json_doc *doc)
{
	return doc ? doc->root : NULL;
}

/**
 * json_get() - a member of an object by name
 * @obj: an object (anything else, or NULL, finds nothing)
 * @key: the member name
 *
 * Return: the first member named @key, or NULL.
 */
const struct json_value *json_get(const struct json_value *obj, const char *key)
{
	const struct json_value *v;
	size_t n = strlen(key);

	if (!obj || obj->type != JSON_OBJECT)
		return NULL;
	for (v = obj->child; v; v = v->next)
		if (v->key_len == n && !memcmp(v->key, key, n))
			return v;
	return NULL;
}

/**
 * json_at() - an element of an array
 * @arr: an array (anything else, or NULL, finds nothing)
 * @index: 0-based
 *
 * Return: the element, or NULL.
 */
const struct json_value *json_at(const struct json_value *arr, size_t index)
{
	const struct json_value *v;

	if (!arr || arr->type != JSON_ARRAY)
		return NULL;
	for (v = arr->child; v && index; v = v->next)
		index--;
	return v;
}

/**
 * json_is() - whether a value exists and has a type
 * @v: a value or NULL
 * @type: the type
 *
 * Return: true if @v is of @type.
 */
bool json_is(const struct json_value *v, enum json_type type)
{
	return v && v->type == type;
}

/**
 * json_string() - a string value's text
 * @v: a value or NULL
 *
 * Return: the NUL-terminated UTF-8 text, or NULL if @v is not a string.
 */
const char *json_string(const struct json_value *v)
{
	return json_is(v, JSON_STRING) ? v->str : NULL;
}

/**
 * json_u64() - a non-negative integer value, exactly
 * @v: a value or NULL
 * @out: the integer
 *
 * Return: 0, -EINVAL if @v is not a number without sign, fraction or
 * exponent, -ERANGE if it does not fit 64 bits.
 */
int json_u64(const struct json_value *v, uint64_t *out)
{
	uint64_t x = 0;
	size_t i;

	if (!json_is(v, JSON_NUMBER) || v->str[0] == '-')
		return -EINVAL;
	for (i = 0; i < v->len; i++) {
		unsigned int d = v->str[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (x > (UINT64_MAX - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

/**
 * json_i64() - an integer value, exactly
 * @v: a value or NULL
 * @out: the integer
 *
 * Return: 0, -EINVAL if @v is not an integer, -ERANGE if it does not fit.
 */
int json_i64(const struct json_value *v, int64_t *out)
{
	struct json_value abs;
	uint64_t x;
	bool neg;
	int ret;

	if (!json_is(v, JSON_NUMBER))
		return -EINVAL;
	neg = v->str[0] == '-';
	abs = *v;
	abs.str += neg;
	abs.len -= neg;
	ret = json_u64(&abs, &x);
	if (ret < 0)
		return ret;
	if (x > (uint64_t)INT64_MAX + neg)
		return -ERANGE;
	*out = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 0;
}

/**
 * json_double() - a number value as a double
 * @v: a value or NULL
 * @out: the number (rounded to the nearest double)
 *
 * Return: 0, -EINVAL if @v is not a number, -ERANGE if it overflows a double.
 */
int json_double(const struct json_value *v, double *out)
{
	double d;

	if (!json_is(v, JSON_NUMBER))
		return -EINVAL;
	d = strtod(v->str, NULL);
	if (!isfinite(d))
		return -ERANGE;
	*out = d;
	return 0;
}

/**
 * json_bool() - a true or false value
 * @v: a value or NULL
 * @out: the truth value
 *
 * Return: 0, or -EINVAL if @v is neither true nor false.
 */
int json_bool(const struct json_value *v, bool *out)
{
	if (!v || (v->type != JSON_TRUE && v->type != JSON_FALSE))
		return -EINVAL;
	*out = v->type == JSON_TRUE;
	return 0;
}

/* --- the writer --- */

/* One character of @p (@n bytes, valid UTF-8) that HTML mode escapes: '<', '>', '&', U+2028, U+2029. */
static bool html_unsafe(const unsigned char *p, size_t n)
{
	if (n == 1)
		return *p == '<' || *p == '>' || *p == '&';
	return n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9);
}

static void write_string(FILE *f, const char *s, bool html)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), n;

	fputc('"', f);
	while (left) {
		n = collect_utf8_len(p, left);
		if (!n) {
			fputs("\\ufffd", f);
			n = 1;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p);
		} else if (p[0] == 0xc2 && p[1] <= 0x9f) {
			fprintf(f, "\\u%04x", p[1]);	/* a C1 control, U+0080..U+009F */
		} else if (html && html_unsafe(p, n)) {
			fprintf(f, "\\u%04x", n == 1 ? *p : 0x2000 + p[2] - 0x80);
		} else {
			fwrite(p, 1, n, f);
		}
		p += n;
		left -= n;
	}
	fputc('"', f);
}

/**
 * json_write_string() - @s as a JSON string, the one escaper of everything we write
 * @f: where it goes
 * @s: the text, NUL-terminated
 *
 * Valid UTF-8 is kept as it is; '"' and '\\' are escaped, control characters
 * (below 0x20, DEL, and the C1 controls U+0080..U+009F that some terminals
 * act on) become \\u00XX, and a byte that starts no valid UTF-8
 * sequence becomes U+FFFD. What this writes, json_parse() reads back as the
 * same text with only the invalid bytes replaced (fuzz-json checks it).
 */
void json_write_string(FILE *f, const char *s)
{
	write_string(f, s, false);
}

/**
 * json_write_string_html() - @s as a JSON string that is safe inside an HTML <script>
 * @f: where it goes
 * @s: the text, NUL-terminated
 *
 * As json_write_string(), and '<', '>' and '&' become \\u003c, \\u003e and
 * \\u0026 (so no "</script" or "<!--" ends or changes the element, whatever a
 * guest named its tasks or wrote in a marker), U+2028 and U+2029 \\u2028 and
 * \\u2029 (line terminators to older JavaScript). The same JSON value as
 * json_write_string() gives: report --html's data block is written with it.
 */
void json_write_string_html(FILE *f, const char *s)
{
	write_string(f, s, true);
}

/* Pretty: a new line at the depth's indent (two spaces a level). */
static void jw_newline(struct jw *w, unsigned int depth)
{
	fputc('\n', w->f);
	fprintf(w->f, "%*s", (int)(2 * depth), "");
}

static bool jw_in_line(const struct jw *w)
{
	return w->inline_at && w->depth >= w->inline_at;
}

static void jw_sep(struct jw *w, const char *key)
{
	bool more = w->need_comma[w->depth];

	if (more)
		fputc(',', w->f);
	w->need_comma[w->depth] = true;
	if (w->pretty && w->depth && jw_in_line(w))
		fputc(' ', w->f);
	else if (w->pretty && w->depth)
		jw_newline(w, w->depth);
	if (key) {
		json_write_string(w->f, key);
		fputs(w->pretty ? ": " : ":", w->f);
	}
}

/**
 * jw_begin() - start a compact JSON document (the caller opens the
 * top-level value)
 * @w: the writer
 * @f: where it goes
 */
void jw_begin(struct jw *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

/**
 * jw_begin_pretty() - start an indented JSON document: each member and
 * element on a line of its own, but inside jw_inline()'s values
 * @w: the writer
 * @f: where it goes
 */
void jw_begin_pretty(struct jw *w, FILE *f)
{
	jw_begin(w, f);
	w->pretty = true;
}

static void jw_open(struct jw *w, const char *key, char c)
{
	jw_sep(w, key);
	fputc(c, w->f);
	if (w->depth + 1 < sizeof(w->need_comma) / sizeof(w->need_comma[0]))
		w->depth++;
	w->need_comma[w->depth] = false;
}

/**
 * jw_inline() - open an object or array that a pretty document keeps on
 * one line, with what it holds (a compact one: as jw_obj()/jw_arr())
 * @w: the writer
 * @key: its member name, or NULL
 * @open: '{' or '['
 */
void jw_inline(struct jw *w, const char *key, char open)
{
	jw_open(w, key, open);
	if (w->pretty && !w->inline_at)
		w->inline_at = w->depth;
}

/**
 * jw_obj() - open an object
 * @w: the writer
 * @key: its member name, or NULL inside an array or at the top
 */
void jw_obj(struct jw *w, const char *key)
{
	jw_open(w, key, '{');
}

/**
 * jw_arr() - open an array
 * @w: the writer
 * @key: its member name, or NULL
 */
void jw_arr(struct jw *w, const char *key)
{
	jw_open(w, key, '[');
}

/**
 * jw_end() - close the innermost object or array
 * @w: the writer
 * @close: '}' or ']'
 */
void jw_end(struct jw *w, char close)
{
	if (w->pretty && jw_in_line(w)) {
		if (w->need_comma[w->depth])
			fputc(' ', w->f);
	} else if (w->pretty && w->need_comma[w->depth] && w->depth) {
		jw_newline(w, w->depth - 1);
	}
	fputc(close, w->f);
	if (w->inline_at && w->depth == w->inline_at)
		w->inline_at = 0;
	if (w->depth)
		w->depth--;
	if (!w->depth)
		fputc('\n', w->f);
}

/**
 * jw_str() - a string member or element; bytes that are not printable ASCII are escaped
 * @w: the writer
 * @key: member name or NULL
 * @s: the string (NULL writes null)
 */
void jw_str(struct jw *w, const char *key, const char *s)
{
	jw_sep(w, key);
	if (s)
		json_write_string(w->f, s);
	else
		fputs("null", w->f);
}

/** jw_u64() - an unsigned member or element. @w: writer @key: name or NULL @v: value */
void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	jw_sep(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

/** jw_i64() - a signed member or element. @w: writer @key: name or NULL @v: value */
void jw_i64(struct jw *w, const char *key, int64_t v)
{
	jw_sep(w, key);
	fprintf(w->f, "%" PRId64, v);
}

/** jw_dbl() - a number; NaN and infinities become null. @w: writer @key: name @v: value */
void jw_dbl(struct jw *w, const char *key, double v)
{
	jw_sep(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.6g", v);
	else
		fputs("null", w->f);
}

/**
 * jw_fixed() - a number with @decimals digits after the point; NaN and
 * infinities become null
 * @w: the writer
 * @key: name or NULL
 * @v: the value
 * @decimals: 0 to 9
 */
void jw_fixed(struct jw *w, const char *key, double v, int decimals)
{
	jw_sep(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.*f", decimals, v);
	else
		fputs("null", w->f);
}

/** jw_bool() - a boolean. @w: writer @key: name or NULL @v: value */
void jw_bool(struct jw *w, const char *key, bool v)
{
	jw_sep(w, key);
	fputs(v ? "true" : "false", w->f);
}

/** jw_null() - null. @w: writer @key: name or NULL */
void jw_null(struct jw *w, const char *key)
{
	jw_sep(w, key);
	fputs("null", w->f);
}
