// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * check's short recording: the real `record`, run as a child of this very
 * program into a private temporary directory, with the options that make it
 * compare two clocks: `--sync kvm` takes each vCPU's offset from KVM (and its
 * changes from kvm:kvm_write_tsc_offset), and `--sync-check` sends the
 * in-band probe bursts beside it and checks each reply against the offsets
 * in force during its round trip (record/sync.c). The manifest it writes
 * says what was found (sync.method, sync.kvm, sync.check); that is read
 * back here and the directory removed.
 *
 * Why a child and not a call: record owns its signals, its engine and its
 * globals for the life of the process, and a second engine in this one would
 * test a program nobody runs. Its messages go to a log in the directory; the
 * last error among them is what the line says when it fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "json.h"
#include "text.h"

#define TRIAL_MANIFEST_MAX	(64u << 20)
#define TRIAL_GRACE_S		30	/* past --duration: the stop, the files */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* Run record; its status, -1 when it did not end by itself in time. */
static int run_record(char **argv, const char *log, double duration)
{
	struct timespec to = { .tv_sec = (time_t)duration + TRIAL_GRACE_S };
	char self[PATH_MAX] = "/proc/self/exe";
	sigset_t set, old;
	ssize_t len;
	pid_t pid;
	int st, fd, sig;

	/* This program's own file (a tool like valgrind answers for its guest here too). */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len > 0)
		self[len] = '\0';
	else
		snprintf(self, sizeof(self), "/proc/self/exe");

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return -1;
	}
	if (!pid) {
		/* A check that is killed takes its recording with it (record stops cleanly). */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigprocmask(SIG_SETMASK, &old, NULL);
		fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execv(self, argv);
		execv("/proc/self/exe", argv);	/* the file was replaced meanwhile */
		_exit(127);
	}
	for (;;) {
		sig = sigtimedwait(&set, NULL, &to);
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (sig < 0 && errno == EAGAIN) {
			kill(pid, SIGTERM);	/* record stops cleanly on it */
			waitpid(pid, &st, 0);
			sigprocmask(SIG_SETMASK, &old, NULL);
			return -1;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The last "error:" line of record's log, else its last line. */
static void last_error(const char *log, char *buf, size_t len)
{
	char line[1024], last[1024] = "";
	FILE *f = fopen(log, "re");

	buf[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!line[0])
			continue;
		if (strstr(line, "error:"))
			snprintf(buf, len, "%s", line);
		snprintf(last, sizeof(last), "%s", line);
	}
	fclose(f);
	if (!buf[0])
		snprintf(buf, len, "%s", last);
}

static uint64_t get_u64(const struct json_value *v, const char *key)
{
	uint64_t x = 0;

	json_u64(json_get(v, key), &x);
	return x;
}

static void copy_str(char *dst, size_t len, const struct json_value *v, const char *key)
{
	const char *s = json_string(json_get(v, key));

	collect_sanitize(dst, len, s ? s : "", false);
}

/* What manifest.json says of the guest's clock; 0 or -errno. */
static int read_manifest(const char *path, struct check_trial *t, char *why, size_t wlen,
			 char *first_out, size_t olen)
{
	const struct json_value *g, *sync, *kvm, *chk, *ivs, *iv;
	struct json_doc *doc;
	bool seen[CHECK_MAX_VCPUS] = { false };
	char *buf = NULL;
	size_t have = 0, i;
	struct stat st;
	ssize_t n;
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > TRIAL_MANIFEST_MAX) {
		ret = -EFBIG;
		goto err_close_fd;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto err_close_fd;
	}
	while (have < (size_t)st.st_size && (n = read(fd, buf + have, st.st_size - have)) > 0)
		have += n;
	doc = json_parse(buf, have, NULL, NULL);
	if (!doc) {
		ret = -EBADMSG;
		goto err_free;
	}
	g = json_at(json_get(json_root(doc), "guests"), 0);
	sync = json_get(g, "sync");
	if (!sync) {
		ret = -EBADMSG;
		goto err_json;
	}
	copy_str(t->clock, sizeof(t->clock), g, "clock");
	copy_str(t->method, sizeof(t->method), sync, "method");
	copy_str(why, wlen, sync, "why");
	kvm = json_get(sync, "kvm");
	if (json_is(kvm, JSON_OBJECT)) {
		copy_str(t->changes_from, sizeof(t->changes_from), kvm, "changes_from");
		t->not_seen = get_u64(kvm, "changes_not_seen") + get_u64(kvm, "debugfs_disagreed");
	}
	chk = json_get(sync, "check");
	if (json_is(chk, JSON_OBJECT)) {
		t->replies = get_u64(chk, "replies");
		t->outside = get_u64(chk, "outside");
		t->bursts = get_u64(chk, "bursts");
		ivs = json_get(chk, "intervals");
		for (i = 0; (iv = json_at(ivs, i)); i++) {
			uint64_t cpu = get_u64(iv, "cpu");
			int64_t lo = 0, hi = 0, off = 0;
			bool inside = true;

			json_i64(json_get(iv, "lo"), &lo);
			json_i64(json_get(iv, "hi"), &hi);
			json_i64(json_get(iv, "offset"), &off);
			json_bool(json_get(iv, "inside"), &inside);
			if (cpu < CHECK_MAX_VCPUS && !seen[cpu]) {
				seen[cpu] = true;
				t->cpus++;
			}
			if (hi >= lo && (!t->min_width || (uint64_t)(hi - lo) < t->min_width))
				t->min_width = (uint64_t)(hi - lo);
			if (!inside && !first_out[0])
				snprintf(first_out, olen, "vCPU %" PRIu64 ": the probes allow offsets %"
					 PRId64 "..%" PRId64 ", KVM's is %" PRId64, cpu, lo, hi, off);
		}
	}
err_json:
	json_free(doc);
err_free:
	free(buf);
err_close_fd:
	close(fd);
	return ret;
}

