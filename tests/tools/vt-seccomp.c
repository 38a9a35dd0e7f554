// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vt-seccomp: run a command under the seccomp filter a systemd unit's
 * SystemCallFilter=, SystemCallErrorNumber=, RestrictAddressFamilies=AF_UNIX,
 * MemoryDenyWriteExecute=yes and RestrictNamespaces=yes would give it, for
 * tests/integration/test-collect-unit.sh (no systemd runs here).
 *
 * Usage: vt-seccomp --allow FILE [--errno N] [--af-unix] [--deny-write-exec]
 *                   [--restrict-namespaces] [--log-fd FD] -- COMMAND [ARG]...
 *
 * --allow FILE: the system calls allowed, one name a line (what `systemd-analyze
 * syscall-filter @system-service` lists, groups expanded); every other one fails
 * with --errno (default EPERM), as SystemCallErrorNumber= makes it. A name this
 * kernel or libseccomp does not know, or that is not a call of this architecture,
 * is left out, as systemd leaves it out.
 * --af-unix: socket() only for AF_UNIX, EAFNOSUPPORT for any other family.
 * --deny-write-exec: no mapping both writable and executable, no mprotect() to
 * executable, no shmat(SHM_EXEC) (EPERM).
 * --restrict-namespaces: clone() and unshare() without CLONE_NEW* flags only,
 * no setns(); clone3() fails with ENOSYS (its flags are out of the filter's
 * reach), as systemd does, so that the C library falls back to clone().
 * --log-fd FD: what a test needs to know which call broke COMMAND (systemd would
 * only fail it): every refused call, the socket() of another family too, is
 * passed to a supervisor (a seccomp listener, outside the filter and no child of
 * COMMAND's) that answers with the same error and writes "refused NAME (pid P)"
 * to FD. It ends when the last filtered process has.
 *
 * Prints "vt-seccomp: N calls allowed, M unknown here" on stderr, then execs
 * COMMAND (which must be allowed, execve being in @default). Exit status 2 on
 * a usage error, 1 when the filter cannot be made or COMMAND cannot be run.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NS_FLAGS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | \
		  CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)

/* The options that restrict some calls by their arguments. */
enum {
	RESTRICT_AF_UNIX = 1,
	RESTRICT_WX = 2,
	RESTRICT_NS = 4,
};

struct filter_opts {
	const char *allow;
	int err;
	int log_fd;		/* -1: refuse without a word */
	unsigned int limits;	/* RESTRICT_* */
};

/* The calls an option restricts: the allow list's rule for each is replaced by add_restricted()'s. */
enum { RC_SOCKET, RC_MMAP, RC_MPROTECT, RC_PKEY_MPROTECT, RC_SHMAT, RC_CLONE, RC_UNSHARE, RC_SETNS,
       RC_CLONE3, RC_NR };
static const struct {
	int nr;
	unsigned int by;
} restricted_calls[RC_NR] = {
	[RC_SOCKET] = { SCMP_SYS(socket), RESTRICT_AF_UNIX },
	[RC_MMAP] = { SCMP_SYS(mmap), RESTRICT_WX },
	[RC_MPROTECT] = { SCMP_SYS(mprotect), RESTRICT_WX },
	[RC_PKEY_MPROTECT] = { SCMP_SYS(pkey_mprotect), RESTRICT_WX },
	[RC_SHMAT] = { SCMP_SYS(shmat), RESTRICT_WX },
	[RC_CLONE] = { SCMP_SYS(clone), RESTRICT_NS },
	[RC_UNSHARE] = { SCMP_SYS(unshare), RESTRICT_NS },
	[RC_SETNS] = { SCMP_SYS(setns), RESTRICT_NS },	/* never allowed */
	[RC_CLONE3] = { SCMP_SYS(clone3), RESTRICT_NS },	/* ENOSYS */
};

/* Which of restricted_calls @nr is under @o's options, or -1. */
static int restricted(const struct filter_opts *o, int nr)
{
	int i;

	for (i = 0; i < RC_NR; i++)
		if (restricted_calls[i].nr == nr && (o->limits & restricted_calls[i].by))
			return i;
	return -1;
}

