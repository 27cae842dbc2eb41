/*
 * hb_sync.c - the checker's synchronisation inside a core and across a
 * rank's cores: SetFlag/WaitFlag (a snapshot of the producer pipe per
 * pending flag, joined into the consumer pipe, or reported when a WaitFlag
 * finds none and when a kernel returns with flags still pending), cross-core
 * flags (queued at each target, joined as many as a wait consumes), and
 * barriers (every arrival joined, the result handed to each participant as
 * it leaves). hb_check.c dispatches the events and hooks here.
 */
#include "checker/hb_internal.h"

#include <string.h>

/* ------------------------------------------------------------ flags */
static hb_flag_fifo *fifo_of(hb_checker *h, uint32_t rank, uint32_t core, int ev, int id) {
    hb_core *c = hb_core_of(h, rank, core);
    if (!c->flags) {
        c->flags = calloc((size_t)HB_HARD_EVENTS * HB_FLAG_IDS, sizeof *c->flags);
        if (!c->flags) abort();
    }
    return &c->flags[(size_t)ev * HB_FLAG_IDS + (size_t)id];
}

void hb_on_flag_set(hb_checker *h, const engine_event *ev) {
    if (ev->sub >= HB_HARD_EVENTS || ev->value < 0 || ev->value >= HB_FLAG_IDS) return;
    hb_track *s = hb_scalar_of(h, ev->rank, ev->core);
    hb_track *p = hb_track_of(h, ev->rank, ev->core, ev->pipe);
    hb_pipe_takes_scalar(p, s);
    hb_flag_fifo *f = fifo_of(h, ev->rank, ev->core, ev->sub, (int)ev->value);
    if (f->count < HB_FLAG_DEPTH) {
        hb_pending *e = &f->e[(f->head + f->count) % HB_FLAG_DEPTH];
        e->snap = hb_snapshot(p);
        e->seq = ev->seq;
        hb_site_of(h, ev->site, &e->file, &e->line);
        f->count++;
    }
    hb_tick(s);
}

static void hook_side(const engine_hook *hk, hb_side *s) {
    memset(s, 0, sizeof *s);
    s->rank = (int)hk->rank;
    s->core = (int)hk->core;
    s->pipe = PIPE_S;
    s->seq = hk->seq;
    s->file = hk->file ? hk->file : "";
    s->line = hk->line;
}

void hb_on_flag_wait(hb_checker *h, const engine_hook *hk) {
    int ev = hk->sub, id = (int)hk->len;
    if (ev <= 0 || ev >= HB_HARD_EVENTS || id < 0 || id >= HB_FLAG_IDS) return;
    hb_flag_fifo *f = fifo_of(h, hk->rank, hk->core, ev, id);
    if (!f->count) {
        hb_side w;
        hook_side(hk, &w);
        char what[256];
        snprintf(what, sizeof what, "WaitFlag(%s, %d) with no SetFlag before it on this core",
                 engine_hard_event_name(ev), id);
        report_add(h, HB_WAIT_NEVER_SET, &w, NULL, "", what);
        return;
    }
    hb_pending e = f->e[f->head];
    f->head = (uint8_t)((f->head + 1) % HB_FLAG_DEPTH);
    f->count--;
    int cons = engine_hard_event_pipe(ev, 1);
    hb_track *t = hb_track_of(h, hk->rank, hk->core, cons < 0 ? PIPE_S : (uint32_t)cons);
    hb_join_snap(t, e.snap);
    snap_unref(e.snap);
}

void hb_flags_learn(hb_checker *h, uint32_t rank, uint32_t core, int pipe, uint64_t after,
                        const hb_vc *what) {
    hb_core *c = hb_core_of(h, rank, core);
    if (!c->flags) return;
    for (int ev = 1; ev < HB_HARD_EVENTS; ev++) {
        if (engine_hard_event_pipe(ev, 0) != pipe) continue;
        for (int id = 0; id < HB_FLAG_IDS; id++) {
            hb_flag_fifo *f = &c->flags[(size_t)ev * HB_FLAG_IDS + (size_t)id];
            for (uint8_t j = 0; j < f->count; j++) {
                hb_pending *e = &f->e[(f->head + j) % HB_FLAG_DEPTH];
                if (e->seq < after) continue;
                hb_vc v = {0};
                vc_join_snap(&v, e->snap);
                vc_join(&v, what->c, what->n);
                snap_unref(e->snap);
                e->snap = snap_new(&v);
                vc_free(&v);
            }
        }
    }
}

