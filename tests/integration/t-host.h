/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A test host: plays virtio-trace-collect's side of the control protocol
 * against a real trace-agent that uses stand-in unix-socket ports.
 */
#ifndef T_HOST_H
#define T_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vt_proto.h"

#define T_MAX_CPUS 64

struct t_buf {
	uint8_t *data;
	size_t len, cap;
};

struct t_host {
	char dir[256];		/* the stand-in port directory */
	char instance[64];	/* the private instance the agent is told to use */
	char tracefs[256];
	pid_t agent;
	int ctl_listen, ctl;
	int data_listen[T_MAX_CPUS], data[T_MAX_CPUS];
	unsigned int nr_cpus;
	struct t_buf cpu[T_MAX_CPUS];
	bool paused;		/* stop reading the data ports */
	bool attached;		/* t_host_attach(): the ports belong to QEMU */
	int print_id;		/* ftrace print event id, when not this machine's */
	uint32_t subbuf;	/* page size of the streams, 0 for 4096 (t_count_markers) */
	struct vt_proto_parser *parser;
	struct t_buf ctl_in;	/* control bytes read, not yet taken by the parser */
	size_t ctl_off;
	uint32_t seq;
	uint8_t frame[VT_PROTO_FRAME_MAX];
	/* the last STATS per CPU and the agent totals */
	char stats_text[T_MAX_CPUS][4096];
	size_t base[T_MAX_CPUS];	/* stream length at the last start */
	uint64_t bytes[T_MAX_CPUS];	/* STATS: bytes sent since the last start */
	uint64_t pages[T_MAX_CPUS], partial_reads[T_MAX_CPUS], fallbacks_total;
	int errors;		/* ERROR messages seen */
	int last_err;
	char last_err_text[512];
	uint64_t hello_caps;	/* what t_hello() offers (VT_PROTO_CAP_NOTICE) */
	int notices;		/* NOTICE messages seen */
	char last_notice[512];
};

/* In t_host_start()'s extra arguments: keep /proc/kallsyms (not passed on). */
#define T_WITH_KALLSYMS "(with kallsyms)"
/* In t_host_start()'s extra arguments: no --once, the agent serves on after bye. */
#define T_SERVE "(serve on)"

long long t_now_ms(void);
int t_host_start(struct t_host *h, const char *agent, const char *const *extra_args);
int t_host_attach(struct t_host *h, const char *dir, const char *suffix, unsigned int nr_cpus,
		  int timeout_ms);
int t_connect(const char *path, int timeout_ms);
int t_host_stop_agent(struct t_host *h, int sig);
void t_host_free(struct t_host *h);
uint32_t t_send(struct t_host *h, int len);
int t_send_raw(struct t_host *h, const void *buf, size_t len);
int t_wait(struct t_host *h, uint16_t type, uint32_t ref_seq, int timeout_ms,
	   struct vt_proto_msg *out);
int t_pump(struct t_host *h, int timeout_ms);
int t_hello(struct t_host *h);
int t_cmd_ok(struct t_host *h, int len);
int t_events(struct t_host *h, const char *system, const char *event);
int t_start(struct t_host *h);
int t_start_flags(struct t_host *h, uint32_t flags);
int t_stop(struct t_host *h, int timeout_ms);
int t_drain(struct t_host *h, int timeout_ms);
int t_count_markers(const struct t_host *h, unsigned int cpu, const char *prefix,
		    uint64_t *lost, uint64_t *pages);
int t_missed_pages(const struct t_host *h, unsigned int cpu);
uint64_t t_stat(const struct t_host *h, unsigned int cpu, const char *key);
int t_print_id(const struct t_host *h);
int t_write_markers(const struct t_host *h, unsigned int cpu, const char *prefix,
		    unsigned int first, unsigned int n);
int t_read_file(const char *path, char *buf, size_t size);

#endif
