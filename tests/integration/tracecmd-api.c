// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Reads files our writer made through the public libtracecmd API (the
 * library trace-cmd itself uses): trace ids, the guest vCPU map of the host's
 * GUEST option, and a merged iteration over host and guest whose record
 * counts equal the writer's and whose timestamps never go backwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <trace-cmd/trace-cmd.h>

#include "vt_meta.h"
#include "vt_tracedat.h"

#define HOST_ID		0x1111ull
#define GUEST_ID	0x2222ull
#define SHIFT		2500000ll

static char workdir[] = "/tmp/vt-tcapi.XXXXXX";

struct iter_ctx {
	struct tracecmd_input *handles[2];
	uint64_t count[2];
	unsigned long long last_ts;
	uint64_t backwards;
};

static int fail(const char *what)
{
	printf("FAIL: %s\n", what);
	return 1;
}

/* Build @out from the fixture @fixture; returns the events written or -errno. */
static long long build(const char *fixture, const char *out, unsigned int version,
		       uint64_t trace_id, bool host)
{
	struct vt_tracedat_opts o = { .version = version, .trace_id = trace_id,
				      .flags = VT_TD_VALIDATE | VT_TD_STRICT };
	const int64_t t0 = 0, off = SHIFT;
	struct vt_tracedat_tshift_cpu ts[2] = {
		{ .nr = 1, .times = &t0, .offsets = &off },
		{ .nr = 1, .times = &t0, .offsets = &off },
	};
	const uint32_t tids[2] = { 4001, 4002 };
	struct vt_tracedat_stats st;
	struct vt_tracedat *w;
	char path[4096];
	struct vt_meta m;
	uint32_t c;
	int fd, ret;

	ret = vt_meta_load_dir(&m, fixture);
	if (ret < 0)
		return ret;
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		vt_meta_free(&m);
		return -errno;
	}
	w = vt_tracedat_create(fd, &m, &o);
	ret = w ? 0 : -errno;
	if (!ret)
		ret = host ? vt_tracedat_add_guest(w, "vm1", GUEST_ID, 2, tids) :
			     vt_tracedat_add_time_shift(w, HOST_ID, 0, 2, ts);
	for (c = 0; c < m.nr_cpus && !ret; c++) {
		snprintf(path, sizeof(path), "%s/cpu%u.raw", fixture, c);
		ret = vt_tracedat_cpu_path(w, c, path);
	}
	if (!ret)
		ret = vt_tracedat_finish(w);
	if (!ret) {
		vt_tracedat_stats(w, -1, &st);
		ret = st.events;
	}
	vt_tracedat_free(w);
	close(fd);
	vt_meta_free(&m);
	return ret;
}

static int on_record(struct tracecmd_input *handle, struct tep_record *rec, int cpu,
		     void *data)
{
	struct iter_ctx *ctx = data;

	ctx->count[handle == ctx->handles[0] ? 0 : 1]++;
	if (rec->ts < ctx->last_ts)
		ctx->backwards++;
	ctx->last_ts = rec->ts;
	return 0;
}

static int check(const char *host_dat, const char *guest_dat, long long nh, long long ng)
{
	struct iter_ctx ctx = { 0 };
	const int *pids = NULL;
	const char *name = NULL;
	int n = 0, ret = 1;

	ctx.handles[0] = tracecmd_open(host_dat, TRACECMD_FL_LOAD_NO_PLUGINS);
	ctx.handles[1] = tracecmd_open(guest_dat, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!ctx.handles[0] || !ctx.handles[1]) {
		fail("tracecmd_open");
		goto out;
	}
	if (tracecmd_get_traceid(ctx.handles[0]) != HOST_ID ||
	    tracecmd_get_traceid(ctx.handles[1]) != GUEST_ID) {
		fail("trace ids");
		goto out;
	}
	if (tracecmd_get_guest_cpumap(ctx.handles[0], GUEST_ID, &name, &n, &pids) < 0 ||
	    !name || strcmp(name, "vm1") || n != 2 || pids[0] != 4001 || pids[1] != 4002) {
		fail("guest cpumap of the host file");
		goto out;
	}
	if (tracecmd_get_guest_cpumap(ctx.handles[0], 0x9999, NULL, NULL, NULL) == 0) {
		fail("a cpumap for an unknown guest");
		goto out;
	}
	if (tracecmd_iterate_events_multi(ctx.handles, 2, on_record, &ctx) < 0) {
		fail("tracecmd_iterate_events_multi");
		goto out;
	}
	if ((long long)ctx.count[0] != nh || (long long)ctx.count[1] != ng) {
		printf("FAIL: iterated %" PRIu64 "+%" PRIu64 " records, wrote %lld+%lld\n",
		       ctx.count[0], ctx.count[1], nh, ng);
		goto out;
	}
	if (ctx.backwards) {
		printf("FAIL: %" PRIu64 " records went back in time\n", ctx.backwards);
		goto out;
	}
	ret = 0;
out:
	if (ctx.handles[0])
		tracecmd_close(ctx.handles[0]);
	if (ctx.handles[1])
		tracecmd_close(ctx.handles[1]);
	return ret;
}

int main(void)
{
	const char *src = getenv("VT_SRCDIR");
	char hfix[4096], gfix[4096], hdat[64], gdat[64], gdat7[64];
	long long nh, ng, ng7;
	int ret;

	printf("libtracecmd reads our files: trace ids, guest cpumap, merged iteration counts and order\n");
	if (!src)
		return fail("VT_SRCDIR is not set");
	if (!mkdtemp(workdir))
		return fail("mkdtemp");
	snprintf(hfix, sizeof(hfix), "%s/tests/data/cap-host", src);
	snprintf(gfix, sizeof(gfix), "%s/tests/data/cap-guest", src);
	snprintf(hdat, sizeof(hdat), "%s/host.dat", workdir);
	snprintf(gdat, sizeof(gdat), "%s/guest6.dat", workdir);
	snprintf(gdat7, sizeof(gdat7), "%s/guest7.dat", workdir);

	tracecmd_set_loglevel(TEP_LOG_NONE);
	nh = build(hfix, hdat, 7, HOST_ID, true);
	ng = build(gfix, gdat, 6, GUEST_ID, false);
	ng7 = build(gfix, gdat7, 7, GUEST_ID, false);
	if (nh <= 0 || ng <= 0 || ng7 != ng)
		ret = fail("building the files");
	else
		ret = check(hdat, gdat, nh, ng) || check(hdat, gdat7, nh, ng);
	unlink(hdat);
	unlink(gdat);
	unlink(gdat7);
	rmdir(workdir);
	if (!ret)
		printf("PASS\n");
	return ret;
}
