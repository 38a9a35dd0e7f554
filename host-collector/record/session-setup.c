// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's setup (session.c's part): one step after the other, each a
 * request, and --incoming's takeover of a guest that arrived.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "collect.h"
#include "engine.h"
#include "hold.h"
#include "hostrec.h"
#include "kcache.h"
#include "lastboot-file.h"
#include "live.h"
#include "qmp.h"
#include "recording.h"
#include "session.h"
#include "session-int.h"
#include "stream.h"
#include "sync.h"
#include "text.h"
#include "trigger-guest.h"
#include "store/spool.h"
#include "vt_conn.h"

/*
 * --incoming: a vCPU the takeover's probes left without a clock epoch (under
 * TCG the first answers after a migration can come seconds late) is probed
 * again this soon, a few times, so that the events around the takeover are
 * not mapped by an epoch measured much later.
 */
#define SYNC_RETRY_NS		NSEC_PER_SEC
#define SYNC_RETRIES		5

static void take_over(struct guest *g);
static void full_meta_done(struct guest *g, int err);

/* "sched", "sched:sched_switch", "sched/sched_switch", "sched:*". */
static void split_event(const char *spec, char *sys, char *ev, size_t size)
{
	const char *sep = strpbrk(spec, ":/");

	if (!sep) {
		snprintf(sys, size, "%s", spec);
		snprintf(ev, size, "*");
		return;
	}
	snprintf(sys, size, "%.*s", (int)(sep - spec), spec);
	snprintf(ev, size, "%s", sep[1] ? sep + 1 : "*");
}

static int enc_events(struct guest *g)
{
	const struct record_opts *o = g->rec->o;
	static char sys[COLLECT_MAX_EVENTS][VT_PROTO_MAX_NAME], ev[COLLECT_MAX_EVENTS][VT_PROTO_MAX_NAME];
	struct vt_proto_event list[COLLECT_MAX_EVENTS];
	unsigned int i;

	for (i = 0; i < o->nr_events; i++) {
		split_event(o->events[i], sys[i], ev[i], VT_PROTO_MAX_NAME);
		list[i].system = sys[i];
		list[i].event = ev[i];
		list[i].filter = o->filters[i] ? o->filters[i] : "";
	}
	return vt_proto_enc_events(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
				   vt_conn_next_seq(g->ctl.conn), VT_PROTO_EVENTS_REPLACE, list,
				   o->nr_events);
}

static const char *config_refused(const struct guest *g, int err);

