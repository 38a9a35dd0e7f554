// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for what the collector takes from a guest: control-port
 * bytes through the session's parser and message handlers (HELLO_REPLY,
 * STATS, META chunks, errors...), and data-port bytes through page ingest.
 * vt-fuzz-sources: host-collector/record/session.c host-collector/record/session-life.c host-collector/record/session-streams.c host-collector/record/session-meta.c host-collector/record/session-probe.c host-collector/record/session-migrate.c host-collector/record/session-alive.c host-collector/record/session-setup.c host-collector/record/session-stop.c host-collector/record/hold.c host-collector/record/trigger-guest.c host-collector/record/session-save.c host-collector/text.c host-collector/trigspec.c host-collector/record/stream.c host-collector/record/stream-compress.c host-collector/store/spool.c host-collector/store/spool-file.c host-collector/record/kcache.c host-collector/record/attach.c host-collector/setup/qemuproc.c host-collector/dirperm.c lib/conn.c lib/proto.c lib/pages.c lib/meta.c lib/meta_codec.c lib/tsync-map.c lib/tsync-est.c lib/tsync-timeshift.c lib/tsync-tsc.c lib/tracedat.c lib/grow.c lib/stats-text.c
 * vt-fuzz-libs: -luring -lzstd -lm -I host-collector -I host-collector/record -DVT_RECORD_INTERNAL
 *
 * Input: u16 length of the control part, the control bytes, then the data
 * bytes. Nothing may crash, leak or read out of bounds; the guest may be
 * failed, which is the expected answer to garbage.
 * vt-fuzz-args: -max_len=140000
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"
#include "engine.h"
#include "live.h"
#include "qmp.h"
#include "record.h"
#include "session.h"
#include "stream.h"
#include "vt_conn.h"

int collect_quiet = 1;
int collect_verbose;
const char *collect_cmd;

void collect_log(int level, const char *fmt, ...)
{
}

void collect_usage(const char *fmt, ...)
{
}

const char *collect_msg_name(enum guest_msg kind)
{
	return "?";
}

int hostrec_marker(struct hostrec *h, const char *text)
{
	return 0;
}

/* What the engine-bound parts of session.c need, with nothing armed: no engine at all. */
void engine_timer_arm(struct engine *e, struct engine_timer *t, uint64_t delay_ns, uint64_t period_ns)
{
	t->armed = false;
}

void engine_timer_cancel(struct engine *e, struct engine_timer *t)
{
	t->armed = false;
}

void engine_timer_init(struct engine_timer *t, void (*cb)(void *arg), void *arg)
{
}

void engine_fd_enable(struct engine_fd *x, bool on)
{
}

void engine_fd_remove(struct engine_fd *x)
{
}

struct engine_fd *engine_add_fd(struct engine *e, int fd, short events,
				bool (*cb)(void *arg, int revents), void *arg)
{
	return NULL;
}

struct engine_fd *engine_add_reader(struct engine *e, int fd, bool (*cb)(void *arg, int revents),
				    uint64_t (*gate)(void *arg), void *arg)
{
	return NULL;
}

uint8_t *engine_read_buffer(struct engine *e, size_t *size)
{
	static uint8_t buf[4096];

	*size = sizeof(buf);
	return buf;
}

uint64_t engine_now_ns(void)
{
	return 0;
}

void engine_writeback(struct engine *e, int fd, uint64_t off, uint64_t len)
{
}

int sync_prepare(struct guest *g, const struct record_opts *o, const char *when)
{
	return 0;
}

int sync_probe_result(struct guest *g, unsigned int cpu, const struct vt_tsync_sample *smp,
		      unsigned int n)
{
	return 0;
}

void sync_burst_done(struct guest *g, const char *when)
{
}

uint64_t sync_host_tsc(void)
{
	return 0;
}

/* No KVM here: the offsets are never followed. */
int sync_kvm_begin(struct guest *g, const struct record_opts *o)
{
	return 0;
}

uint64_t sync_kvm_period_ns(const struct guest *g)
{
	return 0;
}

void sync_kvm_tick(struct guest *g)
{
}

void sync_kvm_end(struct guest *g)
{
}

void sync_reset(struct guest *g, uint64_t at)
{
}

void sync_reset_settled(struct guest *g)
{
}

void sync_release(struct guest *g)
{
}

int qmp_attach(const struct qmp_guest *v, struct engine *e, uint64_t tsc_khz)
{
	return 0;
}

/* No QEMU here: nobody to ask about a migration. */
int qmp_query_migrate(struct qmp *q)
{
	return 0;
}

int lastboot_save(const char *guest, int out_fd, struct vt_proto_meta_rx *rx,
		  const struct record_opts *o, char *why, size_t size)
{
	return 0;
}

/* One guest, and no limit to share: it always fits. */
int record_fds_claim(struct guest *g, struct record_fds *b)
{
	return 0;
}

/* No --live here: the view is never made. */
int hostrec_vcpus(struct hostrec *h, const uint32_t *tids, unsigned int nr)
{
	return 0;
}

int live_set_vcpus(struct live *l, unsigned int trace, const uint32_t *tids, unsigned int nr)
{
	return 0;
}

unsigned int live_flush_ms(unsigned int window_ms)
{
	return window_ms;
}

void live_page(struct live *l, unsigned int trace, unsigned int cpu, const uint8_t *page,
	       uint32_t size, uint32_t events)
{
}

void live_meta(struct live *l, unsigned int trace)
{
}

void live_clock(struct live *l, unsigned int trace, const struct vt_tsync_cpu *cpus,
		unsigned int nr_cpus, uint64_t host_end)
{
}

static void hello_answered(struct guest *g, int err)
{
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct record_opts opts = { .sync_probes = 4, .stop_timeout = 1 };
	static struct recording run = { .o = &opts, .kcache_fd = -1 };
	static struct guest g;
	static int devnull = -1;
	struct stream s;
	size_t clen, off = 0;

	if (size < 2)
		return 0;
	if (devnull < 0)
		devnull = open("/dev/null", O_RDWR);
	clen = data[0] | data[1] << 8;
	data += 2;
	size -= 2;
	if (clen > size)
		clen = size;

	memset(&g, 0, sizeof(g));
	g.spool_fd = -1;
	snprintf(g.name, sizeof(g.name), "fuzz");
	g.rec = &run;
	g.agent.nr_cpus = 2;
	g.agent.subbuf = 4096;
	g.state = G_RUNNING;
	g.req.active = true;
	g.req.want = VT_PROTO_HELLO_REPLY;
	g.req.done = hello_answered;
	g.ctl.conn = vt_conn_new(devnull, devnull);
	if (!g.ctl.conn)
		return 0;
	vt_proto_meta_rx_init(&g.meta.rx, 1 << 20);
	/* In pieces, as the port would deliver them, each piece handled before the next. */
	while (off < clen && g.state != G_FAILED) {
		size_t n = clen - off < 4096 ? clen - off : 4096;

		if (vt_conn_feed(g.ctl.conn, data + off, n) < 0)
			break;
		off += n;
		session_dispatch(&g);
	}

	memset(&s, 0, sizeof(s));
	s.subbuf = 4096;
	vt_page_fmt_default(&s.fmt);
	s.page = malloc(4096);
	s.spool_fd = devnull;
	s.bad_fd = devnull;
	s.budget = &g.figures.budget;
	g.streams = &s;
	g.nr_streams = 1;
	g.figures.budget.max = 64 * 4096;
	g.state = G_RUNNING;
	stream_ingest(&s, data + clen, size - clen);
	free(s.page);
	session_release(&g);
	return 0;
}
