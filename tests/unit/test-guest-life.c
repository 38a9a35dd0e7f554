// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A guest's life (host-collector/record/session-life.c and the setup, stop
 * and migration parts of a session), driven by a scripted agent on a
 * socketpair: session.c, session-life.c, session-setup.c, session-stop.c,
 * session-migrate.c and session-alive.c are compiled into this test and talk the real protocol
 * over the real connection code. What is not the state machine is faked:
 * the engine (timers fire when the test says), the data streams (none), the
 * metadata bundle (a one-chunk bundle, not spooled), the clock probe bursts
 * (they end when the test says), the spool and the live view.
 *
 *  - session.h's diagram is the one drawn from guest_transitions[];
 *  - every move not in the table is refused: an internal error, and the
 *    guest dropped (or left as it was, when it is done or failed);
 *  - a whole life, new to done, in the table's order;
 *  - a timeout and a stop at every setup step;
 *  - the deferred stops (the full metadata, --incoming's takeover);
 *  - migrated out while running, draining and finishing;
 *  - --incoming with --trigger-guest-filter: WATCH again after the takeover
 *    (trigger-guest.c compiled in too), refused, or cut by a stop; and the
 *    source's watch's TRIGGERs on a destination that watches nothing;
 *  - and last: every row of the table was taken at least once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>

#include "session.c"
#include "session-life.c"
#include "session-setup.c"
#include "session-stop.c"
#include "session-migrate.c"
#include "session-alive.c"
#include "trigger-guest.c"

#ifndef SESSION_H_PATH
#error "SESSION_H_PATH: the path of host-collector/record/session.h"
#endif

/* ---- what the test saw: the moves (from the --verbose lines) and the refusals ---- */

static unsigned int row_hits[64];
static char moves[512];		/* "hello configure meta ...": the states moved to, in order */
static unsigned int internal_errors;
static unsigned int trig_warns;	/* "TRIGGER ... ignored" warnings */
static unsigned int rewatch_infos;	/* "watching ... again after the takeover" */
static char last_warn[1024];

static int state_by_name(const char *name)
{
	int s;

	for (s = G_NEW; s <= G_FAILED; s++)
		if (!strcmp(session_state_name(s), name))
			return s;
	return -1;
}

static void hit(int from, int to)
{
	const struct guest_transition *t;

	assert_true(from >= 0 && to >= 0);
	t = guest_transition_find(from, to);
	assert_non_null(t);
	row_hits[t - guest_transitions]++;
}

/* record's logging, as --verbose prints it: the moves are read back from it. */
void collect_log(int level, const char *fmt, ...)
{
	char line[1024], a[16], b[16];
	va_list ap;
	int n = 0;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (strstr(line, "internal error: no move"))
		internal_errors++;
	if (level == L_WARN) {
		snprintf(last_warn, sizeof(last_warn), "%s", line);
		if (strstr(line, ": TRIGGER "))
			trig_warns++;
	}
	if (level == L_INFO && !strcmp(line, "guest sim: watching sched:sched_switch again after the takeover"))
		rewatch_infos++;
	if (level != L_DEBUG)
		return;
	if (sscanf(line, "guest %*s %15s -> %15[a-z] (", a, b) == 2) {
		hit(state_by_name(a), state_by_name(b));
		snprintf(moves + strlen(moves), sizeof(moves) - strlen(moves), "%s%s", moves[0] ? " " : "", b);
	} else if (sscanf(line, "guest %*s %15[a-z]: the stop waits%n", a, &n) == 1 && n) {
		hit(state_by_name(a), G_STOPPING);
	}
}

const char *collect_msg_name(enum guest_msg kind)
{
	(void)kind;
	return "messages";
}

/* trigspec.c's, for a spec the test got wrong. */
void collect_usage(const char *fmt, ...)
{
	(void)fmt;
	fail();
}

/* ---- the engine: timers fire when the test says ---- */

static uint64_t now_ns;

uint64_t engine_now_ns(void)
{
	return now_ns += 1000;
}

void engine_timer_init(struct engine_timer *t, void (*cb)(void *arg), void *arg)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->arg = arg;
}

void engine_timer_arm(struct engine *e, struct engine_timer *t, uint64_t delay_ns, uint64_t period_ns)
{
	(void)e;
	t->when = delay_ns;
	t->period = period_ns;
	t->armed = true;
}

void engine_timer_cancel(struct engine *e, struct engine_timer *t)
{
	(void)e;
	t->armed = false;
}

static void fire(struct engine_timer *t)
{
	assert_true(t->armed);
	t->armed = t->period != 0;
	t->cb(t->arg);
}

static int fd_token;

struct engine_fd *engine_add_fd(struct engine *e, int fd, short events, bool (*cb)(void *arg, int revents),
				void *arg)
{
	(void)e;
	(void)fd;
	(void)events;
	(void)cb;
	(void)arg;
	return (struct engine_fd *)&fd_token;
}

