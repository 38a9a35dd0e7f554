// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libvirt guests: `record --domain NAME` and `setup --domain NAME`.
 *
 * record reads the running domain's live XML, which holds the paths libvirt
 * chose for unix channels without a source (…/channel/target/domain-ID-NAME/
 * PORT), finds the trace-path-cpuN and agent-ctl-path channels and fills the
 * same struct guest_link fields --ctl/--cpu do. vCPU thread ids come from QMP
 * query-cpus-fast through libvirt (the top-level "thread-id": the one inside
 * "props" is the CPU topology's thread number), else from the QEMU process's
 * thread names.
 *
 * setup edits the persistent definition. What it adds is recorded in a
 * <metadata> element of its own namespace (backend, dir, vCPUs, controller
 * indexes), so that a second --apply can tell there is nothing to do and
 * --remove takes away exactly the controllers apply added and the channels
 * named for trace-agent, nothing a user wrote.
 *
 * The XML comes from libvirt, but is still read with bounds: sizes, counts
 * and every string are checked before use.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include "collect.h"
#include "libvirt.h"
#include "list.h"
#include "text.h"

#define LV_CTL_NAME		"agent-ctl-path"
#define LV_DATA_PREFIX		"trace-path-cpu"
#define LV_MAX_VCPUS		1024
#define LV_PORTS_PER_CTL	30
#define LV_XML_MAX		(16u << 20)
#define LV_META_NS		"https://virtio-trace.invalid/libvirt/1"
#define LV_META_PREFIX		"vtrace"
#define LV_QEMU_CONF		"/etc/libvirt/qemu.conf"

/* libvirt prints every error on stderr by default; ours say what to do instead. */
static void lv_quiet(void *data, virErrorPtr err)
{
	(void)data;
	(void)err;
}

static const char *lv_errmsg(void)
{
	const char *m = virGetLastErrorMessage();

	return m && *m ? m : "unknown error";
}

/* " --connect URI" for the commands our messages print, "" for the default. */
static void lv_connect_arg(char *buf, size_t len, const char *uri)
{
	if (uri && *uri)
		snprintf(buf, len, " --connect '%s'", uri);
	else
		buf[0] = 0;
}

static bool lv_permission_error(void)
{
	virErrorPtr e = virGetLastError();

	if (!e)
		return false;
	return e->code == VIR_ERR_AUTH_FAILED || e->code == VIR_ERR_ACCESS_DENIED ||
	       e->code == VIR_ERR_AUTH_CANCELLED || e->code == VIR_ERR_AUTH_UNAVAILABLE ||
	       (e->message && (strstr(e->message, "Permission denied") ||
			       strstr(e->message, "authentication")));
}

static virConnectPtr lv_open(const char *uri)
{
	virConnectPtr conn;

	virSetErrorFunc(NULL, lv_quiet);
	conn = virConnectOpen(uri && *uri ? uri : NULL);
	if (conn)
		return conn;
	/*
	 * A user who may not use the system daemon often sees no "denied" at all
	 * but polkit's or the socket's own error: say what it most likely means.
	 */
	if (lv_permission_error() ||
	    (geteuid() != 0 && !(uri && strstr(uri, "/session"))))
		log_err("libvirt %s: permission denied (%s): run as root, or as a member of the "
			"libvirt group, or give --connect qemu:///session for your own domains",
			uri && *uri ? uri : "(default URI)", lv_errmsg());
	else
		log_err("cannot connect to libvirt %s: %s: is libvirtd (or virtqemud) running? "
			"--connect URI picks another connection", uri && *uri ? uri : "(default URI)",
			lv_errmsg());
	return NULL;
}

/* --- the XML --- */

/**
 * struct lv_chan - one virtio channel of a domain
 * @name: the target name
 * @type: pipe, unix, ...
 * @path: the source path ("" if none)
 * @mode: the source mode for unix ("bind" when QEMU listens)
 * @node: the <channel> element
 */
struct lv_chan {
	char name[64];
	char type[16];
	char path[4096];
	char mode[16];
	int controller;
	xmlNodePtr node;
};

struct lv_dom {
	xmlDocPtr doc;
	xmlXPathContextPtr ctx;
	unsigned int vcpus;
	struct lv_chan *chans;		/* ours only: trace-path-cpuN and agent-ctl-path */
	unsigned int nr_chans;
	xmlNodePtr meta;		/* our <vtrace:ports>, or NULL */
};

static xmlNodePtr lv_child(xmlNodePtr n, const char *name)
{
	for (n = n ? n->children : NULL; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE && xmlStrEqual(n->name, BAD_CAST name))
			return n;
	return NULL;
}

/* Attribute @name of @n into @buf; false when absent or too long. */
static bool lv_attr(xmlNodePtr n, const char *name, char *buf, size_t len)
{
	xmlChar *v;
	bool ok;

	buf[0] = 0;
	if (!n)
		return false;
	v = xmlGetProp(n, BAD_CAST name);
	if (!v)
		return false;
	ok = strlen((const char *)v) < len;
	if (ok)
		memcpy(buf, v, strlen((const char *)v) + 1);
	xmlFree(v);
	return ok;
}

static bool lv_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !errno && !*end && *out <= max;
}

/* trace-path-cpuN -> N, agent-ctl-path -> -1, anything else -> -2. */
static int lv_port_index(const char *name)
{
	unsigned long v;

	if (!strcmp(name, LV_CTL_NAME))
		return -1;
	if (strncmp(name, LV_DATA_PREFIX, strlen(LV_DATA_PREFIX)))
		return -2;
	if (!lv_uint(name + strlen(LV_DATA_PREFIX), LV_MAX_VCPUS - 1, &v))
		return -2;
	/* "trace-path-cpu01" is not a name setup makes. */
	if (name[strlen(LV_DATA_PREFIX)] == '0' && name[strlen(LV_DATA_PREFIX) + 1])
		return -2;
	return (int)v;
}

static void lv_dom_free(struct lv_dom *d)
{
	free(d->chans);
	if (d->ctx)
		xmlXPathFreeContext(d->ctx);
	if (d->doc)
		xmlFreeDoc(d->doc);
	memset(d, 0, sizeof(*d));
}

static xmlXPathObjectPtr lv_xpath(struct lv_dom *d, const char *expr)
{
	xmlXPathObjectPtr r = xmlXPathEvalExpression(BAD_CAST expr, d->ctx);

	if (r && (r->type != XPATH_NODESET || !r->nodesetval)) {
		xmlXPathFreeObject(r);
		return NULL;
	}
	return r;
}

/*
 * Parse a domain's XML: its vCPU count, our channels and our metadata.
 * Return: 0, -EBADMSG (not a domain, bad vCPU count, an unusable channel
 * element; @why says which), -E2BIG or -ENOMEM.
 */
