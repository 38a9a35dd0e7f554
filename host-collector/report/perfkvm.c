// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --perf-kvm DIR: each guest's kallsyms and modules, as the two files
 * `perf kvm --guestkallsyms=FILE --guestmodules=FILE` reads (the guest's
 * /proc/kallsyms and /proc/modules text).
 *
 * What perf reads (tools/perf/util/symbol.c): kallsyms__parse() takes each
 * line as a hex address, one character of type, a space and the name, which
 * must be shorter than KSYM_NAME_LEN (256) or the whole parse fails; a
 * module's symbols carry "\t[module]" after the name. modules__parse() takes
 * from each line the name (up to the first space), the size (a number
 * followed by a space or a tab) and the load address (hex after the line's
 * last 'x'); the refcount, dependencies and state between are not read.
 *
 * The kallsyms are the guest file's own (its trace.dat kallsyms section,
 * what the agent sent or the kallsyms cache kept, and what trace-cmd and the
 * other analyses resolve the guest's addresses with), passed through line by
 * line: a line perf would choke on (a name of 256 bytes or more, a control
 * character, no type) is left out. The guest's /proc/modules is not in the
 * recording (the metadata bundle carries kallsyms only; the agent hashes
 * /proc/modules into the kallsyms cache key and sends nothing else of it),
 * so the modules file is derived from the kallsyms: a module is the
 * "[module]" tag of its text symbols, its load address the page of its
 * lowest text symbol (a module's text is page-aligned and its first
 * function starts it), its size up to the page after its highest text
 * symbol and one page more, cut at the next module's start. That is what
 * perf needs to map a guest address to the module whose kallsyms symbols
 * name it; the refcount, dependencies and state are written as "0 - Live".
 * Adding /proc/modules to the bundle would change the protocol and leave
 * every recording made so far without it; the derived range errs by at most
 * the tail of a module's last function.
 *
 * The guest file is hostile: every length and count is checked against the
 * file's size and VT_META_MAX_*, the compressed section's sizes against what
 * zstd returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "json.h"
#include "perfetto.h"
#include "store/spool.h"
#include "vt_grow.h"
#include "vt_le.h"
#include "vt_meta.h"
#include "vt_tracedat.h"

#define PK_NAME_MAX	256u		/* perf: a name (module tag included) must be shorter than KSYM_NAME_LEN */
#define PK_MOD_NAME	56u		/* the kernel's MODULE_NAME_LEN - 1 */
#define PK_MAX_MODULES	65536u
#define PK_PAGE		4096u
#define PK_MAX_SECTIONS	4096u

/* A bounded reader of one file. */
struct pk_file {
	int fd;
	uint64_t off, size;
	int err;
};

