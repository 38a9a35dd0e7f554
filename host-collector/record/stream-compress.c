// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Compression ahead of the finish: while the pages stream in, one thread of
 * the lowest priority (SCHED_IDLE: it runs only on a core nothing else wants)
 * compresses each CPU's spooled region, whole chunks at a time, into
 * cpuN.zst, exactly as the finish's zstd writer would (vt_tdchunker_encode(),
 * same chunk size and level). When the stream closes, cpuN.zsum records what
 * the chunks cover; the finish copies them (vt_tracedat_cpu_chunks()) and
 * compresses only the rest. The trace.dat is byte for byte the one the finish
 * alone makes.
 *
 * The streaming never waits for this thread: the engine only publishes how
 * far each region is written (an atomic store, and a wake-up when the thread
 * sleeps and a whole chunk is there). The thread sleeps without a timeout
 * (an idle recording costs it no wake-up): it says it sleeps before it looks
 * for work a last time, and the engine stores how far it wrote before it
 * looks whether the thread sleeps, both sequentially consistent, so one of
 * the two sees the other's store; the thread keeps the lock from that last
 * look into the wait, so the engine's signal, taken under the lock, cannot
 * fall between them. A thread that falls behind, or a region it cannot read back,
 * leaves more for the finish, never less in the file. A stream is taken only
 * when its region starts empty and cpuN.zst is new, so the chunks always
 * cover the region from its first byte. Without cpuN.zsum (a killed
 * collector) cpuN.zst is ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collect.h"
#include "stream.h"
#include "store/spool.h"
#include "vt_tracedat.h"

struct compressor {
	pthread_mutex_t lock;
	pthread_cond_t work;	/* to the thread: a chunk is ready, or stop */
	pthread_cond_t idle;	/* to a closing stream: the thread is done with it */
	pthread_t thread;
	struct stream **streams;
	unsigned int nr, cap, next;
	struct vt_tdchunker *ck;
	int level;
	uint32_t subbuf;	/* of the chunker */
	uint8_t *in;
	atomic_bool sleeping;
	bool warm;	/* the chunker and @in hold their memory (a chunk was made) */
	bool stop;
};

/*
 * A thread that made no chunk for this long frees zstd's working memory
 * and its buffers (0.6 MiB): a quiet guest's stream (1 KiB/s makes a chunk
 * a minute) does not keep them between its chunks, a busy one never waits
 * this long.
 */
#define REST_S	2

static struct compressor *cmp;

/* A stream with a whole chunk not compressed yet, round robin; NULL for none. */
static struct stream *pick(struct compressor *z, size_t chunk)
{
	unsigned int i;

	for (i = 0; i < z->nr; i++) {
		struct stream *s = z->streams[(z->next + i) % z->nr];

		if (!s->compress.closing && !s->compress.failed &&
		    atomic_load(&s->compress.avail) - s->compress.sum.raw >= chunk) {
			z->next = (z->next + i + 1) % z->nr;
			return s;
		}
	}
	return NULL;
}

