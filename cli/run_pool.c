/*
 * run_pool.c - run_point and run_pool (run_pool.h): points run in forked
 * children, one pipe each for the result.
 *
 * fork, not threads: the engine keeps per-run state in globals (the
 * current core, coroutine stacks) and a point may abort on a kernel bug; a
 * child that dies costs one row, not the sweep. The parent waits for any
 * child, reads that child's pipe (a point_result is far below the pipe's
 * buffer, so the child never blocks writing it) and starts the next point.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_pool.h"

/* Per-role end times from the finished engine. */
static void on_ran(void *ctx, engine *e, const record_result *rr) {
    (void)rr;
    point_result *r = ctx;
    int n = engine_core_count(e);
    for (int i = 0; i < n; i++) {
        engine_core_state st;
        engine_core_state_get(e, i, &st);
        if (!st.launched) continue;
        r->cores++;
        const char *name = st.role && *st.role ? st.role : st.kernel ? st.kernel : "?";
        int k = 0;
        while (k < r->nroles && strcmp(r->role[k], name)) k++;
        if (k == r->nroles) {
            if (r->nroles == POINT_ROLES) continue;
            snprintf(r->role[k], sizeof r->role[k], "%s", name);
            r->role_end[k] = 0;
            r->nroles++;
        }
        if (st.now > r->role_end[k]) r->role_end[k] = st.now;
    }
}

/* How the run rr ended, into r. */
static void point_ended(const record_result *rr, point_result *r) {
    if (!rr->ran) {
        r->status = EXIT_ERROR;
        snprintf(r->what, sizeof r->what, "%.*s", (int)sizeof r->what - 1, rr->error);
        return;
    }
    r->outcome = rr->run.outcome;
    r->status = cli_outcome_status(rr->run.outcome, rr->check && !strcmp(rr->check, "failed"));
    r->end_ps = rr->run.end_time;
    r->events = rr->run.events;
    r->stall_ps = rr->run.stall_ps;
    r->wall = rr->wall;
    r->stall_share = r->cores && r->end_ps ? (double)r->stall_ps / ((double)r->cores * (double)r->end_ps)
                                           : 0;
    snprintf(r->check, sizeof r->check, "%s", rr->check ? rr->check : "");
    snprintf(r->what, sizeof r->what, "%.*s", (int)sizeof r->what - 1,
             rr->run.outcome == OUTCOME_COMPLETED ? rr->check_message : rr->run.message);
}

void run_point(run_spec *spec, point_result *r) {
    memset(r, 0, sizeof *r);
    spec->opts.no_trace = 1;
    spec->opts.quiet = 1;
    spec->opts.progress = 0;
    spec->opts.out_dir = NULL;
    record_hooks hooks = {.ctx = r, .on_ran = on_ran};
    record_session *s;
    char err[ENGINE_ERRLEN] = "";
    int rc = record_session_open(spec, &hooks, &s, err, sizeof err);
    r->done = 1;
    if (rc) {
        r->status = rc;
        snprintf(r->what, sizeof r->what, "%.*s", (int)sizeof r->what - 1, err);
        return;
    }
    point_ended(record_session_run(s, 0), r);
    record_session_close(s);
}

int pool_default_jobs(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static volatile sig_atomic_t pool_stop;
static void on_stop(int sig) {
    (void)sig;
    pool_stop = 1;
}

typedef struct slot {
    pid_t pid;
    int fd;
    size_t job;
} slot;

static int start_job(slot *s, size_t i, pool_job_fn job, void *ctx, char *err, size_t errlen) {
    int p[2];
    if (pipe(p) != 0) {
        snprintf(err, errlen, "cannot make a pipe for a run: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot start a process for a run: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        /* A pool killed with kill -9 takes its runs with it, not leaving
         * them to run on for minutes with nobody to read their result. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);   /* it died before prctl */
        close(p[0]);
        point_result r;
        job(ctx, i, &r);
        const char *b = (const char *)&r;
        size_t left = sizeof r;
        while (left) {
            ssize_t w = write(p[1], b, left);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) _exit(1);
            b += w;
            left -= (size_t)w;
        }
        _exit(0);
    }
    close(p[1]);
    s->pid = pid;
    s->fd = p[0];
    s->job = i;
    return 0;
}

/* Reads the finished child's result: 1 if it sent one, else 0 with r
 * saying the process died. */
static int collect(slot *s, point_result *r) {
    memset(r, 0, sizeof *r);
    char *b = (char *)r;
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t k = read(s->fd, b + got, sizeof *r - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (got != sizeof *r) {
        memset(r, 0, sizeof *r);
        r->status = EXIT_ERROR;
        snprintf(r->what, sizeof r->what, "the run's process died before it reported");
        r->done = 1;
    }
    close(s->fd);
    s->pid = 0;
    return got == sizeof *r;
}

int run_pool(size_t n, int j, pool_job_fn job, pool_done_fn done, void *ctx,
             point_result *results, char *err, size_t errlen) {
    if (j < 1) j = 1;
    if ((size_t)j > n) j = n ? (int)n : 1;
    slot *slots = calloc((size_t)j, sizeof *slots);
    if (!slots) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    pool_stop = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    for (size_t i = 0; i < n; i++) memset(&results[i], 0, sizeof results[i]);
    size_t next = 0, finished = 0;
    int running = 0, rc = 0;
    while (finished < n) {
        while (!pool_stop && running < j && next < n) {
            int k = 0;
            while (slots[k].pid) k++;
            if (start_job(&slots[k], next, job, ctx, err, errlen)) {
                rc = -1;
                pool_stop = 1;
                break;
            }
            next++;
            running++;
        }
        if (!running) break;
        int wst;
        pid_t pid = waitpid(-1, &wst, 0);
        if (pid < 0) {
            if (errno == EINTR) {
                if (pool_stop)   /* end the points in flight: processes this pool started */
                    for (int k = 0; k < j; k++)
                        if (slots[k].pid) kill(slots[k].pid, SIGTERM);
                continue;
            }
            break;
        }
        for (int k = 0; k < j; k++) {
            if (slots[k].pid != pid) continue;
            size_t i = slots[k].job;
            int whole = collect(&slots[k], &results[i]);
            running--;
            if (pool_stop && !whole) {   /* stopped by us: no row */
                results[i].done = 0;
                break;
            }
            if (WIFSIGNALED(wst) && !results[i].what[0])
                snprintf(results[i].what, sizeof results[i].what, "the run's process died (%s)",
                         strsignal(WTERMSIG(wst)));
            finished++;
            if (done) done(ctx, i, &results[i], finished, n);
            break;
        }
        if (pool_stop && !running) break;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    free(slots);
    if (rc) return -1;
    return pool_stop ? 1 : 0;
}
