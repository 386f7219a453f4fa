// SPDX-License-Identifier: MIT
/*
 * share_socket: a worker process allocates a shared buffer, fills it and
 * sends its descriptor over a UNIX socket (SCM_RIGHTS); the trainer imports
 * it and sees the same bytes, then frees it while the worker still holds it.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include "helpers.h"

#define SIZE (10u << 20)

static int send_fd(int sock, int fd)
{
	char c = 'x', buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c, buf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &c, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = buf, .msg_controllen = sizeof(buf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

TEST(scm_rights)
{
	struct gp_ctx *ctx;
	int sv[2], fd, status;
	size_t size;
	char ack = 0;
	pid_t pid;
	void *p;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {		/* the worker */
		struct gp_ctx *w;
		void *b;
		int efd;

		close(sv[0]);
		if (gp_open(NULL, &w) || gp_host_alloc(w, SIZE, GP_HOST_SHARED, &b))
			_exit(10);
		fill(b, SIZE, 42);
		if (gp_host_export(w, b, &efd) || send_fd(sv[1], efd))
			_exit(11);
		close(efd);
		/* Wait for the trainer, then check what it wrote. */
		if (read(sv[1], &ack, 1) != 1)
			_exit(12);
		if (!check_fill(b, SIZE, 43))
			_exit(13);
		gp_host_free(w, b);
		gp_close(w);
		_exit(0);
	}
	close(sv[1]);
	OPEN(NULL, &ctx);
	fd = recv_fd(sv[0]);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, gp_host_import(ctx, fd, &p, &size)) TH_LOG("%s", gp_last_error(ctx));
	close(fd);
	ASSERT_GE(size, SIZE);
	ASSERT_TRUE(check_fill(p, SIZE, 42));
	fill(p, SIZE, 43);
	ASSERT_EQ(0, gp_host_free(ctx, p));
	ASSERT_EQ(1, write(sv[0], "k", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	close(sv[0]);
	gp_close(ctx);
}

TEST_HARNESS_MAIN
