/*
 * run_pool.c - run_point and run_pool (run_pool.h): a point is one
 * record session without a trace; run_pool hands the points to the
 * engine's process pool (engine_pool_run, one forked child per point) and
 * gives a point whose process died a row that says so.
 */
#include <stdio.h>
#include <string.h>
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

typedef struct pool_call {
    pool_job_fn job;
    pool_done_fn done;
    void *ctx;
    point_result *results;
} pool_call;

static void job_point(void *ctx, size_t i, void *result) {
    pool_call *c = ctx;
    c->job(c->ctx, i, result);
}

/* A point whose process sent nothing still gets a row saying why. */
static void done_point(void *ctx, size_t i, int sent, int wstatus, size_t finished,
                       size_t total) {
    pool_call *c = ctx;
    point_result *r = &c->results[i];
    if (!sent) {
        r->done = 1;
        r->status = EXIT_ERROR;
        if (WIFSIGNALED(wstatus))
            snprintf(r->what, sizeof r->what, "the run's process died (%s)",
                     strsignal(WTERMSIG(wstatus)));
        else
            snprintf(r->what, sizeof r->what, "the run's process died before it reported");
    }
    if (c->done) c->done(c->ctx, i, r, finished, total);
}

int run_pool(size_t n, int j, pool_job_fn job, pool_done_fn done, void *ctx,
             point_result *results, char *err, size_t errlen) {
    pool_call c = {job, done, ctx, results};
    return engine_pool_run(n, j, sizeof *results, job_point, done_point, &c, results, err, errlen);
}