void engine_fd_enable(struct engine_fd *x, bool on)
{
	(void)x;
	(void)on;
}

void engine_fd_remove(struct engine_fd *x)
{
	(void)x;
}

/* ---- the rest of record/: nothing to do here ---- */

size_t attach_discard_stale(int fd)
{
	(void)fd;
	return 0;
}

int attach_open_data(const char *name, struct guest_link *link, unsigned int cpu, int *fd)
{
	(void)name;
	(void)link;
	(void)cpu;
	*fd = -1;
	return -ENOENT;
}

/* record --hold is not this test's: no guest holds. */
const char *hold_missing(bool hold, uint64_t caps)
{
	(void)hold;
	(void)caps;
	return NULL;
}

uint32_t hold_start_flags(bool hold)
{
	(void)hold;
	return 0;
}

int hostrec_vcpus(struct hostrec *h, const uint32_t *tids, unsigned int nr)
{
	(void)h;
	(void)tids;
	(void)nr;
	return 0;
}

int live_set_vcpus(struct live *l, unsigned int trace, const uint32_t *tids, unsigned int nr)
{
	(void)l;
	(void)trace;
	(void)tids;
	(void)nr;
	return 0;
}

int hostrec_marker(struct hostrec *h, const char *text)
{
	(void)h;
	(void)text;
	return 0;
}

void live_meta(struct live *l, unsigned int idx)
{
	(void)l;
	(void)idx;
}

void live_clock(struct live *l, unsigned int idx, const struct vt_tsync_cpu *cpus, unsigned int nr,
		uint64_t host_end)
{
	(void)l;
	(void)idx;
	(void)cpus;
	(void)nr;
	(void)host_end;
}

unsigned int live_flush_ms(unsigned int live_ms)
{
	return live_ms;
}

int spool_save_state(const struct guest *g)
{
	(void)g;
	return 0;
}

/* session_begin() hands it to the clock (g->sync.save); the clock is stubbed here. */
int spool_save_sync(const struct guest *g)
{
	(void)g;
	return 0;
}

int spool_save_agent(const struct guest *g)
{
	(void)g;
	return 0;
}

int spool_save_migration(const struct guest *g)
{
	(void)g;
	return 0;
}

int lastboot_save(const char *name, int out_fd, struct vt_proto_meta_rx *rx, const struct record_opts *o,
		  char *why, size_t why_len)
{
	(void)name;
	(void)out_fd;
	(void)o;
	(void)why;
	(void)why_len;
	vt_proto_meta_rx_release(rx);
	return 0;
}

int record_fds_claim(struct guest *g, struct record_fds *b)
{
	(void)g;
	(void)b;
	return 0;
}

/* The scripted guests have no QEMU pid: its end is never followed here. */
int qemuproc_identify(pid_t pid, uid_t *uid, char *why, size_t len)
{
	(void)pid;
	(void)uid;
	snprintf(why, len, "no QEMU in this test");
	return 0;
}

int qmp_attach(const struct qmp_guest *v, struct engine *e, uint64_t tsc_khz)
{
	(void)v;
	(void)e;
	(void)tsc_khz;
	return 0;
}

int qmp_query_migrate(struct qmp *q)
{
	(void)q;
	return 0;
}

uint64_t sync_host_tsc(void)
{
	return now_ns;
}

int sync_kvm_begin(struct guest *g, const struct record_opts *o)
{
	(void)g;
	(void)o;
	return 0;
}

uint64_t sync_kvm_period_ns(const struct guest *g)
{
	(void)g;
	return NSEC_PER_SEC;
}

void sync_kvm_end(struct guest *g)
{
	(void)g;
}

void sync_reset(struct guest *g, uint64_t at)
{
	(void)g;
	(void)at;
}

void sync_reset_settled(struct guest *g)
{
	(void)g;
}

void sync_release(struct guest *g)
{
	(void)g;
}

/* The streams: none (the drain is then the agent's STOPPED and its last STATS). */
int sess_open_streams(struct guest *g)
{
	(void)g;
	return 0;
}

int sess_take_connection(struct guest *g, int lfd, const char *path, bool taken, int *fd)
{
	(void)g;
	(void)lfd;
	(void)path;
	(void)taken;
	*fd = -1;
	return -EAGAIN;
}

/* --listen: the step waits for QEMU, until step_streams_connected() or accept_timeout(). */
void sess_listen_streams(struct guest *g)
{
	g->ctl.nr_waiting = 1;
	engine_timer_arm(sess_eng(g), &g->ctl.accept_timer, ACCEPT_TIMEOUT_NS, 0);
}