static int lv_dom_parse(struct lv_dom *d, const char *xml, char *why, size_t whylen)
{
	xmlXPathObjectPtr r;
	xmlNodePtr n, t, s, a;
	unsigned long v;
	char buf[64];
	int i, ret = -EBADMSG;

	memset(d, 0, sizeof(*d));
	why[0] = 0;
	if (strlen(xml) > LV_XML_MAX) {
		snprintf(why, whylen, "the domain XML is larger than %u bytes", LV_XML_MAX);
		return -E2BIG;
	}
	d->doc = xmlReadMemory(xml, strlen(xml), "domain.xml", NULL,
			       XML_PARSE_NONET | XML_PARSE_NOBLANKS | XML_PARSE_NOERROR |
			       XML_PARSE_NOWARNING);
	if (!d->doc || !xmlDocGetRootElement(d->doc) ||
	    !xmlStrEqual(xmlDocGetRootElement(d->doc)->name, BAD_CAST "domain")) {
		snprintf(why, whylen, "libvirt returned XML that is not a <domain>");
		goto err;
	}
	d->ctx = xmlXPathNewContext(d->doc);
	if (!d->ctx || xmlXPathRegisterNs(d->ctx, BAD_CAST LV_META_PREFIX, BAD_CAST LV_META_NS)) {
		ret = -ENOMEM;
		goto err;
	}

	r = lv_xpath(d, "/domain/vcpu");
	if (!r || r->nodesetval->nodeNr != 1) {
		snprintf(why, whylen, "the domain has no single <vcpu> element");
		xmlXPathFreeObject(r);
		goto err;
	}
	{
		xmlChar *txt = xmlNodeGetContent(r->nodesetval->nodeTab[0]);
		bool ok = txt && lv_uint((const char *)txt, LV_MAX_VCPUS, &v) && v;

		xmlFree(txt);
		xmlXPathFreeObject(r);
		if (!ok) {
			snprintf(why, whylen, "the domain's <vcpu> is not a count of 1..%d", LV_MAX_VCPUS);
			goto err;
		}
		d->vcpus = v;
	}

	r = lv_xpath(d, "/domain/metadata/" LV_META_PREFIX ":ports");
	if (r && r->nodesetval->nodeNr >= 1)
		d->meta = r->nodesetval->nodeTab[0];
	xmlXPathFreeObject(r);

	r = lv_xpath(d, "/domain/devices/channel");
	if (!r)
		return 0;
	if (r->nodesetval->nodeNr > 4 * LV_MAX_VCPUS) {
		snprintf(why, whylen, "the domain has %d channels", r->nodesetval->nodeNr);
		xmlXPathFreeObject(r);
		ret = -E2BIG;
		goto err;
	}
	d->chans = calloc(r->nodesetval->nodeNr + 1, sizeof(*d->chans));
	if (!d->chans) {
		xmlXPathFreeObject(r);
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < r->nodesetval->nodeNr; i++) {
		struct lv_chan *c = &d->chans[d->nr_chans];

		n = r->nodesetval->nodeTab[i];
		t = lv_child(n, "target");
		if (!lv_attr(t, "type", buf, sizeof(buf)) || strcmp(buf, "virtio"))
			continue;
		if (!lv_attr(t, "name", c->name, sizeof(c->name)) || lv_port_index(c->name) < -1)
			continue;
		lv_attr(n, "type", c->type, sizeof(c->type));
		s = lv_child(n, "source");
		if (s && xmlHasProp(s, BAD_CAST "path") && !lv_attr(s, "path", c->path, sizeof(c->path))) {
			snprintf(why, whylen, "channel %s: the source path is too long", c->name);
			xmlXPathFreeObject(r);
			goto err;
		}
		lv_attr(s, "mode", c->mode, sizeof(c->mode));
		a = lv_child(n, "address");
		c->controller = -1;
		if (lv_attr(a, "controller", buf, sizeof(buf)) && lv_uint(buf, INT_MAX, &v))
			c->controller = v;
		c->node = n;
		d->nr_chans++;
	}
	xmlXPathFreeObject(r);
	return 0;

err:
	lv_dom_free(d);
	return ret;
}

static struct lv_chan *lv_find(struct lv_dom *d, const char *name)
{
	unsigned int i;

	for (i = 0; i < d->nr_chans; i++)
		if (!strcmp(d->chans[i].name, name))
			return &d->chans[i];
	return NULL;
}

/* Read the domain's XML (live, or with @flags the persistent one) into @d. */
static int lv_load(virDomainPtr dom, unsigned int flags, struct lv_dom *d, const char *name)
{
	char *xml = virDomainGetXMLDesc(dom, flags);
	char why[256] = "";
	int ret;

	if (!xml) {
		log_err("domain %s: cannot read its XML: %s", name, lv_errmsg());
		return lv_permission_error() ? -EACCES : -EIO;
	}
	ret = lv_dom_parse(d, xml, why, sizeof(why));
	free(xml);
	if (ret < 0)
		log_err("domain %s: %s", name, why[0] ? why : strerror(-ret));
	return ret;
}

/* --- record --domain --- */

static pid_t lv_pidfile(const char *path)
{
	char buf[32];
	FILE *f = fopen(path, "r");
	long pid = 0;

	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		pid = strtol(buf, NULL, 10);
	fclose(f);
	return pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

/*
 * QEMU's pid, from the daemon's pid file (system, then session). The vCPU
 * threads are not asked of QEMU: virDomainQemuMonitorCommand() would mark the
 * domain tainted (custom-monitor), and libvirt starts QEMU with
 * debug-threads=on, so record reads the map from the threads' names ("CPU
 * n/KVM", find_vcpu_threads()).
 */
static void lv_find_qemu(virDomainPtr dom, struct guest_link *g)
{
	const char *name = virDomainGetName(dom), *xdg;
	char path[PATH_MAX];
	struct stat st;
	pid_t pid;

	if (g->qemu_pid)
		return;		/* --qemu-pid said which */
	snprintf(path, sizeof(path), "/run/libvirt/qemu/%s.pid", name);
	pid = lv_pidfile(path);
	xdg = getenv("XDG_RUNTIME_DIR");
	if (!pid && xdg) {
		snprintf(path, sizeof(path), "%s/libvirt/qemu/run/%s.pid", xdg, name);
		pid = lv_pidfile(path);
	}
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (pid && stat(path, &st) == 0) {
		g->qemu_pid = pid;
		log_debug("domain %s: QEMU pid %d (its pid file)", name, (int)pid);
	} else {
		log_warn("domain %s: QEMU's process was not found (is this the domain's host?): "
			 "no KVM clock offsets and no vCPU thread map", name);
	}
}

/* A channel path the collector cannot open is a permission problem worth naming now. */
static int lv_check_access(const char *guest, const char *path, bool pipe)
{
	char out[4200];
	const char *p = path;

	if (pipe) {
		snprintf(out, sizeof(out), "%s.out", path);
		p = out;
	}
	if (access(p, R_OK | W_OK) == 0 || errno != EACCES)
		return 0;
	log_err("guest %s: permission denied on %s: run virtio-trace-collect as root (or as "
		"the user QEMU runs as)", guest, p);
	return -EACCES;
}

static int lv_fill_guest(struct lv_dom *d, struct guest_link *g, const char *guest, const char *dname,
			 const char *conn_arg, virDomainPtr dom)
{
	unsigned int i, ndata = 0;
	struct lv_chan *c;
	char name[64];

	for (i = 0; i < d->nr_chans; i++)
		ndata += lv_port_index(d->chans[i].name) >= 0;
	if (ndata != d->vcpus) {
		log_err("domain %s has %u trace-path-cpuN channels for %u vCPUs: run "
			"`virtio-trace-collect setup --domain %s%s --apply` again (it rewrites the "
			"channels for the current vCPU count), then restart the domain", dname, ndata,
			d->vcpus, dname, conn_arg);
		return -EINVAL;
	}
	if (d->vcpus > COLLECT_MAX_CPUS) {
		log_err("domain %s has %u vCPUs: record handles at most %d", dname, d->vcpus,
			COLLECT_MAX_CPUS);
		return -E2BIG;
	}
	for (i = 0; i <= d->vcpus; i++) {
		if (i < d->vcpus)
			snprintf(name, sizeof(name), LV_DATA_PREFIX "%u", i);
		else
			snprintf(name, sizeof(name), LV_CTL_NAME);
		c = lv_find(d, name);
		if (!c) {
			log_err("domain %s has no channel %s: run `virtio-trace-collect setup --domain "
				"%s%s --apply`, then restart the domain", dname, name, dname, conn_arg);
			return -ENOENT;
		}
		if (strcmp(c->type, "pipe") && strcmp(c->type, "unix")) {
			log_err("domain %s: channel %s is of type '%s': record reads pipe and unix "
				"channels; run `virtio-trace-collect setup --domain %s%s --remove`, "
				"then --apply, and restart the domain", dname, name, c->type, dname,
				conn_arg);
			return -EINVAL;
		}
		if (!strcmp(c->type, "unix") && c->mode[0] && strcmp(c->mode, "bind")) {
			log_err("domain %s: channel %s is a unix socket QEMU connects to (mode '%s'): "
				"use mode='bind' (setup --domain %s --apply makes such channels)", dname,
				name, c->mode, dname);
			return -EINVAL;
		}
		if (!c->path[0]) {
			log_err("domain %s: channel %s has no source path in the live XML%s", dname, name,
				virDomainIsActive(dom) == 1 ? "" : " (is it running?)");
			return -EINVAL;
		}
		if (lv_check_access(guest, c->path, !strcmp(c->type, "pipe")) < 0)
			return -EACCES;
		if (i == d->vcpus) {
			snprintf(g->ctl_path, sizeof(g->ctl_path), "%s", c->path);
			continue;
		}
		g->cpu_paths[i] = strdup(c->path);
		if (!g->cpu_paths[i])
			return -ENOMEM;
		g->nr_cpu_paths = i + 1;
	}
	return 0;
}

/* Every channel record needs is in the live XML: one per vCPU and the control port (hot-plugged last). */
static bool lv_chans_live(struct lv_dom *d)
{
	char name[64];
	unsigned int i;

	for (i = 0; i < d->vcpus; i++) {
		snprintf(name, sizeof(name), LV_DATA_PREFIX "%u", i);
		if (!lv_find(d, name))
			return false;
	}
	return lv_find(d, LV_CTL_NAME) != NULL;
}

/* After "no channels": were they added to the definition but not booted yet? */
static unsigned int lv_persistent_ports(virDomainPtr dom)
{
	char why[256], *xml;
	struct lv_dom d;
	unsigned int n;

	if (virDomainIsPersistent(dom) != 1)
		return 0;
	xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_INACTIVE);
	if (!xml)
		return 0;
	if (lv_dom_parse(&d, xml, why, sizeof(why)) < 0) {
		free(xml);
		return 0;
	}
	n = d.nr_chans;
	lv_dom_free(&d);
	free(xml);
	return n;
}

