/*
 * record_progress.c - the progress line of a long `npurr record`, on stderr.
 *
 * Shown when stderr is a terminal or with --progress, never with --quiet, so
 * scripted and end-to-end output stays stable. Every 2 s of wall time (the
 * clock is read every 4096 events, a few microseconds apart) it prints:
 *   phase    the kernel launched last, and the step a kernel that runs
 *            several in one launch last announced in a note ("dispatch 1")
 *   done     the kernel's own measure when it has one (dispatch-layered:
 *            tokens received of all the run will receive, read from its
 *            ring heads), else the launched cores that have finished; the
 *            ETA extrapolates the percentage
 *   events   so far, and virtual time reached
 * On a terminal the line is rewritten in place; otherwise one line each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/record_progress.h"

void record_progress_init(record_progress *p, engine *e, const kernel_desc *kernel,
                          const void *state, int quiet, int forced) {
    *p = (record_progress){0};
    p->e = e;
    p->kernel = kernel;
    p->state = state;
    p->tty = isatty(STDERR_FILENO);
    p->enabled = !quiet && (forced || p->tty);
    p->start = p->last = engine_host_seconds();
    /* Tests ask for a line at every check (0) instead of waiting 2 s. */
    const char *every = getenv("NPURR_PROGRESS_EVERY");
    p->every = every && *every ? atof(every) : 2.0;
}

void record_progress_event(void *ctx, const engine_event *ev) {
    record_progress *p = ctx;
    if (ev->kind == EV_KERNEL_BEGIN) {
        p->begun++;
        p->phase_id = (uint32_t)ev->value;
    } else if (ev->kind == EV_KERNEL_END) {
        p->ended++;
    } else if (ev->kind == EV_NOTE && ev->aux > 0) {
        /* Kernels that run several phases in one launch say so in a note
         * ("dispatch" 0, 1, ... in dispatch-layered). */
        const char *key = engine_string(p->e, (uint32_t)ev->aux);
        if (key && (!strcmp(key, "dispatch") || !strcmp(key, "round") || !strcmp(key, "phase")) &&
            (!p->step_key || ev->value > p->step)) {
            p->step = ev->value;
            p->step_key = key;
        }
    }
    if (!p->enabled || (ev->seq & 4095) != 0) return;
    double now = engine_host_seconds();
    if (now - p->last < p->every) return;
    p->last = now;
    const char *phase = p->phase_id ? engine_string(p->e, p->phase_id) : NULL;
    uint64_t num = p->ended, den = p->begun;
    const char *unit = "cores finished";
    /* a split run's process 0 holds only its own nodes' GM: count cores */
    int whole = engine_rank_local(p->e, 0) && engine_rank_local(p->e, engine_num_ranks(p->e) - 1);
    if (p->kernel && p->kernel->progress && p->state && whole &&
        p->kernel->progress(p->e, p->state, &num, &den, &unit) != 0) {
        num = p->ended, den = p->begun, unit = "cores finished";
    }
    double done = den ? (double)num / (double)den : 0;
    char eta[48] = "ETA unknown until some work is done";
    if (done > 0 && done < 1)
        snprintf(eta, sizeof eta, "ETA %.0f s", (now - p->start) * (1 - done) / done);
    char step[64] = "";
    if (p->step_key) snprintf(step, sizeof step, " %s %lld", p->step_key, (long long)p->step);
    fprintf(stderr, "%snpurr: phase %s%s, %.1f%% done (%s %llu of %llu), %.1fM events, "
            "virtual %.3f us, %.0f s, %s%s",
            p->tty ? "\r\033[K" : "", phase && *phase ? phase : "?", step, 100 * done, unit,
            (unsigned long long)num, (unsigned long long)den, (double)ev->seq / 1e6,
            (double)ev->time / 1e6, now - p->start, eta, p->tty ? "" : "\n");
    p->shown = 1;
}

void record_progress_end(record_progress *p) {
    if (p->shown && p->tty) fputs("\n", stderr);
}