/* The metadata: a real META_REQ, answered by the agent's one-chunk bundle. */
static void meta_in(struct guest *g, int err)
{
	vt_proto_meta_rx_release(&g->meta.rx);
	vt_proto_meta_rx_init(&g->meta.rx, META_LIMIT);
	g->meta.done(g, err);
}

void sess_fetch_meta(struct guest *g, uint32_t flags, void (*done)(struct guest *g, int err))
{
	g->meta.done = done;
	g->meta.req_flags = flags;
	vt_proto_meta_rx_release(&g->meta.rx);
	vt_proto_meta_rx_init(&g->meta.rx, META_LIMIT);
	sess_request(g, vt_proto_enc_meta_req_flags(vt_conn_frame(g->ctl.conn), VT_PROTO_FRAME_MAX,
						   vt_conn_next_seq(g->ctl.conn), META_LIMIT, flags),
		     VT_PROTO_META, meta_in);
}

bool sess_kallsyms_from_cache(struct guest *g)
{
	(void)g;
	return false;
}

/* The probe bursts: they end when the test says (burst_end()). */
void sess_burst_run(struct guest *g, const char *when, void (*done)(struct guest *g, int err))
{
	g->burst.active = true;
	g->burst.when = when;
	g->burst.done = done;
}

void sess_burst_timeout(void *arg)
{
	(void)arg;
}

void sess_burst_budget(void *arg)
{
	(void)arg;
}

void sess_got_reply(struct guest *g, const struct vt_proto_msg *m)
{
	(void)g;
	(void)m;
}

static unsigned int running_bursts;

void sess_running_burst_done(struct guest *g, int err)
{
	(void)g;
	(void)err;
	running_bursts++;
}

void sess_kvm_tick(void *arg)
{
	(void)arg;
}

void sess_sync_tick(void *arg)
{
	(void)arg;
}

void sess_resumed(struct guest *g)
{
	(void)g;
}

static void burst_end(struct guest *g, int err)
{
	assert_true(g->burst.active);
	g->burst.active = false;
	g->burst.done(g, err);
}

/* ---- the fixture: a guest, its recording and the agent's end of the socketpair ---- */

struct fx {
	struct record_opts o;
	struct recording rec;
	struct guest g;
	struct vt_conn *agent;
	int sv[2];
	uint64_t caps;
};

static struct fx *fx_new(void)
{
	static const char *const events[] = { "sched:sched_switch" };
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, f->sv), 0);
	/* Everything a setup can ask: every step applies. */
	f->o = (struct record_opts){ .last_boot = "boot", .top_level = true, .buffer_kb = 1024,
				     .have_budget = true, .budget_kb = 8192,
				     .tracer = "function", .nr_events = 1, .live_ms = 100,
				     .stop_timeout = 10, .trig_fd = -1 };
	f->o.events[0] = events[0];
	f->rec.o = &f->o;
	f->rec.out_fd = -1;
	snprintf(f->g.name, sizeof(f->g.name), "sim");
	f->g.rec = &f->rec;
	f->g.ctl.rfd = f->g.ctl.wfd = f->sv[0];
	f->g.ctl.lfd = -1;
	f->g.spool_fd = -1;
	f->g.link.listen = true;	/* the streams step waits for QEMU */
	snprintf(f->g.link.chardev_dir, sizeof(f->g.link.chardev_dir), "/nonexistent");
	f->agent = vt_conn_new(f->sv[1], f->sv[1]);
	assert_non_null(f->agent);
	f->caps = VT_PROTO_CAP_X86_TSC | VT_PROTO_CAP_META | VT_PROTO_CAP_META_FLAGS |
		  VT_PROTO_CAP_LASTBOOT | VT_PROTO_CAP_FLUSH | VT_PROTO_CAP_SYNC_TSC |
		  VT_PROTO_CAP_BUFFER_BUDGET;
	moves[0] = '\0';
	running_bursts = 0;
	trig_warns = rewatch_infos = 0;
	last_warn[0] = '\0';
	return f;
}

static void fx_free(struct fx *f)
{
	session_release(&f->g);
	vt_conn_free(f->agent);
	close(f->sv[0]);
	close(f->sv[1]);
	free(f);
}

static void collector_reads(struct fx *f)
{
	sess_ctl_readable(&f->g, POLLIN);
}

static void agent_send(struct fx *f, int len)
{
	assert_true(len > 0);
	assert_int_equal(vt_conn_send(f->agent, len), 0);
}

static void agent_ack(struct fx *f, uint16_t type, uint32_t ref)
{
	agent_send(f, vt_proto_enc_ack(vt_conn_frame(f->agent), VT_PROTO_FRAME_MAX, type,
				       vt_conn_next_seq(f->agent), ref));
}

static void agent_stats_last(struct fx *f)
{
	struct vt_proto_stats st = { .cpu = VT_PROTO_CPU_ALL, .flags = VT_PROTO_STATS_LAST, .text = "" };

	agent_send(f, vt_proto_enc_stats(vt_conn_frame(f->agent), VT_PROTO_FRAME_MAX,
					 vt_conn_next_seq(f->agent), &st));
}