static void step_done(struct guest *g, int err)
{
	const char *opt = err < 0 ? config_refused(g, err) : NULL;

	if (opt) {
		g->setup.refused = true;
		session_fail(g, "%s: %s", opt, g->reply_text[0] ? g->reply_text : strerror(-err));
		return;
	}
	if (err < 0) {
		session_fail(g, "%s: %s (%s)", sess_step_what(g->setup.step),
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	g->setup.step++;
	sess_setup_next(g);
}

/* --incoming: the metadata is in (kallsyms too): the recording goes on as any does. */
static void incoming_meta_done(struct guest *g, int err)
{
	(void)err;
	spool_save_migration(g);
	full_meta_done(g, 0);
}

/* Whether a vCPU that streams has no clock epoch yet (probes only: KVM's are read, not measured). */
static bool epoch_missing(const struct guest *g)
{
	unsigned int i;

	if (strcmp(g->sync.head.method, "probe"))
		return false;
	for (i = 0; i < g->nr_streams; i++) {
		unsigned int cpu = g->streams[i].cpu;

		if (cpu < COLLECT_MAX_CPUS && !g->sync.cpus[cpu].nr && !g->sync.away[cpu])
			return true;
	}
	return false;
}

static void retry_synced(struct guest *g, int err);

static void retry_tick(void *arg)
{
	struct guest *g = arg;

	if (g->state != G_RUNNING || !epoch_missing(g))
		return;
	if (g->burst.active || g->req.active) {
		/* The metadata (or the WATCH) on its way: probes would wait behind it. */
		engine_timer_arm(sess_eng(g), &g->sync.retry_timer, SYNC_RETRY_NS, 0);
		return;
	}
	log_info("guest %s: a vCPU has no clock epoch since the takeover: probing again", g->name);
	sess_burst_run(g, "interval", retry_synced);
}

static void retry_synced(struct guest *g, int err)
{
	(void)err;
	if (g->state == G_RUNNING && epoch_missing(g) && ++g->sync.retries < SYNC_RETRIES)
		engine_timer_arm(sess_eng(g), &g->sync.retry_timer, SYNC_RETRY_NS, 0);
	sess_running_burst_done(g, 0);
}

/* --incoming: the agent answered the WATCH sent again: the metadata comes either way. */
static void rewatched(struct guest *g, int err)
{
	trig_guest_rewatched(g, err);
	sess_fetch_meta(g, 0, incoming_meta_done);
}

/*
 * The takeover's burst is done: the workload may go on; the guest trigger is
 * watched again (the agent replaces the watch the host it left asked for),
 * before the metadata, which can take seconds (kallsyms under TCG) that
 * would leave the trigger deaf; then the metadata comes. A stop meanwhile is
 * not held up by the WATCH: STOP drops the request, its OK is then unasked.
 */
static void incoming_synced(struct guest *g, int err)
{
	(void)err;
	g->setup.synced = true;
	sess_changed(g);
	if (g->state != G_RUNNING)
		return;
	if (epoch_missing(g))
		engine_timer_arm(sess_eng(g), &g->sync.retry_timer, SYNC_RETRY_NS, 0);
	if (trig_guest_applies(g)) {
		sess_request(g, trig_guest_encode(g), VT_PROTO_OK, rewatched);
		return;
	}
	sess_fetch_meta(g, 0, incoming_meta_done);
}

/*
 * The agent handed its session over: its ports are read at once (it has
 * been waiting for a reader since the switchover), its clock is synced at
 * once (the offset changed with the host), then the metadata is fetched.
 */
static void resume_answered(struct guest *g, int err)
{
	int ret;

	if (err < 0) {
		session_fail(g, "--incoming: the agent did not hand its session over: %s (%s)",
			     g->reply_text[0] ? g->reply_text : "refused", strerror(-err));
		return;
	}
	if (!g->mig.streaming) {
		log_info("guest %s: its agent records nothing: a new recording is set up", g->name);
		g->setup.step = ST_LASTBOOT;
		sess_setup_next(g);
		return;
	}
	g->mig.seen.resumed = true;
	g->mig.seen.taken_tsc = sync_host_tsc();
	sess_mig_clock(g);
	g->qemu.resync = false;	/* the takeover's burst is the resume's */
	log_info("guest %s: took its agent's session over (resume %llu, %u events in %s%s)",
		 g->name, (unsigned long long)g->mig.seen.resume_no, g->mig.seen.nr_events,
		 g->mig.seen.instance[0] ? "instance " : "the top-level buffer", g->mig.seen.instance);
	ret = sess_open_streams(g);
	if (ret < 0) {
		session_fail(g, "no data port could be opened (%s)", strerror(-ret));
		return;
	}
	if (guest_set_state(g, G_RUNNING, "took its agent's session over") < 0)
		return;
	g->setup.recorded = true;
	g->setup.step = ST_RUNNING;
	log_info("guest %s: recording again, on this host", g->name);
	spool_save_state(g);
	spool_save_migration(g);
	sess_changed(g);
	/* Stopped while it was taken over: what it streams now is drained, no more. */
	if (guest_take_deferred_stop(g))
		return;
	sess_burst_run(g, "resume", incoming_synced);
}

/* --incoming: ask the agent for its running session. */
static void take_over(struct guest *g)
{
	if (!(g->agent.caps & VT_PROTO_CAP_RESUME)) {
		session_fail(g, "--incoming: the agent cannot hand its session over (%s has no "
			     "RESUME)", g->agent.software);
		return;
	}
	g->mig.session_seen = false;
	sess_request(g, vt_proto_enc_empty(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_RESUME,
				      vt_conn_next_seq(g->ctl.conn)), VT_PROTO_SESSION, resume_answered);
}

static void hello_done(struct guest *g, int err)
{
	const struct record_opts *o = g->rec->o;
	struct record_fds fds;

	if (err < 0) {
		session_fail(g, "handshake refused: %s", g->reply_text);
		return;
	}
	g->agent.caps = g->hello.caps;
	g->agent.nr_cpus = g->hello.nr_cpus;
	g->agent.subbuf = g->hello.subbuf_size;
	if (!g->agent.nr_cpus || g->agent.nr_cpus > COLLECT_MAX_CPUS) {
		session_fail(g, "the agent reports %u CPUs (1 to %d supported)", g->agent.nr_cpus,
			     COLLECT_MAX_CPUS);
		return;
	}
	if (g->agent.subbuf < VT_SUBBUF_MIN || g->agent.subbuf > VT_SUBBUF_MAX ||
	    (g->agent.subbuf & (g->agent.subbuf - 1))) {
		session_fail(g, "the agent reports %u-byte sub-buffers", g->agent.subbuf);
		return;
	}
	log_info("guest %s: %s, %u CPUs, %u-byte pages, clock %s", g->name, g->agent.software,
		 g->agent.nr_cpus, g->agent.subbuf, g->agent.clock);
	/* Before its ports take a descriptor: a guest too big fails alone (test-collect-fdbudget). */
	if (record_fds_claim(g, &fds) < 0) {
		session_fail(g, "not recorded: its %u vCPUs need about %" PRIu64 " open files, more than "
			     "the others leave under the open-file limit of %" PRIu64 " (RLIMIT_NOFILE); "
			     "recording it too needs `ulimit -n %" PRIu64 "` (LimitNOFILE= for a service)",
			     g->agent.nr_cpus, fds.guest, fds.limit, fds.need);
		return;
	}
	if (g->mig.incoming) {
		take_over(g);
		return;
	}
	if (hold_missing(o->hold, g->agent.caps)) {
		g->setup.refused = true;	/* as an event no guest has (record.c) */
		session_fail(g, "%s (%s)", hold_missing(o->hold, g->agent.caps), g->agent.software);
		return;
	}
	if (!(g->agent.caps & VT_PROTO_CAP_X86_TSC) && !o->clock)
		log_warn("guest %s has no x86-tsc trace clock: its timestamps cannot be mapped "
			 "exactly onto the host's", g->name);
	step_done(g, 0);
}

/* The last boot's bundle arrived, or the agent has none to give: recording goes on either way. */
static void lastboot_received(struct guest *g, int err)
{
	char why[sizeof(g->figures.error)];

	if (err < 0) {
		log_warn("guest %s: no last boot's trace: %s", g->name,
			 g->reply_text[0] ? g->reply_text : strerror(-err));
		vt_proto_meta_rx_release(&g->meta.rx);
	} else if (lastboot_save(g->name, g->rec->out_fd, &g->meta.rx, g->rec->o, why,
				 sizeof(why)) < 0) {
		session_fail(g, "%s", why);
		return;
	}
	step_done(g, 0);
}

static void started(struct guest *g, int err)
{
	if (err < 0) {
		step_done(g, err);
		return;
	}
	if (guest_set_state(g, G_RUNNING, "START answered") < 0)
		return;
	g->setup.recorded = true;
	log_info("guest %s: recording", g->name);
	spool_save_state(g);
	step_done(g, 0);	/* ST_SYNC */
}

/* The full metadata after START came (or the setup's is kept): setup is over. */
static void full_meta_done(struct guest *g, int err)
{
	const struct record_opts *o = g->rec->o;

	(void)err;
	g->meta.partial = false;
	/* The bundle the guest's events are shown with (kallsyms, task names): the live view may start. */
	live_meta(g->rec->live, g->live_idx);
	/* A stop that waited for this bundle. */
	if (guest_take_deferred_stop(g))
		return;
	g->setup.step = ST_RUNNING;
	if (!strcmp(g->sync.head.method, "kvm"))
		engine_timer_arm(sess_eng(g), &g->sync.kvm_timer, sync_kvm_period_ns(g), sync_kvm_period_ns(g));
	if (o->sync_interval > 0)
		engine_timer_arm(sess_eng(g), &g->sync.timer, (uint64_t)(o->sync_interval * NSEC_PER_SEC),
				 (uint64_t)(o->sync_interval * NSEC_PER_SEC));
	sess_alive_begin(g);
	spool_save_state(g);
	sess_running_burst_done(g, 0);
}

/*
 * The clock sync after START is done: the workload may start (it would
 * have disturbed the burst), and the full metadata is fetched while it runs
 * if the setup's left kallsyms out.
 */
static void synced(struct guest *g, int err)
{
	(void)err;
	g->setup.synced = true;
	if (g->meta.partial && g->state == G_RUNNING && !sess_kallsyms_from_cache(g))
		sess_fetch_meta(g, 0, full_meta_done);
	else
		full_meta_done(g, 0);
	sess_changed(g);
}

/* ST_HELLO: the handshake (--incoming: after a frame's worth of padding). */
static int enc_hello(struct guest *g)
{
	const struct record_opts *o = g->rec->o;
	uint8_t *f = vt_conn_frame(g->ctl.conn);
	struct vt_proto_hello hello = {
		.rev_min = VT_PROTO_REV_MIN, .rev_max = VT_PROTO_REV_MAX,
		.caps = VT_PROTO_CAP_X86_TSC | VT_PROTO_CAP_META | VT_PROTO_CAP_SYNC_TSC |
			VT_PROTO_CAP_NOTICE,
		.clock = o->clock ? o->clock : "",
		.software = "virtio-trace-collect " PACKAGE_VERSION,
	};
	int ret;

	if (g->mig.incoming) {
		/*
		 * The agent may hold the start of a frame the host it
		 * left sent just before the switchover: a frame's worth
		 * of bytes that can begin no frame ends it (as a
		 * malformed or oversized one), and the parser then
		 * resyncs on our HELLO's magic.
		 */
		memset(f, 0xff, VT_PROTO_FRAME_MAX);
		ret = sess_send_frame(g, (int)VT_PROTO_FRAME_MAX);
		if (ret < 0)
			return ret;
		hello.caps |= VT_PROTO_CAP_RESUME;
	}
	return vt_proto_enc_hello(f, VT_PROTO_FRAME_MAX, VT_PROTO_HELLO, vt_conn_next_seq(g->ctl.conn),
				  &hello);
}

/* ST_LASTBOOT: the previous boot's trace first, before anything in the guest changes. */
static bool lastboot_applies(struct guest *g)
{
	if (!g->rec->o->last_boot)
		return false;
	if (!(g->agent.caps & VT_PROTO_CAP_LASTBOOT)) {
		log_warn("guest %s: --last-boot: the agent cannot send the last boot's "
			 "trace (an older trace-agent)", g->name);
		return false;
	}
	return true;
}

static int enc_lastboot(struct guest *g)
{
	vt_proto_meta_rx_release(&g->meta.rx);
	vt_proto_meta_rx_init(&g->meta.rx, VT_PROTO_META_MAX_TOTAL);
	return vt_proto_enc_string(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_LASTBOOT_REQ,
				   vt_conn_next_seq(g->ctl.conn), g->rec->o->last_boot);
}

/* ST_INSTANCE: the agent's own default is a private instance; the top level only when asked. */
static bool instance_applies(struct guest *g)
{
	const struct record_opts *o = g->rec->o;

	return o->top_level || (o->tracer && !strcmp(o->tracer, "mmiotrace"));
}

static int enc_instance(struct guest *g)
{
	return vt_proto_enc_instance(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
				     vt_conn_next_seq(g->ctl.conn), NULL);
}

/* ST_CLOCK: x86-tsc where the guest has it: the one clock that maps exactly onto the host's. */
static bool clock_applies(struct guest *g)
{
	return g->rec->o->clock || (g->agent.caps & VT_PROTO_CAP_X86_TSC);
}

static int enc_clock(struct guest *g)
{
	const struct record_opts *o = g->rec->o;

	snprintf(g->agent.clock, sizeof(g->agent.clock), "%s", o->clock ? o->clock : "x86-tsc");
	return vt_proto_enc_string(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_CLOCK,
				   vt_conn_next_seq(g->ctl.conn), g->agent.clock);
}

/* ST_BUFFER: --buffer-size, --subbuf-size. */
static bool buffer_applies(struct guest *g)
{
	return g->rec->o->buffer_kb || g->rec->o->subbuf_kb;
}

static int enc_buffer(struct guest *g)
{
	const struct record_opts *o = g->rec->o;
	struct vt_proto_buffer_size bs = { .size_kb = o->buffer_kb, .subbuf_kb = o->subbuf_kb };

	if (o->subbuf_kb && !(g->agent.caps & VT_PROTO_CAP_SUBBUF)) {
		session_fail(g, "--subbuf-size: the guest kernel cannot change its sub-buffer "
			     "size (no buffer_subbuf_size_kb: Linux 6.8 or later needed)");
		return -EOPNOTSUPP;
	}
	return vt_proto_enc_buffer_size(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
					vt_conn_next_seq(g->ctl.conn), &bs);
}

/* ST_BUDGET: --buffer-budget, to an agent that grows its ring buffers. */
static bool budget_applies(struct guest *g)
{
	const struct record_opts *o = g->rec->o;

	if (!o->have_budget)
		return false;
	if (!(g->agent.caps & VT_PROTO_CAP_BUFFER_BUDGET)) {
		/* An older agent's buffers stay as they are: what 0 asks for. */
		if (o->budget_kb)
			log_warn("guest %s: its agent keeps its ring buffers at a fixed size "
				 "(an older trace-agent): --buffer-budget does not apply", g->name);
		return false;
	}
	return true;
}

static int enc_budget(struct guest *g)
{
	return vt_proto_enc_budget(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
				   vt_conn_next_seq(g->ctl.conn), g->rec->o->budget_kb);
}

/* ST_TRACER: --tracer. */
static bool tracer_applies(struct guest *g)
{
	return g->rec->o->tracer;
}

static int enc_tracer(struct guest *g)
{
	return vt_proto_enc_string(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX, VT_PROTO_TRACER,
				   vt_conn_next_seq(g->ctl.conn), g->rec->o->tracer);
}

/* ST_EVENTS: --event (enc_events()). */
static bool events_applies(struct guest *g)
{
	return g->rec->o->nr_events;
}

/* ST_FLUSH: --live: partial pages too, so that a quiet guest's events show within the window. */
static bool flush_applies(struct guest *g)
{
	if (!g->rec->o->live_ms)
		return false;
	if (!(g->agent.caps & VT_PROTO_CAP_FLUSH)) {
		log_warn("guest %s: its agent sends whole pages only (an older trace-agent): "
			 "its events show up live as its pages fill", g->name);
		return false;
	}
	return true;
}

static int enc_flush(struct guest *g)
{
	return vt_proto_enc_flush(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
				  vt_conn_next_seq(g->ctl.conn), live_flush_ms(g->rec->o->live_ms));
}

/* ST_META: the setup's bundle, without kallsyms where the agent can leave it out. */
static int act_meta(struct guest *g)
{
	g->setup.accepted = true;	/* it took the command line's events, tracer and clock */
	spool_save_state(g);
	/*
	 * kallsyms (4 MB on a Debian kernel, slow to read under TCG)
	 * is not needed to start: the full bundle follows once the
	 * guest records, off the start's path.
	 */
	g->meta.partial = (g->agent.caps & VT_PROTO_CAP_META_FLAGS) != 0;
	sess_fetch_meta(g, g->meta.partial ? VT_PROTO_META_REQ_NO_KALLSYMS : 0, step_done);
	return 1;
}

/* ST_STREAMS: the data ports; --listen: the step ends when QEMU connected them all. */
static int act_streams(struct guest *g)
{
	int ret;

	if (g->link.listen && g->link.chardev_dir[0]) {
		sess_listen_streams(g);
		return 1;
	}
	ret = sess_open_streams(g);
	if (ret < 0) {
		session_fail(g, "no data port could be opened (%s)", strerror(-ret));
		return ret;
	}
	spool_save_state(g);
	return 0;
}

/* ST_START: KVM's offsets are followed from before the guest records anything. */
static int enc_start(struct guest *g)
{
	sync_kvm_begin(g, g->rec->o);
	return vt_proto_enc_start(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
				  vt_conn_next_seq(g->ctl.conn), hold_start_flags(g->rec->o->hold));
}

/*
 * ST_SYNC: while recording: the burst is not on the start's path, and its
 * epoch holds for the events before it as after it.
 */
static int act_sync(struct guest *g)
{
	sess_burst_run(g, "start", synced);
	return 1;
}

/**
 * struct setup_step - one step of a guest's setup
 * @what: what it does, for messages
 * @state: the state the guest is in while it runs (guest_set_state())
 * @applies: whether it applies to this guest and command line (NULL: always)
 * @encode: its request, into the connection's frame: the length or -errno
 * @want: the answer the request waits for
 * @done: what to do with the answer
 * @act: a step that is not one request: 1 when it waits (its own
 *	continuation goes on), 0 when done, -errno with the guest failed
 * @option: the option the agent refused when it answers ENOENT or EINVAL
 */
struct setup_step {
	const char *what;
	enum guest_state state;
	bool (*applies)(struct guest *g);
	int (*encode)(struct guest *g);
	uint16_t want;
	void (*done)(struct guest *g, int err);
	int (*act)(struct guest *g);
	const char *option;
};

static const struct setup_step setup_steps[] = {
	[ST_HELLO] = { "handshake", G_HELLO, NULL, enc_hello, VT_PROTO_HELLO_REPLY, hello_done },
	[ST_LASTBOOT] = { "fetching the last boot's trace", G_CONFIG, lastboot_applies, enc_lastboot,
			  VT_PROTO_META, lastboot_received },
	[ST_INSTANCE] = { "choosing the top-level buffer", G_CONFIG, instance_applies, enc_instance,
			  VT_PROTO_OK, step_done },
	[ST_CLOCK] = { "choosing the clock", G_CONFIG, clock_applies, enc_clock, VT_PROTO_OK, step_done,
		       .option = "--clock" },
	[ST_BUFFER] = { "setting the buffer size", G_CONFIG, buffer_applies, enc_buffer, VT_PROTO_OK,
			step_done },
	[ST_BUDGET] = { "setting the buffer budget", G_CONFIG, budget_applies, enc_budget, VT_PROTO_OK,
			step_done, .option = "--buffer-budget" },
	[ST_TRACER] = { "choosing the tracer", G_CONFIG, tracer_applies, enc_tracer, VT_PROTO_OK, step_done,
			.option = "--tracer" },
	[ST_EVENTS] = { "enabling events", G_CONFIG, events_applies, enc_events, VT_PROTO_OK, step_done,
			.option = "--event" },
	[ST_FLUSH] = { "asking for partial pages (--live)", G_CONFIG, flush_applies, enc_flush, VT_PROTO_OK,
		       step_done },
	[ST_WATCH] = { "asking the agent to watch for the trigger", G_CONFIG, trig_guest_applies,
		       trig_guest_encode, VT_PROTO_OK, step_done, .option = "--trigger-guest-filter" },
	[ST_META] = { "fetching the metadata", G_META, .act = act_meta },
	[ST_STREAMS] = { "opening the data ports", G_META, .act = act_streams },
	[ST_START] = { "starting", G_META, NULL, enc_start, VT_PROTO_OK, started },
	[ST_SYNC] = { "syncing the clock", G_RUNNING, .act = act_sync },
	[ST_RUNNING] = { "recording", G_RUNNING },
};
_Static_assert(sizeof(setup_steps) / sizeof(setup_steps[0]) == ST_RUNNING + 1, "a row per setup step");

/*
 * An event, tracer or clock the guest's kernel does not have (the agent says
 * ENOENT, or EINVAL for a filter it refused) is most likely a mistake on the
 * command line: when no guest takes the command line, the run is a usage
 * error and keeps nothing (record.c); a guest that refuses what others take
 * is dropped alone, so that one guest cannot end the others' recording.
 */
static const char *config_refused(const struct guest *g, int err)
{
	const char *opt;

	if ((err != -ENOENT && err != -EINVAL) || g->setup.step >= ST_RUNNING)
		return NULL;
	opt = setup_steps[g->setup.step].option;
	/* The clock the guest was not asked for is x86-tsc, which it said it has. */
	if (g->setup.step == ST_CLOCK && !g->rec->o->clock)
		return NULL;
	return opt;
}

/**
 * sess_step_what() - what a setup step does, for messages
 * @step: the step (past the last: recording)
 *
 * Return: a static string.
 */
const char *sess_step_what(unsigned int step)
{
	return setup_steps[step < ST_RUNNING ? step : ST_RUNNING].what;
}

/* A step that is one request: sent, and its answer awaited. Return: as struct setup_step's @act. */
static int step_request(struct guest *g, const struct setup_step *s)
{
	int len = s->encode(g);

	if (len < 0 && g->state == G_FAILED)
		return len;
	return sess_request(g, len, s->want, s->done) < 0 ? -ECONNRESET : 1;
}

/**
 * sess_setup_next() - run the setup from g->setup.step on, until a step waits
 * @g: the guest
 *
 * Each step moves the guest to its state, is skipped when it does not
 * apply, and sends its request or acts; its continuation calls this again.
 */
void sess_setup_next(struct guest *g)
{
	const struct setup_step *s;

	for (; g->state != G_FAILED && g->setup.step < ST_RUNNING; g->setup.step++) {
		s = &setup_steps[g->setup.step];
		if (g->state != s->state && guest_set_state(g, s->state, s->what) < 0)
			return;
		if (s->applies && !s->applies(g))
			continue;
		if ((s->act ? s->act(g) : step_request(g, s)) != 0)
			return;
	}
}

/**
 * session_begin() - start driving an attached guest: its setup runs on its
 * own from here, and it starts recording when it is ready
 * @g: the guest, attached (control port open)
 *
 * Return: 0, or -errno with the guest failed.
 */
/* The control port is open: the connection, then setup. */
static int connected(struct guest *g)
{
	struct engine *e = sess_eng(g);

	if (attach_discard_stale(g->ctl.rfd))
		log_info("guest %s: discarded stale bytes on the control port", g->name);
	g->ctl.conn = vt_conn_new(g->ctl.rfd, g->ctl.wfd);
	if (!g->ctl.conn) {
		session_fail(g, "cannot set up its control connection: %m");
		return -ENOMEM;
	}
	vt_conn_set_hook(g->ctl.conn, sess_conn_hook, g);
	g->ctl.in = engine_add_fd(e, g->ctl.rfd, POLLIN, sess_ctl_readable, g);
	g->ctl.out = engine_add_fd(e, g->ctl.wfd, POLLOUT, sess_ctl_writable, g);
	if (!g->ctl.in || !g->ctl.out) {
		session_fail(g, "out of memory");
		return -ENOMEM;
	}
	g->setup.step = ST_HELLO;
	g->setup.connected_ns = engine_now_ns();
	sess_setup_next(g);
	return g->state == G_FAILED ? -ECONNRESET : 0;
}

static bool ctl_acceptable(void *arg, int revents)
{
	struct guest *g = arg;
	int fd, ret;

	(void)revents;
	if (g->state == G_FAILED)
		return false;
	ret = sess_take_connection(g, g->ctl.lfd, g->link.ctl_path, g->ctl.taken, &fd);
	if (ret == -EAGAIN)
		return true;
	if (ret < 0 && g->ctl.taken)
		return false;
	g->ctl.taken = true;
	engine_timer_cancel(sess_eng(g), &g->ctl.accept_timer);
	if (ret < 0) {
		session_fail(g, "cannot accept QEMU's connection on %s: %s", g->link.ctl_path, strerror(-ret));
		return false;
	}
	g->ctl.rfd = g->ctl.wfd = fd;
	connected(g);
	return true;
}

static void accept_timeout(void *arg)
{
	struct guest *g = arg;
	unsigned int i;

	if (g->ctl.lfd >= 0 && !g->ctl.taken) {
		session_fail(g, "nothing connected to %s within %llu s: start QEMU with a socket "
			     "chardev (server=off) on that path", g->link.ctl_path,
			     (unsigned long long)(ACCEPT_TIMEOUT_NS / NSEC_PER_SEC));
		return;
	}
	for (i = 0; g->ctl.ports && i < g->agent.nr_cpus; i++)
		if (g->ctl.ports[i].lfd >= 0 && !g->ctl.ports[i].taken)
			break;
	session_fail(g, "nothing connected to %s within %llu s: start QEMU with a socket "
		     "chardev (server=off) on that path", g->ctl.ports ? g->ctl.ports[i].base : "?",
		     (unsigned long long)(ACCEPT_TIMEOUT_NS / NSEC_PER_SEC));
}

/*
 * --incoming: the data ports are opened at once, before the guest arrives.
 * A socket chardev that has no reader when the destination's QEMU sends the
 * data that was under way at the switchover drops it; a FIFO keeps it.
 */
static void open_early(struct guest *g)
{
	unsigned int cpu;

	if (g->link.listen || !g->link.nr_cpu_paths)
		return;
	g->mig.early_fds = malloc(g->link.nr_cpu_paths * sizeof(int));
	if (!g->mig.early_fds)
		return;
	for (cpu = 0; cpu < g->link.nr_cpu_paths; cpu++)
		if (attach_open_data(g->name, &g->link, cpu, &g->mig.early_fds[cpu]) < 0)
			g->mig.early_fds[cpu] = -1;
}

/* --qmp: QMP follows the guest's parts it writes, and tells sess_qmp_event(). */
static void follow_qmp(struct guest *g, struct engine *e)
{
	const struct qmp_guest v = {
		.name = g->name, .link = &g->link, .qemu = &g->qemu, .seen = &g->mig.seen,
		.incoming = &g->mig.incoming, .migrating = &g->mig.migrating,
		.event = sess_qmp_event, .owner = g,
	};

	qmp_attach(&v, e, g->rec->tsc.khz);
}

/**
 * session_begin() - start driving an attached guest: its setup runs on its
 * own from here, and it starts recording when it is ready
 * @g: the guest, attached (control port open, or listening for QEMU)
 *
 * Return: 0, or -errno with the guest failed.
 */
int session_begin(struct guest *g)
{
	struct engine *e = sess_eng(g);

	g->sync.save = spool_save_sync;
	engine_timer_init(&g->req.timer, sess_req_timeout, g);
	engine_timer_init(&g->burst.timer, sess_burst_timeout, g);
	engine_timer_init(&g->burst.budget, sess_burst_budget, g);
	engine_timer_init(&g->stop.drain_timer, sess_drain_tick, g);
	engine_timer_init(&g->sync.kvm_timer, sess_kvm_tick, g);
	engine_timer_init(&g->sync.timer, sess_sync_tick, g);
	engine_timer_init(&g->alive.tick, sess_alive_tick, g);
	engine_timer_init(&g->alive.late, sess_alive_late, g);
	engine_timer_init(&g->stop.timer, sess_stop_timeout, g);
	engine_timer_init(&g->ctl.accept_timer, accept_timeout, g);
	engine_timer_init(&g->sync.retry_timer, retry_tick, g);
	engine_timer_init(&g->qemu.reset_timer, sess_reset_done, g);
	vt_proto_meta_rx_init(&g->meta.rx, META_LIMIT);
	if (g->link.qmp_path[0])
		follow_qmp(g, e);
	sess_watch_qemu(g, e);
	if (g->mig.incoming) {
		open_early(g);
		/* KVM's offset writes from the guest's arrival on are epochs (sync.c, kvm_arrive()). */
		sync_kvm_begin(g, g->rec->o);
	}
	if (g->ctl.lfd < 0)
		return connected(g);
	/* --listen: QEMU connects when it can (reconnect=N); the engine waits, nobody else does. */
	if (!engine_add_fd(e, g->ctl.lfd, POLLIN, ctl_acceptable, g)) {
		session_fail(g, "out of memory");
		return -ENOMEM;
	}
	engine_timer_arm(e, &g->ctl.accept_timer, ACCEPT_TIMEOUT_NS, 0);
	return 0;
}