static int pk_read(struct pk_file *f, void *buf, size_t len)
{
	ssize_t n;
	size_t have = 0;

	if (f->err)
		return f->err;
	if (len > f->size || f->off > f->size - len)
		return f->err = -EBADMSG;
	while (have < len) {
		n = pread(f->fd, (char *)buf + have, len - have, f->off + have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return f->err = n < 0 ? -errno : -EBADMSG;
		have += n;
	}
	f->off += len;
	return 0;
}

static uint64_t pk_u(struct pk_file *f, unsigned int bytes)
{
	uint8_t b[8] = { 0 };

	if (pk_read(f, b, bytes) < 0)
		return 0;
	return bytes == 2 ? vt_get_le16(b) : bytes == 4 ? vt_get_le32(b) : vt_get_le64(b);
}

static void pk_skip(struct pk_file *f, uint64_t len)
{
	if (f->err)
		return;
	if (len > f->size || f->off > f->size - len)
		f->err = -EBADMSG;
	else
		f->off += len;
}

/* A NUL-terminated string of at most @max bytes, into @buf (@max + 1 bytes) or skipped. */
static void pk_str(struct pk_file *f, char *buf, size_t max)
{
	size_t i;
	char c;

	for (i = 0; !f->err; i++) {
		if (pk_read(f, &c, 1) < 0)
			return;
		if (!c)
			break;
		if (i >= max) {
			f->err = -EBADMSG;
			return;
		}
		if (buf)
			buf[i] = c;
	}
	if (buf && !f->err)
		buf[i] = '\0';
}

/* The kallsyms block (u32 len, text) at the reader's offset. */
static int pk_blob32(struct pk_file *f, uint64_t avail, struct vt_blob *out)
{
	uint64_t len = pk_u(f, 4);

	if (f->err)
		return f->err;
	if (len > VT_META_MAX_BLOB || len + 4 > avail)
		return -EBADMSG;
	out->data = malloc(len + 1);
	if (!out->data)
		return -ENOMEM;
	if (pk_read(f, out->data, len) < 0) {
		free(out->data);
		out->data = NULL;
		return f->err;
	}
	out->data[len] = '\0';
	out->len = len;
	return 0;
}

/* v6: the metadata blocks back to back after the header; kallsyms is the fourth. */
static int kallsyms_v6(struct pk_file *f, struct vt_blob *out)
{
	uint64_t n, i, j, nsys;

	pk_str(f, NULL, 64);			/* "header_page" */
	pk_skip(f, pk_u(f, 8));
	pk_str(f, NULL, 64);			/* "header_event" */
	pk_skip(f, pk_u(f, 8));
	n = pk_u(f, 4);				/* ftrace formats */
	for (i = 0; i < n && !f->err; i++)
		pk_skip(f, i < VT_META_MAX_EVENTS ? pk_u(f, 8) : UINT64_MAX);
	nsys = pk_u(f, 4);
	for (i = 0; i < nsys && !f->err; i++) {
		if (i >= VT_META_MAX_SYSTEMS)
			return -EBADMSG;
		pk_str(f, NULL, VT_META_MAX_NAME);
		n = pk_u(f, 4);
		for (j = 0; j < n && !f->err; j++)
			pk_skip(f, j < VT_META_MAX_EVENTS ? pk_u(f, 8) : UINT64_MAX);
	}
	if (f->err)
		return f->err;
	return pk_blob32(f, f->size - f->off, out);
}

/* v7: walk the chain of sections from the header to the kallsyms one. */
static int kallsyms_v7(struct pk_file *f, struct vt_blob *out)
{
	uint64_t size, zsize, raw;
	unsigned int i, id, flags;
	void *z = NULL;
	size_t got;
	int ret;

	pk_str(f, NULL, 64);			/* compression */
	pk_str(f, NULL, 64);			/* its version */
	pk_skip(f, 8);				/* the options' offset */
	for (i = 0; i < PK_MAX_SECTIONS && !f->err; i++) {
		id = pk_u(f, 2);
		flags = pk_u(f, 2);
		pk_skip(f, 4);
		size = pk_u(f, 8);
		if (f->err || size > f->size - f->off)
			return -EBADMSG;
		if (id != VT_TD_OPT_KALLSYMS) {
			pk_skip(f, size);
			continue;
		}
		if (!(flags & 1))
			return pk_blob32(f, size, out);
		zsize = pk_u(f, 4);
		raw = pk_u(f, 4);
		if (f->err || zsize + 8 > size || raw > VT_META_MAX_BLOB + 4 || raw < 4)
			return -EBADMSG;
		z = malloc(zsize ? zsize : 1);
		out->data = malloc(raw + 1);
		ret = !z || !out->data ? -ENOMEM : pk_read(f, z, zsize);
		if (ret == 0) {
			got = ZSTD_decompress(out->data, raw, z, zsize);
			ret = ZSTD_isError(got) || got != raw ? -EBADMSG : 0;
		}
		free(z);
		if (ret < 0)
			goto err;
		/* The section's text is u32 len + bytes: read it from memory with the same checks. */
		got = vt_get_le32((uint8_t *)out->data);
		if (got > raw - 4) {
			ret = -EBADMSG;
			goto err;
		}
		memmove(out->data, out->data + 4, got);
		out->data[got] = '\0';
		out->len = got;
		return 0;
	}
	return f->err ?: -ENOENT;
err:
	free(out->data);
	out->data = NULL;
	return ret;
}

/**
 * pk_kallsyms() - the kallsyms text of one of our trace.dat files (v6 or v7)
 * @path: the file
 * @out: set to the text (NUL-terminated, owned by the caller)
 *
 * Return: 0, -ENOENT (no kallsyms section), -EBADMSG (not a file we read),
 * -ENOMEM, or -errno of the file.
 */
int pk_kallsyms(const char *path, struct vt_blob *out)
{
	static const uint8_t magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	struct pk_file f = { .fd = -1 };
	uint8_t m[10];
	char ver[8];
	struct stat st;
	int ret;

	out->data = NULL;
	out->len = 0;
	f.fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (f.fd < 0)
		return -errno;
	if (fstat(f.fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		ret = -EBADMSG;
		goto out;
	}
	f.size = st.st_size;
	pk_read(&f, m, sizeof(m));
	pk_str(&f, ver, sizeof(ver) - 1);
	pk_skip(&f, 1 + 1 + 4);			/* endian, long size, page size */
	if (f.err || memcmp(m, magic, sizeof(m))) {
		ret = -EBADMSG;
		goto out;
	}
	if (!strcmp(ver, "6"))
		ret = kallsyms_v6(&f, out);
	else if (!strcmp(ver, "7"))
		ret = kallsyms_v7(&f, out);
	else
		ret = -EBADMSG;
out:
	close(f.fd);
	return ret;
}

struct pk_mod {
	char name[PK_MOD_NAME + 1];
	uint64_t lo, hi;
};

static int by_lo(const void *a, const void *b)
{
	const struct pk_mod *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool is_text(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/*
 * One kallsyms line as perf reads it, or false to leave it out: "ADDR T NAME"
 * with an optional "\t[MODULE]"; @mod gets MODULE ("" for none).
 */
static bool ks_line(const char *l, size_t len, uint64_t *addr, char *type, char *mod)
{
	const char *p = l, *name, *tab, *end = l + len;
	size_t n;
	uint64_t a = 0;

	mod[0] = '\0';
	for (n = 0; p < end && n < 17 && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
					  (*p >= 'A' && *p <= 'F')); p++, n++)
		a = a << 4 | (uint64_t)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
	if (!n || n > 16 || end - p < 4 || p[0] != ' ' || p[2] != ' ' || p[1] <= ' ' || p[1] > '~')
		return false;
	*addr = a;
	*type = p[1];
	name = p + 3;
	for (p = name; p < end; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return false;
		else if ((unsigned char)*p >= 0x7f)
			return false;
	tab = memchr(name, '\t', end - name);
	if ((tab ? tab : end) == name || (size_t)(end - name) >= PK_NAME_MAX ||
	    memchr(name, ' ', (tab ? tab : end) - name))
		return false;
	if (tab) {
		n = end - tab - 3;
		if (end - tab < 4 || tab[1] != '[' || end[-1] != ']' || n > PK_MOD_NAME)
			return false;
		memcpy(mod, tab + 2, n);
		mod[n] = '\0';
		for (p = mod; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			      *p == '_' || *p == '-'))
				return false;
	}
	return true;
}

static int create_at(int dfd, const char *name, FILE **out)
{
	struct spool_perm p;
	int fd, ret;

	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	spool_perm_default(&p);		/* 0600, and under sudo the user who asked */
	spool_perm_set(&p);
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ret = spool_perm_apply(fd, false);
	*out = ret == 0 ? fdopen(fd, "w") : NULL;
	if (!*out) {
		ret = ret ?: -errno;
		close(fd);
	}
	return ret;
}

static int mod_add(struct pk_mod **v, size_t *nr, size_t *cap, const char *name, uint64_t a)
{
	size_t i;

	/* A module's symbols are together in kallsyms: the last one is the likely match. */
	for (i = *nr; i-- > 0;)
		if (!strcmp((*v)[i].name, name)) {
			if (a < (*v)[i].lo)
				(*v)[i].lo = a;
			if (a > (*v)[i].hi)
				(*v)[i].hi = a;
			return 0;
		}
	if (*nr >= PK_MAX_MODULES)
		return 0;
	if (vt_grow((void **)v, cap, *nr + 1, sizeof(**v)) < 0)
		return -ENOMEM;
	snprintf((*v)[*nr].name, sizeof((*v)[*nr].name), "%s", name);
	(*v)[*nr].lo = (*v)[*nr].hi = a;
	(*nr)++;
	return 0;
}

/* Write NAME.kallsyms and NAME.modules into @dfd from @ks. */
static int write_guest(int dfd, const char *dir, const char *name, const struct vt_blob *ks,
		       uint64_t *nsyms, size_t *nmods, uint64_t *dropped)
{
	char fn[300], mod[PK_MOD_NAME + 1], type;
	struct pk_mod *mods = NULL;
	size_t nr = 0, cap = 0, i;
	const char *l = ks->data, *e, *end = ks->data + ks->len;
	FILE *fk = NULL, *fm = NULL;
	uint64_t addr, nonzero = 0;
	int ret;

	snprintf(fn, sizeof(fn), "%s.kallsyms", name);
	ret = create_at(dfd, fn, &fk);
	if (ret < 0)
		goto err;
	for (; l < end; l = e + 1) {
		e = memchr(l, '\n', end - l);
		if (!e)
			e = end;
		if (!ks_line(l, e - l, &addr, &type, mod)) {
			if (e > l)
				(*dropped)++;
			continue;
		}
		fwrite(l, 1, e - l, fk);
		fputc('\n', fk);
		(*nsyms)++;
		nonzero += addr != 0;
		/* Not modules: ftrace's trampolines and BPF programs have tags of their own. */
		if (mod[0] && is_text(type) && strcmp(mod, "bpf") && strncmp(mod, "__builtin", 9) &&
		    mod_add(&mods, &nr, &cap, mod, addr) < 0) {
			ret = -ENOMEM;
			goto err;
		}
	}
	if (fclose(fk) != 0) {
		fk = NULL;
		ret = -errno;
		goto err;
	}
	fk = NULL;
	snprintf(fn, sizeof(fn), "%s.modules", name);
	ret = create_at(dfd, fn, &fm);
	if (ret < 0)
		goto err;
	qsort(mods, nr, sizeof(*mods), by_lo);
	for (i = 0; i < nr; i++) {
		uint64_t lo = mods[i].lo & ~(uint64_t)(PK_PAGE - 1);
		uint64_t hi = (mods[i].hi | (PK_PAGE - 1)) + 1 + PK_PAGE;

		if (hi < mods[i].hi)			/* wrapped at the top of the address space */
			hi = UINT64_MAX;
		if (i + 1 < nr && hi > (mods[i + 1].lo & ~(uint64_t)(PK_PAGE - 1)))
			hi = mods[i + 1].lo & ~(uint64_t)(PK_PAGE - 1);
		if (hi <= lo)
			hi = lo + PK_PAGE;
		fprintf(fm, "%s %" PRIu64 " 0 - Live 0x%016" PRIx64 "\n", mods[i].name, hi - lo, lo);
	}
	*nmods = nr;
	if (fclose(fm) != 0) {
		fm = NULL;
		ret = -errno;
		goto err;
	}
	fm = NULL;
	if (*nsyms && !nonzero)
		fprintf(stderr, "virtio-trace-collect report: %s/%s.kallsyms: every address is 0 (the "
			"guest's kptr_restrict hid them): perf cannot resolve with it\n", dir, name);
	free(mods);
	return 0;
err:
	if (fk)
		fclose(fk);
	if (fm)
		fclose(fm);
	free(mods);
	return ret;
}

static bool plain(const char *s)
{
	const char *p;

	if (!s || !s[0] || s[0] == '.' || strlen(s) > 200)
		return false;
	for (p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '-' || *p == '.'))
			return false;
	return true;
}

/**
 * pk_write() - report --perf-kvm: each guest's NAME.kallsyms and NAME.modules
 * @dir: the recording
 * @root: its manifest
 * @guest: only this guest (--guest), or NULL for all
 * @out: the directory to write into (made 0700 when missing)
 *
 * The files are made 0600 relative to @out, never through a symbolic link
 * (one already there is removed, not followed). Prints what it wrote and the
 * perf command line, or its errors.
 *
 * Return: 0, -ENOENT (no guest file with kallsyms), or another -errno.
 */
int pk_write(const char *dir, const struct json_value *root, const char *guest, const char *out)
{
	const struct json_value *g = json_get(root, "guests");
	int dfd, ret = 0, done = 0;

	if (mkdir(out, 0700) < 0 && errno != EEXIST) {
		ret = -errno;
		fprintf(stderr, "virtio-trace-collect report: --perf-kvm %s: %s\n", out, strerror(errno));
		return ret;
	}
	dfd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		ret = -errno;
		fprintf(stderr, "virtio-trace-collect report: --perf-kvm %s: %s\n", out, strerror(errno));
		return ret;
	}
	for (g = json_is(g, JSON_ARRAY) ? g->child : NULL; g; g = g->next) {
		const char *name = json_string(json_get(g, "name"));
		const char *file = json_string(json_get(g, "file"));
		struct vt_blob ks = { 0 };
		uint64_t nsyms = 0, dropped = 0;
		size_t nmods = 0;
		char path[4400];
		int r;

		if (guest && (!name || strcmp(name, guest)))
			continue;
		if (!plain(name) || !file || strchr(file, '/') || file[0] == '.') {
			fprintf(stderr, "virtio-trace-collect report: --perf-kvm: a guest's name or file in "
				"%s/manifest.json is not a plain file name: left out\n", dir);
			ret = ret ?: -EBADMSG;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		r = pk_kallsyms(path, &ks);
		if (r == 0 && !ks.len)
			r = -ENOENT;
		if (r == 0)
			r = write_guest(dfd, out, name, &ks, &nsyms, &nmods, &dropped);
		free(ks.data);
		if (r < 0) {
			fprintf(stderr, "virtio-trace-collect report: --perf-kvm: guest %s: %s\n", name,
				r == -ENOENT ? "its file holds no kallsyms" :
				r == -EBADMSG ? "its file is not a trace.dat this version reads" :
				strerror(-r));
			ret = ret ?: r;
			continue;
		}
		done++;
		fprintf(stderr, "virtio-trace-collect report: wrote %s/%s.kallsyms (%" PRIu64 " symbols"
			"%s) and %s/%s.modules (%zu modules, derived from the kallsyms)\n", out, name,
			nsyms, dropped ? ", lines perf cannot read left out" : "", out, name, nmods);
		/*
		 * Both commands take the files: perf kvm record writes the guest's
		 * kernel and module maps into perf.data from them, and a report of a
		 * perf.data recorded without them never opens them, whatever it is
		 * given (perf 6.1, test-kvm-perfkvm).
		 */
		fprintf(stderr, "  perf kvm --guest --guestkallsyms=%s/%s.kallsyms "
			"--guestmodules=%s/%s.modules record -a\n", out, name, out, name);
		fprintf(stderr, "  perf kvm --guest --guestkallsyms=%s/%s.kallsyms "
			"--guestmodules=%s/%s.modules report\n", out, name, out, name);
	}
	close(dfd);
	if (!done && !ret) {
		fprintf(stderr, "virtio-trace-collect report: --perf-kvm: %s has no guest file\n", dir);
		ret = -ENOENT;
	}
	return ret;
}
