// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Replies of QEMU's QMP that the collector reads, parsed with the bounded
 * JSON reader: used by qmp.c (--qmp) and by the libvirt module (through
 * virDomainQemuMonitorCommand).
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>

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