/**
 * libvirt_guest_from_conn() - fill a --domain guest's ports, QEMU pid, vCPU threads and UUID
 * @conn: an open libvirt connection
 * @g: the guest's link; @g->domain names the domain
 * @guest: the guest's name, for messages
 * @uri: the URI @conn was opened with (NULL: the default), for the commands messages print
 *
 * The guest's ports become --ctl/--cpu paths: a pipe channel's base path
 * (PATH.in/PATH.out) or a unix channel's socket.
 *
 * Return: 0, or -errno after a message that says what to do.
 */
int libvirt_guest_from_conn(struct _virConnect *conn, struct guest_link *g, const char *guest,
			    const char *uri)
{
	char conn_arg[1200];
	const char *name = g->domain;
	virDomainPtr dom;
	struct lv_dom d;
	unsigned int n;
	int ret;

	lv_connect_arg(conn_arg, sizeof(conn_arg), uri);
	dom = virDomainLookupByName(conn, name);
	if (!dom) {
		if (lv_permission_error()) {
			log_err("domain %s: permission denied (%s): run as root or as a member of the "
				"libvirt group", name, lv_errmsg());
			return -EACCES;
		}
		log_err("domain %s not found at %s: `virsh%s list --all` shows the domains there "
			"(--connect URI picks another libvirt)", name, uri && *uri ? uri : "the default URI",
			conn_arg);
		return -ENOENT;
	}
	ret = virDomainIsActive(dom);
	if (ret != 1 && g->wait) {
		ret = -EAGAIN;		/* record --wait: it may start */
		goto out_dom;
	}
	if (ret != 1) {
		log_err("domain %s is not running: start it (`virsh%s start %s`), then record", name,
			conn_arg, name);
		ret = -ESRCH;
		goto out_dom;
	}
	ret = lv_load(dom, 0, &d, name);
	if (ret < 0)
		goto out_dom;
	if (g->wait && !lv_chans_live(&d)) {
		ret = -EAGAIN;		/* record --wait: the channels may be hot-plugged */
		goto out_d;
	}
	if (!d.nr_chans) {
		n = lv_persistent_ports(dom);
		if (n)
			log_err("domain %s has no trace channels yet: its persistent definition has them "
				"(%u), they take effect at the next boot: restart it (`virsh shutdown %s`, "
				"then `virsh start %s`)", name, n, name, name);
		else
			log_err("domain %s has no trace channels: run `virtio-trace-collect setup "
				"--domain %s%s --apply`, then restart the domain", name, name, conn_arg);
		ret = -ENOENT;
		goto out_d;
	}
	ret = lv_fill_guest(&d, g, guest, name, conn_arg, dom);
	if (ret < 0)
		goto out_d;
	lv_find_qemu(dom, g);
	/* What the host knows of this VM, that its guest cannot choose (record/kcache.c). */
	if (virDomainGetUUIDString(dom, g->uuid) < 0)
		g->uuid[0] = '\0';
	log_debug("domain %s: %u vCPUs, control port %s", name, d.vcpus, g->ctl_path);
out_d:
	lv_dom_free(&d);
out_dom:
	virDomainFree(dom);
	return ret;
}

/**
 * libvirt_guest_resolve() - libvirt_guest_from_conn() on a connection to @uri
 * @g: the guest's link, @g->domain set
 * @guest: the guest's name, for messages
 * @uri: the libvirt URI, NULL or "" for libvirt's default
 *
 * Return: 0 or -errno, after a message.
 */
int libvirt_guest_resolve(struct guest_link *g, const char *guest, const char *uri)
{
	virConnectPtr conn = lv_open(uri);
	int ret;

	if (!conn)
		return lv_permission_error() ? -EACCES : -ECONNREFUSED;
	ret = libvirt_guest_from_conn(conn, g, guest, uri);
	virConnectClose(conn);
	return ret;
}

/* --- setup --domain --- */

static bool lv_meta_matches(struct lv_dom *d, const struct libvirt_setup *s)
{
	char buf[4200];
	unsigned long v;

	if (!d->meta)
		return false;
	if (!lv_attr(d->meta, "backend", buf, sizeof(buf)) ||
	    strcmp(buf, s->unix_backend ? "unix" : "pipe"))
		return false;
	lv_attr(d->meta, "dir", buf, sizeof(buf));
	if (strcmp(buf, s->dir))
		return false;
	return lv_attr(d->meta, "vcpus", buf, sizeof(buf)) && lv_uint(buf, LV_MAX_VCPUS, &v) &&
	       v == d->vcpus;
}

/* Our channels are complete: one per vCPU plus the control port, of the wanted type. */
static bool lv_chans_complete(struct lv_dom *d, bool unix_backend)
{
	unsigned int i, ndata = 0;
	struct lv_chan *c;

	for (i = 0; i < d->nr_chans; i++) {
		if (strcmp(d->chans[i].type, unix_backend ? "unix" : "pipe"))
			return false;
		ndata += lv_port_index(d->chans[i].name) >= 0;
	}
	if (ndata != d->vcpus || d->nr_chans != d->vcpus + 1)
		return false;
	c = lv_find(d, LV_CTL_NAME);
	if (!c)
		return false;
	for (i = 0; i < d->vcpus; i++) {
		char name[64];

		snprintf(name, sizeof(name), LV_DATA_PREFIX "%u", i);
		if (!lv_find(d, name))
			return false;
	}
	return true;
}

