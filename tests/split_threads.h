/*
 * split_threads.h - an engine_transport over threads of one process, so
 * the tests can split a run into P parts without MPI: each part is an
 * engine on its own thread (the scheduler's current core and the coroutine
 * trampoline are thread-local), and the collectives meet at a barrier.
 *
 * Header-only: a tests/ or bench/ file includes it once. Include after the
 * engine header.
 */
#ifndef NPURR_TESTS_SPLIT_THREADS_H
#define NPURR_TESTS_SPLIT_THREADS_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define SPLIT_THREADS_MAX 16

typedef struct split_hub {
    int count;
    pthread_barrier_t meet;
    uint64_t slot[SPLIT_THREADS_MAX][8];
    const engine_buf *out[SPLIT_THREADS_MAX];
} split_hub;

typedef struct split_end {
    split_hub *hub;
    int index;
    unsigned reductions, exchanges, gathers;   /* calls made: allreduce, alltoall, gather */
} split_end;

static inline void split_copy(engine_buf *to, const engine_buf *from) {
    to->n = 0;
    if (to->cap < from->n) {
        free(to->p);
        to->p = malloc(from->n);
        if (!to->p) abort();
        to->cap = from->n;
    }
    if (from->n) memcpy(to->p, from->p, from->n);
    to->n = from->n;
}

static inline int split_allreduce(void *ctx, uint64_t *v, int n, int op, char *err,
                                  size_t errlen) {
    split_end *me = ctx;
    split_hub *h = me->hub;
    (void)err; (void)errlen;
    me->reductions++;
    memcpy(h->slot[me->index], v, (size_t)n * sizeof *v);
    pthread_barrier_wait(&h->meet);
    for (int i = 0; i < n; i++) {
        uint64_t r = h->slot[0][i];
        for (int q = 1; q < h->count; q++) {
            uint64_t x = h->slot[q][i];
            r = op == ENGINE_REDUCE_MIN ? (x < r ? x : r) : op == ENGINE_REDUCE_MAX ? (x > r ? x : r)
                                                                                 : r + x;
        }
        v[i] = r;
    }
    pthread_barrier_wait(&h->meet);
    return 0;
}

static inline int split_alltoall(void *ctx, const engine_buf *out, engine_buf *in, char *err,
                                 size_t errlen) {
    split_end *me = ctx;
    split_hub *h = me->hub;
    (void)err; (void)errlen;
    me->exchanges++;
    h->out[me->index] = out;
    pthread_barrier_wait(&h->meet);
    for (int q = 0; q < h->count; q++) split_copy(&in[q], &h->out[q][me->index]);
    pthread_barrier_wait(&h->meet);
    return 0;
}

static inline int split_gather(void *ctx, const engine_buf *mine, engine_buf *all, char *err,
                               size_t errlen) {
    split_end *me = ctx;
    split_hub *h = me->hub;
    (void)err; (void)errlen;
    me->gathers++;
    h->out[me->index] = mine;
    pthread_barrier_wait(&h->meet);
    if (me->index == 0)
        for (int q = 0; q < h->count; q++) split_copy(&all[q], h->out[q]);
    pthread_barrier_wait(&h->meet);
    return 0;
}

static inline engine_transport split_transport(split_end *me) {
    engine_transport t = {me, me->index, me->hub->count, split_allreduce, split_alltoall,
                          split_gather};
    return t;
}

#endif