void hb_flags_left(hb_checker *h, uint32_t rank, uint32_t core) {
    hb_core *c = hb_core_of(h, rank, core);
    if (!c->flags) return;
    for (int ev = 1; ev < HB_HARD_EVENTS; ev++)
        for (int id = 0; id < HB_FLAG_IDS; id++) {
            hb_flag_fifo *f = &c->flags[(size_t)ev * HB_FLAG_IDS + (size_t)id];
            while (f->count) {
                hb_pending *e = &f->e[f->head];
                hb_side s = {.rank = (int)rank, .core = (int)core,
                             .pipe = engine_hard_event_pipe(ev, 0), .file = e->file,
                             .line = e->line, .seq = e->seq};
                char what[256];
                snprintf(what, sizeof what, "SetFlag(%s, %d) never waited for before the kernel "
                         "ended", engine_hard_event_name(ev), id);
                report_add(h, HB_FLAG_NEVER_WAITED, &s, NULL, "", what);
                snap_unref(e->snap);
                f->head = (uint8_t)((f->head + 1) % HB_FLAG_DEPTH);
                f->count--;
            }
        }
}

/* ------------------------------------------------------------ cross-core flags */
void hb_xfifo_push(hb_xfifo *q, hb_snap *s) {
    if (q->n == q->cap) {
        uint32_t cap = q->cap ? q->cap * 2 : 8;
        hb_snap **v = malloc((size_t)cap * sizeof *v);
        if (!v) abort();
        for (uint32_t i = 0; i < q->n; i++) v[i] = q->v[(q->head + i) % q->cap];
        free(q->v);
        q->v = v;
        q->cap = cap;
        q->head = 0;
    }
    q->v[(q->head + q->n) % q->cap] = s;
    q->n++;
}

hb_snap *hb_xfifo_pop(hb_xfifo *q) {
    if (!q->n) return NULL;
    hb_snap *s = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return s;
}

void hb_on_xcore_set(hb_checker *h, const engine_event *ev) {
    hb_track *s = hb_scalar_of(h, ev->rank, ev->core);
    hb_track *p = hb_track_of(h, ev->rank, ev->core, ev->pipe);
    hb_pipe_takes_scalar(p, s);
    snap_unref(h->xcore_pending);
    h->xcore_pending = hb_snapshot(p);
    h->xcore_pending_seq = ev->seq;
    hb_tick(s);
}

/* ------------------------------------------------------------ barriers */
static hb_barrier *barrier_of(hb_checker *h, const engine_event *ev) {
    int aic = (int)ev->core < h->n_aic;
    size_t k = ev->value ? (size_t)aic : 2 + (size_t)ev->rank * 2 + (size_t)aic;
    return &h->barriers[k];
}

void hb_on_barrier_begin(hb_checker *h, const engine_event *ev) {
    hb_barrier *b = barrier_of(h, ev);
    hb_track *s = hb_scalar_of(h, ev->rank, ev->core);
    vc_join(&b->acc, s->vc.c, s->vc.n);
    hb_core_of(h, ev->rank, ev->core)->bar_instance = b->instance;
    if (++b->arrived >= (uint32_t)ev->aux) {
        hb_snap **slot = &b->released[b->instance & 1];
        snap_unref(*slot);
        *slot = snap_new(&b->acc);
        memset(b->acc.c, 0, (size_t)b->acc.cap * sizeof *b->acc.c);
        b->acc.n = 0;
        b->arrived = 0;
        b->instance++;
    }
    hb_tick(s);
}

void hb_on_barrier_end(hb_checker *h, const engine_event *ev) {
    hb_barrier *b = barrier_of(h, ev);
    uint64_t inst = hb_core_of(h, ev->rank, ev->core)->bar_instance;
    if (inst + 1 != b->instance && inst + 2 != b->instance) return;
    hb_join_snap(hb_scalar_of(h, ev->rank, ev->core), b->released[inst & 1]);
}