/* Allow call @i when argument @arg masked with @mask equals @val, if the allow list has it. */
static int allow_masked(scmp_filter_ctx ctx, const bool *listed, int i, unsigned int arg,
			scmp_datum_t mask, scmp_datum_t val)
{
	if (!listed[i])
		return 0;
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, restricted_calls[i].nr, 1,
				(struct scmp_arg_cmp){ arg, SCMP_CMP_MASKED_EQ, mask, val });
}

/* The rules for the calls the options restrict; @listed[RC_*]: the allow list has that call. */
static int add_restricted(scmp_filter_ctx ctx, const struct filter_opts *o, const bool *listed)
{
	const scmp_datum_t wx = PROT_WRITE | PROT_EXEC;
	int r = 0;

	if ((o->limits & RESTRICT_AF_UNIX) && listed[RC_SOCKET]) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
		/* With --log-fd the default action (the supervisor) answers EAFNOSUPPORT. */
		if (!r && o->log_fd < 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
					     SCMP_A0(SCMP_CMP_NE, AF_UNIX));
	}
	if (!r && (o->limits & RESTRICT_WX)) {
		r = allow_masked(ctx, listed, RC_MMAP, 2, wx, 0);
		r = r ? r : allow_masked(ctx, listed, RC_MMAP, 2, wx, PROT_WRITE);
		r = r ? r : allow_masked(ctx, listed, RC_MMAP, 2, wx, PROT_EXEC);
		r = r ? r : allow_masked(ctx, listed, RC_MPROTECT, 2, PROT_EXEC, 0);
		r = r ? r : allow_masked(ctx, listed, RC_PKEY_MPROTECT, 2, PROT_EXEC, 0);
		r = r ? r : allow_masked(ctx, listed, RC_SHMAT, 2, SHM_EXEC, 0);
	}
	if (!r && (o->limits & RESTRICT_NS)) {
		r = allow_masked(ctx, listed, RC_CLONE, 0, NS_FLAGS, 0);
		r = r ? r : allow_masked(ctx, listed, RC_UNSHARE, 0, NS_FLAGS, 0);
		r = r ? r : seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	}
	return r;
}

/* The allow list, one name a line; *NALLOW and *NUNKNOWN count what it held. */
static int add_allowed(scmp_filter_ctx ctx, const struct filter_opts *o, bool *listed,
		       unsigned int *nallow, unsigned int *nunknown)
{
	char line[128];
	FILE *f;
	int r = 0, nr;

	f = fopen(o->allow, "re");
	if (!f)
		return -errno;
	while (!r && fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		nr = seccomp_syscall_resolve_name(line);
		if (nr == __NR_SCMP_ERROR || nr < 0) {
			(*nunknown)++;
			continue;
		}
		(*nallow)++;
		if (restricted(o, nr) >= 0) {
			listed[restricted(o, nr)] = true;
			continue;
		}
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (r == -EEXIST)
			r = 0;
	}
	fclose(f);
	return r;
}

/* The supervisor's loop: each refused call said on the log and answered as the filter would. */
static void supervise(int nfd, const struct filter_opts *o)
{
	struct seccomp_notif_resp *resp;
	struct seccomp_notif *req;
	struct pollfd p = { .fd = nfd, .events = POLLIN };
	char *name;

	if (seccomp_notify_alloc(&req, &resp) < 0)
		return;
	while (poll(&p, 1, -1) >= 0 || errno == EINTR) {
		if (!(p.revents & POLLIN)) {
			if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
				break;		/* the last filtered process is gone */
			continue;
		}
		memset(req, 0, sizeof(*req));
		if (seccomp_notify_receive(nfd, req) < 0)
			continue;	/* its caller died meanwhile */
		name = seccomp_syscall_resolve_num_arch(req->data.arch, req->data.nr);
		dprintf(o->log_fd, "refused %s (pid %u)\n", name ? name : "?", req->pid);
		free(name);
		memset(resp, 0, sizeof(*resp));
		resp->id = req->id;
		resp->error = -(req->data.nr == SCMP_SYS(socket) ? EAFNOSUPPORT : o->err);
		seccomp_notify_respond(nfd, resp);
	}
	seccomp_notify_free(req, resp);
}

