/*
 * sched_delay.c - PCT-style schedule perturbation for `npurr explore`.
 *
 * The scheduler's freedoms (tie order, jitter) rarely reorder ranks that
 * run the same code on the same data: every rank then posts its work in
 * the same order at the same time. Probabilistic concurrency testing (PCT,
 * Burckhardt et al. 2010) finds ordering bugs by lowering one thread's
 * priority at a few random points of the run. Here a "point" is a
 * scheduling step (one eng_sync call, i.e. one device call about to touch
 * shared state), and lowering the priority is delaying the core that takes
 * that step by a fixed virtual time, as if it had been descheduled.
 *
 * The points are drawn from the configuration's seed over 1..pct_span, so a
 * run with the same config (recorded on its command line) takes the same
 * delays and replays identically. With pct_points = 0 nothing here runs.
 */
#include "internal.h"

#include <stdlib.h>

typedef struct sched_delay {
    uint64_t *at;        /* sorted step numbers */
    uint32_t n, next;
} sched_delay;

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int eng_delay_init(engine *e, char *err, size_t errlen) {
    const engine_config *cfg = &e->cfg;
    if (!cfg->pct_points) return ENGINE_OK;
    if (!cfg->pct_span || !cfg->pct_delay_ps) {
        snprintf(err, errlen, "pct: %u delay points need a span of steps and a delay above 0 "
                 "(span %llu, delay %llu ps)", cfg->pct_points, (unsigned long long)cfg->pct_span,
                 (unsigned long long)cfg->pct_delay_ps);
        return ENGINE_ERR;
    }
    sched_delay *d = calloc(1, sizeof *d);
    if (d) d->at = calloc(cfg->pct_points, sizeof *d->at);
    if (!d || !d->at) {
        free(d);
        snprintf(err, errlen, "pct: out of memory for %u delay points", cfg->pct_points);
        return ENGINE_ERR;
    }
    /* Its own stream, so the tie permutation and jitter of the same seed
     * are the ones a run without delays takes. */
    uint64_t state = cfg->seed ^ 0x706374ULL;
    for (uint32_t i = 0; i < cfg->pct_points; i++) d->at[i] = 1 + eng_splitmix64(&state) % cfg->pct_span;
    qsort(d->at, cfg->pct_points, sizeof *d->at, cmp_u64);
    d->n = cfg->pct_points;
    e->delay = d;
    return ENGINE_OK;
}

void eng_delay_step(core *c) {
    engine *e = c->e;
    sched_delay *d = e->delay;
    while (d->next < d->n && d->at[d->next] <= e->sched_steps) {
        if (d->at[d->next] == e->sched_steps) c->now += e->cfg.pct_delay_ps;
        d->next++;
    }
}

void eng_delay_free(engine *e) {
    if (!e->delay) return;
    free(e->delay->at);
    free(e->delay);
    e->delay = NULL;
}
