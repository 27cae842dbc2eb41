/*
 * resource.c - shared bandwidth resources (a rank's HBM, an HCCS link, a NIC
 * direction) as booking calendars.
 *
 * A transfer books the resource for bytes / bandwidth (plus a fixed cost per
 * booking where the resource has one: a NIC's per-message work) in the
 * first free gap at or after its real start. Booking in issue order instead would let a
 * transfer that is queued behind a WaitFlag, and so starts much later, push
 * every transfer issued after it behind that future slot, although the link
 * is idle meanwhile. Aggregate bandwidth is exact; transfers are not
 * preempted. Intervals that ended before the engine's current time can never
 * be booked again and are dropped, so a calendar holds only in-flight work.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t resource_duration(const resource *r, uint64_t bytes) {
    return (uint64_t)ceil((double)bytes * r->ps_per_byte) + (bytes ? r->ps_per_op : 0);
}

uint64_t resource_reserve(resource *r, uint64_t now, uint64_t start, uint64_t bytes) {
    uint64_t d = resource_duration(r, bytes);
    if (d == 0) return start;
    uint64_t *b = r->busy;
    uint32_t n = r->n, drop = 0;
    while (drop < n && b[2 * drop + 1] <= now) drop++;
    if (drop) {
        memmove(b, b + 2 * drop, (size_t)(n - drop) * 2 * sizeof *b);
        n -= drop;
    }
    uint64_t t = start;
    uint32_t i = 0;
    while (i < n && b[2 * i + 1] <= t) i++;
    while (i < n && b[2 * i] < t + d) {
        if (b[2 * i + 1] > t) t = b[2 * i + 1];
        i++;
    }
    uint64_t end = t + d;
    /* insert [t, end) before interval i, merging with touching neighbours */
    int merge_prev = i > 0 && b[2 * (i - 1) + 1] == t;
    int merge_next = i < n && b[2 * i] == end;
    if (merge_prev && merge_next) {
        b[2 * (i - 1) + 1] = b[2 * i + 1];
        memmove(b + 2 * i, b + 2 * (i + 1), (size_t)(n - i - 1) * 2 * sizeof *b);
        n--;
    } else if (merge_prev) {
        b[2 * (i - 1) + 1] = end;
    } else if (merge_next) {
        b[2 * i] = t;
    } else {
        if (n == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 16;
            b = realloc(b, (size_t)r->cap * 2 * sizeof *b);
            if (!b) abort();
            r->busy = b;
        }
        memmove(b + 2 * (i + 1), b + 2 * i, (size_t)(n - i) * 2 * sizeof *b);
        b[2 * i] = t;
        b[2 * i + 1] = end;
        n++;
    }
    r->n = n;
    return end;
}

void resource_free(resource *r) {
    free(r->busy);
    r->busy = NULL;
    r->n = r->cap = 0;
}