/* record's argv: the guest as check was given it, then the comparison. */
static int trial_argv(const struct check *c, const char *out, char dur[32], char pid[32],
		      const char **a, size_t max)
{
	size_t n = 0;

	a[n++] = "virtio-trace-collect";
	a[n++] = "record";
	if (c->domain) {
		a[n++] = "--domain";
		a[n++] = c->domain;
		if (c->uri) {
			a[n++] = "--connect";
			a[n++] = c->uri;
		}
	} else {
		a[n++] = "--chardev-dir";
		a[n++] = c->chardev_dir;
		a[n++] = "--name";
		a[n++] = "check";
	}
	if (!c->domain) {
		snprintf(pid, 32, "%d", (int)c->qemu_pid);
		a[n++] = "--qemu-pid";
		a[n++] = pid;
	}
	snprintf(dur, 32, "%g", c->duration);
	a[n++] = "--sync";
	a[n++] = "kvm";
	a[n++] = "--sync-check";
	a[n++] = "--debugfs";
	a[n++] = c->debugfs;
	a[n++] = "--duration";
	a[n++] = dur;
	a[n++] = "--no-kallsyms-cache";
	a[n++] = "--quiet";
	a[n++] = "-o";
	a[n++] = out;
	a[n] = NULL;
	return n < max ? 0 : -E2BIG;
}

