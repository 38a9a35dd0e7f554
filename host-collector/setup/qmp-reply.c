// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Replies of QEMU's QMP that the collector reads, parsed with the bounded
 * JSON reader: used by qmp.c (--qmp) and by the libvirt module (through
 * virDomainQemuMonitorCommand).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "collect.h"
#include "json.h"
#include "qmp-reply.h"

#define QMP_REPLY_MAX	(1u << 20)

/**
 * qmp_parse_cpus_fast() - vCPU thread ids from a QMP query-cpus-fast reply
 * @json: the reply, {"return": [{"cpu-index": N, "thread-id": TID, ...}, ...]}
 * @len: its length
 * @tids: filled, indexed by cpu-index
 * @max: entries in @tids
 * @nr: set to the highest cpu-index + 1
 *
 * Only each element's own "thread-id" counts, never the one in "props" (the
 * CPU topology's thread number).
 *
 * Return: 0, or -EBADMSG for a reply without a usable array.
 */
int qmp_parse_cpus_fast(const char *json, size_t len, uint32_t *tids, unsigned int max,
			    unsigned int *nr)
{
	const struct json_value *ret, *e;
	struct json_doc *doc;
	uint64_t cpu, tid;
	int err = 0;

	*nr = 0;
	if (len > QMP_REPLY_MAX)
		return -EBADMSG;
	doc = json_parse(json, len, NULL, NULL);
	if (!doc)
		return -EBADMSG;
	ret = json_get(json_root(doc), "return");
	if (!json_is(ret, JSON_ARRAY) || !ret->count) {
		err = -EBADMSG;
		goto out;
	}
	for (e = ret->child; e; e = e->next) {
		if (json_u64(json_get(e, "cpu-index"), &cpu) < 0 ||
		    json_u64(json_get(e, "thread-id"), &tid) < 0 || !tid || tid > INT_MAX) {
			err = -EBADMSG;
			goto out;
		}
		if (cpu >= max)
			continue;
		tids[cpu] = tid;
		if (cpu + 1 > *nr)
			*nr = cpu + 1;
	}
out:
	json_free(doc);
	return err;
}

/**
 * qmp_parse_uuid() - the VM's UUID from a QMP query-uuid reply
 * @json: the reply, {"return": {"UUID": "8-4-4-4-12 hex digits"}}
 * @len: its length
 * @uuid: filled, lower case, NUL-terminated
 * @size: its size (37 or more)
 *
 * Return: 0; -ENOENT for QEMU's default, all zeros (no -uuid given: it tells
 * no VM apart); -EBADMSG for anything else.
 */
int qmp_parse_uuid(const char *json, size_t len, char *uuid, size_t size)
{
	const char *s;
	struct json_doc *doc;
	size_t i;
	int err = 0;

	if (len > QMP_REPLY_MAX || size < 37)
		return -EBADMSG;
	doc = json_parse(json, len, NULL, NULL);
	if (!doc)
		return -EBADMSG;
	s = json_string(json_get(json_get(json_root(doc), "return"), "UUID"));
	if (!s || strlen(s) != 36) {
		err = -EBADMSG;
		goto out;
	}
	for (i = 0; i < 36; i++) {
		char c = s[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
					(c >= 'A' && c <= 'F'))) {
			err = -EBADMSG;
			goto out;
		}
		uuid[i] = c >= 'A' && c <= 'F' ? c - 'A' + 'a' : c;
	}
	uuid[36] = '\0';
	if (!strcmp(uuid, "00000000-0000-0000-0000-000000000000"))
		err = -ENOENT;
out:
	json_free(doc);
	return err;
}
