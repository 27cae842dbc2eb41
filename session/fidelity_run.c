/*
 * fidelity_run.c - one measured row run on npurr: its `record` command line
 * rebuilt (run_spec_from_words on "-k KERNEL OPTIONS"), the timing
 * parameters replaced by the set under test, recorded without a trace
 * (record_session_open/run), and the phases read from the engine after the run
 * (record_hooks.on_ran): a phase lasts from the first core taking one of
 * its roles to the last leaving one (engine_role_span), as a profiler
 * times the kernel that phase stands for; "total" is the run's end.
 *
 * Many rows (a calibration tries each parameter set on every training row)
 * run in forked processes, up to -j at once: a run is single-threaded and
 * owns its engine, so a child runs it and sends the fixed-size result back
 * through a pipe. The results do not depend on -j.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session/session.h"

/* The span of one phase over its roles, in us; -1 if none of them ran. */
static double phase_span(engine *e, const kernel_phase *p) {
    uint64_t lo = UINT64_MAX, hi = 0;
    int any = 0;
    for (int i = 0; i < 8 && p->roles[i]; i++) {
        uint64_t b, en;
        if (engine_role_span(e, p->roles[i], &b, &en)) {
            any = 1;
            if (b < lo) lo = b;
            if (en > hi) hi = en;
        }
    }
    return any ? (double)(hi - lo) / 1e6 : -1.0;
}

typedef struct phase_ctx {
    fidelity_result *res;
    const kernel_desc *k;
} phase_ctx;

static void on_ran_phases(void *ctx, engine *e, const record_result *r) {
    phase_ctx *pc = ctx;
    fidelity_result *res = pc->res;
    res->total_us = r->ran ? (double)r->run.end_time / 1e6 : 0;
    res->used = engine_resources_used(e);
    res->nphases = 0;
    for (const kernel_phase *p = pc->k->phases; p && p->name && res->nphases < FIDELITY_MAX_PHASES;
         p++) {
        snprintf(res->phase_name[res->nphases], sizeof res->phase_name[0], "%s", p->name);
        res->phase_us[res->nphases++] = phase_span(e, p);
    }
}

/* A completed run's time of the row's phase into res->us (all phases are
 * there); not ok when none of the phase's roles ran. */
static void select_phase(const fidelity_row *row, fidelity_result *res) {
    res->us = 0;
    if (strcmp(row->phase, "total") == 0) {
        res->us = res->total_us;
    } else {
        for (int i = 0; i < res->nphases; i++)
            if (strcmp(res->phase_name[i], row->phase) == 0) res->us = res->phase_us[i];
    }
    if (res->us > 0) return;
    res->ok = 0;
    snprintf(res->error, sizeof res->error, "%s: -k %s %s: no core ran a role of phase %s",
             row->where, row->kernel, row->options, row->phase);
}

void fidelity_run(const fidelity_row *row, const engine_hw *hw, int check, fidelity_result *res) {
    memset(res, 0, sizeof *res);
    if (!row->covered) {
        snprintf(res->error, sizeof res->error, "not covered: %s", row->options);
        return;
    }
    char **words = NULL;
    int n = shell_split(row->options, &words);
    if (n < 0) {
        snprintf(res->error, sizeof res->error, "%s: options: malformed quoting", row->where);
        return;
    }
    run_spec spec;
    char err[1024] = "";
    int rc = run_spec_from_words(row->kernel, words, n, &spec, err, sizeof err);
    if (rc) {
        snprintf(res->error, sizeof res->error, "%s: options '%s': %s", row->where, row->options,
                 err);
        return;
    }
    spec.opts.config.hw = *hw;
    spec.opts.no_trace = 1;
    spec.opts.out_dir = NULL;
    spec.opts.quiet = 1;
    spec.opts.skip_check = !check;
    phase_ctx pc = {res, spec.opts.kernel};
    record_hooks hooks = {.ctx = &pc, .on_ran = on_ran_phases};
    record_session *s = NULL;
    rc = record_session_open(&spec, &hooks, &s, err, sizeof err);
    const record_result *r = rc ? NULL : record_session_run(s, 0);
    if (rc) {   /* a refused shape: err names the option */
        snprintf(res->error, sizeof res->error, "%s: %s", row->where, err);
    } else if (!r->ran) {
        snprintf(res->error, sizeof res->error, "%s: -k %s %s: %s", row->where, row->kernel,
                 row->options, r->error);
    } else if (r->run.outcome != OUTCOME_COMPLETED) {
        snprintf(res->error, sizeof res->error, "%s: -k %s %s: the run ended in %s: %s",
                 row->where, row->kernel, row->options, engine_outcome_name(r->run.outcome),
                 r->run.message);
    } else if (strcmp(r->check, "failed") == 0) {
        snprintf(res->error, sizeof res->error, "%s: -k %s %s: the output check failed: %s",
                 row->where, row->kernel, row->options, r->check_message);
    } else {
        res->ok = 1;
    }
    if (res->ok) select_phase(row, res);
    record_session_close(s);
    run_spec_free(&spec);
}

/* ---------------------------------------------------------------- in parallel */

typedef struct child {
    pid_t pid;
    int fd;                  /* read end of its pipe */
    int index;               /* which job */
    size_t have;             /* bytes of got read so far */
    fidelity_result got;
} child;