/* The line from what record wrote. */
static void judge(struct check *c, const char *why, const char *first_out)
{
	struct check_trial *t = &c->trial;

	if (strcmp(t->clock, "x86-tsc")) {
		check_set(c, CK_RECORD, CV_NO, "the guest traces with clock %s: only x86-tsc maps "
			  "exactly onto the host's TSC (trace_clock=x86-tsc on the guest's kernel command "
			  "line, or record --clock x86-tsc)", t->clock[0] ? t->clock : "?");
	} else if (strcmp(t->method, "kvm")) {
		check_set(c, CK_RECORD, CV_NO, "record's clock method was %s: %s", t->method, why);
	} else if (!t->replies) {
		check_set(c, CK_RECORD, CV_NO, "%g s recorded with KVM's offsets, but no probe reply came "
			  "to check them against (%u bursts)", c->duration, (unsigned int)t->bursts);
	} else if (t->outside) {
		check_set(c, CK_RECORD, CV_NO, "%" PRIu64 " of %" PRIu64 " probe replies fall outside "
			  "KVM's offsets (%s)", t->outside, t->replies, first_out[0] ? first_out :
			  "a reply no epoch explains");
	} else if (t->not_seen) {
		check_set(c, CK_RECORD, CV_WARN, "%" PRIu64 " probe replies on %" PRIu64 " vCPU%s agree "
			  "with KVM's offsets, but %" PRIu64 " offset change%s not seen at its moment "
			  "(manifest sync.kvm)", t->replies, t->cpus, t->cpus == 1 ? "" : "s", t->not_seen,
			  t->not_seen == 1 ? " was" : "s were");
	} else {
		check_set(c, CK_RECORD, CV_YES, "%g s recorded, sync kvm (changes from %s): %" PRIu64
			  " probe replies on %" PRIu64 " vCPU%s, each within KVM's offsets (narrowest "
			  "probe interval %" PRIu64 " ticks)", c->duration, t->changes_from[0] ?
			  t->changes_from : "?", t->replies, t->cpus, t->cpus == 1 ? "" : "s",
			  t->min_width);
	}
}

/**
 * check_trial() - a short recording whose probes are checked against KVM's
 * offsets
 * @c: the check: its debugfs and agent lines decide whether it runs
 */
void check_trial(struct check *c)
{
	char tmpl[PATH_MAX], out[PATH_MAX + 8], log[PATH_MAX + 16], man[PATH_MAX + 32];
	char dur[32], pid[32], why[512] = "", first_out[256] = "", err[1024];
	const char *tmp = getenv("TMPDIR"), *argv[40];
	int ret;

	if (c->duration <= 0) {
		check_set(c, CK_RECORD, CV_SKIPPED, "--duration 0");
		return;
	}
	if (c->lines[CK_DEBUGFS].v != CV_YES && c->lines[CK_DEBUGFS].v != CV_WARN) {
		check_set(c, CK_RECORD, CV_SKIPPED, "no KVM offsets to check the probes against");
		return;
	}
	if (c->lines[CK_AGENT].v != CV_YES) {
		check_set(c, CK_RECORD, CV_SKIPPED, "the agent did not answer");
		return;
	}
	if (!c->domain && !c->chardev_dir[0]) {
		check_set(c, CK_RECORD, CV_SKIPPED, "the guest's ports are not in one directory: give "
			  "--chardev-dir");
		return;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/vt-check.XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp");
	if (!mkdtemp(tmpl)) {
		check_set(c, CK_RECORD, CV_NO, "cannot make a private directory %s: %s", tmpl,
			  strerror(errno));
		return;
	}
	snprintf(out, sizeof(out), "%s/rec", tmpl);
	snprintf(log, sizeof(log), "%s/record.log", tmpl);
	snprintf(man, sizeof(man), "%s/manifest.json", out);
	if (trial_argv(c, out, dur, pid, argv, sizeof(argv) / sizeof(argv[0])) < 0)
		goto out_rm;
	c->trial.ran = true;
	c->trial.rc = run_record((char **)argv, log, c->duration);
	ret = read_manifest(man, &c->trial, why, sizeof(why), first_out, sizeof(first_out));
	if (ret < 0) {
		last_error(log, err, sizeof(err));
		check_set(c, CK_RECORD, CV_NO, "record exited %d and left no readable manifest (%s): %s",
			  c->trial.rc, strerror(-ret), err[0] ? err : "no message");
		goto out_rm;
	}
	judge(c, why, first_out);
out_rm:
	nftw(tmpl, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}