static void lv_unlink_node(xmlNodePtr n)
{
	xmlUnlinkNode(n);
	xmlFreeNode(n);
}

/* Controller indexes recorded in our metadata ("1 2"), at most @max. */
static unsigned int lv_meta_controllers(struct lv_dom *d, unsigned long *idx, unsigned int max)
{
	char buf[1024], *p, *tok, *save = NULL;
	unsigned int n = 0;

	if (!d->meta || !lv_attr(d->meta, "controllers", buf, sizeof(buf)))
		return 0;
	for (p = buf; (tok = strtok_r(p, " ", &save)) && n < max; p = NULL)
		if (lv_uint(tok, INT_MAX, &idx[n]))
			n++;
	return n;
}

/*
 * Remove what an earlier apply added: our channels, the controllers listed in
 * the metadata when nothing else uses them, the metadata. Return: elements removed.
 */
static unsigned int lv_remove_ours(struct lv_dom *d, unsigned int *nchan, unsigned int *nctl)
{
	unsigned long idx[LV_MAX_VCPUS / LV_PORTS_PER_CTL + 2];
	unsigned int n, i, k;
	xmlXPathObjectPtr r;
	char buf[64];

	*nchan = *nctl = 0;
	n = lv_meta_controllers(d, idx, sizeof(idx) / sizeof(idx[0]));
	for (i = 0; i < d->nr_chans; i++) {
		lv_unlink_node(d->chans[i].node);
		(*nchan)++;
	}
	d->nr_chans = 0;
	for (k = 0; k < n; k++) {
		bool used = false;
		xmlNodePtr ctl = NULL;
		char expr[160];
		int j;

		snprintf(expr, sizeof(expr), "/domain/devices/*/address[@type='virtio-serial' and "
			 "@controller='%lu']", idx[k]);
		r = lv_xpath(d, expr);
		used = r && r->nodesetval->nodeNr > 0;
		xmlXPathFreeObject(r);
		if (used)
			continue;	/* a user's device is on it now: leave it */
		r = lv_xpath(d, "/domain/devices/controller[@type='virtio-serial']");
		for (j = 0; r && j < r->nodesetval->nodeNr; j++) {
			unsigned long v;

			if (lv_attr(r->nodesetval->nodeTab[j], "index", buf, sizeof(buf)) &&
			    lv_uint(buf, INT_MAX, &v) && v == idx[k])
				ctl = r->nodesetval->nodeTab[j];
		}
		xmlXPathFreeObject(r);
		if (ctl) {
			lv_unlink_node(ctl);
			(*nctl)++;
		}
	}
	if (d->meta) {
		xmlNodePtr parent = d->meta->parent;

		lv_unlink_node(d->meta);
		d->meta = NULL;
		/* An empty <metadata> left behind would be a change the user did not make. */
		if (parent && !xmlFirstElementChild(parent))
			lv_unlink_node(parent);
	}
	return *nchan + *nctl;
}

static xmlNodePtr lv_add_elem(xmlNodePtr parent, const char *name)
{
	return xmlNewChild(parent, NULL, BAD_CAST name, NULL);
}

static void lv_set_uint(xmlNodePtr n, const char *name, unsigned long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lu", v);
	xmlSetProp(n, BAD_CAST name, BAD_CAST buf);
}

/* Add the controllers, channels and metadata. Return: the first controller index or -errno. */
static int lv_add_ours(struct lv_dom *d, const struct libvirt_setup *s)
{
	unsigned int nports = d->vcpus + 1, nctl, i;
	xmlNodePtr root = xmlDocGetRootElement(d->doc), devices, n, src, meta;
	unsigned long base = 0, v;
	xmlXPathObjectPtr r;
	char buf[4200], list[1024];
	size_t len = 0;
	xmlNsPtr ns;
	int j;

	devices = lv_child(root, "devices");
	if (!devices)
		devices = lv_add_elem(root, "devices");
	if (!devices)
		return -ENOMEM;
	/* Our controllers go after every existing virtio-serial one. */
	r = lv_xpath(d, "/domain/devices/controller[@type='virtio-serial']");
	for (j = 0; r && j < r->nodesetval->nodeNr; j++)
		if (lv_attr(r->nodesetval->nodeTab[j], "index", buf, sizeof(buf)) &&
		    lv_uint(buf, INT_MAX - 64, &v) && v + 1 > base)
			base = v + 1;
	xmlXPathFreeObject(r);
	/* A channel without a controller element still gets controller 0 from libvirt. */
	r = lv_xpath(d, "/domain/devices/*/address[@type='virtio-serial']");
	for (j = 0; r && j < r->nodesetval->nodeNr; j++)
		if (lv_attr(r->nodesetval->nodeTab[j], "controller", buf, sizeof(buf)) &&
		    lv_uint(buf, INT_MAX - 64, &v) && v + 1 > base)
			base = v + 1;
	xmlXPathFreeObject(r);

	nctl = (nports + LV_PORTS_PER_CTL - 1) / LV_PORTS_PER_CTL;
	for (i = 0; i < nctl; i++) {
		n = lv_add_elem(devices, "controller");
		if (!n)
			return -ENOMEM;
		xmlSetProp(n, BAD_CAST "type", BAD_CAST "virtio-serial");
		lv_set_uint(n, "index", base + i);
		lv_set_uint(n, "ports", LV_PORTS_PER_CTL + 1);
		len += snprintf(list + len, sizeof(list) - len, "%s%lu", i ? " " : "", base + i);
		if (len >= sizeof(list))
			return -E2BIG;
	}
	for (i = 0; i < nports; i++) {
		char name[64];

		if (i < d->vcpus)
			snprintf(name, sizeof(name), LV_DATA_PREFIX "%u", i);
		else
			snprintf(name, sizeof(name), LV_CTL_NAME);
		n = lv_add_elem(devices, "channel");
		if (!n)
			return -ENOMEM;
		xmlSetProp(n, BAD_CAST "type", BAD_CAST(s->unix_backend ? "unix" : "pipe"));
		if (s->dir[0]) {
			src = lv_add_elem(n, "source");
			if (!src)
				return -ENOMEM;
			if (s->unix_backend)
				xmlSetProp(src, BAD_CAST "mode", BAD_CAST "bind");
			snprintf(buf, sizeof(buf), "%s/%s", s->dir, name);
			xmlSetProp(src, BAD_CAST "path", BAD_CAST buf);
		}
		src = lv_add_elem(n, "target");
		xmlSetProp(src, BAD_CAST "type", BAD_CAST "virtio");
		xmlSetProp(src, BAD_CAST "name", BAD_CAST name);
		src = lv_add_elem(n, "address");
		xmlSetProp(src, BAD_CAST "type", BAD_CAST "virtio-serial");
		lv_set_uint(src, "controller", base + i / LV_PORTS_PER_CTL);
		xmlSetProp(src, BAD_CAST "bus", BAD_CAST "0");
		lv_set_uint(src, "port", i % LV_PORTS_PER_CTL + 1);
	}
	n = lv_child(root, "metadata");
	if (!n)
		n = lv_add_elem(root, "metadata");
	if (!n)
		return -ENOMEM;
	meta = xmlNewChild(n, NULL, BAD_CAST "ports", NULL);
	if (!meta)
		return -ENOMEM;
	ns = xmlNewNs(meta, BAD_CAST LV_META_NS, BAD_CAST LV_META_PREFIX);
	xmlSetNs(meta, ns);
	xmlSetProp(meta, BAD_CAST "backend", BAD_CAST(s->unix_backend ? "unix" : "pipe"));
	xmlSetProp(meta, BAD_CAST "dir", BAD_CAST s->dir);
	lv_set_uint(meta, "vcpus", d->vcpus);
	xmlSetProp(meta, BAD_CAST "controllers", BAD_CAST list);
	d->meta = meta;
	return (int)base;
}

