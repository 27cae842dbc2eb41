/*
 * hb_vc.c - vector clocks and their shared snapshots.
 *
 * A clock is a dense array over track ids, as long as the highest track it
 * has heard of (tracks get ids as they first act, so a clock stays as short
 * as the part of the cluster it knows). A snapshot is an immutable copy
 * with a reference count: the same one is shared by every word a release
 * publishes, and copied again only after the releasing clock changed.
 */
#include "checker/hb_internal.h"

#include <string.h>

static void vc_reserve(hb_vc *v, uint32_t n) {
    if (n <= v->cap) return;
    uint32_t cap = v->cap ? v->cap : 16;
    while (cap < n) cap *= 2;
    v->c = realloc(v->c, (size_t)cap * sizeof *v->c);
    if (!v->c) abort();
    memset(v->c + v->cap, 0, (size_t)(cap - v->cap) * sizeof *v->c);
    v->cap = cap;
}

void vc_set(hb_vc *v, uint32_t t, uint32_t x) {
    if (t >= v->n) {
        vc_reserve(v, t + 1);
        v->n = t + 1;
    }
    v->c[t] = x;
}

int vc_join(hb_vc *dst, const uint32_t *src, uint32_t n) {
    if (n > dst->n) {
        vc_reserve(dst, n);
        dst->n = n;
    }
    int changed = 0;
    for (uint32_t i = 0; i < n; i++)
        if (src[i] > dst->c[i]) {
            dst->c[i] = src[i];
            changed = 1;
        }
    return changed;
}

void vc_free(hb_vc *v) {
    free(v->c);
    memset(v, 0, sizeof *v);
}

hb_snap *snap_new(const hb_vc *v) {
    hb_snap *s = malloc(sizeof *s + (size_t)v->n * sizeof(uint32_t));
    if (!s) abort();
    memset(s, 0, sizeof *s);
    s->refs = 1;
    s->n = v->n;
    if (v->n) memcpy(s->c, v->c, (size_t)v->n * sizeof(uint32_t));
    return s;
}

hb_snap *snap_delta(hb_snap *base, uint32_t n_over, const uint32_t *tid, const uint32_t *clock) {
    hb_snap *s = malloc(sizeof *s);
    if (!s) abort();
    memset(s, 0, sizeof *s);
    s->refs = 1;
    s->base = snap_ref(base);
    s->n_over = n_over;
    for (uint32_t i = 0; i < n_over; i++) {
        s->over_tid[i] = tid[i];
        s->over_clock[i] = clock[i];
    }
    return s;
}

int vc_join_snap(hb_vc *v, const hb_snap *s) {
    if (!s) return 0;
    int changed = s->base ? vc_join(v, s->base->c, s->base->n) : vc_join(v, s->c, s->n);
    for (uint32_t i = 0; i < s->n_over; i++)
        if (vc_get(v, s->over_tid[i]) < s->over_clock[i]) {
            vc_set(v, s->over_tid[i], s->over_clock[i]);
            changed = 1;
        }
    return changed;
}

void snap_unref(hb_snap *s) {
    if (s && --s->refs == 0) {
        snap_unref(s->base);
        free(s);
    }
}
