// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Turning a spool into the run's output: guest-NAME.dat per guest, host.dat,
 * and manifest.json. `record` ends with this; `recover` runs only this, on
 * whatever a killed collector left.
 *
 * Every spooled page is walked once more, fully (vt_page_validate): a page
 * whose events do not chain up is moved to bad-pages/ and counted, never
 * written into a trace.dat. The spool is read as hostile too: its files were
 * made from guest data.
 *
 * Uncompressed files are made in place when the filesystem allows it
 * (inplace.c); everything else is copied here. manifest.c writes the
 * manifest.
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
#include "text.h"
#include "write.h"


static pthread_mutex_t problem_lock = PTHREAD_MUTEX_INITIALIZER;

void output_problem(struct trace_sum *t, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	pthread_mutex_lock(&problem_lock);	/* the in-place walk runs in threads */
	len = strlen(t->problems);

	if (len && len + 3 < sizeof(t->problems)) {
		strcat(t->problems, "; ");
		len += 2;
	}
	va_start(ap, fmt);
	vsnprintf(t->problems + len, sizeof(t->problems) - len, fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&problem_lock);
}

/**
 * output_open_dir() - open the output directory, never through a link
 * @out_dir: its path
 * @create: make it when it is not there
 * @created: set when it was made here (may be NULL)
 *
 * One made here gets the output's mode and owner (spool_perm_set()); one
 * that was there keeps its own.
 *
 * Return: the fd, -ELOOP when @out_dir is a symbolic link, or -errno.
 */
int output_open_dir(const char *out_dir, bool create, bool *created)
{
	char path[4096];
	size_t len = strlen(out_dir);
	int fd;

	/* "DIR/" would resolve a link named DIR: O_NOFOLLOW sees the last component only. */
	while (len > 1 && out_dir[len - 1] == '/')
		len--;
	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, out_dir, len);
	path[len] = '\0';
	if (created)
		*created = false;
	if (create) {
		if (mkdir(path, 0700) == 0) {
			if (created)
				*created = true;
		} else if (errno != EEXIST) {
			return -errno;
		}
	}
	fd = spool_open_dir(AT_FDCWD, path);
	if (fd >= 0 && created && *created) {
		int ret = spool_perm_apply(fd, true);

		if (ret < 0) {
			close(fd);
			fd = ret;
		}
	}
	if (fd < 0 && created && *created)
		rmdir(path);
	return fd;
}

/* What a recording puts in its directory, besides .spool (see output_previous()). */
enum prev_kind { PREV_NONE, PREV_FILE, PREV_SYSINFO, PREV_BAD };

static bool dat_name(const char *name, size_t len)
{
	char base[COLLECT_NAME_MAX + 8];

	if (len == 4 && !strncmp(name, "host", 4))
		return true;
	if (len < 7 || len - 6 >= sizeof(base) || strncmp(name, "guest-", 6))
		return false;
	memcpy(base, name + 6, len - 6);
	base[len - 6] = '\0';
	return collect_name_ok(base);
}

static enum prev_kind prev_kind(const char *name)
{
	size_t len = strlen(name);

	if (!strcmp(name, "manifest.json") || !strcmp(name, "manifest.json.tmp"))
		return PREV_FILE;
	if (!strcmp(name, "bad-pages"))
		return PREV_BAD;
	if (len > 8 && !strcmp(name + len - 8, ".sysinfo") && dat_name(name, len - 8))
		return PREV_SYSINFO;
	if (len > 8 && !strcmp(name + len - 8, ".dat.tmp"))
		len -= 4;
	if (len > 4 && !strcmp(name + len - 4, ".dat") && dat_name(name, len - 4))
		return PREV_FILE;
	return PREV_NONE;
}

static bool sysinfo_file(const char *name)
{
	return !strcmp(name, "iommu_groups") || !strcmp(name, "pci_devices");
}