static int lv_define(virConnectPtr conn, struct lv_dom *d, const char *name)
{
	xmlChar *out = NULL;
	virDomainPtr dom;
	int size = 0;

	xmlDocDumpFormatMemory(d->doc, &out, &size, 1);
	if (!out)
		return -ENOMEM;
	dom = virDomainDefineXML(conn, (const char *)out);
	xmlFree(out);
	if (!dom) {
		if (lv_permission_error()) {
			log_err("domain %s: permission denied redefining it (%s): run setup as root or "
				"as a member of the libvirt group", name, lv_errmsg());
			return -EACCES;
		}
		log_err("domain %s: libvirt refused the new definition: %s", name, lv_errmsg());
		return -EINVAL;
	}
	virDomainFree(dom);
	return 0;
}

/* QEMU's user and group from qemu.conf (`user = "..."`), else libvirt's defaults. */
static void lv_qemu_owner(uid_t *uid, gid_t *gid, char *desc, size_t len)
{
	char line[512], user[128] = "libvirt-qemu", group[128] = "libvirt-qemu", key[16], val[128];
	struct passwd *pw;
	struct group *gr;
	FILE *f = fopen(LV_QEMU_CONF, "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %15[a-z] = \"%127[^\"]\"", key, val) != 2)
			continue;
		if (!strcmp(key, "user"))
			snprintf(user, sizeof(user), "%s", val);
		else if (!strcmp(key, "group"))
			snprintf(group, sizeof(group), "%s", val);
	}
	if (f)
		fclose(f);
	/* "+N" is a numeric id in qemu.conf. */
	pw = user[0] == '+' ? getpwuid(strtoul(user + 1, NULL, 10)) : getpwnam(user);
	gr = group[0] == '+' ? getgrgid(strtoul(group + 1, NULL, 10)) : getgrnam(group);
	*uid = pw ? pw->pw_uid : 0;
	*gid = gr ? gr->gr_gid : (pw ? pw->pw_gid : 0);
	snprintf(desc, len, "%s:%s", pw ? pw->pw_name : "root",
		 gr ? gr->gr_name : (pw ? pw->pw_name : "root"));
}

/* DIR/PORT.in and .out for every port, owned by QEMU's user, mode 0600. */
static int lv_make_fifos(const struct libvirt_setup *s, unsigned int vcpus, char *owner, size_t len)
{
	const char *sfx[2] = { ".in", ".out" };
	char path[PATH_MAX];
	unsigned int i, k;
	struct stat st;
	uid_t uid;
	gid_t gid;
	int ret;

	lv_qemu_owner(&uid, &gid, owner, len);
	ret = collect_mkdirs(s->dir);
	if (ret < 0) {
		log_err("cannot create %s: %s%s", s->dir, strerror(-ret),
			ret == -EACCES ? " (run setup as root, or give --dir a directory you may "
			"write to)" : "");
		return ret;
	}
	for (i = 0; i <= vcpus; i++) {
		for (k = 0; k < 2; k++) {
			if (i < vcpus)
				ret = snprintf(path, sizeof(path), "%s/" LV_DATA_PREFIX "%u%s", s->dir, i,
					       sfx[k]);
			else
				ret = snprintf(path, sizeof(path), "%s/" LV_CTL_NAME "%s", s->dir, sfx[k]);
			if (ret >= (int)sizeof(path)) {
				log_err("%s: the path is too long", s->dir);
				return -ENAMETOOLONG;
			}
			if (mkfifo(path, 0600) < 0 && errno != EEXIST) {
				ret = -errno;
				goto err;
			}
			if (lstat(path, &st) < 0) {
				ret = -errno;
				goto err;
			}
			if (!S_ISFIFO(st.st_mode)) {
				log_err("%s exists and is not a FIFO: remove it and run setup again", path);
				return -EEXIST;
			}
			/* Only root can give files away; others keep their FIFOs (session QEMU runs as them). */
			if (geteuid() == 0 && (st.st_uid != uid || st.st_gid != gid) &&
			    lchown(path, uid, gid) < 0) {
				ret = -errno;
				goto err;
			}
			if ((st.st_mode & 07777) != 0600 && chmod(path, 0600) < 0) {
				ret = -errno;
				goto err;
			}
		}
	}
	return 0;
err:
	log_err("cannot create the FIFO %s: %s%s", path, strerror(-ret),
		ret == -EACCES || ret == -EPERM ? " (run setup as root, or give --dir a directory "
		"you may write to)" : "");
	return ret;
}

/* --- setup --domain --live: the running domain, no reboot --- */

/* Unplug one device of the running domain, given its element from the live XML. */
static int lv_detach_node(virDomainPtr dom, xmlNodePtr node, const char *name)
{
	xmlBufferPtr buf = xmlBufferCreate();
	int ret = -ENOMEM;

	if (!buf)
		return ret;
	if (xmlNodeDump(buf, node->doc, node, 0, 0) > 0) {
		ret = 0;
		if (virDomainDetachDeviceFlags(dom, (const char *)xmlBufferContent(buf),
					       VIR_DOMAIN_AFFECT_LIVE) < 0) {
			log_err("domain %s: libvirt did not unplug a channel: %s", name, lv_errmsg());
			ret = lv_permission_error() ? -EACCES : -EIO;
		}
	}
	xmlBufferFree(buf);
	return ret;
}

/* A free virtio-serial address of the running domain. */
struct lv_slot {
	unsigned int controller;
	unsigned int port;
};

/*
 * Free virtio-serial ports of the running domain, in controller order, at
 * most LV_PORTS_PER_CTL per controller (more were seen to lose ports in the
 * guest) and below each controller's ports count (QEMU's max_ports, 31 by
 * default; port 0 is left to consoles). libvirt cannot hot-plug a
 * virtio-serial controller: only those the domain runs with count.
 * Return: the number of free ports found, at most @max; @nctl is set to the
 * number of virtio-serial controllers.
 */
static unsigned int lv_free_slots(struct lv_dom *d, struct lv_slot *slots, unsigned int max,
				  unsigned int *nctl)
{
	xmlXPathObjectPtr r, u;
	unsigned long idx, ports, port;
	unsigned int n = 0, p, last;
	char buf[64], expr[200];
	bool used[LV_PORTS_PER_CTL + 1];
	int j, k;

	*nctl = 0;
	r = lv_xpath(d, "/domain/devices/controller[@type='virtio-serial']");
	for (j = 0; r && j < r->nodesetval->nodeNr && n < max; j++) {
		xmlNodePtr c = r->nodesetval->nodeTab[j];

		if (!lv_attr(c, "index", buf, sizeof(buf)) || !lv_uint(buf, INT_MAX, &idx))
			continue;
		(*nctl)++;
		ports = 31;
		if (lv_attr(c, "ports", buf, sizeof(buf)) && !lv_uint(buf, 65536, &ports))
			continue;
		last = ports > LV_PORTS_PER_CTL ? LV_PORTS_PER_CTL : (ports ? ports - 1 : 0);
		memset(used, 0, sizeof(used));
		snprintf(expr, sizeof(expr), "/domain/devices/*/address[@type='virtio-serial' and "
			 "@controller='%lu']", idx);
		u = lv_xpath(d, expr);
		for (k = 0; u && k < u->nodesetval->nodeNr; k++)
			if (lv_attr(u->nodesetval->nodeTab[k], "port", buf, sizeof(buf)) &&
			    lv_uint(buf, LV_PORTS_PER_CTL, &port))
				used[port] = true;
		xmlXPathFreeObject(u);
		for (p = 1; p <= last && n < max; p++)
			if (!used[p])
				slots[n++] = (struct lv_slot){ .controller = idx, .port = p };
	}
	xmlXPathFreeObject(r);
	return n;
}

