/*
 * hb_shadow.c - shadow memory by ranges, FastTrack-style.
 *
 * A space (one rank's GM, or one local memory of one core) is a sorted
 * array of disjoint byte ranges, each holding the epoch of its last write
 * and the epochs of the reads since that are not ordered with each other
 * (at most HB_READS; a further read drops the oldest, which can only hide
 * a race, never invent one). Transfers move whole rows and buffers, so a
 * space holds about as many ranges as the kernel has buffers in flight,
 * and an access costs a binary search plus the ranges it overlaps.
 *
 * A write replaces every range it covers with one; a read splits ranges
 * only where it starts or ends inside one. Each space is cut into 64 KiB
 * pages, each its own array, found by hashing (space, page): tokens land
 * all over a receive buffer, and one array per space would make every
 * insertion move everything behind it.
 */
#include "checker/hb_internal.h"

#include <string.h>

void hb_race(hb_checker *h, uint32_t key, uint64_t lo, uint64_t hi, const hb_acc *prev,
             const hb_acc *cur);

static int ordered(const hb_acc *prev, const hb_acc *cur, const hb_vc *vc) {
    return prev->tid == cur->tid || vc_get(vc, prev->tid) >= prev->clock;
}

static int conflicts(const hb_acc *prev, const hb_acc *cur, const hb_vc *vc) {
    if (!prev->valid) return 0;
    if (!prev->write && !cur->write) return 0;
    if (prev->scalar && cur->scalar) return 0;   /* word synchronisation, not data */
    if (prev->write && cur->write && prev->atomic && cur->atomic) return 0;  /* they commute */
    return !ordered(prev, cur, vc);
}

static void add_read(hb_iv *iv, const hb_acc *acc, const hb_vc *vc) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < iv->nr; i++)
        if (!ordered(&iv->r[i], acc, vc)) iv->r[k++] = iv->r[i];
    iv->nr = k;
    if (iv->nr == HB_READS) {
        memmove(&iv->r[0], &iv->r[1], (HB_READS - 1) * sizeof iv->r[0]);
        iv->nr--;
    }
    iv->r[iv->nr++] = *acc;
}

/* Replaces v[i0..i1) with the k pieces in repl. */
static void splice(hb_space *sp, uint32_t i0, uint32_t i1, const hb_iv *repl, uint32_t k) {
    uint32_t n = sp->n - (i1 - i0) + k;
    if (n > sp->cap) {
        uint32_t cap = sp->cap ? sp->cap : 16;
        while (cap < n) cap *= 2;
        sp->v = realloc(sp->v, (size_t)cap * sizeof *sp->v);
        if (!sp->v) abort();
        sp->cap = cap;
    }
    memmove(&sp->v[i0 + k], &sp->v[i1], (size_t)(sp->n - i1) * sizeof *sp->v);
    memcpy(&sp->v[i0], repl, (size_t)k * sizeof *repl);
    sp->n = n;
}

static uint32_t first_ending_after(const hb_space *sp, uint64_t lo) {
    uint32_t a = 0, b = sp->n;
    while (a < b) {
        uint32_t m = (a + b) / 2;
        if (sp->v[m].hi > lo) b = m; else a = m + 1;
    }
    return a;
}

#define PAGE_SHIFT 16

static hb_space *page_of(hb_checker *h, uint32_t key, uint64_t page, int add) {
    uint64_t id = (((uint64_t)key << 26) | page) + 1;
    if (add && (h->pages_n + 1) * 2 > h->pages_cap) {
        hb_page *old = h->pages;
        size_t old_cap = h->pages_cap;
        h->pages_cap = old_cap ? old_cap * 2 : 4096;
        h->pages = calloc(h->pages_cap, sizeof *h->pages);
        if (!h->pages) abort();
        for (size_t i = 0; i < old_cap; i++) {
            if (!old[i].id) continue;
            size_t j = (size_t)(old[i].id * 0x9E3779B97F4A7C15ULL >> 17) & (h->pages_cap - 1);
            while (h->pages[j].id) j = (j + 1) & (h->pages_cap - 1);
            h->pages[j] = old[i];
        }
        free(old);
    }
    if (!h->pages_cap) return NULL;
    size_t j = (size_t)(id * 0x9E3779B97F4A7C15ULL >> 17) & (h->pages_cap - 1);
    while (h->pages[j].id && h->pages[j].id != id) j = (j + 1) & (h->pages_cap - 1);
    if (h->pages[j].id) return &h->pages[j].sp;
    if (!add) return NULL;
    h->pages[j].id = id;
    h->pages_n++;
    return &h->pages[j].sp;
}

