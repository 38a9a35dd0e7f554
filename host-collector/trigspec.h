/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A trigger's event, as record --trigger-guest-filter and the daemon's
 * trigger-guest-filter and trigger-host-filter keys write it: SYSTEM:EVENT, or
 * SYSTEM:EVENT if FILTER.
 */
#ifndef COLLECT_TRIGSPEC_H
#define COLLECT_TRIGSPEC_H

/**
 * struct trigspec - a parsed trigger-guest-filter
 * @system: the event's system, one name
 * @event: the event, one name
 * @filter: the kernel filter expression, "" for none (points into the spec)
 */
struct trigspec {
	char system[256];
	char event[256];
	const char *filter;
};

int trigspec_split(const char *spec, struct trigspec *t);
int trigspec_parse(const char *spec, struct trigspec *t, const char *what);

#endif