/* One chunk of @s: read back, counted, compressed, appended. */
static int one_chunk(struct compressor *z, struct stream *s, size_t chunk)
{
	struct spool_zsum *sum = &s->compress.sum;
	uint64_t off = (uint64_t)s->cpu * s->region + sum->raw;
	uint64_t events_sum = 0, missed = 0, lost = 0;
	const uint8_t *out;
	size_t have = 0, i;
	ssize_t n;
	int ret;

	if (!z->in)
		z->in = malloc(chunk);
	if (!z->in)
		return -ENOMEM;
	while (have < chunk) {
		n = pread(s->data_fd, z->in + have, chunk - have, off + have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		have += n;
	}
	for (i = 0; i < chunk; i += s->subbuf) {
		struct vt_page_info info;
		uint32_t events;

		/* The region holds only pages that passed this check at ingest. */
		if (vt_page_validate(&s->fmt, z->in + i, s->subbuf, &info, &events, NULL, NULL) < 0)
			return -EBADMSG;
		events_sum += events;
		missed += info.missed;
		lost += info.missed_events;
	}
	n = vt_tdchunker_encode(z->ck, z->in, chunk, &out);
	if (n < 0)
		return n;
	ret = stream_write_all(s->compress.fd, out, n);
	if (ret < 0)
		return ret;
	/*
	 * Only a chunk that is in the file counts: the finish walks the region
	 * from sum->raw on, and a failed write's events (a full disk) counted
	 * here too were counted twice in the manifest.
	 */
	sum->events += events_sum;
	sum->missed_pages += missed;
	sum->lost += lost;
	sum->file += n;
	sum->raw += chunk;
	return 0;
}

/*
 * Wait for work or the stop, with the lock held. After a chunk the first
 * wait ends after REST_S: still nothing to do, the memory goes back.
 */
static void nap(struct compressor *z)
{
	struct timespec ts;

	if (!z->warm) {
		pthread_cond_wait(&z->work, &z->lock);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += REST_S;
	if (pthread_cond_timedwait(&z->work, &z->lock, &ts) != ETIMEDOUT)
		return;
	z->warm = false;
	vt_tdchunker_rest(z->ck);
	free(z->in);
	z->in = NULL;
	pthread_mutex_unlock(&z->lock);
	/* glibc keeps what a thread freed in its arena: give it back */
	malloc_trim(0);
	pthread_mutex_lock(&z->lock);
}

static void *compress_thread(void *arg)
{
	struct compressor *z = arg;
	struct sched_param sp = { 0 };
	struct stream *s;
	size_t chunk;
	int ret;

	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	pthread_mutex_lock(&z->lock);
	while (!z->stop) {
		/* The chunker comes with the first stream (compress_attach()). */
		chunk = z->ck ? vt_tdchunker_bytes(z->ck) : SIZE_MAX;
		s = pick(z, chunk);
		if (!s) {
			/* No lost wake-up: see the top of the file. */
			atomic_store(&z->sleeping, true);
			s = pick(z, chunk);
			if (!s) {
				nap(z);
				atomic_store(&z->sleeping, false);
				continue;
			}
			atomic_store(&z->sleeping, false);
		}
		s->compress.busy = true;
		z->warm = true;
		pthread_mutex_unlock(&z->lock);
		ret = one_chunk(z, s, chunk);
		pthread_mutex_lock(&z->lock);
		s->compress.busy = false;
		if (ret < 0) {
			/* What is compressed stays valid; the finish does the rest. */
			log_debug("%s: compression ahead stops at %llu bytes: %s", s->label,
				  (unsigned long long)s->compress.sum.raw, strerror(-ret));
			s->compress.failed = true;
			atomic_store(&s->compress.need, UINT64_MAX);
		} else {
			atomic_store(&s->compress.need, s->compress.sum.raw + chunk);
		}
		pthread_cond_broadcast(&z->idle);
	}
	pthread_mutex_unlock(&z->lock);
	return NULL;
}

/**
 * compress_start() - start compressing ahead, for a run whose output is zstd
 * @level: the writer's zstd level (0 for zstd's default)
 *
 * Does nothing on a host with one online CPU: there is no idle core to use.
 *
 * Return: 0, or -errno (then nothing is compressed ahead; the finish does it all).
 */
int compress_start(int level)
{
	struct compressor *z;

	if (cmp || sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return 0;
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->work, NULL);
	pthread_cond_init(&z->idle, NULL);
	z->level = level;
	if (pthread_create(&z->thread, NULL, compress_thread, z) != 0) {
		pthread_cond_destroy(&z->idle);
		pthread_cond_destroy(&z->work);
		pthread_mutex_destroy(&z->lock);
		free(z);
		return -EAGAIN;
	}
	cmp = z;
	return 0;
}

/**
 * compress_stop() - stop the thread and free it all; every stream must be closed first
 */
void compress_stop(void)
{
	struct compressor *z = cmp;

	if (!z)
		return;
	pthread_mutex_lock(&z->lock);
	z->stop = true;
	pthread_cond_signal(&z->work);
	pthread_mutex_unlock(&z->lock);
	pthread_join(z->thread, NULL);
	vt_tdchunker_free(z->ck);
	free(z->in);
	free(z->streams);
	pthread_cond_destroy(&z->idle);
	pthread_cond_destroy(&z->work);
	pthread_mutex_destroy(&z->lock);
	free(z);
	cmp = NULL;
}

/* The chunker for @subbuf; one sub-buffer size per run (the first stream's) is served. */
static bool chunker_for(struct compressor *z, uint32_t subbuf)
{
	if (z->ck)
		return z->subbuf == subbuf;
	/* Its memory is made with the first chunk (vt_tdchunker_encode(), one_chunk()). */
	z->ck = vt_tdchunker_new(subbuf, 0, z->level);
	if (!z->ck)
		return false;
	z->subbuf = subbuf;
	return true;
}

/**
 * compress_attach() - compress @s's region ahead, if it is new
 * @s: a stream whose data file was just opened (data_fd, region, data_len)
 *
 * Called on the engine thread. A region that already holds pages (a second
 * START), a cpuN.zst that exists, or a sub-buffer size other than the run's
 * first leaves the stream to the finish alone.
 */
void compress_attach(struct stream *s)
{
	struct compressor *z = cmp;
	struct stream **n;
	int fd;

	s->compress.fd = -1;
	if (!z || s->data_fd < 0 || s->data_len)
		return;
	pthread_mutex_lock(&z->lock);
	if (!chunker_for(z, s->subbuf))
		goto out;
	if (z->nr == z->cap) {
		n = realloc(z->streams, (z->cap + 16) * sizeof(*n));
		if (!n)
			goto out;
		z->streams = n;
		z->cap += 16;
	}
	fd = spool_open_cpu(s->dir, s->cpu, SPOOL_CPU_ZST, O_WRONLY | O_CREAT | O_EXCL);
	if (fd < 0)
		goto out;
	memset(&s->compress, 0, sizeof(s->compress));
	atomic_store(&s->compress.need, vt_tdchunker_bytes(z->ck));
	s->compress.fd = fd;
	s->compress.on = true;
	z->streams[z->nr++] = s;
out:
	pthread_mutex_unlock(&z->lock);
}

/**
 * compress_publish() - the region of @s is written up to s->data_len
 * @s: the stream
 */
void compress_publish(struct stream *s)
{
	struct compressor *z = cmp;

	if (!z || !s->compress.on)
		return;
	atomic_store(&s->compress.avail, s->data_len);
	/* The thread stores @need before it says it sleeps: this load sees it. */
	if (atomic_load(&z->sleeping) && s->data_len >= atomic_load(&s->compress.need)) {
		pthread_mutex_lock(&z->lock);
		pthread_cond_signal(&z->work);
		pthread_mutex_unlock(&z->lock);
	}
}

/**
 * compress_detach() - stop compressing @s ahead and record what is done
 * @s: the stream, before its data file is closed
 *
 * Waits only for the chunk being compressed, if it is this stream's. Leaves
 * cpuN.zsum when at least one chunk was made, removes an empty cpuN.zst.
 */
void compress_detach(struct stream *s)
{
	struct spool_zsum *sum = &s->compress.sum;
	struct compressor *z = cmp;
	unsigned int i;

	if (!z || !s->compress.on)
		return;
	pthread_mutex_lock(&z->lock);
	s->compress.closing = true;
	while (s->compress.busy)
		pthread_cond_wait(&z->idle, &z->lock);
	for (i = 0; i < z->nr; i++) {
		if (z->streams[i] == s) {
			z->streams[i] = z->streams[--z->nr];
			break;
		}
	}
	z->next = 0;
	pthread_mutex_unlock(&z->lock);
	sum->pages = sum->raw / s->subbuf;
	sum->subbuf = s->subbuf;
	if (!sum->raw || spool_save_zsum(s->dir, s->cpu, sum) < 0)
		spool_remove_zst(s->dir, s->cpu);
	close(s->compress.fd);
	s->compress.fd = -1;
	s->compress.on = false;
	log_debug("%s: %llu of %llu region bytes compressed while streaming", s->label,
		  (unsigned long long)sum->raw, (unsigned long long)s->data_len);
}
