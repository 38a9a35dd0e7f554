// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * report --perfetto FILE: the recording as one Perfetto trace (a protobuf
 * `Trace`, a sequence of `TracePacket`), written with our own encoder (pb.c)
 * for the few messages used here. Which of Perfetto's documented rules each
 * part follows:
 *
 * - Machines. The host is machine 0 (packets without machine_id); guest k of
 *   the manifest is machine k + 1: every packet of its data carries
 *   TracePacket.machine_id = k + 1, as traced stamps a relay's packets
 *   (https://perfetto.dev/docs/deployment/multi-machine-architecture,
 *   "Machine identity"; the host is raw_id 0, a remote machine non-zero).
 *   Each guest is named by a SystemInfo packet of its machine with
 *   machine_name (https://perfetto.dev/docs/concepts/merging-traces,
 *   "Machines": "A producer can set a human-readable name in its SystemInfo
 *   packet, which fills the machine.name column"). A host packet comes first
 *   so that the host row is the host's and a single guest is not "adopted"
 *   onto it (same page, "Ids embedded in the trace").
 *
 * - Clocks. Ftrace events are read in the machine's BOOTTIME domain unless
 *   FtraceEventBundle.ftrace_clock says otherwise (the proto's comment on
 *   ftrace_clock), and each machine's BOOTTIME is its own node in the clock
 *   graph (https://perfetto.dev/docs/concepts/clock-sync, "Clocks across
 *   traces and machines"). Every timestamp we write is already host time in
 *   ns, the guest ones mapped with our clock-sync epochs by libtracecmd
 *   exactly as `trace-cmd report -i host.dat -i guest.dat` maps them (the
 *   guest file's TIME_SHIFT). So: the first packet is a host ClockSnapshot
 *   whose primary_trace_clock is BOOTTIME (clock-sync.md, "The ClockSnapshot
 *   trace packet"; the proto: it "definitively overrides the trace time
 *   clock"), and each guest machine has a RemoteClockSync whose host and
 *   guest snapshots read the same BOOTTIME value, which is the edge traced
 *   itself records for a relayed machine (multi-machine-architecture.md,
 *   "Clock synchronisation across machines"): an explicit offset of zero, so
 *   Perfetto neither guesses (merging-traces.md, "Placing files that share no
 *   clock", 2. "Same-domain assumption") nor re-aligns with its own ping
 *   estimate (fixed offsets only); the guest events land on the host
 *   timeline at the nanosecond we computed. "BOOTTIME" here is the name
 *   Perfetto gives the timeline, not a claim about the host's kernel clock:
 *   the values are the host trace's clock (manifest.json says which).
 *
 * - Events. Per machine and CPU, FtraceEventBundle{cpu, event} with
 *   FtraceEvent{timestamp, pid, one event}; the typed message where Perfetto
 *   has one for the kernel's event (table below; fields taken by name from
 *   the event's format), GenericFtraceEvent{event_name, field} otherwise
 *   (kvm_exit and kvm_entry too: Perfetto's typed ones carry arm64 fields).
 *   A print (trace marker) is typed only when its buf is an atrace line,
 *   which Perfetto turns into slices and counters; it counts any other buf
 *   as an import error (systrace_parse_failure), so those go generic.
 *   A bundle holds at most PF_BUNDLE_BYTES of events.
 *
 * - Losses. Where a page reports lost events the CPU's bundle ends and the
 *   next one, which starts with the first event after the loss, has
 *   lost_events = true ("data loss between the last time we've read from the
 *   corresponding per-cpu kernel buffer, and the earliest event recorded in
 *   this bundle", the proto's comment).
 *
 * - vCPUs. For each guest vCPU, a track on the host machine named for the
 *   guest CPU it runs and the host thread that runs it (the host file's
 *   GUEST option, else the manifest's vcpu_threads); Perfetto has no message
 *   that ties a thread of one machine to a CPU of another.
 *   Where report --vcpus can split the vCPUs' time (the host file maps
 *   their threads), each vCPU's states are slices on its track, one after
 *   another, named as the strip of report --html names them ("in the guest",
 *   "exit HLT", "exit to QEMU KVM_EXIT_IO", "halted", "preempted by
 *   stress-ng[900]", "unknown"), the state's kind as their category: a
 *   TrackEvent TYPE_SLICE_BEGIN and TYPE_SLICE_END with track_uuid and
 *   TracePacket.timestamp in the trace's clock, on a sequence of their own
 *   whose first packet clears its incremental state
 *   (https://perfetto.dev/docs/instrumentation/track-events, "Tracks";
 *   https://perfetto.dev/docs/reference/synthetic-track-event, "Synchronous
 *   (thread) slices" on a custom track). They are report --vcpus' intervals
 *   with its bound (vcpus_an_each_strip(): at most 65536 per vCPU, shorter
 *   ones folded in past that).
 *
 * Every value from a guest file is bounded as the other analyses do it
 * (analyze.c's an_u64/an_str): offsets, lengths, names; strings are made
 * printable ASCII (valid UTF-8 for protobuf's string type).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event-parse.h>
#include <trace-cmd.h>

#include "analyze.h"
#include "pb.h"
#include "perfetto.h"
#include "store/spool.h"

#define PF_BUNDLE_BYTES		(64u << 10)
#define PF_MAX_CPUS		1024u		/* Perfetto refuses a bundle for CPU >= 1024 */
#define PF_MAX_MACHINES		65u		/* the host and 64 guests */
#define PF_MAX_IDS		65536u		/* a ring-buffer event id is 16 bits */
#define PF_STR			4096u		/* a string field, at most (print's buf: a page) */
#define PF_HEX			256u		/* bytes of an array field shown, at most */
#define PF_MAP_FIELDS		8

/* TracePacket, FtraceEventBundle, FtraceEvent and friends: field numbers (perfetto_trace.proto). */
enum {
	TRACE_PACKET = 1,
	TP_FTRACE_EVENTS = 1, TP_CLOCK_SNAPSHOT = 6, TP_SEQ_ID = 10, TP_SYSTEM_INFO = 45,
	TP_TRACK_DESCRIPTOR = 60, TP_MACHINE_ID = 98, TP_REMOTE_CLOCK_SYNC = 107,
	TP_TIMESTAMP = 8, TP_TRACK_EVENT = 11, TP_SEQ_FLAGS = 13,
	TE_TYPE = 9, TE_TRACK_UUID = 11, TE_CATEGORIES = 22, TE_NAME = 23,
	TE_SLICE_BEGIN = 1, TE_SLICE_END = 2, SEQ_CLEARED = 1, SEQ_NEEDS = 2,
	PF_SEQ_SLICES = 100,		/* past the machines' sequences (1 + machine id) */
	FB_CPU = 1, FB_EVENT = 2, FB_LOST = 3,
	FE_TIMESTAMP = 1, FE_PID = 2, FE_GENERIC = 327,
	GE_EVENT_NAME = 1, GE_FIELD = 2,
	GF_NAME = 1, GF_STR = 3, GF_INT = 4, GF_UINT = 5,
	CS_CLOCKS = 1, CS_PRIMARY = 2, CL_ID = 1, CL_TS = 2,
	RCS_SYNCED = 1, SC_CLIENT = 2, SC_HOST = 3,
	SI_NUM_CPUS = 8, SI_MACHINE_NAME = 17,
	TD_UUID = 1, TD_NAME = 2, TD_DESCRIPTION = 14,
	CLOCK_BOOTTIME = 6,
};

enum pf_type { S = 1, I, U };

/* A kernel event Perfetto has a typed message for: its FtraceEvent field and the message's fields 1..n. */
struct pf_map {
	const char *system, *name;
	uint32_t field;
	const char *fields[PF_MAP_FIELDS];
	uint8_t types[PF_MAP_FIELDS];
};

#define WAKE_FIELDS	{ "comm", "pid", "prio", "success", "target_cpu" }, { S, I, I, I, I }
static const struct pf_map pf_maps[] = {
	{ "ftrace", "print", 3, { "ip", "buf" }, { U, S } },
	{ "sched", "sched_switch", 4, { "prev_comm", "prev_pid", "prev_prio", "prev_state",
	  "next_comm", "next_pid", "next_prio" }, { S, I, I, I, S, I, I } },
	{ "power", "cpu_frequency", 11, { "state", "cpu_id" }, { U, U } },
	{ "power", "cpu_idle", 13, { "state", "cpu_id" }, { U, U } },
	{ "sched", "sched_wakeup", 17, WAKE_FIELDS },
	{ "sched", "sched_waking", 20, WAKE_FIELDS },
	{ "irq", "softirq_entry", 24, { "vec" }, { U } },
	{ "irq", "softirq_exit", 25, { "vec" }, { U } },
	{ "irq", "softirq_raise", 26, { "vec" }, { U } },
	{ "irq", "irq_handler_entry", 36, { "irq", "name", "handler" }, { I, S, U } },
	{ "irq", "irq_handler_exit", 37, { "irq", "ret" }, { I, I } },
	{ "sched", "sched_wakeup_new", 114, WAKE_FIELDS },
	{ "task", "task_newtask", 235, { "pid", "comm", "clone_flags", "oom_score_adj" }, { I, S, U, I } },
	{ "task", "task_rename", 236, { "pid", "oldcomm", "newcomm", "oom_score_adj" }, { I, S, S, I } },
	{ "sched", "sched_process_exec", 237, { "filename", "pid", "old_pid" }, { S, I, I } },
	{ "sched", "sched_process_exit", 238, { "comm", "pid", "tgid", "prio" }, { S, I, I, I } },
	{ "sched", "sched_process_fork", 239, { "parent_comm", "parent_pid", "child_comm", "child_pid" },
	  { S, I, S, I } },
	{ "sched", "sched_process_free", 240, { "comm", "pid", "prio" }, { S, I, I } },
	{ "sched", "sched_migrate_task", 491, { "comm", "pid", "prio", "orig_cpu", "dest_cpu", "running",
	  "load" }, { S, I, I, I, I, I, U } },
};

/* One event id of one trace, resolved on its first record. */
struct pf_ev {
	const struct pf_map *map;		/* NULL: generic */
	struct tep_format_field *pid;
	struct tep_format_field *f[PF_MAP_FIELDS];
	struct tep_format_field **gf;		/* generic: the format's fields */
	char **gname;				/* their names, sanitised */
	unsigned int nr_gf;
	char name[VT_META_MAX_NAME];		/* generic: event_name */
};

struct pf_cpu {
	struct pb ev;		/* repeated FtraceEvent of the open bundle, encoded */
	bool lost;		/* the open bundle follows a loss */
};

struct pf_machine {
	char name[128];
	uint32_t id;		/* TracePacket.machine_id: 0 the host */
	unsigned int nr_cpus;	/* the manifest's */
	struct tracecmd_input *h;
	struct tep_handle *tep;
	struct pf_ev **ev;	/* PF_MAX_IDS, by event id */
	struct pf_cpu *cpu;
	unsigned int nr_cpu;
	const struct json_value *vcpu_tids;	/* the manifest's, for a guest */
	uint8_t *vtrack;			/* per vCPU: its track was written */
	uint64_t events, past_cpus, lost_marks;
};

struct pf_writer {
	FILE *out;
	struct pf_machine m[PF_MAX_MACHINES];
	unsigned int nr, nr_guests;
	struct pb pkt;		/* a packet's header fields, or a whole small packet */
	char *str;		/* PF_STR bytes: a string field */
	int err;
	uint64_t events, bytes;
	uint64_t slices;	/* vCPU state slices */
};

/* A packet: Trace.packet (field 1) around the encoded TracePacket in @p. */
static void put_packet(struct pf_writer *w, const struct pb *p)
{
	uint8_t hdr[11];
	size_t n;

	hdr[0] = TRACE_PACKET << 3 | 2;
	n = 1 + pb_put_varint(hdr + 1, p->len);
	if (fwrite(hdr, 1, n, w->out) != n || fwrite(p->buf, 1, p->len, w->out) != p->len)
		w->err = w->err ?: -EIO;
	w->bytes += n + p->len;
}

/* Start a packet of machine @m in w->pkt (the machine's packets are one sequence). */
static void packet_begin(struct pf_writer *w, const struct pf_machine *m)
{
	pb_reset(&w->pkt);
	if (m->id)
		pb_uint(&w->pkt, TP_MACHINE_ID, m->id);
	pb_uint(&w->pkt, TP_SEQ_ID, m->id + 1);
}

static void packet_end(struct pf_writer *w)
{
	if (w->pkt.err)
		w->err = w->err ?: w->pkt.err;
	else
		put_packet(w, &w->pkt);
}

/*
 * One CPU's open bundle: written without copying its events, as
 * Trace.packet { [machine_id] seq ftrace_events { cpu [lost_events] event... } }.
 */
static void flush_cpu(struct pf_writer *w, struct pf_machine *m, unsigned int cpu)
{
	struct pf_cpu *c = &m->cpu[cpu];
	uint8_t hdr[64];
	size_t bundle, packet, n = 0, h;

	if (!c->ev.len || w->err)
		return;
	if (c->ev.err) {
		w->err = c->ev.err;
		return;
	}
	bundle = 1 + pb_varint_size(cpu) + (c->lost ? 2 : 0) + c->ev.len;
	packet_begin(w, m);
	packet = w->pkt.len + 1 + pb_varint_size(bundle) + bundle;
	hdr[n++] = TRACE_PACKET << 3 | 2;
	n += pb_put_varint(hdr + n, packet);
	h = n;
	if (fwrite(hdr, 1, h, w->out) != h || fwrite(w->pkt.buf, 1, w->pkt.len, w->out) != w->pkt.len)
		goto err;
	n = 0;
	hdr[n++] = TP_FTRACE_EVENTS << 3 | 2;
	n += pb_put_varint(hdr + n, bundle);
	hdr[n++] = FB_CPU << 3;
	n += pb_put_varint(hdr + n, cpu);
	if (c->lost) {
		hdr[n++] = FB_LOST << 3;
		hdr[n++] = 1;
	}
	if (fwrite(hdr, 1, n, w->out) != n || fwrite(c->ev.buf, 1, c->ev.len, w->out) != c->ev.len)
		goto err;
	w->bytes += h + w->pkt.len + n + c->ev.len;
	pb_reset(&c->ev);
	c->lost = false;
	return;
err:
	w->err = w->err ?: -EIO;
}

static void pf_ev_free(struct pf_ev *e)
{
	unsigned int i;

	if (!e)
		return;
	for (i = 0; i < e->nr_gf; i++)
		free(e->gname[i]);
	free(e->gname);
	free(e->gf);
	free(e);
}

static const struct pf_map *find_map(const struct tep_event *ev)
{
	size_t i;

	for (i = 0; i < sizeof(pf_maps) / sizeof(pf_maps[0]); i++)
		if (!strcmp(ev->name, pf_maps[i].name) && !strcmp(ev->system, pf_maps[i].system))
			return &pf_maps[i];
	return NULL;
}

/* What an event id of @m's trace becomes, worked out once. */
static struct pf_ev *ev_resolve(struct pf_machine *m, int id)
{
	struct tep_event *ev = tep_find_event(m->tep, id);
	struct tep_format_field *f;
	struct pf_ev *e = calloc(1, sizeof(*e));
	unsigned int i, n = 0;

	if (!e)
		return NULL;
	if (!ev) {
		/* trace-cmd shows such a record as an unknown type: keep it, as a generic event. */
		snprintf(e->name, sizeof(e->name), "unknown_id_%d", id);
		return e;
	}
	e->pid = an_field(ev, "common_pid");
	e->map = find_map(ev);
	for (i = 0; e->map && i < PF_MAP_FIELDS && e->map->fields[i]; i++)
		e->f[i] = an_field(ev, e->map->fields[i]);
	/* The generic form too: a print that is not an atrace line goes out as one. */
	snprintf(e->name, sizeof(e->name), "%s", ev->name);
	an_sanitize(e->name);
	for (f = ev->format.fields; f && n < 4096; f = f->next)
		n++;
	e->gf = calloc(n ? n : 1, sizeof(*e->gf));
	e->gname = calloc(n ? n : 1, sizeof(*e->gname));
	if (!e->gf || !e->gname)
		goto err;
	for (f = ev->format.fields; f && e->nr_gf < n; f = f->next) {
		e->gname[e->nr_gf] = strdup(f->name ? f->name : "?");
		if (!e->gname[e->nr_gf])
			goto err;
		an_sanitize(e->gname[e->nr_gf]);
		e->gf[e->nr_gf++] = f;
	}
	return e;
err:
	pf_ev_free(e);
	return NULL;
}

/* A field that is not a number or a string: its bytes in hex, bounded. */
static bool hex_field(const struct tep_record *rec, const struct tep_format_field *f, char *buf,
		      size_t size)
{
	unsigned int off, len, i;
	unsigned long long loc;
	const uint8_t *d = rec->data;
	size_t n = 0;

	if (f->offset < 0 || rec->size < 0)
		return false;
	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		if (f->size != 4 || (unsigned int)f->offset > (unsigned int)rec->size - 4 ||
		    rec->size < 4 || tep_read_number_field((struct tep_format_field *)f, rec->data, &loc) < 0)
			return false;
		off = loc & 0xffff;
		len = (loc >> 16) & 0xffff;
		if (f->flags & TEP_FIELD_IS_RELATIVE)
			off += f->offset + f->size;
	} else {
		off = f->offset;
		len = f->size;
	}
	if (off > (unsigned int)rec->size || len > (unsigned int)rec->size - off)
		return false;
	for (i = 0; i < len && i < PF_HEX && n + 3 < size; i++)
		n += snprintf(buf + n, size - n, "%02x", d[off + i]);
	if (i < len && n + 4 < size)
		snprintf(buf + n, size - n, "...");
	buf[size - 1] = '\0';
	return true;
}

static void put_field(struct pf_writer *w, struct pb *p, const struct tep_record *rec,
		      struct tep_format_field *f, uint32_t field, enum pf_type type)
{
	uint64_t u;
	int64_t i;

	if (!f)
		return;
	if (type == S) {
		if (an_str(rec, f, w->str, PF_STR))
			pb_str(p, field, w->str);
	} else if (type == I) {
		if (an_i64(rec, f, &i))
			pb_int(p, field, i);
	} else if (an_u64(rec, f, &u)) {
		pb_uint(p, field, u);
	}
}

static void put_generic(struct pf_writer *w, struct pb *p, const struct pf_ev *e,
			const struct tep_record *rec)
{
	unsigned int i;
	uint64_t u;
	int64_t v;

	pb_begin(p, FE_GENERIC);
	pb_str(p, GE_EVENT_NAME, e->name);
	for (i = 0; i < e->nr_gf; i++) {
		struct tep_format_field *f = e->gf[i];
		size_t mark = p->len;
		bool ok;

		pb_begin(p, GE_FIELD);
		pb_str(p, GF_NAME, e->gname[i]);
		if (f->flags & TEP_FIELD_IS_STRING) {
			ok = an_str(rec, f, w->str, PF_STR);
			if (ok)
				pb_str(p, GF_STR, w->str);
		} else if (f->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) {
			ok = hex_field(rec, f, w->str, PF_STR);
			if (ok)
				pb_str(p, GF_STR, w->str);
		} else if (f->flags & TEP_FIELD_IS_SIGNED) {
			ok = an_i64(rec, f, &v);
			if (ok)
				pb_int(p, GF_INT, v);
		} else {
			ok = an_u64(rec, f, &u);
			if (ok)
				pb_uint(p, GF_UINT, u);
		}
		if (ok) {
			pb_end(p);
		} else if (!p->err) {
			/* A field the record does not hold: left out, not invented. */
			p->len = mark;
			p->depth--;
		}
	}
	pb_end(p);
}

/* @all_cpu counts the CPUs of all files (libtracecmd's multi-file iteration): rec->cpu is the file's. */
/*
 * Perfetto reads a print's buf as an atrace line ("B|pid|name", "E", "C|pid|name|value", ...)
 * and counts every other one as a systrace_parse_failure, an import error in its UI. Other
 * markers (ours: "virtio-trace: tx HELLO 1") go out as a generic "print" event: the same
 * fields, kept in its ftrace event table, no error.
 */
static bool atrace_line(const char *s)
{
	return s[0] && strchr("BESFCNGHIT", s[0]) && (s[1] == '|' || (s[0] == 'E' && !s[1]));
}

static int on_record(struct tracecmd_input *h, struct tep_record *rec, int all_cpu, void *arg)
{
	struct pf_writer *w = arg;
	struct pf_machine *m = tracecmd_get_private(h);
	int cpu = rec->cpu, id;
	struct pf_cpu *c;
	struct pf_ev *e;
	struct pb *p;
	int64_t pid;
	unsigned int i;

	(void)all_cpu;
	if (!m || w->err)
		return -1;
	if (cpu < 0 || (unsigned int)cpu >= m->nr_cpu) {
		m->past_cpus++;
		return 0;
	}
	c = &m->cpu[cpu];
	if (rec->missed_events) {
		flush_cpu(w, m, cpu);
		c->lost = true;
		m->lost_marks++;
	}
	id = tep_data_type(m->tep, rec);
	if (id < 0 || (unsigned int)id >= PF_MAX_IDS)
		id = PF_MAX_IDS - 1;
	e = m->ev[id];
	if (!e) {
		e = m->ev[id] = ev_resolve(m, id);
		if (!e) {
			w->err = -ENOMEM;
			return -1;
		}
	}
	p = &c->ev;
	pb_begin(p, FB_EVENT);
	pb_uint(p, FE_TIMESTAMP, rec->ts);
	if (an_i64(rec, e->pid, &pid))
		pb_uint(p, FE_PID, (uint32_t)pid);
	if (e->map == &pf_maps[0] && (!an_str(rec, e->f[1], w->str, PF_STR) || !atrace_line(w->str))) {
		put_generic(w, p, e, rec);
	} else if (e->map) {
		pb_begin(p, e->map->field);
		for (i = 0; i < PF_MAP_FIELDS && e->map->fields[i]; i++)
			put_field(w, p, rec, e->f[i], i + 1, e->map->types[i]);
		pb_end(p);
	} else {
		put_generic(w, p, e, rec);
	}
	pb_end(p);
	if (p->err) {
		w->err = p->err;
		return -1;
	}
	m->events++;
	w->events++;
	if (p->len >= PF_BUNDLE_BYTES)
		flush_cpu(w, m, cpu);
	return w->err ? -1 : 0;
}

/* ClockSnapshot{ clocks { BOOTTIME, @ts } [primary_trace_clock] } as field @field of @p. */
static void boottime_snapshot(struct pb *p, uint32_t field, uint64_t ts, bool primary)
{
	pb_begin(p, field);
	pb_begin(p, CS_CLOCKS);
	pb_uint(p, CL_ID, CLOCK_BOOTTIME);
	pb_uint(p, CL_TS, ts);
	pb_end(p);
	if (primary)
		pb_uint(p, CS_PRIMARY, CLOCK_BOOTTIME);
	pb_end(p);
}

static void machine_info(struct pf_writer *w, const struct pf_machine *m)
{
	packet_begin(w, m);
	pb_begin(&w->pkt, TP_SYSTEM_INFO);
	if (m->nr_cpus)
		pb_uint(&w->pkt, SI_NUM_CPUS, m->nr_cpus);
	if (m->id)
		pb_str(&w->pkt, SI_MACHINE_NAME, m->name);
	pb_end(&w->pkt);
	packet_end(w);
}

/*
 * A guest's clock: two sync rounds in which the guest's and the host's
 * BOOTTIME read the same @ts, the offset of zero our mapping leaves.
 */
static void guest_clock(struct pf_writer *w, const struct pf_machine *m, uint64_t ts)
{
	int round;

	packet_begin(w, m);
	pb_begin(&w->pkt, TP_REMOTE_CLOCK_SYNC);
	for (round = 0; round < 2; round++) {
		pb_begin(&w->pkt, RCS_SYNCED);
		boottime_snapshot(&w->pkt, SC_CLIENT, ts, false);
		boottime_snapshot(&w->pkt, SC_HOST, ts, false);
		pb_end(&w->pkt);
	}
	pb_end(&w->pkt);
	packet_end(w);
}

static uint64_t vcpu_uuid(const struct pf_machine *g, int vcpu)
{
	return 0x76747276000000ull | (uint64_t)g->id << 16 | (unsigned int)vcpu;
}

/* One track per vCPU of guest @g, on the host, naming the host thread that runs it. */
static void vcpu_tracks(struct pf_writer *w, const struct pf_machine *host, struct pf_machine *g)
{
	const struct json_value *t;
	const int *tids = NULL;
	const char *name = NULL;
	uint64_t tid;
	char label[256], desc[384];
	int nr = 0, i;

	if (host && host->h && tracecmd_get_guest_cpumap(host->h, tracecmd_get_traceid(g->h), &name, &nr,
							  &tids) < 0)
		nr = 0;
	if (nr <= 0 || nr > (int)VT_META_MAX_CPUS || !tids) {
		nr = 0;
		tids = NULL;
	}
	t = tids ? NULL : (json_is(g->vcpu_tids, JSON_ARRAY) ? g->vcpu_tids->child : NULL);
	for (i = 0; tids ? i < nr : t != NULL; i++) {
		if (tids) {
			tid = tids[i] > 0 ? (uint64_t)tids[i] : 0;
		} else {
			if (json_u64(t, &tid) < 0 || i >= (int)VT_META_MAX_CPUS)
				break;
			t = t->next;
		}
		if (!tid)
			continue;
		snprintf(label, sizeof(label), "%s vCPU %d (host thread %" PRIu64 ")", g->name, i, tid);
		snprintf(desc, sizeof(desc), "Host thread %" PRIu64 " runs CPU %d of guest %s (machine %u)",
			 tid, i, g->name, g->id);
		pb_reset(&w->pkt);
		pb_uint(&w->pkt, TP_SEQ_ID, 1);
		pb_begin(&w->pkt, TP_TRACK_DESCRIPTOR);
		pb_uint(&w->pkt, TD_UUID, vcpu_uuid(g, i));
		pb_str(&w->pkt, TD_NAME, label);
		pb_str(&w->pkt, TD_DESCRIPTION, desc);
		pb_end(&w->pkt);
		packet_end(w);
		if (i < (int)VT_META_MAX_CPUS && (g->vtrack || (g->vtrack = calloc(VT_META_MAX_CPUS, 1))))
			g->vtrack[i] = 1;
	}
}

/* One TrackEvent on the slices' sequence. */
static void track_event(struct pf_writer *w, uint64_t ts, uint32_t type, uint64_t uuid, const char *kind,
			const char *name)
{
	pb_reset(&w->pkt);
	pb_uint(&w->pkt, TP_TIMESTAMP, ts);
	pb_uint(&w->pkt, TP_SEQ_ID, PF_SEQ_SLICES);
	pb_uint(&w->pkt, TP_SEQ_FLAGS, w->slices || type == TE_SLICE_END ? SEQ_NEEDS :
		SEQ_CLEARED | SEQ_NEEDS);
	pb_begin(&w->pkt, TP_TRACK_EVENT);
	pb_uint(&w->pkt, TE_TYPE, type);
	pb_uint(&w->pkt, TE_TRACK_UUID, uuid);
	if (kind)
		pb_str(&w->pkt, TE_CATEGORIES, kind);
	if (name)
		pb_str(&w->pkt, TE_NAME, name);
	pb_end(&w->pkt);
	packet_end(w);
}

/* vcpus_an_each_strip(): an interval of a vCPU's states, a slice on its track if it has one. */
static int vcpu_slice(void *ctx, const char *guest, int vcpu, uint64_t start, uint64_t end,
		      const char *kind, const char *name, unsigned int merged)
{
	struct pf_writer *w = ctx;
	unsigned int i;

	(void)merged;
	for (i = 0; i < w->nr; i++) {
		const struct pf_machine *g = &w->m[i];

		if (!g->id || strcmp(g->name, guest) || vcpu < 0 || vcpu >= (int)VT_META_MAX_CPUS ||
		    !g->vtrack || !g->vtrack[vcpu])
			continue;
		track_event(w, start, TE_SLICE_BEGIN, vcpu_uuid(g, vcpu), kind, name);
		track_event(w, end, TE_SLICE_END, vcpu_uuid(g, vcpu), NULL, NULL);
		w->slices++;
		break;
	}
	return w->err;
}

static bool plain_name(const char *s)
{
	return s && s[0] && s[0] != '.' && !strchr(s, '/') && strlen(s) < 256;
}

static int add_machine(struct pf_writer *w, const char *dir, const struct json_value *t, bool host)
{
	const struct json_value *cpus = json_get(t, "cpus");
	const char *file = json_string(json_get(t, "file"));
	struct pf_machine *m;
	char path[4400];

	if (!file)
		return 0;		/* nothing was written for it */
	if (!plain_name(file) || w->nr >= PF_MAX_MACHINES)
		return -EBADMSG;
	m = &w->m[w->nr];
	snprintf(m->name, sizeof(m->name), "%s", host ? "host" : json_string(json_get(t, "name")) ?: "?");
	an_sanitize(m->name);
	m->id = host ? 0 : ++w->nr_guests;
	m->nr_cpus = json_is(cpus, JSON_ARRAY) && cpus->count < VT_META_MAX_CPUS ? cpus->count : 0;
	m->vcpu_tids = json_get(t, "vcpu_threads");
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	m->h = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!m->h) {
		fprintf(stderr, "virtio-trace-collect report: %s: libtracecmd cannot read it\n", path);
		return -EBADMSG;
	}
	w->nr++;
	m->tep = tracecmd_get_tep(m->h);
	tracecmd_set_private(m->h, m);
	m->ev = calloc(PF_MAX_IDS, sizeof(*m->ev));
	m->nr_cpu = PF_MAX_CPUS;
	m->cpu = calloc(m->nr_cpu, sizeof(*m->cpu));
	if (!m->ev || !m->cpu)
		return -ENOMEM;
	return 0;
}

static void machines_free(struct pf_writer *w)
{
	unsigned int i, j;

	for (i = 0; i < w->nr; i++) {
		struct pf_machine *m = &w->m[i];

		for (j = 0; m->ev && j < PF_MAX_IDS; j++)
			pf_ev_free(m->ev[j]);
		for (j = 0; m->cpu && j < m->nr_cpu; j++)
			pb_free(&m->cpu[j].ev);
		free(m->ev);
		free(m->cpu);
		free(m->vtrack);
		if (m->h)
			tracecmd_close(m->h);
	}
}

static int write_trace(struct pf_writer *w, bool have_host, const struct vcpus_an *va)
{
	struct tracecmd_input *hs[PF_MAX_MACHINES];
	const struct pf_machine host0 = { .id = 0 };
	uint64_t first = 0, ts;
	unsigned int i, j;

	for (i = 0; i < w->nr; i++) {
		hs[i] = w->m[i].h;
		ts = tracecmd_get_first_ts(w->m[i].h);
		if (ts && (!first || ts < first))
			first = ts;
	}
	first = first ?: 1;		/* a sync round with a zero reading is ignored */
	/* The host's packets first: the trace clock, then what the host is. */
	packet_begin(w, &host0);
	boottime_snapshot(&w->pkt, TP_CLOCK_SNAPSHOT, first, true);
	packet_end(w);
	machine_info(w, have_host ? &w->m[0] : &host0);
	for (i = have_host ? 1 : 0; i < w->nr; i++)
		vcpu_tracks(w, have_host ? &w->m[0] : NULL, &w->m[i]);
	for (i = have_host ? 1 : 0; i < w->nr; i++) {
		machine_info(w, &w->m[i]);
		guest_clock(w, &w->m[i], first);
	}
	if (w->err)
		return w->err;
	/* All files in one time-ordered pass: the merge trace-cmd report does. */
	if (tracecmd_iterate_events_multi(hs, w->nr, on_record, w) < 0 && !w->err)
		w->err = -EIO;
	for (i = 0; i < w->nr && !w->err; i++)
		for (j = 0; j < w->m[i].nr_cpu; j++)
			flush_cpu(w, &w->m[i], j);
	if (va && !w->err)
		vcpus_an_each_strip(va, vcpu_slice, w);
	return w->err;
}

/**
 * pf_write() - report --perfetto: write the recording as one Perfetto trace
 * @dir: the recording
 * @root: its manifest
 * @guest: only this guest (--guest), or NULL for all
 * @path: the file to write (created 0600 or with the recording's mode, not
 *	through a symbolic link)
 * @mode: the recording's files' mode
 * @va: report --vcpus' analysis with its intervals (vcpus_an_strips()), or
 *	NULL: each vCPU's states become slices on its track
 *
 * Prints its errors and, on success, one line saying what it wrote.
 *
 * Return: 0, -EBADMSG (a trace file cannot be read), -ENOMEM, or -errno of
 * the output.
 */
int pf_write(const char *dir, const struct json_value *root, const char *guest, const char *path,
	     mode_t mode, const struct vcpus_an *va)
{
	const struct json_value *host = json_get(root, "host"), *g;
	struct pf_writer *w = calloc(1, sizeof(*w));
	uint64_t past = 0, lost = 0;
	bool have_host = false;
	unsigned int i;
	int ret = 0;

	if (!w)
		return -ENOMEM;
	pb_init(&w->pkt);
	w->str = malloc(PF_STR);
	if (!w->str) {
		ret = -ENOMEM;
		goto out;
	}
	if (json_is(host, JSON_OBJECT) && json_string(json_get(host, "file"))) {
		ret = add_machine(w, dir, host, true);
		have_host = ret == 0;
	}
	g = json_get(root, "guests");
	for (g = json_is(g, JSON_ARRAY) ? g->child : NULL; g && ret == 0; g = g->next) {
		const char *name = json_string(json_get(g, "name"));

		if (guest && (!name || strcmp(name, guest)))
			continue;
		ret = add_machine(w, dir, g, false);
	}
	if (ret < 0)
		goto out;
	if (!w->nr) {
		fprintf(stderr, "virtio-trace-collect report: %s has no trace file to write %s from\n",
			dir, path);
		ret = -ENOENT;
		goto out;
	}
	w->out = an_open_out(path, mode);
	if (!w->out) {
		ret = -errno;
		fprintf(stderr, "virtio-trace-collect report: cannot write %s: %s\n", path, strerror(errno));
		goto out;
	}
	setvbuf(w->out, NULL, _IOFBF, 1u << 20);
	ret = write_trace(w, have_host, va);
	if (fclose(w->out) != 0 && ret == 0)
		ret = -errno;
	if (ret < 0) {
		fprintf(stderr, "virtio-trace-collect report: writing %s failed: %s\n", path,
			strerror(-ret));
		goto out;
	}
	for (i = 0; i < w->nr; i++) {
		past += w->m[i].past_cpus;
		lost += w->m[i].lost_marks;
	}
	fprintf(stderr, "virtio-trace-collect report: wrote %s (%" PRIu64 " events, %u machines, %"
		PRIu64 " losses marked, %" PRIu64 " vCPU state slices, %" PRIu64 " bytes)\n", path,
		w->events, w->nr + !have_host, lost, w->slices, w->bytes);
	if (past)
		fprintf(stderr, "virtio-trace-collect report: %s: %" PRIu64 " events of CPUs past %u left "
			"out (Perfetto reads no more)\n", path, past, PF_MAX_CPUS - 1);
out:
	machines_free(w);
	pb_free(&w->pkt);
	free(w->str);
	free(w);
	return ret;
}