static void finish(child *c, const fidelity_row *const *rows, fidelity_result *res) {
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR) {}
    close(c->fd);
    fidelity_result *out = &res[c->index];
    const fidelity_row *row = rows[c->index];
    if (c->have == sizeof c->got) {
        *out = c->got;
        return;
    }
    memset(out, 0, sizeof *out);
    if (WIFSIGNALED(status))
        snprintf(out->error, sizeof out->error, "%s: -k %s %s: the run's process was killed by "
                 "signal %d", row->where, row->kernel, row->options, WTERMSIG(status));
    else
        snprintf(out->error, sizeof out->error, "%s: -k %s %s: the run's process exited (status "
                 "%d) without a result", row->where, row->kernel, row->options,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void run_child(int fd, const fidelity_row *row, const engine_hw *hw, int check) {
    fidelity_result *out = malloc(sizeof *out);
    if (!out) _exit(1);
    fidelity_run(row, hw, check, out);
    size_t done = 0;
    while (done < sizeof *out) {
        ssize_t k = write(fd, (char *)out + done, sizeof *out - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) _exit(1);
        done += (size_t)k;
    }
    _exit(0);
}

/* The same shape under the same parameters runs once: a run gives every
 * phase, and rows of one run (its notify and its dispatch) differ only in
 * the phase they read. */
static int same_run(const fidelity_row *a, const engine_hw *ha, const fidelity_row *b,
                    const engine_hw *hb) {
    return strcmp(a->kernel, b->kernel) == 0 && strcmp(a->options, b->options) == 0 &&
           memcmp(ha, hb, sizeof *ha) == 0;
}

static void run_distinct(const fidelity_row *const *rows, const engine_hw *hws, int n, int jobs,
                         int check, fidelity_result *res);

void fidelity_run_many(const fidelity_row *const *rows, const engine_hw *hws, int n, int jobs,
                       int check, fidelity_result *res) {
    int *first = calloc((size_t)n + 1, sizeof *first);
    const fidelity_row **urows = calloc((size_t)n + 1, sizeof *urows);
    engine_hw *uhws = calloc((size_t)n + 1, sizeof *uhws);
    fidelity_result *ures = calloc((size_t)n + 1, sizeof *ures);
    if (!first || !urows || !uhws || !ures) {
        /* Not every row on its own instead: that runs each shape as many
         * times as rows name it, for minutes, and says nothing. */
        free(first); free(urows); free(uhws); free(ures);
        for (int i = 0; i < n; i++) {
            memset(&res[i], 0, sizeof res[i]);
            snprintf(res[i].error, sizeof res[i].error,
                     "%s: out of memory for the table of %d rows to run", rows[i]->where, n);
        }
        return;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < m && !same_run(urows[j], &uhws[j], rows[i], &hws[i])) j++;
        if (j == m) {
            urows[m] = rows[i];
            uhws[m++] = hws[i];
        }
        first[i] = j;
    }
    run_distinct(urows, uhws, m, jobs, check, ures);
    for (int i = 0; i < n; i++) {
        res[i] = ures[first[i]];
        if (!res[i].ok) continue;
        select_phase(rows[i], &res[i]);
    }
    free(first); free(urows); free(uhws); free(ures);
}

static void run_distinct(const fidelity_row *const *rows, const engine_hw *hws, int n, int jobs,
                         int check, fidelity_result *res) {
    child *kids = jobs > 1 && n > 1 ? calloc((size_t)jobs, sizeof *kids) : NULL;
    struct pollfd *pfd = kids ? calloc((size_t)jobs, sizeof *pfd) : NULL;
    if (!pfd) {
        free(kids);
        for (int i = 0; i < n; i++) fidelity_run(rows[i], &hws[i], check, &res[i]);
        return;
    }
    int running = 0, next = 0;
    fflush(NULL);   /* a child must not write the parent's pending output again */
    while (next < n || running > 0) {
        while (running < jobs && next < n) {
            int fds[2];
            pid_t pid = -1;
            if (pipe(fds) == 0) {
                pid = fork();
                if (pid < 0) { close(fds[0]); close(fds[1]); }
            }
            if (pid == 0) {
                close(fds[0]);
                run_child(fds[1], rows[next], &hws[next], check);
            }
            if (pid < 0) {   /* no process to be had: run it here */
                fidelity_run(rows[next], &hws[next], check, &res[next]);
                next++;
                continue;
            }
            close(fds[1]);
            kids[running].pid = pid;
            kids[running].fd = fds[0];
            kids[running].index = next++;
            kids[running].have = 0;
            running++;
        }
        if (running <= 0) break;
        /* A result is larger than an atomic pipe write: read each child as
         * it writes, finish it at end of file. */
        for (int i = 0; i < running; i++) pfd[i] = (struct pollfd){kids[i].fd, POLLIN, 0};
        if (poll(pfd, (nfds_t)running, -1) < 0) {
            if (errno == EINTR) continue;
            pfd[0].revents = POLLIN;   /* cannot poll: block on the oldest */
        }
        for (int i = running - 1; i >= 0; i--) {
            if (!pfd[i].revents) continue;
            child *c = &kids[i];
            ssize_t k = c->have < sizeof c->got
                            ? read(c->fd, (char *)&c->got + c->have, sizeof c->got - c->have)
                            : 0;
            if (k < 0 && errno == EINTR) continue;
            if (k > 0 && c->have + (size_t)k < sizeof c->got) {
                c->have += (size_t)k;
                continue;
            }
            if (k > 0) c->have += (size_t)k;
            finish(c, rows, res);
            kids[i] = kids[--running];
        }
    }
    free(pfd);
    free(kids);
}

double fidelity_error(const double *npurr_us, const double *measured_us, int n) {
    double e = 0;
    for (int i = 0; i < n; i++) {
        double d = log(npurr_us[i] / measured_us[i]);
        e += d * d;
    }
    return e;
}
