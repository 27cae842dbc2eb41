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
    s->refs = 1;
    s->n = v->n;
    if (v->n) memcpy(s->c, v->c, (size_t)v->n * sizeof(uint32_t));
    return s;
}

void snap_unref(hb_snap *s) {
    if (s && --s->refs == 0) free(s);
}
