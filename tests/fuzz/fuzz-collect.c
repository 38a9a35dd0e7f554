// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness for what the collector takes from a guest: control-port
 * bytes through the session's parser and message handlers (HELLO_REPLY,
 * STATS, META chunks, errors...), and data-port bytes through page ingest.
 * vt-fuzz-sources: host-collector/session.c host-collector/stream.c host-collector/spool.c host-collector/attach.c lib/proto.c lib/pages.c lib/meta.c lib/meta_codec.c lib/tsync-map.c lib/tsync-est.c lib/tsync-timeshift.c lib/tsync-tsc.c lib/tracedat.c
 * vt-fuzz-libs: -luring -lzstd -lm -I host-collector
 *
 * Input: u16 length of the control part, the control bytes, then the data
 * bytes. Nothing may crash, leak or read out of bounds; the guest may be
 * failed, which is the expected answer to garbage.
 * vt-fuzz-args: -max_len=140000
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect.h"

int collect_quiet = 1;
int collect_verbose;
volatile int collect_signals;
struct hostrec *collect_hostrec;

void collect_log(int level, const char *fmt, ...)
{
}

int hostrec_marker(struct hostrec *h, const char *text)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct guest g;
	static int devnull = -1;
	struct stream s;
	size_t clen;

	if (size < 2)
		return 0;
	if (devnull < 0)
		devnull = open("/dev/null", O_WRONLY);
	clen = data[0] | data[1] << 8;
	data += 2;
	size -= 2;
	if (clen > size)
		clen = size;

	memset(&g, 0, sizeof(g));
	snprintf(g.name, sizeof(g.name), "fuzz");
	g.nr_cpus = 2;
	g.subbuf = 4096;
	g.state = G_RUNNING;
	g.want_type = VT_PROTO_HELLO_REPLY;
	g.parser = vt_proto_parser_new();
	vt_proto_meta_rx_init(&g.meta_rx, 1 << 20);
	session_feed(&g, data, clen, NULL, NULL);

	memset(&s, 0, sizeof(s));
	s.subbuf = 4096;
	vt_page_fmt_default(&s.fmt);
	s.page = malloc(4096);
	s.spool_fd = devnull;
	s.bad_fd = devnull;
	s.g = &g;
	g.streams = &s;
	g.nr_streams = 1;
	g.max_bytes = 64 * 4096;
	g.state = G_RUNNING;
	stream_ingest(&s, data + clen, size - clen);
	free(s.page);
	vt_proto_parser_free(g.parser);
	vt_proto_meta_rx_release(&g.meta_rx);
	return 0;
}