static void agent_meta(struct fx *f)
{
	static const uint8_t blob[16] = "a bundle";
	struct vt_proto_meta_chunk c = { .total = sizeof(blob), .data = blob, .len = sizeof(blob) };

	agent_send(f, vt_proto_enc_meta(vt_conn_frame(f->agent), VT_PROTO_FRAME_MAX,
					vt_conn_next_seq(f->agent), &c));
}

static void agent_hello(struct fx *f)
{
	struct vt_proto_hello h = { .rev_min = VT_PROTO_REV_MIN, .rev_max = VT_PROTO_REV_MAX,
				    .nr_cpus = 2, .subbuf_size = 4096, .caps = f->caps,
				    .clock = "local", .software = "scripted agent" };

	agent_send(f, vt_proto_enc_hello(vt_conn_frame(f->agent), VT_PROTO_FRAME_MAX, VT_PROTO_HELLO_REPLY,
					 vt_conn_next_seq(f->agent), &h));
}

static void agent_session(struct fx *f)
{
	struct vt_proto_session ss = { .flags = VT_PROTO_SESSION_STREAMING, .subbuf_size = 4096,
				       .resume = 1, .instance = "", .clock = "x86-tsc" };

	agent_send(f, vt_proto_enc_session(vt_conn_frame(f->agent), VT_PROTO_FRAME_MAX,
					   vt_conn_next_seq(f->agent), &ss));
	agent_stats_last(f);
}

/* agent_next()'s message: its payload holds until the agent reads again. */
static struct vt_proto_msg agent_last;

/* The next request the collector sent: its type, and its seq in @seq. */
static uint16_t agent_next(struct fx *f, uint32_t *seq)
{
	struct vt_proto_msg m;
	int r;

	for (;;) {
		r = vt_conn_next(f->agent, &m);
		if (r > 0)
			break;
		if (r < 0)
			continue;	/* --incoming's padding: the parser resyncs on the next frame */
		r = vt_conn_read(f->agent);
		assert_true(r > 0);
	}
	agent_last = m;
	*seq = m.seq;
	return m.type;
}

