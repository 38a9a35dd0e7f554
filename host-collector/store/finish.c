// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The finish of a run, and all of `recover`: read every trace the spool
 * holds (spool.c), write its trace.dat in place (inplace.c) or by copying
 * (output.c), then manifest.json (manifest.c), and remove the spool once
 * every trace made it into a file. It calls the others; they do not call it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"
#include "spool.h"
#include "sysinfo.h"
#include "write.h"

/*
 * What trace-cmd, KernelShark and report print from the metadata is made
 * safe for a terminal here, for record and recover alike (lib/meta.c): text
 * cleaned, formats holding control characters refused with one error, and
 * formats whose fields lie past the largest event refused with another (so
 * that trace-cmd report and its plugins, which trust a format's offsets,
 * never read past a record in the file written).
 */
static void clean_meta(struct trace_sum *t, struct vt_meta *m)
{
	struct vt_meta_clean c;
	const char *what = t->rec.host ? "host" : "guest";

	/* The host's formats are its own kernel's: their bounds are trusted. */
	if (t->rec.host)
		vt_meta_sanitize_own(m, &c);
	else
		vt_meta_sanitize(m, &c);
	t->text_replaced = c.replaced;
	t->formats_refused = c.formats_dropped + c.formats_out_of_bounds;
	if (c.replaced)
		log_warn("%s %s: %" PRIu64 " control characters or invalid UTF-8 bytes in its task "
			 "names, kallsyms or other metadata text replaced by '?'", what, t->rec.name,
			 c.replaced);
	if (c.formats_dropped) {
		log_err("%s %s: %u event formats hold control characters or invalid UTF-8 and are "
			"refused (the first: %s); their events print as unknown", what, t->rec.name,
			c.formats_dropped, c.first_dropped);
		output_problem(t, "%u event formats refused: control characters or invalid UTF-8 "
			       "(the first: %s)", c.formats_dropped, c.first_dropped);
	}
	if (c.formats_out_of_bounds) {
		log_err("%s %s: event format%s %s refused: a field lies outside the largest event its "
			"sub-buffers hold, or the print format reads a length or index the record "
			"gives; %s print as unknown (the pages are kept)", what, t->rec.name,
			c.formats_out_of_bounds > 1 ? "s" : "", c.out_of_bounds,
			c.formats_out_of_bounds > 1 ? "their events" : "its events");
		output_problem(t, "%u event formats refused: a field or print argument outside the "
			       "event (%s)", c.formats_out_of_bounds, c.out_of_bounds);
	}
}

static int write_trace(struct finish *r, struct trace_sum *t)
{
	struct vt_tracedat_opts opts = {
		.version = r->opt.version,
		.compression = r->opt.compress ? VT_TD_COMPRESS_ZSTD : VT_TD_COMPRESS_NONE,
		.trace_id = t->rec.trace_id,
	};
	int dir = t->dir_fd;
	char tmp[sizeof(t->file) + 8];
	struct spool_data sd = { .fd = -1 };
	struct vt_tracedat *w;
	struct vt_meta meta;
	struct stat st;
	size_t len;
	void *blob;
	unsigned int i;
	int fd, ret;

	ret = spool_load_meta(dir, &blob, &len);
	if (ret < 0) {
		output_problem(t, "no metadata was received, so no trace.dat can be written; the pages "
			   "stay in %s", t->dir);
		return ret;
	}
	ret = vt_meta_decode(&meta, blob, len);
	free(blob);
	if (ret < 0) {
		output_problem(t, "the spooled metadata is malformed (%s)", strerror(-ret));
		return ret;
	}
	clean_meta(t, &meta);
	t->nr_cpus = meta.nr_cpus < COLLECT_MAX_CPUS ? meta.nr_cpus : COLLECT_MAX_CPUS;
	t->subbuf = meta.subbuf_size;
	/* The guest's IOMMU groups and PCI devices, for report's analyses (sysinfo.c). */
	if (!t->rec.host && sysinfo_save(r->out_fd, t->file, &meta) < 0)
		output_problem(t, "cannot keep the guest's sysinfo next to %s", t->file);
	ret = inplace_load_data(t, dir, &sd);
	if (ret < 0)
		goto out_meta;
	if (sd.fd < 0 && spool_has_inplace(dir) &&
	    fstatat(r->out_fd, t->file, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		/* Killed between renaming the moved file into place and removing the spool. */
		output_problem(t, "%s was finished in place before the kill: its page counts are not in "
			   "this manifest", t->file);
		t->nr_sums = t->nr_cpus;
		t->written = true;
		goto out_meta;
	}
	ret = inplace_write(r, t, dir, &meta, &opts, &sd);
	if (ret == 0) {
		t->nr_sums = t->nr_cpus;
		t->written = true;
		goto out_meta;
	}
	if (ret < 0) {
		output_problem(t, "cannot write %s: %s", t->file, strerror(-ret));
		goto out_meta;
	}
	fd = output_create_tmp(r, t->file, tmp, sizeof(tmp));
	if (fd < 0) {
		ret = fd;
		output_problem(t, "cannot create %s: %s", tmp, strerror(-ret));
		goto out_meta;
	}
	w = vt_tracedat_create(fd, &meta, &opts);
	if (!w) {
		ret = -errno;
		goto out_close;
	}
	ret = output_add_options(r, t, w);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		t->cpus[i].cpu = i;
		ret = output_write_cpu(r, t, w, dir, &t->cpus[i], &sd);
	}
	t->nr_sums = t->nr_cpus;
	if (ret == 0)
		ret = vt_tracedat_finish(w);
	vt_tracedat_free(w);
	if (ret == 0 && r->fsync && output_flush_file(fd) < 0)
		ret = -errno;
	if (ret == 0)
		ret = output_install(r, tmp, t->file);
out_close:
	close(fd);
	if (ret < 0) {
		unlinkat(r->out_fd, tmp, 0);
		output_problem(t, "cannot write %s: %s", t->file, strerror(-ret));
	} else {
		t->written = true;
	}
out_meta:
	if (sd.fd >= 0)
		close(sd.fd);
	vt_meta_free(&meta);
	return ret;
}

