// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's configuration: daemon.conf's "key = value" lines, then the
 * command line's --key VALUE, both through conf_set(), so that a value is
 * checked in one place and a refusal names where it came from (FILE:LINE, or
 * the option). Unknown keys are refused: a misspelt budget must not go
 * unnoticed on a service that runs for months.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "daemon/hostfilter.h"
#include "opts.h"
#include "text.h"
#include "trigspec.h"

#define MIB	(1024ull * 1024)

static const char *const keys[] = {
	"domains", "guest", "connect", "libvirt", "mode", "events", "host-events", "window",
	"budget", "total-budget", "min-free", "state-dir", "before", "after", "trigger-panic",
	"trigger-host-filter", "stop-timeout", "trigger-host-cooldown", "trigger-guest-filter",
	NULL,
};

/**
 * conf_keys() - the configuration's keys, NULL-terminated
 *
 * Return: the keys (each is also a --KEY option of `daemon`).
 */
const char *const *conf_keys(void)
{
	return keys;
}

/**
 * conf_is_key() - whether @key is a configuration key
 * @key: the word
 *
 * Return: true if it is.
 */
bool conf_is_key(const char *key)
{
	unsigned int i;

	for (i = 0; keys[i]; i++)
		if (!strcmp(keys[i], key))
			return true;
	return false;
}

/**
 * conf_defaults() - the configuration without a file or options
 * @c: filled in
 */
void conf_defaults(struct daemon_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->all = true;
	c->mode = MODE_HOLD;
	c->window = 60;
	c->total_budget = 1024 * MIB;
	c->min_free = 512 * MIB;
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", DAEMON_STATE_DEFAULT);
	c->before = 30;
	c->after = 5;
	c->panic = true;
	c->host_cooldown = HOSTFILTER_COOLDOWN;
	c->stop_timeout = 60;
}

/**
 * conf_free() - what conf_set() allocated
 * @c: the configuration
 */
void conf_free(struct daemon_conf *c)
{
	free(c->guests);
	c->guests = NULL;
	c->nr_guests = 0;
	free(c->host_filters);
	c->host_filters = NULL;
	c->nr_host_filters = 0;
}

/* A size: a bare number is MiB; else a size with K, M or G. */
static int set_mib(const char *what, const char *val, bool zero_ok, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (end != val && !*end && !errno && val[0] >= '0' && val[0] <= '9' && v < (1ull << 40)) {
		if (!v && !zero_ok) {
			collect_usage("%s '%s': a size, more than 0", what, val);
			return -EINVAL;
		}
		*out = v * MIB;
		return 0;
	}
	return opt_size(what, val, out);
}

static int set_bool(const char *what, const char *val, bool *out)
{
	static const char *const words[] = { "no", "yes", "off", "on", "0", "1", NULL };
	int i = opt_one_of(what, val, words);

	if (i < 0)
		return i;
	*out = i & 1;
	return 0;
}

static int set_text(const char *what, const char *val, char *out, size_t len)
{
	if (strlen(val) >= len) {
		collect_usage("%s: the value is longer than %zu bytes", what, len - 1);
		return -EINVAL;
	}
	snprintf(out, len, "%s", val);
	return 0;
}

/* "events = SYS:EV,...": at most COLLECT_MAX_EVENTS of them, as record takes (its -e words). */
static int set_events(const char *what, const char *val, char *out, size_t len)
{
	unsigned int n = 0;
	const char *p;

	for (p = val; *p; p++)
		if (*p != ',' && (p == val || p[-1] == ','))
			n++;
	if (n > COLLECT_MAX_EVENTS) {
		collect_usage("%s: %u events, at most %d", what, n, COLLECT_MAX_EVENTS);
		return -EINVAL;
	}
	return set_text(what, val, out, len);
}