/* Channel @i of @vcpus (data ports first, the control port last) as a <channel> element. */
static int lv_channel_xml(char *buf, size_t len, const struct libvirt_setup *s, unsigned int vcpus,
			  unsigned int i, const struct lv_slot *slot)
{
	char name[64], src[4200] = "";
	int n;

	if (i < vcpus)
		snprintf(name, sizeof(name), LV_DATA_PREFIX "%u", i);
	else
		snprintf(name, sizeof(name), LV_CTL_NAME);
	if (s->dir[0]) {
		xmlChar *esc = xmlEncodeSpecialChars(NULL, BAD_CAST s->dir);

		if (!esc)
			return -ENOMEM;
		snprintf(src, sizeof(src), "<source %spath='%s/%s'/>", s->unix_backend ?
			 "mode='bind' " : "", (const char *)esc, name);
		xmlFree(esc);
	} else if (s->unix_backend) {
		snprintf(src, sizeof(src), "<source mode='bind'/>");
	}
	n = snprintf(buf, len, "<channel type='%s'>%s<target type='virtio' name='%s'/>"
		     "<address type='virtio-serial' controller='%u' bus='0' port='%u'/></channel>",
		     s->unix_backend ? "unix" : "pipe", src, name, slot->controller, slot->port);
	return n < 0 || (size_t)n >= len ? -E2BIG : 0;
}

/*
 * Unplug our channels from the running domain, the control port first (the
 * agent's unit stops with it), by their live XML (a unix channel's source is
 * the path libvirt chose). Return: channels unplugged, or -errno.
 */
static int lv_live_unplug(virDomainPtr dom, const char *name, unsigned int *left)
{
	struct lv_dom d;
	unsigned int i, n = 0;
	int ret;

	*left = 0;
	ret = lv_load(dom, VIR_DOMAIN_XML_SECURE, &d, name);
	if (ret < 0)
		return ret;
	for (i = d.nr_chans; i-- > 0;) {
		struct lv_chan *c = lv_port_index(d.chans[i].name) == -1 ? &d.chans[i] : NULL;

		/* The control port first, then the data ports, last one first. */
		if (!c)
			continue;
		if (lv_detach_node(dom, c->node, name) == 0)
			n++;
		else
			(*left)++;
		c->name[0] = 0;
	}
	for (i = d.nr_chans; i-- > 0;) {
		if (!d.chans[i].name[0])
			continue;
		if (lv_detach_node(dom, d.chans[i].node, name) == 0)
			n++;
		else
			(*left)++;
	}
	lv_dom_free(&d);
	return n;
}

/* Take the metadata of a live apply out of the running domain (libvirt keeps none then). */
static void lv_live_meta_clear(virDomainPtr dom)
{
	virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, NULL, LV_META_PREFIX, LV_META_NS,
			     VIR_DOMAIN_AFFECT_LIVE);
}

/*
 * Undo a live apply that stopped part way: the channels it plugged leave the
 * running domain and, when @config, the persistent definition (by name: no
 * channel of ours was there before).
 */
static void lv_live_rollback(virConnectPtr conn, virDomainPtr dom, const struct libvirt_setup *s,
			     bool config)
{
	unsigned int left, nchan, nctl;
	struct lv_dom d;

	lv_live_unplug(dom, s->domain, &left);
	if (left)
		log_err("domain %s: %u channels could not be unplugged again: `virsh dumpxml %s` "
			"shows them", s->domain, left, s->domain);
	if (!config ||
	    lv_load(dom, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE, &d, s->domain) < 0)
		return;
	if (d.nr_chans && !d.meta) {
		lv_remove_ours(&d, &nchan, &nctl);
		lv_define(conn, &d, s->domain);
	}
	lv_dom_free(&d);
}

/*
 * setup --domain --apply --live: hot-plug one channel per vCPU and the
 * control port into the running domain, on free ports of the controllers it
 * runs with, and keep them in the persistent definition (one
 * virDomainAttachDeviceFlags(LIVE|CONFIG) per channel, the control port last
 * so that the agent, which the guest's udev starts when that port appears,
 * finds the data ports there). Where the domain has no room, say what to
 * change; nothing is left half done.
 */
static int lv_live_apply(virConnectPtr conn, virDomainPtr dom, struct libvirt_setup *s)
{
	static struct lv_slot slots[LV_MAX_VCPUS + 1];
	unsigned int nports, nfree, nctl, i, flags;
	char xml[4600], owner[300], meta[4600];
	struct lv_dom live, cfg;
	bool config;
	int ret;

	ret = lv_load(dom, VIR_DOMAIN_XML_SECURE, &live, s->domain);
	if (ret < 0)
		return ret;
	ret = lv_load(dom, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE, &cfg, s->domain);
	if (ret < 0)
		goto out_live;
	s->vcpus = live.vcpus;
	nports = live.vcpus + 1;
	if (live.nr_chans) {
		if (live.meta && lv_chans_complete(&live, s->unix_backend) && lv_meta_matches(&live, s)) {
			printf("domain %s: the running domain already has the virtio-trace channels "
			       "(%u vCPUs, %s%s%s): nothing changed\n", s->domain, live.vcpus,
			       s->unix_backend ? "unix" : "pipe", s->dir[0] ? " " : "", s->dir);
			ret = s->unix_backend ? 0 : lv_make_fifos(s, live.vcpus, owner, sizeof(owner));
			goto out;
		}
		log_err("domain %s: the running domain already has %u virtio-trace channels%s: "
			"`virtio-trace-collect setup --domain %s --remove --live` takes them out first",
			s->domain, live.nr_chans, live.meta ? ", of another backend, directory or vCPU "
			"count" : " that setup did not add", s->domain);
		ret = -EEXIST;
		goto out;
	}
	nfree = lv_free_slots(&live, slots, nports, &nctl);
	if (nfree < nports) {
		if (!nctl)
			log_err("domain %s has no virtio-serial controller, and libvirt cannot hot-plug "
				"one: the trace channels need %u ports", s->domain, nports);
		else
			log_err("domain %s: its %u virtio-serial controller%s %s %u free port%s (at most "
				"%d per controller), the trace channels need %u; libvirt cannot hot-plug a "
				"virtio-serial controller", s->domain, nctl, nctl == 1 ? "" : "s",
				nctl == 1 ? "has" : "have", nfree, nfree == 1 ? "" : "s",
				LV_PORTS_PER_CTL, nports);
		log_err("domain %s: what to change: give the definition a controller with room, "
			"once: `virtio-trace-collect setup --domain %s --apply` (without --live) adds "
			"one with the channels, for the next boot; or `virsh edit %s` and add "
			"<controller type='virtio-serial' index='N' ports='31'/> with an unused N. "
			"After that boot, --apply --live and --remove --live need no reboot", s->domain,
			s->domain, s->domain);
		ret = -ENOSPC;
		goto out;
	}
	if (cfg.nr_chans && !cfg.meta) {
		log_err("domain %s: its persistent definition has %u virtio-trace channels that setup "
			"did not add: remove them (`virsh edit %s`) and run setup again", s->domain,
			cfg.nr_chans, s->domain);
		ret = -EEXIST;
		goto out;
	}
	/* Channels already in the definition (an --apply for the next boot): only the running domain gets them. */
	config = !cfg.nr_chans;
	flags = VIR_DOMAIN_AFFECT_LIVE | (config ? VIR_DOMAIN_AFFECT_CONFIG : 0);
	if (!s->unix_backend) {
		ret = lv_make_fifos(s, live.vcpus, owner, sizeof(owner));
		if (ret < 0)
			goto out;
	}
	for (i = 0; i < nports; i++) {
		ret = lv_channel_xml(xml, sizeof(xml), s, live.vcpus, i, &slots[i]);
		if (ret < 0) {
			log_err("domain %s: the channel's XML is too long (--dir)", s->domain);
			break;
		}
		if (virDomainAttachDeviceFlags(dom, xml, flags) < 0) {
			log_err("domain %s: libvirt did not hot-plug channel %u of %u (controller %u "
				"port %u): %s", s->domain, i + 1, nports, slots[i].controller,
				slots[i].port, lv_errmsg());
			ret = lv_permission_error() ? -EACCES : -EIO;
			break;
		}
	}
	if (i == nports) {
		/* What setup added, as --apply records it, for --remove: no controller of ours. */
		xmlChar *esc = xmlEncodeSpecialChars(NULL, BAD_CAST s->dir);
		bool escaped = esc != NULL;

		snprintf(meta, sizeof(meta), "<ports backend='%s' dir='%s' vcpus='%u' controllers='' "
			 "live='yes'/>", s->unix_backend ? "unix" : "pipe",
			 esc ? (const char *)esc : "", live.vcpus);
		xmlFree(esc);
		if (!escaped)
			ret = -ENOMEM;
		else if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, meta, LV_META_PREFIX,
					 LV_META_NS, flags) < 0) {
			log_err("domain %s: cannot record what setup added (metadata): %s", s->domain,
				lv_errmsg());
			ret = -EIO;
		}
	}
	if (i < nports || ret < 0) {
		lv_live_rollback(conn, dom, s, config);
		lv_live_meta_clear(dom);
		log_err("domain %s: nothing was changed", s->domain);
		if (!ret)
			ret = -EIO;
		goto out;
	}
	s->changed = true;
	ret = 0;
	printf("domain %s: hot-plugged %u channels (trace-path-cpu0..%u, agent-ctl-path) into the "
	       "running domain on virtio-serial controller %u%s, ports %u..%u%s (%s%s%s), no reboot\n",
	       s->domain, nports, live.vcpus - 1, slots[0].controller,
	       slots[nports - 1].controller != slots[0].controller ? " and up" : "", slots[0].port,
	       slots[nports - 1].port, config ? ", and kept them in its persistent definition" :
	       " (its definition has them already, for its next boot)",
	       s->unix_backend ? "unix sockets" : "FIFOs",
	       s->dir[0] ? " in " : ", paths chosen by libvirt", s->dir);
	printf("domain %s: the guest's trace-agent starts by itself when agent-ctl-path appears "
	       "(udev rule 90-trace-agent.rules); record with `virtio-trace-collect record --domain "
	       "%s ...`; `setup --domain %s --remove --live` unplugs them\n", s->domain, s->domain,
	       s->domain);