/* The host first, then the guests by name. */
static int trace_cmp(const void *a, const void *b)
{
	const struct trace_sum *x = a, *y = b;

	if (x->rec.host != y->rec.host)
		return x->rec.host ? -1 : 1;
	return strcmp(x->rec.name, y->rec.name);
}

/* What the spool says about a trace, and the problems that already shows. */
static int load_trace(struct trace_sum *t, const char *dirname, bool host)
{
	unsigned int i;
	int ret;

	ret = spool_trace_load(t->dir_fd, host, &t->rec);
	if (ret < 0 && ret != -EBADMSG)
		return ret;
	/* A file refused as corrupt is left out; what the others hold is still written. */
	if (ret == -EBADMSG)
		output_problem(t, "%s/%s: the file was refused", t->dir, t->rec.bad);
	if (host) {
		snprintf(t->file, sizeof(t->file), "host.dat");
		return 0;
	}
	/* The directory's name names the files: the state file could say anything. */
	if (t->rec.have_state && strcmp(t->rec.name, dirname + 6))
		output_problem(t, "the state file names the guest '%s', its directory '%s'", t->rec.name,
			       dirname);
	snprintf(t->rec.name, sizeof(t->rec.name), "%s", dirname + 6);
	snprintf(t->file, sizeof(t->file), "%s.dat", dirname);
	if (!t->rec.have_state) {
		output_problem(t, "no state file in %s", t->dir);
		return 0;
	}
	if (t->rec.figures.error[0])
		output_problem(t, "%s", t->rec.figures.error);
	if (t->rec.figures.agent_error[0])
		output_problem(t, "the agent reported: %s", t->rec.figures.agent_error);
	if (t->rec.figures.protocol_errors)
		output_problem(t, "%" PRIu64 " protocol errors on the control port",
			       t->rec.figures.protocol_errors);
	/* A guest that migrated out has its final statistics at the destination. */
	if (!t->rec.have_agent && strcmp(t->rec.mig.direction, "out"))
		output_problem(t, "no final statistics from the agent (the run was cut short)");
	if (t->rec.mig.seen.failures)
		log_info("%s: %u live migration(s) failed; its recording went on", t->rec.name,
			 t->rec.mig.seen.failures);
	if (t->rec.max_reached)
		output_problem(t, "--max-size reached: %" PRIu64 " of %" PRIu64 " bytes taken (%" PRIu64
			" in pages, %" PRIu64 " in malformed pages, %" PRIu64 " in fragments, %" PRIu64
			" in metadata); the guest was stopped", t->rec.figures.budget.used,
			t->rec.figures.budget.max, t->rec.figures.budget.pages, t->rec.figures.budget.bad,
			t->rec.figures.budget.frag, t->rec.figures.budget.meta);
	/* The agent's warnings are not problems: the manifest counts them apart. */
	/* Someone else tried the guest's --listen ports: always worth saying. */
	if (t->rec.figures.msgs[GMSG_REFUSED])
		output_problem(t, "%" PRIu64 " %s (a peer not allowed, or a port already taken)",
			       t->rec.figures.msgs[GMSG_REFUSED], collect_msg_name(GMSG_REFUSED));
	for (i = 0; i < GMSG_NR; i++)
		if (i != GMSG_AGENT_NOTICE && i != GMSG_REFUSED && t->rec.figures.msgs[i] > COLLECT_LOG_BURST)
			output_problem(t, "%" PRIu64 " %s (the first %d printed)", t->rec.figures.msgs[i],
				collect_msg_name(i), COLLECT_LOG_BURST);
	if (t->rec.sync_head.failed)
		output_problem(t, "no clock mapping: %s", t->rec.sync_head.why);
	if (t->rec.sync_head.rejected)
		output_problem(t, "%u clock probe bursts rejected as implausible", t->rec.sync_head.rejected);
	if (t->rec.check.outside)
		output_problem(t, "--sync-check: %" PRIu64 " of %" PRIu64 " probe replies disagree with "
			       "KVM's offsets", t->rec.check.outside, t->rec.check.replies);
	if (t->rec.kvm.mismatch)
		output_problem(t, "KVM's debugfs disagreed at the end with the offset changes recorded "
			       "on %" PRIu64 " vCPU(s): %s", t->rec.kvm.mismatch, t->rec.kvm.note);
	for (i = 0; i < t->rec.agent.nr_cpus; i++) {
		t->cpus[i].cpu = i;
		if (t->rec.cpus[i].frag_bytes) {
			t->cpus[i].bytes += t->rec.cpus[i].frag_bytes;
			output_problem(t, "cpu%u: the stream ended %" PRIu64 " bytes into a page", i,
				t->rec.cpus[i].frag_bytes);
		}
	}
	return 0;
}