/* "domains = all", "none", or names separated by commas or blanks. */
static int set_domains(struct daemon_conf *c, const char *what, const char *val)
{
	char buf[sizeof(c->names)], *tok, *save;

	if (!strcmp(val, "all") || !strcmp(val, "none")) {
		c->all = !strcmp(val, "all");
		c->names[0] = '\0';
		return 0;
	}
	if (set_text(what, val, buf, sizeof(buf)) < 0)
		return -EINVAL;
	c->names[0] = '\0';
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		if (!collect_name_ok(tok)) {
			collect_usage("%s: '%s' is not a guest name (letters, digits, '.', '_', '-')",
				      what, tok);
			return -EINVAL;
		}
		snprintf(c->names + strlen(c->names), sizeof(c->names) - strlen(c->names), "%s%s",
			 c->names[0] ? "," : "", tok);
	}
	c->all = false;
	return 0;
}

/* "guest = NAME DIR": a guest whose ports are in DIR (record --chardev-dir). */
static int add_guest(struct daemon_conf *c, const char *what, const char *val)
{
	struct daemon_conf_guest *n, *g;
	const char *sp = strpbrk(val, " \t");
	size_t nl;
	unsigned int i;

	if (!sp || sp == val) {
		collect_usage("%s '%s': NAME DIR (the guest's name and its ports' directory)", what, val);
		return -EINVAL;
	}
	nl = sp - val;
	while (*sp == ' ' || *sp == '\t')
		sp++;
	if (nl >= COLLECT_NAME_MAX || *sp != '/' || strlen(sp) >= sizeof(g->dir)) {
		collect_usage("%s '%s': NAME DIR, DIR an absolute path", what, val);
		return -EINVAL;
	}
	if (c->nr_guests >= DAEMON_MAX_CONF_GUESTS) {
		collect_usage("%s: more than %d guests", what, DAEMON_MAX_CONF_GUESTS);
		return -EINVAL;
	}
	n = realloc(c->guests, (c->nr_guests + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->guests = n;
	g = &n[c->nr_guests];
	memcpy(g->name, val, nl);
	g->name[nl] = '\0';
	snprintf(g->dir, sizeof(g->dir), "%s", sp);
	if (!collect_name_ok(g->name)) {
		collect_usage("%s: '%s' is not a guest name (letters, digits, '.', '_', '-')", what, g->name);
		return -EINVAL;
	}
	for (i = 0; i < c->nr_guests; i++)
		if (!strcmp(c->guests[i].name, g->name)) {
			collect_usage("%s: the guest '%s' is named twice", what, g->name);
			return -EINVAL;
		}
	c->nr_guests++;
	return 0;
}

static int set_mode(struct daemon_conf *c, const char *what, const char *val)
{
	static const char *const modes[] = { "hold", "stream", NULL };
	int i = opt_one_of(what, val, modes);

	if (i < 0)
		return i;
	c->mode = i ? MODE_STREAM : MODE_HOLD;
	return 0;
}

static int set_state_dir(struct daemon_conf *c, const char *what, const char *val)
{
	if (val[0] != '/' || strlen(val) > 80) {
		/* The socket's path must fit sockaddr_un (108 bytes). */
		collect_usage("%s '%s': an absolute path of at most 80 bytes", what, val);
		return -EINVAL;
	}
	return set_text(what, val, c->state_dir, sizeof(c->state_dir));
}

/* trigger-guest-filter: checked here, so that no child is started to refuse it. */
static int set_trigger_guest(struct daemon_conf *c, const char *what, const char *val)
{
	struct trigspec t;

	if (val[0] && trigspec_parse(val, &t, what) < 0)
		return -EINVAL;
	return set_text(what, val, c->trigger_guest, sizeof(c->trigger_guest));
}

/**
 * conf_set() - set one key
 * @c: the configuration
 * @key: the key
 * @val: its value, as written
 * @where: "FILE:LINE" or "--key", for a refusal
 *
 * Return: 0, or -EINVAL after saying why, -ENOMEM.
 */
int conf_set(struct daemon_conf *c, const char *key, const char *val, const char *where)
{
	char what[4200];

	snprintf(what, sizeof(what), "%s%s%s", where, where[0] == '-' ? "" : ": ", where[0] == '-' ? "" : key);
	if (!strcmp(key, "domains"))
		return set_domains(c, what, val);
	if (!strcmp(key, "guest"))
		return add_guest(c, what, val);
	if (!strcmp(key, "connect"))
		return set_text(what, val, c->uri, sizeof(c->uri));
	if (!strcmp(key, "libvirt")) {
		bool on = true;
		int r = set_bool(what, val, &on);

		c->no_libvirt = !on;
		return r;
	}
	if (!strcmp(key, "mode"))
		return set_mode(c, what, val);
	if (!strcmp(key, "events"))
		return set_events(what, val, c->events, sizeof(c->events));
	if (!strcmp(key, "host-events"))
		return set_text(what, val, c->host_events, sizeof(c->host_events));
	if (!strcmp(key, "window"))
		return opt_seconds(what, val, false, 86400, &c->window);
	if (!strcmp(key, "budget"))
		return set_mib(what, val, true, &c->budget);
	if (!strcmp(key, "total-budget"))
		return set_mib(what, val, false, &c->total_budget);
	if (!strcmp(key, "min-free"))
		return set_mib(what, val, true, &c->min_free);
	if (!strcmp(key, "state-dir"))
		return set_state_dir(c, what, val);
	if (!strcmp(key, "before"))
		return opt_seconds(what, val, true, 86400, &c->before);
	if (!strcmp(key, "after"))
		return opt_seconds(what, val, true, 3600, &c->after);
	if (!strcmp(key, "trigger-panic"))
		return set_bool(what, val, &c->panic);
	if (!strcmp(key, "trigger-host-filter"))
		return hostfilter_conf_add(c, what, val);
	if (!strcmp(key, "trigger-host-cooldown"))
		return opt_seconds(what, val, true, 86400, &c->host_cooldown);
	if (!strcmp(key, "stop-timeout"))
		return opt_seconds(what, val, false, 3600, &c->stop_timeout);
	if (!strcmp(key, "trigger-guest-filter"))
		return set_trigger_guest(c, what, val);
	collect_usage("%s: unknown key '%s'", where, key);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* One line of the file; 0 for a comment or a blank line. */
static int conf_line(struct daemon_conf *c, const char *path, unsigned int nr, char *line)
{
	char where[4200], *key, *eq, *val;

	snprintf(where, sizeof(where), "%s:%u", path, nr);
	key = trim(line);
	if (!key[0] || key[0] == '#')
		return 0;
	eq = strchr(key, '=');
	if (!eq) {
		collect_usage("%s: not a 'key = value' line", where);
		return -EINVAL;
	}
	*eq = '\0';
	val = trim(eq + 1);
	key = trim(key);
	if (!conf_is_key(key)) {
		collect_usage("%s: unknown key '%s'", where, key);
		return -EINVAL;
	}
	return conf_set(c, key, val, where);
}

/**
 * conf_load() - read a configuration file
 * @c: the configuration, its defaults set
 * @path: the file
 * @must_exist: a missing file is an error (given with --config); else the defaults stand
 *
 * Return: 0, or -errno after saying why.
 */
int conf_load(struct daemon_conf *c, const char *path, bool must_exist)
{
	char line[DAEMON_LINE_MAX * 5];
	unsigned int nr = 0;
	struct stat st;
	int fd, ret = 0;
	FILE *f;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT && !must_exist)
			return 0;
		ret = -errno;
		collect_usage("%s: %s", path, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		collect_usage("%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (!ret && fgets(line, sizeof(line), f)) {
		nr++;
		if (!strchr(line, '\n') && !feof(f)) {
			collect_usage("%s:%u: the line is too long", path, nr);
			ret = -EINVAL;
			break;
		}
		ret = conf_line(c, path, nr, line);
	}
	fclose(f);
	return ret;
}