static void page_access(hb_checker *h, hb_space *sp, uint32_t key, uint64_t lo, uint64_t hi,
                        const hb_acc *acc, const hb_vc *vc, uint32_t s_clock,
                        int *reported_out) {
    uint32_t i0 = first_ending_after(sp, lo), i1 = i0;
    int reported = *reported_out;
    while (i1 < sp->n && sp->v[i1].lo < hi) {
        const hb_iv *iv = &sp->v[i1];
        if (!reported) {
            uint64_t olo = iv->lo > lo ? iv->lo : lo, ohi = iv->hi < hi ? iv->hi : hi;
            const hb_acc *prev = NULL;
            if (conflicts(&iv->w, acc, vc)) prev = &iv->w;
            for (uint32_t r = 0; !prev && acc->write && r < iv->nr; r++)
                if (conflicts(&iv->r[r], acc, vc)) prev = &iv->r[r];
            if (prev) {
                hb_race(h, key, olo, ohi, prev, acc);
                reported = *reported_out = 1;   /* one report per access: the pair of sites matters */
            }
        }
        i1++;
    }
    if (acc->write) {
        hb_iv repl[3];
        uint32_t k = 0;
        if (i0 < i1 && sp->v[i0].lo < lo) {
            repl[k] = sp->v[i0];
            repl[k++].hi = lo;
        }
        memset(&repl[k], 0, sizeof repl[k]);
        repl[k].lo = lo;
        repl[k].hi = hi;
        repl[k].w_s_clock = s_clock;
        repl[k++].w = *acc;
        if (i0 < i1 && sp->v[i1 - 1].hi > hi) {
            repl[k] = sp->v[i1 - 1];
            repl[k++].lo = hi;
        }
        splice(sp, i0, i1, repl, k);
        return;
    }
    /* A read: pieces of the overlapped ranges, plus the gaps between them. */
    uint32_t cap = 2 * (i1 - i0) + 3, k = 0;
    hb_iv stack_buf[16];
    hb_iv *repl = cap <= 16 ? stack_buf : malloc((size_t)cap * sizeof *repl);
    if (!repl) abort();
    uint64_t cursor = lo;
    for (uint32_t i = i0; i < i1; i++) {
        const hb_iv *iv = &sp->v[i];
        if (iv->lo < lo) {
            repl[k] = *iv;
            repl[k++].hi = lo;
        }
        if (cursor < iv->lo) {
            memset(&repl[k], 0, sizeof repl[k]);
            repl[k].lo = cursor;
            repl[k].hi = iv->lo;
            add_read(&repl[k++], acc, vc);
        }
        repl[k] = *iv;
        repl[k].lo = iv->lo > lo ? iv->lo : lo;
        repl[k].hi = iv->hi < hi ? iv->hi : hi;
        add_read(&repl[k++], acc, vc);
        if (iv->hi > hi) {
            repl[k] = *iv;
            repl[k++].lo = hi;
        }
        cursor = iv->hi < hi ? iv->hi : hi;
    }
    if (cursor < hi) {
        memset(&repl[k], 0, sizeof repl[k]);
        repl[k].lo = cursor;
        repl[k].hi = hi;
        add_read(&repl[k++], acc, vc);
    }
    splice(sp, i0, i1, repl, k);
    if (repl != stack_buf) free(repl);
}

void shadow_access(hb_checker *h, uint32_t key, uint64_t lo, uint64_t hi, const hb_acc *acc,
                   const hb_vc *vc, uint32_t s_clock) {
    int reported = 0;
    for (uint64_t at = lo; at < hi;) {
        uint64_t page = at >> PAGE_SHIFT, end = (page + 1) << PAGE_SHIFT;
        if (end > hi) end = hi;
        page_access(h, page_of(h, key, page, 1), key, at, end, acc, vc, s_clock, &reported);
        at = end;
    }
}

const hb_acc *shadow_last_write(hb_checker *h, uint32_t key, uint64_t off, uint32_t *s_clock) {
    const hb_space *sp = page_of(h, key, off >> PAGE_SHIFT, 0);
    if (!sp) return NULL;
    uint32_t i = first_ending_after(sp, off);
    if (i < sp->n && sp->v[i].lo <= off && sp->v[i].w.valid) {
        *s_clock = sp->v[i].w_s_clock;
        return &sp->v[i].w;
    }
    return NULL;
}

void shadow_free(hb_checker *h) {
    for (size_t i = 0; i < h->pages_cap; i++) free(h->pages[i].sp.v);
    free(h->pages);
    h->pages = NULL;
    h->pages_cap = h->pages_n = 0;
}