/*
 * The files get the modes the recording was made with (`recover` too), and
 * its owner: SUDO_UID's under sudo, else the one the options name when the
 * spool is that user's (a spool's options are not believed on their own).
 */
static void keep_perm(struct finish *r)
{
	struct spool_perm p;
	struct stat st;

	spool_perm_default(&p);
	if (r->opt.have_perm) {
		p.file = r->opt.perm.file;
		p.dir = r->opt.perm.dir;
		if (p.uid == (uid_t)-1 && r->opt.perm.uid != (uid_t)-1 && fstat(r->spool_fd, &st) == 0 &&
		    st.st_uid == r->opt.perm.uid) {
			p.uid = r->opt.perm.uid;
			p.gid = r->opt.perm.gid;
		}
	}
	spool_perm_set(&p);
}

/**
 * output_finalise() - write the trace.dat files and manifest.json from the spool
 * @out_fd: the output directory holding .spool/ (output_open_dir())
 * @out_dir: its path, for messages
 * @keep_spool: leave .spool/ (--keep-spool)
 * @fsync: flush the files to the disk (--fsync)
 * @recovering: this is `recover` after a killed run
 *
 * Nothing is followed through a link: a .spool, bad-pages, trace or manifest
 * name that is one is refused and named.
 *
 * Return: EXIT_OK, EXIT_PARTIAL (files written, some trace had problems) or
 * EXIT_FAIL (nothing written).
 */
