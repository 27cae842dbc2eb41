/*
 * process_pool.c - engine_pool_run (engine.h): jobs in forked processes,
 * each sending a fixed-size result back through its own pipe. What
 * `sweep`, `whatif`, `hw --compare` and `calibrate` share.
 *
 * fork, not threads: a run keeps per-run state in globals (the current
 * core, coroutine stacks) and may abort on a kernel bug; a child that dies
 * costs one job, not the command. The parent polls every running child's
 * pipe and reads as the child writes, so a result larger than a pipe's
 * buffer cannot leave the child blocked on a parent that waits for it.
 *
 * Ctrl-C and SIGTERM: the handler only sets a flag. The flag is checked
 * with the signals blocked and the wait unblocks them atomically (ppoll),
 * so a signal cannot slip in between the check and the wait. Once set, no
 * job starts, the running ones get SIGTERM, their partial results are
 * dropped, and the stop is sticky: later pools of the same command start
 * nothing, so a fit that calls the pool in a loop ends at once instead of
 * going on after the user asked it to stop.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/host/host.h"

static volatile sig_atomic_t pool_stopped;

static void on_stop(int sig) {
    (void)sig;
    pool_stopped = 1;
}

int engine_pool_interrupted(void) { return pool_stopped != 0; }

typedef struct pool_child {
    pid_t pid;
    int fd;            /* read end of its pipe */
    size_t job;
    size_t have;       /* bytes of its result read so far */
} pool_child;

/* The child's side: default signals, die with the parent, run, send. */
static void child_main(int fd, pid_t parent, const sigset_t *mask, size_t i, size_t size,
                       engine_pool_job job, void *ctx) {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    /* A pool killed with kill -9 takes its jobs with it, not leaving them
     * to run on for minutes with nobody to read their result. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);   /* it died before prctl */
    char *out = calloc(1, size);
    if (!out) _exit(1);
    job(ctx, i, out);
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, out + done, size - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(1);
        done += (size_t)w;
    }
    _exit(0);
}

static int start(pool_child *c, size_t i, size_t size, engine_pool_job job, void *ctx,
                 const sigset_t *mask, char *err, size_t errlen) {
    int p[2];
    if (pipe(p) != 0) {
        snprintf(err, errlen, "cannot make a pipe for a run: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);   /* a child must not write the parent's pending output again */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot start a process for a run: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[0]);
        child_main(p[1], parent, mask, i, size, job, ctx);
    }
    close(p[1]);
    *c = (pool_child){pid, p[0], i, 0};
    return 0;
}

/* Reads what c has written; 1 when its pipe is at its end (the child is
 * done or dead), else 0. */
static int drain(pool_child *c, char *result, size_t size) {
    for (;;) {
        char sink[512];
        int full = c->have >= size;
        ssize_t k = full ? read(c->fd, sink, sizeof sink)
                         : read(c->fd, result + c->have, size - c->have);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno == EAGAIN) return 0;
        if (k <= 0) return 1;
        if (!full) c->have += (size_t)k;
        return 0;
    }
}

int engine_pool_run(size_t n, int j, size_t result_size, engine_pool_job job,
                    engine_pool_done done, void *ctx, void *results, char *err, size_t errlen) {
    char *res = results;
    memset(res, 0, n * result_size);
    if (pool_stopped) return 1;
    if (j < 1) j = 1;
    if ((size_t)j > n) j = n ? (int)n : 1;
    pool_child *kids = calloc((size_t)j, sizeof *kids);
    struct pollfd *pfd = calloc((size_t)j, sizeof *pfd);
    if (!kids || !pfd) {
        free(kids);
        free(pfd);
        snprintf(err, errlen, "out of memory for %d processes' bookkeeping", j);
        return -1;
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigset_t block, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &wait_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    size_t next = 0, finished = 0;
    size_t running = 0, jobs = (size_t)j;
    int rc = 0, ended_kids = 0;
    while (next < n || running) {
        while (!pool_stopped && !rc && running < jobs && next < n) {
            if (start(&kids[running], next, result_size, job, ctx, &wait_mask, err, errlen))
                rc = -1;
            else
                running++, next++;
        }
        if (!running) break;
        if (pool_stopped && !ended_kids) {   /* end the jobs in flight: processes we started */
            for (size_t k = 0; k < running; k++) kill(kids[k].pid, SIGTERM);
            ended_kids = 1;
        }
        for (size_t k = 0; k < running; k++) pfd[k] = (struct pollfd){kids[k].fd, POLLIN, 0};
        if (ppoll(pfd, running, NULL, &wait_mask) < 0) {
            if (errno == EINTR) continue;
            for (size_t k = 0; k < running; k++) pfd[k].revents = POLLIN;   /* read blocking */
        }
        for (size_t k = running; k-- > 0;) {
            pool_child *c = &kids[k];
            char *out = res + c->job * result_size;
            if (!pfd[k].revents || !drain(c, out, result_size)) continue;
            int wst = 0;
            while (waitpid(c->pid, &wst, 0) < 0 && errno == EINTR) {}
            close(c->fd);
            int sent = c->have == result_size && WIFEXITED(wst) && WEXITSTATUS(wst) == 0;
            /* Ctrl-C at a terminal reaches the whole process group: a job
             * it killed may be seen before our own handler has run. */
            if (!sent && WIFSIGNALED(wst) && WTERMSIG(wst) == SIGINT) pool_stopped = 1;
            if (!sent) memset(out, 0, result_size);
            if (sent || !pool_stopped) {   /* a job we stopped is not reported */
                finished++;
                if (done) done(ctx, c->job, sent, wst, finished, n);
            }
            kids[k] = kids[--running];
        }
    }
    /* A signal that came while blocked (the last job's end seen first) is
     * ours: take it now, or the old action would kill us on unblocking. */
    const struct timespec now = {0, 0};
    while (sigtimedwait(&block, NULL, &now) > 0) pool_stopped = 1;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigprocmask(SIG_SETMASK, &wait_mask, NULL);
    free(kids);
    free(pfd);
    if (rc) return -1;
    return pool_stopped ? 1 : 0;
}
