// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * TIME_SHIFT end to end, trace-cmd as the oracle: a guest trace.dat built
 * from the cap-guest fixture carries TIME_SHIFT tables that
 * lib/tsync-timeshift.c computed from the intel48 KVM debugfs fixture (48-bit scaling ratio,
 * negative offsets, different per vCPU), with an offset change mid-trace
 * (a copy of the fixture rewritten between two reads: a forward jump on
 * vCPU 0, a backward one on vCPU 1). Every event `trace-cmd report` prints
 * must sit at the host tick vt_tsync_tshift_apply() predicts, and within the
 * table's error bound of the exact 128-bit inverse of KVM's formula; with
 * TSC2NSEC, `report -t` must print that tick converted to nanoseconds.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

#include "vt_meta.h"
#include "vt_tracedat.h"
#include "hostclock.h"
#include "vt_tsync.h"

#define NCPU		2
#define MAX_EV		100000
#define HOST_ID		0x1111ull
#define GUEST_ID	0x2222ull

struct t_evlist {
	uint64_t ts[MAX_EV];
	uint32_t nr;
};

static char t_tmp[] = "/tmp/vt-tsync-ts-XXXXXX";

static int t_fail(const char *what)
{
	char cmd[PATH_MAX];

	printf("FAIL: %s\n", what);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t_tmp);
	if (system(cmd))
		return 1;
	return 1;
}

static int t_write_dat(const char *path, const struct vt_meta *m, const char *capdir,
		       const struct vt_tsync_tshift *ts, const struct vt_tsc2nsec *tsc)
{
	struct vt_tracedat_opts o = { .version = 7, .trace_id = GUEST_ID };
	struct vt_tracedat_tshift_cpu v[NCPU];
	struct vt_tracedat *w;
	char raw[PATH_MAX];
	uint32_t c;
	int fd, ret = 0;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	w = vt_tracedat_create(fd, m, &o);
	if (!w) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (tsc)
		ret = vt_tracedat_set_tsc2nsec(w, tsc->mult, tsc->shift, tsc->offset);
	if (ts && ret == 0) {
		for (c = 0; c < NCPU; c++)
			vt_tsync_tshift_view(&ts[c], &v[c]);
		ret = vt_tracedat_add_time_shift(w, HOST_ID, 0, NCPU, v);
	}
	for (c = 0; c < m->nr_cpus && ret == 0; c++) {
		snprintf(raw, sizeof(raw), "%s/cpu%u.raw", capdir, c);
		ret = vt_tracedat_cpu_path(w, c, raw);
	}
	if (ret == 0)
		ret = vt_tracedat_finish(w);
	vt_tracedat_free(w);
	close(fd);
	return ret;
}

/*
 * Event lines are "comm-pid [CPU]TS: name: ..." (TS may follow the bracket
 * without a space); TS is ticks, or SEC.NSEC with -t and TSC2NSEC.
 */
static int t_report(const char *args, const char *file, struct t_evlist *ev)
{
	char cmd[PATH_MAX * 2], line[4096], err[PATH_MAX];
	unsigned long long sec, frac;
	unsigned int cpu;
	struct stat st;
	char *p, *end;
	FILE *f;

	snprintf(err, sizeof(err), "%s/report.err", t_tmp);
	snprintf(cmd, sizeof(cmd), "trace-cmd report %s '%s' 2>'%s'", args, file, err);
	memset(ev, 0, sizeof(*ev) * NCPU);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, " [");
		if (!p || sscanf(p + 2, "%3u", &cpu) != 1 || cpu >= NCPU || p[5] != ']')
			continue;
		p += 6;
		sec = strtoull(p, &end, 10);
		frac = 0;
		if (*end == '.') {
			p = end + 1;
			frac = strtoull(p, &end, 10);
			if (end - p != 9)
				return -EPROTO;	/* -t must print nanoseconds */
			sec = sec * 1000000000ull + frac;
		}
		if (*end != ':' || ev[cpu].nr == MAX_EV)
			continue;
		ev[cpu].ts[ev[cpu].nr++] = sec;
	}
	if (pclose(f) != 0)
		return -EIO;
	if (stat(err, &st) < 0 || st.st_size)
		return -EPROTO;	/* a warning is a failure */
	return 0;
}