/*
 * The supervisor, forked before the filter is loaded (it must not be filtered
 * itself, or the filter would never lose its last user) and detached (no child
 * of COMMAND's); it gets the listener through @sock. Return: 0 in the caller.
 */
static int start_supervisor(int sock[2], const struct filter_opts *o)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = cbuf, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	int nfd, status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(sock[1]);
		return waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) ? -ECHILD : 0;
	}
	close(sock[0]);
	if (fork() != 0)
		_exit(0);	/* the grandchild supervises, reparented */
	if (recvmsg(sock[1], &m, 0) <= 0 || !CMSG_FIRSTHDR(&m))
		_exit(1);
	memcpy(&nfd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
	close(sock[1]);
	supervise(nfd, o);
	_exit(0);
}

/* Hand the listener to the supervisor. */
static int send_listener(int sock, int nfd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &nfd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -EPIPE;
}

static int load_filter(const struct filter_opts *o)
{
	bool listed[RC_NR] = { false };
	unsigned int nallow = 0, nunknown = 0;
	scmp_filter_ctx ctx;
	int sock[2] = { -1, -1 }, r;

	ctx = seccomp_init(o->log_fd < 0 ? SCMP_ACT_ERRNO(o->err) : SCMP_ACT_NOTIFY);
	if (!ctx)
		return -ENOMEM;
	r = add_allowed(ctx, o, listed, &nallow, &nunknown);
	if (!r)
		r = add_restricted(ctx, o, listed);
	if (!r && o->log_fd >= 0 && socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sock) < 0)
		r = -errno;
	if (!r && o->log_fd >= 0)
		r = start_supervisor(sock, o);
	if (!r) {
		fprintf(stderr, "vt-seccomp: %u calls allowed, %u unknown here%s\n", nallow, nunknown,
			o->log_fd >= 0 ? "; refusals logged" : "");
		r = seccomp_load(ctx);
	}
	if (!r && o->log_fd >= 0)
		r = send_listener(sock[0], seccomp_notify_fd(ctx));
	if (sock[0] >= 0)
		close(sock[0]);
	seccomp_release(ctx);
	return r;
}

static int usage(void)
{
	fprintf(stderr, "usage: vt-seccomp --allow FILE [--errno N] [--af-unix] [--deny-write-exec] "
		"[--restrict-namespaces] [--log-fd FD] -- COMMAND [ARG]...\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "allow", required_argument, NULL, 'a' },
		{ "errno", required_argument, NULL, 'e' },
		{ "af-unix", no_argument, NULL, 'u' },
		{ "deny-write-exec", no_argument, NULL, 'w' },
		{ "restrict-namespaces", no_argument, NULL, 'n' },
		{ "log-fd", required_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	struct filter_opts o = { .err = EPERM, .log_fd = -1 };
	int c, r;

	while ((c = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (c) {
		case 'a': o.allow = optarg; break;
		case 'e': o.err = atoi(optarg); break;
		case 'u': o.limits |= RESTRICT_AF_UNIX; break;
		case 'w': o.limits |= RESTRICT_WX; break;
		case 'n': o.limits |= RESTRICT_NS; break;
		case 'l': o.log_fd = atoi(optarg); break;
		default: return usage();
		}
	}
	if (!o.allow || optind >= argc || o.err <= 0 || o.err > 4095)
		return usage();
	r = load_filter(&o);
	if (r < 0) {
		fprintf(stderr, "vt-seccomp: %s: %s\n", o.allow, strerror(-r));
		return 1;
	}
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "vt-seccomp: %s: %s\n", argv[optind], strerror(errno));
	return 1;
}