int output_finalise(int out_fd, const char *out_dir, bool keep_spool, bool fsync, bool recovering)
{
	struct finish r = { .out = out_dir, .out_fd = out_fd, .bad_fd = -1, .keep_spool = keep_spool,
			 .fsync = fsync };
	struct dirent *de;
	unsigned int i, written = 0, troubled = 0, max_traces = 0;
	DIR *d;
	int ret, fd;

	snprintf(r.spool, sizeof(r.spool), "%s/.spool", out_dir);
	r.spool_fd = spool_open_dir(out_fd, ".spool");
	if (r.spool_fd < 0) {
		if (r.spool_fd == -ELOOP || r.spool_fd == -ENOTDIR)
			log_err("%s is %s: refused", r.spool, r.spool_fd == -ELOOP ?
				"a symbolic link" : "not a directory");
		else
			log_err("%s holds no spool (%s: %s): nothing to recover", out_dir, r.spool,
				strerror(-r.spool_fd));
		return EXIT_FAIL;
	}
	if (spool_load_options(r.spool_fd, &r.opt) < 0) {
		log_err("%s holds no spool (%s/options is missing): nothing to recover", out_dir,
			r.spool);
		close(r.spool_fd);
		return EXIT_FAIL;
	}
	keep_perm(&r);
	fd = dup(r.spool_fd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	/*
	 * A trace's summary is tens of KiB: count the traces first and
	 * allocate for those, not for the most a spool may hold.
	 */
	while (d && (de = readdir(d)) && max_traces < COLLECT_MAX_GUESTS + 1)
		if (spool_trace_dir_name(de->d_name))
			max_traces++;
	if (d)
		rewinddir(d);
	r.traces = calloc(max_traces ? max_traces : 1, sizeof(*r.traces));
	if (!d || !r.traces) {
		if (d)
			closedir(d);
		else if (fd >= 0)
			close(fd);
		free(r.traces);
		close(r.spool_fd);
		return EXIT_FAIL;
	}
	while ((de = readdir(d)) && r.nr_traces < max_traces) {
		struct trace_sum *t = &r.traces[r.nr_traces];
		bool host = strcmp(de->d_name, "host") == 0;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "options") || !strcmp(de->d_name, "options.tmp"))
			continue;
		snprintf(t->dir, sizeof(t->dir), "%s/%s", r.spool, de->d_name);
		if (!spool_trace_dir_name(de->d_name)) {
			log_warn("%s is not a trace of the spool: ignored", t->dir);
			continue;
		}
		t->dir_fd = spool_open_dir(r.spool_fd, de->d_name);
		if (t->dir_fd < 0) {
			log_err("%s: %s: ignored", t->dir, t->dir_fd == -ELOOP ? "a symbolic link" :
				strerror(-t->dir_fd));
			continue;
		}
		if (load_trace(t, de->d_name, host) < 0)
			log_err("cannot read %s: out of memory", t->dir);
		/* The host's id is the run's: the guests' TIME_SHIFT names it as their peer. */
		if (host)
			t->rec.trace_id = r.opt.host_trace_id;
		r.nr_traces++;
	}
	closedir(d);
	/* In name order, not the directory's: the manifest and the files' lists read the same every time. */
	qsort(r.traces, r.nr_traces, sizeof(*r.traces), trace_cmp);
	/* Guests first: the host file names them in its GUEST options. */
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];

		if (t->rec.host)
			continue;
		if (write_trace(&r, t) == 0)
			written++;
	}
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];

		if (!t->rec.host)
			continue;
		if (write_trace(&r, t) == 0)
			written++;
	}
	for (i = 0; i < r.nr_traces; i++) {
		struct trace_sum *t = &r.traces[i];
		unsigned int c;

		for (c = 0; c < t->nr_sums; c++) {
			if (!t->cpus[c].bad_pages)
				continue;
			if (r.bad_fd == -2)
				output_problem(t, "cpu%u: %" PRIu64 " malformed pages (not kept: "
					       "bad-pages/ is refused; counted only)", c,
					       t->cpus[c].bad_pages);
			else
				output_problem(t, "cpu%u: %" PRIu64 " malformed pages (%" PRIu64
					       " kept in bad-pages/)", c, t->cpus[c].bad_pages,
					       t->cpus[c].bad_pages_kept);
		}
		if (t->problems[0]) {
			troubled++;
			log_warn("%s: %s", t->rec.name, t->problems);
		}
	}
	ret = manifest_write(&r, recovering);
	if (ret < 0)
		log_err("cannot write %s/manifest.json: %s", out_dir, strerror(-ret));
	for (i = 0; i < r.nr_traces; i++) {
		spool_trace_free(&r.traces[i].rec);
		close(r.traces[i].dir_fd);
	}
	close(r.spool_fd);
	if (r.bad_fd >= 0)
		close(r.bad_fd);
	/* The spool goes only when every trace made it into a file. */
	if (ret == 0 && written == r.nr_traces && !keep_spool) {
		if (spool_remove(out_fd, out_dir) < 0)
			log_warn("the spool %s is not removed entirely", r.spool);
	} else if (written != r.nr_traces) {
		log_warn("the spool %s is kept: not every trace could be written", r.spool);
	}
	free(r.traces);
	if (!written)
		return EXIT_FAIL;
	return troubled || ret < 0 ? EXIT_PARTIAL : EXIT_OK;
}