/* The collector sent nothing more (yet). */
static void agent_nothing(struct fx *f)
{
	struct vt_proto_msg m;
	char c;

	assert_int_equal(vt_conn_next(f->agent, &m), 0);
	assert_int_equal(recv(f->sv[1], &c, 1, MSG_PEEK | MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

static void agent_error(struct fx *f, uint32_t ref, int err, const char *text)
{
	struct vt_proto_error e = { .ref_seq = ref, .err = err, .text = text };

	agent_send(f, vt_proto_enc_error(vt_conn_frame(f->agent), VT_PROTO_FRAME_MAX,
					 vt_conn_next_seq(f->agent), &e));
}

/* A match of the watch, a second after the last one (the host takes one a second). */
static void agent_trigger(struct fx *f, uint64_t ts)
{
	struct vt_proto_trigger t = { .timestamp = ts, .event = "sched:sched_switch" };

	now_ns += NSEC_PER_SEC;
	agent_send(f, vt_proto_enc_trigger(vt_conn_frame(f->agent), VT_PROTO_FRAME_MAX,
					   vt_conn_next_seq(f->agent), &t));
	collector_reads(f);
}

/* The scripted agent answers the collector's next request as a good agent does. */
static uint16_t agent_answer(struct fx *f)
{
	uint32_t seq;
	uint16_t type = agent_next(f, &seq);

	switch (type) {
	case VT_PROTO_HELLO:
		agent_hello(f);
		break;
	case VT_PROTO_LASTBOOT_REQ:
	case VT_PROTO_META_REQ:
		agent_meta(f);
		break;
	case VT_PROTO_STOP:
		agent_ack(f, VT_PROTO_STOPPED, seq);
		agent_stats_last(f);
		break;
	case VT_PROTO_RESUME:
		agent_session(f);
		break;
	default:
		agent_ack(f, VT_PROTO_OK, seq);
		break;
	}
	collector_reads(f);
	return type;
}

/* What the setup waits for at @step comes: the agent's answer, QEMU's connection or the burst's end. */
static void step_goes_on(struct fx *f)
{
	struct guest *g = &f->g;

	if (g->setup.step == ST_STREAMS) {
		g->ctl.nr_waiting = 0;
		engine_timer_cancel(sess_eng(g), &g->ctl.accept_timer);
		g->setup.step++;
		sess_setup_next(g);
	} else if (g->burst.active) {
		burst_end(g, 0);
	} else {
		agent_answer(f);
	}
}

/* Begin, and go on until the setup waits at @step. */
static void run_to(struct fx *f, unsigned int step)
{
	assert_int_equal(session_begin(&f->g), 0);
	while (f->g.setup.step < step) {
		assert_int_not_equal(f->g.state, G_FAILED);
		step_goes_on(f);
	}
	assert_int_equal(f->g.setup.step, step);
	assert_int_equal(f->g.state, setup_steps[step].state);
}

/* ---- the tests ---- */

/* The diagram in session.h, drawn from guest_transitions[]: one line a row. */
static void diagram_line(char *buf, size_t size, const struct guest_transition *t)
{
	snprintf(buf, size, " *   %-9s -> %-9s %s%s", session_state_name(t->from), session_state_name(t->to),
		 t->what, t->waits ? " [may wait]" : "");
}

static void test_diagram(void **state)
{
	char line[256], want[256];
	FILE *f = fopen(SESSION_H_PATH, "r");
	size_t i = 0;
	bool in = false;

	(void)state;
	printf("the diagram in session.h is guest_transitions[]\n");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strstr(line, "State diagram (guest_transitions[]")) {
			in = true;
			continue;
		}
		if (!in)
			continue;
		if (!strcmp(line, " * (end of the diagram)"))
			break;
		if (i < guest_nr_transitions)
			diagram_line(want, sizeof(want), &guest_transitions[i]);
		if (i >= guest_nr_transitions || strcmp(line, want)) {
			print_error("session.h's diagram, line %zu:\n%s\nthe table draws:\n", i + 1, line);
			for (i = 0; i < guest_nr_transitions; i++) {
				diagram_line(want, sizeof(want), &guest_transitions[i]);
				print_error("%s\n", want);
			}
			fail();
		}
		i++;
	}
	fclose(f);
	assert_true(in);
	assert_int_equal(i, guest_nr_transitions);
}

static void test_refused(void **state)
{
	unsigned int refused = 0, from, to;

	(void)state;
	printf("every move not in the table is refused\n");
	for (from = G_NEW; from <= G_FAILED; from++) {
		for (to = G_NEW; to <= G_FAILED; to++) {
			const struct guest_transition *t = guest_transition_find(from, to);
			struct fx *f;
			unsigned int errs = internal_errors;

			/* A row that only defers is refused when nothing is under way. */
			if (t && !t->defer_only)
				continue;
			f = fx_new();
			f->g.state = from;
			assert_int_equal(guest_set_state(&f->g, to, "test"), -EPERM);
			assert_int_equal(internal_errors, errs + 1);
			/* Dropped, unless it was over already. */
			assert_int_equal(f->g.state, from >= G_DONE ? from : G_FAILED);
			refused++;
			fx_free(f);
		}
	}
	/* 100 pairs, 21 moves the table allows outright. */
	assert_int_equal(refused, (G_FAILED + 1) * (G_FAILED + 1) - (guest_nr_transitions - 1));
}

static void test_whole_life(void **state)
{
	struct fx *f = fx_new();
	struct guest *g = &f->g;

	(void)state;
	printf("a whole life: new to done, each setup step's request answered\n");
	run_to(f, ST_SYNC);
	burst_end(g, 0);
	/* The full metadata after START, then recording. */
	assert_int_equal(agent_answer(f), VT_PROTO_META_REQ);
	assert_int_equal(g->setup.step, ST_RUNNING);
	assert_int_equal(running_bursts, 1);
	session_stop(g);
	assert_int_equal(g->state, G_STOPPING);
	assert_int_equal(agent_answer(f), VT_PROTO_STOP);
	assert_int_equal(g->state, G_FINISHING);
	burst_end(g, 0);	/* the final sync */
	assert_int_equal(agent_answer(f), VT_PROTO_META_REQ);
	assert_int_equal(agent_answer(f), VT_PROTO_BYE);
	assert_int_equal(g->state, G_DONE);
	assert_string_equal(moves, "hello configure meta running stopping draining finishing done");
	fx_free(f);
}

/* Each setup step that waits, and what a timeout there does. */
static const unsigned int waiting_steps[] = {
	ST_HELLO, ST_LASTBOOT, ST_INSTANCE, ST_CLOCK, ST_BUFFER, ST_BUDGET, ST_TRACER, ST_EVENTS,
	ST_FLUSH, ST_META, ST_STREAMS, ST_START, ST_SYNC,
};

static void test_timeout_each_step(void **state)
{
	unsigned int i;

	(void)state;
	printf("a timeout at each setup step drops the guest there (the clock sync's goes on)\n");
	for (i = 0; i < sizeof(waiting_steps) / sizeof(waiting_steps[0]); i++) {
		unsigned int step = waiting_steps[i];
		struct fx *f = fx_new();
		struct guest *g = &f->g;

		run_to(f, step);
		if (step == ST_SYNC) {
			/* A burst that times out is cut short: it records on, unsynced vCPUs aside. */
			burst_end(g, -ETIMEDOUT);
			assert_int_equal(g->state, G_RUNNING);
			fx_free(f);
			continue;
		}
		fire(step == ST_STREAMS ? &g->ctl.accept_timer : &g->req.timer);
		assert_int_equal(g->state, G_FAILED);
		assert_int_equal(g->setup.step, step);
		assert_non_null(strstr(g->figures.error, step == ST_STREAMS ? "nothing connected" :
				       step == ST_HELLO ? "did not answer (HELLO)" : "no answer to"));
		fx_free(f);
	}
}

static void test_stop_each_step(void **state)
{
	unsigned int i;

	(void)state;
	printf("a stop at each setup step drops the guest, or stops it once it records\n");
	for (i = 0; i < sizeof(waiting_steps) / sizeof(waiting_steps[0]); i++) {
		unsigned int step = waiting_steps[i];
		struct fx *f = fx_new();
		struct guest *g = &f->g;
		uint32_t seq;

		run_to(f, step);
		session_stop(g);
		if (step == ST_SYNC) {
			assert_int_equal(g->state, G_STOPPING);
			assert_false(g->burst.active);
			assert_int_equal(agent_next(f, &seq), VT_PROTO_STOP);
		} else {
			assert_int_equal(g->state, G_FAILED);
			assert_non_null(strstr(g->figures.error, sess_step_what(step)));
			/* It said BYE, unless nothing was ever said. */
			while (agent_next(f, &seq) != VT_PROTO_BYE)
				;
			assert_int_equal(seq, vt_conn_seq(g->ctl.conn));
		}
		fx_free(f);
	}
}

/* Up to the full metadata after START, asked for and not answered yet. */
static void run_to_full_meta(struct fx *f)
{
	uint32_t seq;

	run_to(f, ST_SYNC);
	burst_end(&f->g, 0);
	assert_true(f->g.req.active);
	assert_int_equal(agent_next(f, &seq), VT_PROTO_META_REQ);
}

static void test_stop_waits_for_meta(void **state)
{
	struct fx *f = fx_new();
	struct guest *g = &f->g;
	uint32_t seq;

	(void)state;
	printf("a stop waits for the full metadata under way, then stops\n");
	run_to_full_meta(f);
	session_stop(g);
	session_stop(g);	/* a second Ctrl-C: still one deferred stop */
	assert_int_equal(g->state, G_RUNNING);
	assert_true(g->stop.deferred);
	assert_true(g->stop.timer.armed);
	assert_int_equal(g->stop.timer.when, 3 * NSEC_PER_SEC);
	agent_meta(f);
	collector_reads(f);
	assert_int_equal(g->state, G_STOPPING);
	assert_false(g->stop.deferred);
	assert_int_equal(running_bursts, 0);	/* it never went on recording */
	assert_int_equal(agent_next(f, &seq), VT_PROTO_STOP);
	fx_free(f);

	printf("... or abandons it past its time\n");
	f = fx_new();
	g = &f->g;
	run_to_full_meta(f);
	session_stop(g);
	fire(&g->stop.timer);
	assert_int_equal(g->state, G_STOPPING);
	assert_true(g->stop.meta_abandoned);
	assert_int_equal(agent_next(f, &seq), VT_PROTO_STOP);
	fx_free(f);
}

static void test_stop_waits_for_takeover(void **state)
{
	struct fx *f = fx_new();
	struct guest *g = &f->g;
	uint32_t seq;

	(void)state;
	printf("--incoming: a stop waits for the takeover, then stops what was taken over\n");
	g->mig.incoming = true;
	f->caps |= VT_PROTO_CAP_RESUME;
	assert_int_equal(session_begin(g), 0);
	assert_int_equal(agent_answer(f), VT_PROTO_HELLO);
	assert_int_equal(agent_next(f, &seq), VT_PROTO_RESUME);
	session_stop(g);
	assert_int_equal(g->state, G_HELLO);
	assert_true(g->stop.deferred);
	agent_session(f);
	collector_reads(f);
	assert_int_equal(g->state, G_STOPPING);
	assert_true(g->mig.seen.resumed);
	assert_int_equal(agent_answer(f), VT_PROTO_STOP);
	assert_int_equal(g->state, G_FINISHING);
	assert_string_equal(moves, "hello running stopping draining finishing");
	fx_free(f);
}

#define WATCH_SPEC	"sched:sched_switch if prev_pid == 1"

/*
 * --incoming (with --trigger-guest-filter @spec unless NULL; an agent with
 * WATCH when @watch): taken over, and the takeover's clock sync done.
 */
static void takeover_synced(struct fx *f, const char *spec, bool watch)
{
	struct guest *g = &f->g;

	g->mig.incoming = true;
	f->caps |= VT_PROTO_CAP_RESUME | (watch ? VT_PROTO_CAP_WATCH : 0);
	if (spec)
		assert_int_equal(trig_guest_parse(&f->o, spec), 0);
	assert_int_equal(session_begin(g), 0);
	assert_int_equal(agent_answer(f), VT_PROTO_HELLO);
	assert_int_equal(agent_answer(f), VT_PROTO_RESUME);
	assert_int_equal(g->state, G_RUNNING);
	assert_true(g->burst.active);
	agent_nothing(f);	/* the burst first: the clock moved with the host */
	burst_end(g, 0);
}

/* The WATCH the collector sent next: what it asks for; its seq in @seq. */
static void watch_sent(struct fx *f, uint32_t *seq)
{
	struct vt_proto_watch w;

	assert_int_equal(agent_next(f, seq), VT_PROTO_WATCH);
	assert_int_equal(vt_proto_dec_watch(&agent_last, &w), 0);
	assert_string_equal(w.system, "sched");
	assert_string_equal(w.event, "sched_switch");
	assert_string_equal(w.filter, "prev_pid == 1");
	assert_int_equal(w.interval_ms, TRIG_GUEST_INTERVAL_MS);
	agent_nothing(f);	/* one request at a time: the metadata waits for its answer */
}

static void test_takeover_watches_again(void **state)
{
	struct fx *f = fx_new();
	struct guest *g = &f->g;
	unsigned int errs = internal_errors;
	uint32_t seq;

	(void)state;
	printf("--incoming, --trigger-guest-filter: WATCH again after the takeover's sync, then the "
	       "metadata; a TRIGGER is taken\n");
	takeover_synced(f, WATCH_SPEC, true);
	watch_sent(f, &seq);
	agent_ack(f, VT_PROTO_OK, seq);
	collector_reads(f);
	assert_int_equal(rewatch_infos, 1);
	assert_true(g->trig.watching);
	assert_int_equal(agent_answer(f), VT_PROTO_META_REQ);
	assert_int_equal(g->setup.step, ST_RUNNING);
	assert_int_equal(running_bursts, 1);
	agent_nothing(f);
	agent_trigger(f, 1000);
	agent_trigger(f, 2000);
	assert_int_equal(g->trig.taken, 2);
	assert_int_equal(g->trig.ignored, 0);
	assert_int_equal(trig_warns, 0);
	session_stop(g);
	assert_int_equal(agent_answer(f), VT_PROTO_STOP);
	assert_int_equal(g->state, G_FINISHING);
	assert_string_equal(moves, "hello running stopping draining finishing");
	assert_int_equal(internal_errors, errs);
	fx_free(f);

	printf("... the agent refuses it: a warning, the recording goes on, its TRIGGERs are ignored\n");
	f = fx_new();
	g = &f->g;
	takeover_synced(f, WATCH_SPEC, true);
	watch_sent(f, &seq);
	agent_error(f, seq, EINVAL, "watch sched:sched_switch: the kernel refused the filter");
	collector_reads(f);
	assert_string_equal(last_warn, "guest sim: --trigger-guest-filter '" WATCH_SPEC "': its agent "
			    "did not watch again after the takeover: watch sched:sched_switch: the kernel "
			    "refused the filter (Invalid argument): recorded on without guest triggers");
	assert_false(g->trig.watching);
	assert_int_equal(rewatch_infos, 0);
	assert_int_equal(agent_answer(f), VT_PROTO_META_REQ);
	assert_int_equal(g->state, G_RUNNING);
	assert_int_equal(g->setup.step, ST_RUNNING);
	agent_trigger(f, 1000);
	assert_int_equal(g->trig.taken, 0);
	assert_int_equal(g->trig.ignored, 1);
	assert_non_null(strstr(last_warn, "ignored: no WATCH asked for it (1 ignored so far)"));
	fx_free(f);

	printf("... a stop while it is under way: STOP at once, the late OK unasked\n");
	f = fx_new();
	g = &f->g;
	takeover_synced(f, WATCH_SPEC, true);
	watch_sent(f, &seq);
	session_stop(g);
	assert_int_equal(g->state, G_STOPPING);
	assert_int_equal(agent_answer(f), VT_PROTO_STOP);
	agent_ack(f, VT_PROTO_OK, seq);
	collector_reads(f);
	assert_int_equal(g->state, G_FINISHING);
	assert_int_equal(rewatch_infos, 0);
	agent_nothing(f);
	assert_int_equal(internal_errors, errs);
	fx_free(f);
}

static void test_takeover_no_watch(void **state)
{
	struct fx *f = fx_new();
	struct guest *g = &f->g;
	int i;

	(void)state;
	printf("--incoming without --trigger-guest-filter: no WATCH; the source's watch's TRIGGERs "
	       "are ignored, said on the 1st, 2nd, 4th...\n");
	takeover_synced(f, NULL, true);
	assert_int_equal(agent_answer(f), VT_PROTO_META_REQ);
	assert_int_equal(g->setup.step, ST_RUNNING);
	for (i = 1; i <= 5; i++)
		agent_trigger(f, 1000 * i);
	assert_int_equal(g->trig.taken, 0);
	assert_int_equal(g->trig.ignored, 5);
	assert_int_equal(trig_warns, 3);
	assert_string_equal(last_warn, "guest sim: TRIGGER sched:sched_switch ignored: a watch the host "
			    "it came from asked for (no --trigger-guest-filter here) (4 ignored so far)");
	assert_int_equal(g->state, G_RUNNING);
	fx_free(f);

	printf("... with it, to an agent without WATCH: said, and no WATCH\n");
	f = fx_new();
	g = &f->g;
	takeover_synced(f, WATCH_SPEC, false);
	assert_non_null(strstr(last_warn, "(no WATCH capability"));
	assert_int_equal(agent_answer(f), VT_PROTO_META_REQ);
	assert_int_equal(g->setup.step, ST_RUNNING);
	fx_free(f);
}

static void migrated(struct guest *g)
{
	sess_qmp_event(g, QMP_EV_MIGRATION, "completed");
	assert_int_equal(g->state, G_DRAINING);
	assert_true(g->mig.out);
	fire(&g->stop.timer);	/* its ports still deliver: ended at --stop-timeout */
	assert_int_equal(g->state, G_DONE);
}

static void test_migrated_out(void **state)
{
	struct fx *f;
	uint32_t seq;
	int i;

	(void)state;
	printf("migrated out while running, draining and finishing: drained, then done\n");
	for (i = 0; i < 3; i++) {
		f = fx_new();
		run_to(f, ST_SYNC);
		burst_end(&f->g, 0);
		agent_answer(f);
		if (i > 0) {
			session_stop(&f->g);
			assert_int_equal(agent_next(f, &seq), VT_PROTO_STOP);
			agent_ack(f, VT_PROTO_STOPPED, seq);
			if (i == 2)
				agent_stats_last(f);	/* every byte in: finishing */
			collector_reads(f);
			assert_int_equal(f->g.state, i == 2 ? G_FINISHING : G_DRAINING);
		}
		migrated(&f->g);
		fx_free(f);
	}
}

static void test_failures(void **state)
{
	struct fx *f;
	uint32_t seq;
	int i;

	(void)state;
	printf("dropped while new, recording, stopping, draining and finishing\n");
	f = fx_new();
	f->g.wait.until = UINT64_MAX;
	f->g.ctl.rfd = f->g.ctl.wfd = -1;
	session_stop(&f->g);
	assert_int_equal(f->g.state, G_FAILED);
	assert_string_equal(moves, "failed");
	fx_free(f);

	f = fx_new();
	run_to(f, ST_SYNC);
	close(f->sv[1]);
	f->sv[1] = -1;
	collector_reads(f);
	assert_int_equal(f->g.state, G_FAILED);
	assert_string_equal(f->g.figures.error, "the agent closed the control port");
	fx_free(f);

	/* --stop-timeout: STOPPED missing, the last STATS missing, the final exchanges too slow. */
	for (i = 0; i < 3; i++) {
		f = fx_new();
		run_to(f, ST_SYNC);
		session_stop(&f->g);
		assert_int_equal(agent_next(f, &seq), VT_PROTO_STOP);
		if (i > 0)
			agent_ack(f, VT_PROTO_STOPPED, seq);
		if (i > 1)
			agent_stats_last(f);
		collector_reads(f);
		assert_int_equal(f->g.state, G_STOPPING + i);
		fire(&f->g.stop.timer);
		assert_int_equal(f->g.state, G_FAILED);
		fx_free(f);
	}
}

/* Last: the tests above took every move the table allows. */
static void test_every_row_taken(void **state)
{
	size_t i;

	(void)state;
	printf("every row of guest_transitions[] was taken\n");
	assert_true(guest_nr_transitions <= sizeof(row_hits) / sizeof(row_hits[0]));
	for (i = 0; i < guest_nr_transitions; i++) {
		if (!row_hits[i])
			print_error("never taken: %s -> %s\n", session_state_name(guest_transitions[i].from),
				    session_state_name(guest_transitions[i].to));
		assert_int_not_equal(row_hits[i], 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diagram),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_whole_life),
		cmocka_unit_test(test_timeout_each_step),
		cmocka_unit_test(test_stop_each_step),
		cmocka_unit_test(test_stop_waits_for_meta),
		cmocka_unit_test(test_stop_waits_for_takeover),
		cmocka_unit_test(test_takeover_watches_again),
		cmocka_unit_test(test_takeover_no_watch),
		cmocka_unit_test(test_migrated_out),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_every_row_taken),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