out:
	lv_dom_free(&cfg);
out_live:
	lv_dom_free(&live);
	return ret;
}

/* --remove --live: the running domain's channels unplugged, ours only. Return: 0 or -errno. */
static int lv_live_remove(virDomainPtr dom, struct libvirt_setup *s)
{
	unsigned int nchan, left = 0;
	struct lv_dom d;
	int ret;

	ret = lv_load(dom, VIR_DOMAIN_XML_SECURE, &d, s->domain);
	if (ret < 0)
		return ret;
	nchan = d.nr_chans;
	if (nchan && !d.meta) {
		log_err("domain %s: the running domain's %u virtio-trace channels were not added "
			"by setup: left alone (`virsh detach-device --live` takes them out)",
			s->domain, nchan);
		ret = -EEXIST;
	}
	lv_dom_free(&d);
	if (ret < 0)
		return ret;
	if (!nchan) {
		printf("domain %s: no virtio-trace channels in the running domain: nothing to "
		       "unplug\n", s->domain);
	} else {
		ret = lv_live_unplug(dom, s->domain, &left);
		if (ret < 0)
			return ret;
		lv_live_meta_clear(dom);
		s->changed = true;
		printf("domain %s: unplugged %d channels from the running domain (control port "
		       "first: the guest's trace-agent stops with it), no reboot\n", s->domain,
		       ret);
		if (left) {
			log_err("domain %s: %u channels are still plugged in: `virsh dumpxml %s` "
				"shows them", s->domain, left, s->domain);
			return -EIO;
		}
	}
	return 0;
}

/**
 * libvirt_setup_conn() - add the trace channels to a domain's persistent
 * definition, or remove what an earlier apply added
 * @conn: an open connection
 * @s: what to do; @s->vcpus and @s->changed are set
 *
 * Prints what it did on stdout.
 *
 * Return: 0 (also when nothing needed changing), or -errno after a message.
 */
int libvirt_setup_conn(struct _virConnect *conn, struct libvirt_setup *s)
{
	unsigned int nchan, nctl, i;
	char why[256], owner[300];
	virDomainPtr dom;
	struct lv_dom d;
	int ret, base;

	s->changed = false;
	dom = virDomainLookupByName(conn, s->domain);
	if (!dom) {
		log_err("domain %s not found: `virsh list --all` shows the domains (--connect URI "
			"picks another libvirt)", s->domain);
		return lv_permission_error() ? -EACCES : -ENOENT;
	}
	if (virDomainIsPersistent(dom) != 1) {
		log_err("domain %s is transient: setup edits the persistent definition; define it "
			"first (`virsh dumpxml %s > %s.xml; virsh define %s.xml`)", s->domain, s->domain,
			s->domain, s->domain);
		ret = -EINVAL;
		goto out_dom;
	}
	if (s->live && virDomainIsActive(dom) != 1) {
		log_err("domain %s is not running: --live changes the running domain; without it "
			"setup changes the definition, for the next boot", s->domain);
		ret = -ESRCH;
		goto out_dom;
	}
	if (s->live && !s->remove) {
		ret = lv_live_apply(conn, dom, s);
		goto out_dom;
	}
	if (s->live) {
		ret = lv_live_remove(dom, s);
		if (ret < 0)
			goto out_dom;
	}
	ret = lv_load(dom, VIR_DOMAIN_XML_INACTIVE | VIR_DOMAIN_XML_SECURE, &d, s->domain);
	if (ret < 0)
		goto out_dom;
	s->vcpus = d.vcpus;

	if (s->remove) {
		if (!d.meta && d.nr_chans) {
			log_err("domain %s: its %u virtio-trace channels were not added by setup --apply: "
				"left alone (remove them with `virsh edit %s`)", s->domain, d.nr_chans,
				s->domain);
			ret = -EEXIST;
			goto out_d;
		}
		if (!d.meta) {
			printf("domain %s: no virtio-trace channels in the persistent definition: "
			       "nothing to remove\n", s->domain);
			goto out_d;
		}
		lv_remove_ours(&d, &nchan, &nctl);
		ret = lv_define(conn, &d, s->domain);
		if (ret < 0)
			goto out_d;
		s->changed = true;
		printf("domain %s: removed %u channels and %u virtio-serial controller%s from the "
		       "persistent definition%s\n", s->domain, nchan, nctl, nctl == 1 ? "" : "s",
		       s->live ? "" : "; this takes effect at the next boot (--remove --live also "
		       "unplugs them from the running domain)");
		goto out_d;
	}

	if (lv_chans_complete(&d, s->unix_backend) && lv_meta_matches(&d, s)) {
		printf("domain %s: the persistent definition already has the virtio-trace channels "
		       "(%u vCPUs, %s%s%s): nothing changed\n", s->domain, d.vcpus,
		       s->unix_backend ? "unix" : "pipe", s->dir[0] ? " " : "", s->dir);
		if (!s->unix_backend) {
			ret = lv_make_fifos(s, d.vcpus, owner, sizeof(owner));
			if (ret < 0)
				goto out_d;
		}
		goto out_d;
	}
	if (!d.meta && d.nr_chans) {
		log_err("domain %s already has %u virtio-trace channels that setup did not add: remove "
			"them (`virsh edit %s`) and run setup again, or record with them as they are",
			s->domain, d.nr_chans, s->domain);
		ret = -EEXIST;
		goto out_d;
	}
	lv_remove_ours(&d, &nchan, &nctl);
	base = lv_add_ours(&d, s);
	if (base < 0) {
		ret = base;
		log_err("domain %s: cannot build the new definition: %s", s->domain, strerror(-ret));
		goto out_d;
	}
	if (!s->unix_backend) {
		ret = lv_make_fifos(s, d.vcpus, owner, sizeof(owner));
		if (ret < 0)
			goto out_d;
	}
	ret = lv_define(conn, &d, s->domain);
	if (ret < 0)
		goto out_d;
	s->changed = true;
	i = (d.vcpus + LV_PORTS_PER_CTL) / LV_PORTS_PER_CTL;
	if (i == 1)
		snprintf(why, sizeof(why), "controller %d", base);
	else
		snprintf(why, sizeof(why), "controllers %d..%u", base, base + i - 1);
	printf("domain %s: %s %u channels (trace-path-cpu0..%u, agent-ctl-path) on virtio-serial "
	       "%s in the persistent definition (%s%s%s)\n", s->domain,
	       nchan ? "rewrote the" : "added", d.vcpus + 1, d.vcpus - 1, why,
	       s->unix_backend ? "unix sockets" : "FIFOs",
	       s->dir[0] ? " in " : ", paths chosen by libvirt", s->dir);
	if (!s->unix_backend)
		printf("domain %s: FIFOs %s/PORT.in and PORT.out exist, owned by %s\n", s->domain,
		       s->dir, geteuid() == 0 ? owner : "you");
	printf("domain %s: this takes effect at the next boot; to trace it while it runs, without a "
	       "reboot: `virtio-trace-collect setup --domain %s --apply --live`\n", s->domain, s->domain);
out_d:
	lv_dom_free(&d);
out_dom:
	virDomainFree(dom);
	return ret;
}