/* "NAME-cpuN.bad", as output_bad_name() makes them. */
static bool bad_file(const char *name)
{
	const char *p = strstr(name, "-cpu");
	char *end;

	if (!p || p == name)
		return false;
	while (strstr(p + 1, "-cpu"))
		p = strstr(p + 1, "-cpu");
	if (p[4] < '0' || p[4] > '9')
		return false;
	strtoul(p + 4, &end, 10);
	return !strcmp(end, ".bad");
}

/* Delete a directory of ours: the files @known says we made, then it if empty. */
static int remove_dir(int out_fd, const char *out_dir, const char *name, bool (*known)(const char *))
{
	int dfd = spool_open_dir(out_fd, name), fd, ret = 0;
	struct dirent *de;
	DIR *d;

	if (dfd < 0)
		return dfd;
	fd = dup(dfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		close(dfd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (known(de->d_name) && fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && unlinkat(dfd, de->d_name, 0) == 0)
			continue;
		log_warn("%s/%s/%s was not made by the collector: left in place", out_dir, name,
			 de->d_name);
		ret = -ENOTEMPTY;
	}
	closedir(d);
	close(dfd);
	if (ret == 0 && unlinkat(out_fd, name, AT_REMOVEDIR) < 0)
		ret = -errno;
	return ret;
}

/**
 * output_previous() - refuse, or with --force clear, an earlier recording
 * @out_fd: the output directory
 * @out_dir: its path, for messages
 * @force: delete the earlier recording's files
 *
 * A recording is manifest.json, host.dat, guest-NAME.dat (and their .tmp),
 * guest-NAME.sysinfo/ and bad-pages/. With @force exactly those go (in the
 * directories, only the files the collector makes); other files stay. A link
 * in any of those places is refused, even with @force.
 *
 * Return: 0 (nothing there, or cleared), -EEXIST (a recording, no @force),
 * -ELOOP (a link in the way), or -errno; logged.
 */
int output_previous(int out_fd, const char *out_dir, bool force)
{
	char first[256] = "";
	struct dirent *de;
	int fd, ret = 0, r;
	DIR *d;

	fd = dup(out_fd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	rewinddir(d);
	/* First pass: what is there, and whether anything is a link. */
	while ((de = readdir(d))) {
		enum prev_kind k = prev_kind(de->d_name);
		struct stat st;

		if (k == PREV_NONE || fstatat(out_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode) || (k == PREV_FILE ? !S_ISREG(st.st_mode) : !S_ISDIR(st.st_mode))) {
			log_err("-o/--output '%s': %s/%s is %s: refusing to record into it", out_dir,
				out_dir, de->d_name,
				S_ISLNK(st.st_mode) ? "a symbolic link" : "not what the collector makes");
			ret = -ELOOP;
		} else if (!first[0]) {
			snprintf(first, sizeof(first), "%s", de->d_name);
		}
	}
	if (ret < 0 || !first[0])
		goto out;
	if (!force) {
		log_err("-o/--output '%s': the output directory holds a previous recording (%s): "
			"give --force to replace it, or another -o DIR", out_dir, first);
		ret = -EEXIST;
		goto out;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		switch (prev_kind(de->d_name)) {
		case PREV_FILE:
			r = unlinkat(out_fd, de->d_name, 0) < 0 ? -errno : 0;
			break;
		case PREV_SYSINFO:
			r = remove_dir(out_fd, out_dir, de->d_name, sysinfo_file);
			break;
		case PREV_BAD:
			r = remove_dir(out_fd, out_dir, de->d_name, bad_file);
			break;
		default:
			continue;
		}
		if (r < 0 && r != -ENOENT && r != -ENOTEMPTY) {
			log_err("cannot remove %s/%s: %s", out_dir, de->d_name, strerror(-r));
			ret = r;
		}
	}
	if (!ret)
		log_info("--force: the previous recording in %s is removed", out_dir);
out:
	closedir(d);
	return ret;
}

/* bad-pages/, made on first need; refused (and said once) when it is a link or no directory. */
static int bad_dir(struct finish *r)
{
	int fd;

	if (r->bad_fd != -1)
		return r->bad_fd;
	pthread_mutex_lock(&problem_lock);
	if (r->bad_fd == -1) {
		fd = spool_mkdir(r->out_fd, "bad-pages", true);
		if (fd < 0) {
			log_err("%s/bad-pages: %s: the malformed pages are counted, not kept",
				r->out, fd == -ELOOP ? "a symbolic link, refused" : strerror(-fd));
			fd = -2;
		}
		r->bad_fd = fd;
	}
	pthread_mutex_unlock(&problem_lock);
	return r->bad_fd;
}

/* A file in bad-pages/ to append to, never through a link. */
static int open_bad(struct finish *r, const char *bad)
{
	int dfd = bad_dir(r), fd;

	if (dfd < 0)
		return dfd;
	/* Made with the output's mode and owner, or appended to. */
	fd = spool_create(dfd, bad, O_WRONLY | O_APPEND, false);
	if (fd != -EEXIST)
		return fd;
	fd = openat(dfd, bad, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		log_err("%s/bad-pages/%s is a symbolic link: refused", r->out, bad);
	return fd < 0 ? -errno : fd;
}

static int append_bad(struct finish *r, const char *bad, const void *data, size_t len)
{
	int fd = open_bad(r, bad);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = write(fd, data, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* Pages the check set aside at ingest join the ones the walk rejects, copied in pieces. */
void output_keep_ingest_bad(struct finish *r, struct trace_sum *t, int dir, struct cpu_sum *c,
			    const char *bad)
{
	char buf[65536];
	int fd = spool_open_cpu(dir, c->cpu, SPOOL_CPU_BAD, O_RDONLY), out = -1;
	uint64_t total = 0, kept, seen;
	ssize_t n;

	if (fd == -ELOOP || fd == -EINVAL)
		output_problem(t, "%s/cpu%u.bad is %s: ignored", t->dir, c->cpu,
			       fd == -ELOOP ? "a symbolic link" : "not a regular file");
	if (fd < 0)
		return;
	out = open_bad(r, bad);
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		total += n;
		if (out >= 0 && write(out, buf, n) != n) {
			close(out);
			out = -1;
		}
	}
	if (out >= 0)
		close(out);
	close(fd);
	/* The file holds the first SPOOL_BAD_KEEP; the state file counted them all. */
	kept = total / t->subbuf;
	seen = c->cpu < COLLECT_MAX_CPUS && t->rec.cpus[c->cpu].bad_pages > kept ?
	       t->rec.cpus[c->cpu].bad_pages : kept;
	c->bad_pages += seen;
	c->bad_pages_kept += kept;
	c->bytes += total + (seen - kept) * t->subbuf;
}

/*
 * Walk @len bytes of spooled pages at @off in @fd, every page, counting into
 * @c. With a writer, good pages go to it and bad ones to @bad; without one
 * (the in-place check) the first bad page stops the walk: return 1.
 */
int output_walk_pages(struct finish *r, struct trace_sum *t, struct vt_tracedat *w, int fd,
		      uint64_t off, uint64_t len, struct cpu_sum *c, const char *bad)
{
	struct vt_page_fmt fmt;
	uint8_t *buf;
	ssize_t n;
	int ret = 0;

	vt_page_fmt_default(&fmt);
	fmt.subbuf_size = t->subbuf;
	buf = malloc((size_t)CHUNK_PAGES * t->subbuf);
	if (!buf)
		return -ENOMEM;
	while (len) {
		size_t have = 0, i, run = 0, run_start = 0;
		size_t want = len < (uint64_t)CHUNK_PAGES * t->subbuf ? len :
			      (size_t)CHUNK_PAGES * t->subbuf;

		while (have < want) {
			n = pread(fd, buf + have, want - have, off + have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			have += n;
		}
		off += have;
		len = have < want ? 0 : len - have;
		c->bytes += have;
		if (have % t->subbuf) {
			/* The spool only ever holds whole pages; a torn tail is a kill mid-write. */
			output_problem(t, "cpu%u: the spool ends %zu bytes into a page (cut at a kill)", c->cpu,
				have % t->subbuf);
			have -= have % t->subbuf;
		}
		for (i = 0; i < have / t->subbuf; i++) {
			uint8_t *p = buf + i * t->subbuf;
			struct vt_page_info info;
			uint32_t events;

			if (vt_page_validate(&fmt, p, t->subbuf, &info, &events, NULL, NULL) < 0) {
				if (!w) {
					ret = 1;
					goto out;
				}
				if (run && (ret = vt_tracedat_cpu_write(w, buf + run_start, run)) < 0)
					goto out;
				run = 0;
				run_start = (i + 1) * t->subbuf;
				c->bad_pages++;
				if (c->bad_pages_kept >= SPOOL_BAD_KEEP)
					continue;	/* evidence enough: counted only */
				c->bad_pages_kept++;
				append_bad(r, bad, p, t->subbuf);
				continue;
			}
			c->pages++;
			c->events += events;
			c->missed_pages += info.missed;
			c->lost_in_pages += info.missed_events;
			run += t->subbuf;
		}
		if (w && run && (ret = vt_tracedat_cpu_write(w, buf + run_start, run)) < 0)
			goto out;
	}
out:
	free(buf);
	return ret;
}

/* The name in bad-pages/ of a CPU's malformed pages (a guest is never named host). */
void output_bad_name(struct trace_sum *t, struct cpu_sum *c, char *bad, size_t size)
{
	snprintf(bad, size, "%s-cpu%u.bad", t->rec.host ? "host" : t->rec.name, c->cpu);
}

/*
 * The chunks compressed while streaming (record/compress.c) for the region's first
 * bytes, counted into @c: how many region bytes they cover, 0 when there are
 * none or they do not fit this region (then the walk takes it all).
 */
static uint64_t put_chunks(struct finish *r, struct trace_sum *t, struct vt_tracedat *w, int dir,
			   struct cpu_sum *c, uint64_t len)
{
	const struct spool_zsum *z = &t->rec.cpus[c->cpu].zsum;
	struct vt_tracedat_stats add = { 0 };
	int fd, ret;

	/* Pages of the size the metadata gives, which the walk would cut them into. */
	if (!r->opt.compress || !t->rec.cpus[c->cpu].have_zsum || z->subbuf != t->subbuf ||
	    !z->raw || z->raw > len || z->raw % t->subbuf || z->pages != z->raw / t->subbuf)
		return 0;
	fd = spool_open_cpu(dir, c->cpu, SPOOL_CPU_ZST, O_RDONLY);
	if (fd == -ELOOP || fd == -EINVAL)
		log_warn("%s/cpu%u.zst is %s: compressed again", t->dir, c->cpu,
			 fd == -ELOOP ? "a symbolic link" : "not a regular file");
	if (fd < 0)
		return 0;
	add.events = z->events;
	add.missed_pages = z->missed_pages;
	add.lost_events = z->lost;
	ret = vt_tracedat_cpu_chunks(w, fd, z->file, z->raw, &add);
	close(fd);
	if (ret < 0) {
		log_warn("%s/cpu%u.zst: %s: compressed again", t->dir, c->cpu, strerror(-ret));
		return 0;
	}
	c->bytes += z->raw;
	c->pages += z->pages;
	c->events += z->events;
	c->missed_pages += z->missed_pages;
	c->lost_in_pages += z->lost;
	return z->raw;
}

/*
 * Stream one CPU's spooled pages (its region, then cpuN.pages) into the
 * writer; what was compressed while streaming is copied, not walked again.
 */
int output_write_cpu(struct finish *r, struct trace_sum *t, struct vt_tracedat *w, int dir,
		     struct cpu_sum *c, const struct spool_data *sd)
{
	uint64_t done;
	char bad[256];
	struct stat st;
	int fd, ret;

	output_bad_name(t, c, bad, sizeof(bad));
	ret = vt_tracedat_cpu_begin(w, c->cpu);
	if (ret < 0)
		return ret;
	output_keep_ingest_bad(r, t, dir, c, bad);
	if (sd->fd >= 0 && c->cpu < COLLECT_MAX_CPUS && sd->len[c->cpu]) {
		done = put_chunks(r, t, w, dir, c, sd->len[c->cpu]);
		ret = output_walk_pages(r, t, w, sd->fd, sd->off[c->cpu] + done,
					sd->len[c->cpu] - done, c, bad);
		if (ret < 0)
			return ret;
	}
	fd = spool_open_cpu(dir, c->cpu, SPOOL_CPU_PAGES, O_RDONLY);
	if (fd == -ELOOP || fd == -EINVAL)
		output_problem(t, "%s/cpu%u.pages is %s: ignored", t->dir, c->cpu,
			       fd == -ELOOP ? "a symbolic link" : "not a regular file");
	if (fd < 0)
		return vt_tracedat_cpu_end(w);	/* a CPU that sent nothing more */
	ret = fstat(fd, &st) < 0 ? -errno :
	      output_walk_pages(r, t, w, fd, 0, st.st_size, c, bad);
	close(fd);
	return ret ?: vt_tracedat_cpu_end(w);
}

/* TIME_SHIFT: the guest's timestamps onto the host's, per vCPU, exactly as trace-cmd applies it. */
static int add_time_shift(struct finish *r, struct trace_sum *t, struct vt_tracedat *w)
{
	struct vt_tracedat_tshift_cpu *view = calloc(t->nr_cpus, sizeof(*view));
	struct vt_tsync_tshift *tables = calloc(t->nr_cpus, sizeof(*tables));
	bool interp = vt_tsync_needs_interpolate(t->rec.sync, t->nr_cpus);
	unsigned int cpu;
	int ret = 0;

	if (!view || !tables) {
		ret = -ENOMEM;
		goto out;
	}
	for (cpu = 0; cpu < t->nr_cpus; cpu++) {
		if (!t->rec.sync[cpu].nr)
			continue;
		ret = vt_tsync_tshift_build(t->rec.sync[cpu].epochs,
					    vt_tsync_cpu_until(&t->rec.sync[cpu], t->rec.sync_head.host_end),
					    t->rec.sync_head.host_end, interp, &tables[cpu]);
		if (ret < 0) {
			output_problem(t, "cpu%u: cannot express the clock mapping as TIME_SHIFT (%s)", cpu,
				strerror(-ret));
			goto out;
		}
		vt_tsync_tshift_view(&tables[cpu], &view[cpu]);
	}
	ret = vt_tracedat_add_time_shift(w, r->opt.host_trace_id, interp ? VT_TD_TSHIFT_INTERPOLATE : 0,
					 t->nr_cpus, view);
out:
	for (cpu = 0; tables && cpu < t->nr_cpus; cpu++)
		vt_tsync_tshift_free(&tables[cpu]);
	free(tables);
	free(view);
	return ret;
}

static int add_guests(struct finish *r, struct vt_tracedat *w)
{
	unsigned int i, c, known;
	int ret;

	for (i = 0; i < r->nr_traces; i++) {
		struct trace_sum *t = &r->traces[i];
		uint32_t tids[COLLECT_MAX_CPUS] = { 0 };

		if (t->rec.host || !t->written)
			continue;
		memcpy(tids, t->rec.tids, sizeof(uint32_t) * t->rec.nr_tids);
		for (known = 0, c = 0; c < t->nr_cpus; c++)
			known += tids[c] != 0;
		/*
		 * A GUEST option with no vCPU is worse than none: trace-cmd 3.1.6
		 * dies ("Could not allocate vcpu maps") reading host.dat with two
		 * such guests' files. The guest's TIME_SHIFT still names the host.
		 */
		if (!known) {
			log_warn("%s: no vCPU thread is known, so host.dat maps none of its vCPUs to "
				 "a host thread (and has no GUEST option for it): give record --qmp "
				 "PATH (QEMU's -qmp socket), or --qemu-pid PID with QEMU started as "
				 "-name NAME,debug-threads=on", t->rec.name);
			continue;
		}
		ret = vt_tracedat_add_guest(w, t->rec.name, t->rec.trace_id, t->nr_cpus, tids);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The options, CPU statistics and so on that go in every trace file. */
int output_add_options(struct finish *r, struct trace_sum *t, struct vt_tracedat *w)
{
	unsigned int i;
	int ret;

	if (r->opt.tsc_mult)
		vt_tracedat_set_tsc2nsec(w, r->opt.tsc_mult, r->opt.tsc_shift, 0);
	if (t->rec.host)
		ret = add_guests(r, w);
	else
		ret = add_time_shift(r, t, w);
	for (i = 0; ret == 0 && i < t->nr_cpus; i++) {
		const char *st = t->rec.cpus[i].stats;

		if (st && *st)
			ret = vt_tracedat_add_cpustat(w, i, st, strlen(st));
	}
	return ret;
}

/*
 * Write the file's dirty pages back and wait: sync_file_range() first, as
 * ext4's fdatasync() alone writes a large delayed-allocation file back far
 * more slowly (measured: 64 MiB in 340-450 ms, against 11 ms + 30 ms). The
 * fdatasync() makes the data and the size durable; the name is the output
 * directory's fsync (manifest_write()).
 */
int output_flush_file(int fd)
{
	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			SYNC_FILE_RANGE_WAIT_AFTER);
	return fdatasync(fd);
}

/**
 * output_install_check() - whether a file may be renamed to @name in the output directory
 * @r: the run
 * @name: the name
 *
 * Renaming over a link would replace the link, not follow it; a link there is
 * refused all the same, and said, as a directory would be.
 *
 * Return: 0 when @name is free or a regular file, -ELOOP or -EEXIST (logged).
 */
int output_install_check(struct finish *r, const char *name)
{
	struct stat st;

	if (fstatat(r->out_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISREG(st.st_mode))
		return 0;
	log_err("%s/%s is %s: refusing to replace it", r->out, name,
		S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file");
	return S_ISLNK(st.st_mode) ? -ELOOP : -EEXIST;
}

/**
 * output_create_tmp() - create NAME.tmp in the output directory, for NAME
 * @r: the run
 * @name: the file it becomes (output_install())
 * @tmp: set to the temporary name
 * @size: size of @tmp
 *
 * Made exclusively, never through a link: a leftover file of a killed finish
 * is replaced, anything else in the way (a link, a directory) is refused.
 *
 * Return: the fd (read-write) or -errno, logged.
 */
int output_create_tmp(struct finish *r, const char *name, char *tmp, size_t size)
{
	int fd;

	if ((size_t)snprintf(tmp, size, "%s.tmp", name) >= size)
		return -ENAMETOOLONG;
	fd = output_install_check(r, name);
	if (fd < 0)
		return fd;
	fd = spool_create(r->out_fd, tmp, O_RDWR, true);
	if (fd == -EEXIST)
		log_err("%s/%s is in the way (a symbolic link or not a regular file): refusing to "
			"write through it", r->out, tmp);
	return fd;
}

/**
 * output_install() - rename a finished NAME.tmp to NAME in the output directory
 * @r: the run
 * @tmp: the temporary name
 * @name: the final name
 *
 * Return: 0 or -errno (-ELOOP when @name is a link: refused, logged).
 */
int output_install(struct finish *r, const char *tmp, const char *name)
{
	int ret = output_install_check(r, name);

	if (ret == 0 && renameat(r->out_fd, tmp, r->out_fd, name) < 0)
		ret = -errno;
	return ret;
}
