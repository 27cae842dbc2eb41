/*
 * ana_timeline_order.c - puts the timeline's events in the order a viewer
 * reads them (ana_timeline.h says which): a stable sort by time of the
 * events as the builder emits them (ana_timeline.c, order_events).
 *
 * Why buckets and not one radix sort of every event: at EP16 x 4096 there
 * are 16 M events, and a radix sort of them all is three passes that each
 * scatter 16 M (time, event) pairs over 2048 places in memory at once (a
 * TLB miss a write) and needs a second copy of every array. Here the
 * builder counts the events of each time bucket first (a pass over the
 * slices), then each event goes straight to its bucket's next slot as it
 * is emitted, and each bucket (some thousands of events, in cache) is
 * sorted by its time within the bucket. Both steps keep the emission order
 * of ties, so the result is what the stable sort of everything gave: the
 * output stays byte for byte the same. An event is 8 bytes while it is
 * ordered (its time in the bucket and the packed event) and 4 after.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/ana_timeline.h"

/* Buckets: about this many events in each (time permitting), and at most
 * this many buckets written to at once. */
#define BUCKET_EVENTS 8192u
#define MAX_BUCKETS 1024u

static void count(tl_order *o, uint64_t ps) { o->at[tl_ns(ps) >> o->shift]++; }

/* The latest time any event of tl has, and how many events there are. */
static uint64_t latest(const ana_timeline *tl, uint64_t *nev) {
    uint64_t max = 0, n = tl->ncounter;
    for (uint32_t i = 0; i < tl->nslice; i++) {
        const tl_slice *s = &tl->slice[i];
        if (s->e_ps > max) max = s->e_ps;
        if (s->b_ps > max) max = s->b_ps;
        n += 2;
        if (s->flow) {
            n += 2;
            if (tl_flow_of(tl, s)->waker_ps > max) max = tl_flow_of(tl, s)->waker_ps;
        }
    }
    for (uint32_t i = 0; i < tl->ncounter; i++)
        if (tl->counter[i].ps > max) max = tl->counter[i].ps;
    *nev = n;
    return max;
}

int tl_order_start(tl_order *o, const ana_timeline *tl) {
    memset(o, 0, sizeof *o);
    uint64_t n, max_ns = tl_ns(latest(tl, &n));
    if (n >= UINT32_MAX) return -1;
    uint64_t target = n / BUCKET_EVENTS;
    if (target < 1) target = 1;
    if (target > MAX_BUCKETS) target = MAX_BUCKETS;
    /* The time within a bucket must fit the top 32 bits of an event. */
    while (o->shift < 32 && (max_ns >> o->shift) >= target) o->shift++;
    o->mask = (1ull << o->shift) - 1;
    o->nb = (size_t)(max_ns >> o->shift) + 1;
    o->at = calloc(o->nb, sizeof *o->at);
    o->end = malloc(o->nb * sizeof *o->end);
    o->ev = malloc(((size_t)n + 1) * sizeof *o->ev);
    if (!o->at || !o->end || !o->ev) return -1;
    for (uint32_t i = 0; i < tl->nslice; i++) {
        const tl_slice *s = &tl->slice[i];
        count(o, s->b_ps);
        count(o, s->e_ps);
        if (s->flow) {
            count(o, s->e_ps);
            count(o, tl_flow_of(tl, s)->waker_ps);
        }
    }
    for (uint32_t i = 0; i < tl->ncounter; i++) count(o, tl->counter[i].ps);
    size_t sum = 0;
    for (size_t b = 0; b < o->nb; b++) {
        size_t c = o->at[b];
        o->at[b] = sum;
        sum += c;
        o->end[b] = sum;
    }
    o->n = sum;
    return 0;
}

/* Sorts n events by their time in the bucket (the top bits bits of the
 * 32 above the event), keeping the order of ties: byte by byte from the
 * lowest (tmp holds n), or by insertion when there are few. */
static void sort_bucket(uint64_t *a, uint64_t *tmp, size_t n, unsigned bits) {
    if (n < 32) {
        for (size_t i = 1; i < n; i++) {
            uint64_t x = a[i];
            size_t j = i;
            for (; j > 0 && (a[j - 1] >> 32) > (x >> 32); j--) a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    uint64_t *src = a, *dst = tmp;
    for (unsigned sh = 32; sh < 32 + bits; sh += 8) {
        size_t at[256] = {0};
        for (size_t i = 0; i < n; i++) at[(src[i] >> sh) & 255]++;
        if (at[(src[0] >> sh) & 255] == n) continue;   /* one digit: in order */
        size_t sum = 0;
        for (unsigned d = 0; d < 256; d++) {
            size_t c = at[d];
            at[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) dst[at[(src[i] >> sh) & 255]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, n * sizeof *a);
}

int tl_order_finish(tl_order *o, ana_timeline *tl) {
    size_t big = 0;
    for (size_t b = 0; b < o->nb; b++) {
        size_t start = b ? o->end[b - 1] : 0;
        if (o->at[b] != o->end[b]) return -1;   /* fewer emitted than counted */
        if (o->end[b] - start > big) big = o->end[b] - start;
    }
    uint64_t *tmp = malloc((big ? big : 1) * sizeof *tmp);
    if (!tmp) return -1;
    for (size_t b = 0; b < o->nb; b++) {
        size_t start = b ? o->end[b - 1] : 0;
        sort_bucket(o->ev + start, tmp, o->end[b] - start, o->shift);
    }
    free(tmp);
    /* The packed events, in place: event i's 4 bytes go where events
     * i / 2 and before were, all read already. */
    unsigned char *p = (unsigned char *)o->ev;
    for (size_t i = 0; i < o->n; i++) {
        uint32_t v = (uint32_t)o->ev[i];
        memcpy(p + i * sizeof v, &v, sizeof v);
    }
    uint32_t *ev = realloc(p, (o->n + 1) * sizeof *ev);
    tl->ev = ev ? ev : (uint32_t *)(void *)p;
    tl->nev = (uint32_t)o->n;
    o->ev = NULL;
    return 0;
}

void tl_order_free(tl_order *o) {
    free(o->ev);
    free(o->at);
    free(o->end);
    memset(o, 0, sizeof *o);
}