/* The exact host tick: the epoch that started last (in guest time) by @g. */
static int t_exact(const struct vt_tsync_cpu *c, uint64_t g, uint64_t *h)
{
	uint32_t k, use = 0;
	uint64_t gs;

	for (k = 0; k < c->nr; k++) {
		if (vt_tsc_host_to_guest(&c->epochs[k].map, c->epochs[k].host_from, &gs) < 0)
			return -ERANGE;
		if (gs <= g)
			use = k;
	}
	return vt_tsc_guest_to_host(&c->epochs[use].map, g, h);
}

static int t_set(const char *dir, const char *file, int64_t v)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%" PRId64 "\n", v);
	return fclose(f) ? -errno : 0;
}

int main(void)
{
	static struct t_evlist raw[NCPU], shifted[NCPU], ns[NCPU];
	static const int64_t jump[NCPU] = { 100000000, -50000000 };
	const char *src = getenv("VT_SRCDIR");
	char cap[PATH_MAX], cmd[PATH_MAX * 3], vm[PATH_MAX], f_plain[PATH_MAX],
		f_shift[PATH_MAX], f_ns[PATH_MAX], vdir[PATH_MAX + 16];
	struct vt_tsync_cpu cpus[NCPU] = { 0 };
	struct vt_tsync_tshift ts[NCPU] = { 0 };
	struct vt_kvm_vcpu v[8];
	struct vt_tsc2nsec tsc;
	struct vt_tsync_epoch e;
	struct vt_meta m;
	uint64_t gmin = UINT64_MAX, gmax = 0, h0, h1, hend, want, exact, err, nerr[4] = { 0 };
	uint64_t worst = 0, total = 0, before = 0;
	uint32_t c, i, nr;
	int ret;

	printf("tsync-timeshift: trace-cmd report puts guest events at the host ticks lib/tsync "
	       "predicts from a KVM fixture (48-bit ratio, negative offsets, offset change "
	       "mid-trace), in ticks and as TSC2NSEC nanoseconds\n");
	if (system("command -v trace-cmd >/dev/null 2>&1") != 0) {
		printf("SKIP: trace-cmd is not installed\n");
		return 77;
	}
	if (!src || !mkdtemp(t_tmp))
		return t_fail("VT_SRCDIR unset or no temporary directory");
	snprintf(cap, sizeof(cap), "%s/tests/data/cap-guest", src);
	snprintf(f_plain, sizeof(f_plain), "%s/plain.dat", t_tmp);
	snprintf(f_shift, sizeof(f_shift), "%s/shift.dat", t_tmp);
	snprintf(f_ns, sizeof(f_ns), "%s/ns.dat", t_tmp);
	if (vt_meta_load_dir(&m, cap) < 0 || m.nr_cpus != NCPU)
		return t_fail("cap-guest fixture");

	/* The raw guest timestamps, from trace-cmd itself. */
	if (t_write_dat(f_plain, &m, cap, NULL, NULL) < 0 ||
	    t_report("--raw-ts", f_plain, raw) < 0)
		return t_fail("plain guest file");
	for (c = 0; c < NCPU; c++) {
		if (!raw[c].nr)
			return t_fail("a CPU without events");
		for (i = 0; i < raw[c].nr; i++) {
			gmin = raw[c].ts[i] < gmin ? raw[c].ts[i] : gmin;
			gmax = raw[c].ts[i] > gmax ? raw[c].ts[i] : gmax;
		}
	}

	/* KVM epochs: read at start, rewrite offsets, read again mid-trace. */
	snprintf(cmd, sizeof(cmd), "cp -r '%s/tests/data/kvm-debugfs/intel48/kvm' '%s/'", src,
		 t_tmp);
	if (system(cmd) != 0 || vt_kvm_find_vm(t_tmp, 4242, vm, sizeof(vm)) < 0)
		return t_fail("KVM fixture copy");
	for (ret = 0; ret < 2; ret++) {
		if (vt_kvm_read_vm(vm, v, 8, &nr) < 0 || nr != 3 || v[0].id != 0 || v[1].id != 1)
			return t_fail("reading the KVM fixture");
		if (ret == 0) {
			/* start: well before the first event */
			if (vt_tsc_guest_to_host(&v[0].map, gmin, &h0) < 0)
				return t_fail("guest_to_host");
			h0 -= 1000000;
		} else {
			/* the change: at the guest's middle, seen from vCPU 0's old mapping */
			if (vt_tsc_guest_to_host(&cpus[0].epochs[0].map, gmin + (gmax - gmin) / 2,
						 &h1) < 0)
				return t_fail("guest_to_host");
		}
		for (c = 0; c < NCPU; c++) {
			e = (struct vt_tsync_epoch){ .host_from = ret ? h1 : h0, .map = v[c].map,
						     .source = VT_TSYNC_SRC_KVM };
			if (vt_tsync_cpu_update(&cpus[c], &e) != 1)
				return t_fail("a new epoch was expected");
			if (ret == 0) {
				snprintf(vdir, sizeof(vdir), "%s/vcpu%u", vm, c);
				if (t_set(vdir, "tsc-offset", v[c].map.offset + jump[c]) < 0)
					return t_fail("rewriting tsc-offset");
			}
		}
	}
	if (vt_tsc_guest_to_host(&cpus[0].epochs[0].map, gmax, &hend) < 0)
		return t_fail("guest_to_host");
	hend += 1000000000;
	for (c = 0; c < NCPU; c++) {
		if (vt_tsync_needs_interpolate(cpus, NCPU) ||
		    vt_tsync_tshift_build(cpus[c].epochs, cpus[c].nr, hend, false, &ts[c]) < 0)
			return t_fail("building the TIME_SHIFT table");
		printf("cpu%u: %u epochs, %u samples, max error %" PRIu64 " ticks\n", c,
		       cpus[c].nr, ts[c].nr, ts[c].max_error);
	}
	if (vt_tsc2nsec_from_hz(&tsc, 2100000000ull) < 0)
		return t_fail("tsc2nsec");
	if (t_write_dat(f_shift, &m, cap, ts, NULL) < 0 || t_write_dat(f_ns, &m, cap, ts, &tsc) < 0)
		return t_fail("writing the guest files");
	if (t_report("", f_shift, shifted) < 0 || t_report("-t", f_ns, ns) < 0)
		return t_fail("trace-cmd report of the shifted files");

	for (c = 0; c < NCPU; c++) {
		if (shifted[c].nr != raw[c].nr || ns[c].nr != raw[c].nr)
			return t_fail("event counts differ");
		for (i = 0; i < raw[c].nr; i++) {
			if (vt_tsync_tshift_apply(&ts[c], false, raw[c].ts[i], &want) < 0 ||
			    t_exact(&cpus[c], raw[c].ts[i], &exact) < 0)
				return t_fail("model");
			if (shifted[c].ts[i] != want) {
				printf("cpu%u event %u: guest %" PRIu64 " printed %" PRIu64
				       " predicted %" PRIu64 "\n", c, i, raw[c].ts[i],
				       shifted[c].ts[i], want);
				return t_fail("trace-cmd disagrees with the TIME_SHIFT model");
			}
			if (ns[c].ts[i] != vt_tsc2nsec_apply(&tsc, want))
				return t_fail("TSC2NSEC nanoseconds differ");
			err = want > exact ? want - exact : exact - want;
			if (err > ts[c].max_error)
				return t_fail("error above the table's bound");
			nerr[err < 3 ? err : 3]++;
			worst = err > worst ? err : worst;
			before += raw[c].ts[i] < (uint64_t)ts[c].times[1];
			total++;
		}
		if (cpus[c].nr != 2 || raw[c].ts[0] >= (uint64_t)ts[c].times[1] ||
		    raw[c].ts[raw[c].nr - 1] < (uint64_t)ts[c].times[ts[c].nr - 2])
			return t_fail("the epoch change is not inside the trace");
	}
	if (!before || before == total)
		return t_fail("events on one side of the change only");
	printf("%" PRIu64 " events: %" PRIu64 " exact, %" PRIu64 " off by 1, %" PRIu64
	       " by 2, %" PRIu64 " by 3+ (worst %" PRIu64 " ticks) against the exact inverse\n",
	       total, nerr[0], nerr[1], nerr[2], nerr[3], worst);

	/* --raw-ts must undo it all */
	if (t_report("--raw-ts", f_shift, shifted) < 0)
		return t_fail("report --raw-ts");
	for (c = 0; c < NCPU; c++)
		if (shifted[c].nr != raw[c].nr ||
		    memcmp(shifted[c].ts, raw[c].ts, raw[c].nr * sizeof(uint64_t)))
			return t_fail("--raw-ts timestamps are not the raw ones");

	for (c = 0; c < NCPU; c++) {
		vt_tsync_tshift_free(&ts[c]);
		vt_tsync_cpu_free(&cpus[c]);
	}
	vt_meta_free(&m);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t_tmp);
	if (system(cmd))
		return 1;
	printf("PASS\n");
	return 0;
}
