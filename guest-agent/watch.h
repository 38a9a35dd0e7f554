/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watch.c: WATCH, a guest event with a kernel filter whose matches the agent
 * sends as TRIGGER (rate-limited).
 */
#ifndef AGENT_WATCH_H
#define AGENT_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_proto.h"

/**
 * struct watch - one watched event
 * @fd: its instance's trace_pipe, -1 when no watch runs
 * @made: the instance at @dir is ours to remove
 * @dir: the instance's directory
 * @name: "system:event", TRIGGER's name
 * @match: " event: ", how the event's trace_pipe lines name it
 * @interval_ns: the least gap between two TRIGGERs
 * @last_ns: when the last TRIGGER went (agent_now_ns()), 0 none yet
 * @held: matches not sent since the last TRIGGER
 * @matches: matches seen in all
 * @sent: TRIGGERs sent
 * @buf: a partial line from the last read
 * @len: its length
 * @skip: the rest of an overlong line is still to come: not a line of its own
 */
struct watch {
	int fd;
	bool made;
	char dir[4200];
	char name[2 * VT_PROTO_MAX_NAME + 2];
	char match[VT_PROTO_MAX_NAME + 4];
	long long interval_ns;
	long long last_ns;
	uint64_t held, matches, sent;
	char buf[4096];
	size_t len;
	bool skip;
};

int watch_start(struct watch *w, const char *root, const char *name,
		const struct vt_proto_watch *req, const char *clock, char *why, size_t size);
void watch_stop(struct watch *w);
int watch_read(struct watch *w, long long now, struct vt_proto_trigger *t);
bool watch_active(const struct watch *w);

#endif