/**
 * libvirt_setup_run() - libvirt_setup_conn() on a connection to @s->uri
 * @s: what to do
 *
 * Return: 0 or -errno, after a message.
 */
int libvirt_setup_run(struct libvirt_setup *s)
{
	virConnectPtr conn = lv_open(s->uri);
	int ret;

	if (!conn)
		return lv_permission_error() ? -EACCES : -ECONNREFUSED;
	ret = libvirt_setup_conn(conn, s);
	virConnectClose(conn);
	return ret;
}

/* --- list --- */

/* The first of our channels' source paths, and whether the ports are sockets QEMU connects to. */
static void lv_list_paths(struct lv_dom *d, struct list_guest *g)
{
	struct lv_chan *c = lv_find(d, LV_CTL_NAME);
	char dir[4096], *slash;
	unsigned int i;
	bool same = true;

	if (c && c->path[0])
		snprintf(g->ctl_path, sizeof(g->ctl_path), "%s", c->path);
	g->listen = c && !strcmp(c->type, "unix") && c->mode[0] && strcmp(c->mode, "bind");
	/* One directory holding every port by its own name: record --chardev-dir could use it. */
	snprintf(dir, sizeof(dir), "%s", g->ctl_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = 0;
	for (i = 0; i < d->nr_chans && same; i++) {
		const char *p = d->chans[i].path, *b = strrchr(p, '/');

		same = b && (size_t)(b - p) == strlen(dir) && !strncmp(p, dir, b - p) &&
		       !strcmp(b + 1, d->chans[i].name);
	}
	if (same)
		snprintf(g->chardev_dir, sizeof(g->chardev_dir), "%s", dir);
}

/**
 * libvirt_list() - the domains that have trace channels, running or defined
 * @uri: the libvirt URI, NULL or "" for libvirt's default
 * @out: set to a calloc()ed array (free() it)
 * @nr: set to its length
 * @note: why there is nothing, when libvirt cannot be asked ("" else)
 * @len: size of @note
 *
 * Nothing is logged: list prints @note as one line of its own.
 *
 * Return: 0, or -errno with @note filled.
 */
int libvirt_list(const char *uri, struct list_guest **out, unsigned int *nr, char *note, size_t len)
{
	virDomainPtr *doms = NULL;
	virConnectPtr conn;
	struct list_guest *g;
	int n, i, ret = 0;
	char why[256], path[PATH_MAX];

	*out = NULL;
	*nr = 0;
	note[0] = 0;
	virSetErrorFunc(NULL, lv_quiet);
	conn = virConnectOpenReadOnly(uri && *uri ? uri : NULL);
	if (!conn) {
		snprintf(note, len, "libvirt %s cannot be asked: %s", uri && *uri ? uri : "(default URI)",
			 lv_errmsg());
		return -ECONNREFUSED;
	}
	n = virConnectListAllDomains(conn, &doms, 0);
	if (n < 0) {
		snprintf(note, len, "libvirt %s: cannot list the domains: %s",
			 uri && *uri ? uri : "(default URI)", lv_errmsg());
		virConnectClose(conn);
		return -EIO;
	}
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct lv_dom live = { 0 }, cfg = { 0 };
		const char *name = virDomainGetName(doms[i]);
		bool active = virDomainIsActive(doms[i]) == 1, have = false;
		char *xml;

		g = &(*out)[*nr];
		memset(g, 0, sizeof(*g));
		if (!name || strlen(name) >= sizeof(g->domain))
			continue;
		if (virDomainIsPersistent(doms[i]) == 1) {
			xml = virDomainGetXMLDesc(doms[i], VIR_DOMAIN_XML_INACTIVE);
			if (xml && lv_dom_parse(&cfg, xml, why, sizeof(why)) == 0) {
				g->defined_ports = cfg.nr_chans;
				g->vcpus = cfg.vcpus;
				have = cfg.nr_chans > 0;
				lv_dom_free(&cfg);
			}
			free(xml);
		}
		if (active) {
			xml = virDomainGetXMLDesc(doms[i], 0);
			if (xml && lv_dom_parse(&live, xml, why, sizeof(why)) == 0) {
				unsigned int k;

				g->vcpus = live.vcpus;
				for (k = 0; k < live.nr_chans; k++) {
					if (lv_port_index(live.chans[k].name) >= 0)
						g->data_ports++;
					else
						g->ctl_port = true;
				}
				have = have || live.nr_chans > 0;
				lv_list_paths(&live, g);
				lv_dom_free(&live);
			}
			free(xml);
		}
		if (!have)
			continue;
		g->libvirt = true;
		g->running = active;
		snprintf(g->domain, sizeof(g->domain), "%s", name);
		snprintf(g->uri, sizeof(g->uri), "%s", uri && *uri ? uri : "");
		snprintf(g->name, sizeof(g->name), "%s", collect_name_ok(name) ? name : "");
		if (active) {
			snprintf(path, sizeof(path), "/run/libvirt/qemu/%s.pid", name);
			g->qemu_pid = lv_pidfile(path);
		}
		(*nr)++;
	}
out:
	for (i = 0; i < n; i++)
		virDomainFree(doms[i]);
	free(doms);
	virConnectClose(conn);
	return ret;
}
