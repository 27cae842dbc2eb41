/*
 * memory.c - GM allocations, the symmetric heap and cores' local memories,
 * with the bounds and alignment rules the hardware enforces.
 *
 * Every allocation is its own anonymous mapping: zero-filled, backed only
 * when touched (production-sized runs reserve far more than they write), and
 * findable by binary search so an access outside every allocation faults
 * naming the nearest one instead of silently landing in a neighbour. Each
 * allocation and each local memory is a segment (payload.c): payload that
 * was only moved is held there as references, never touching the mapping.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static uint8_t *map_zeroed(uint64_t bytes) {
    void *host = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return host == MAP_FAILED ? NULL : host;
}

void eng_gm_unmap(mseg *seg) {
    if (!seg) return;
    if (seg->host) munmap(seg->host, seg->size ? seg->size : 1);
    eng_seg_free(seg);
    free(seg);
}

static int insert_alloc(engine *e, int rank, uint64_t off, uint64_t bytes, uint32_t name,
                        char *err, size_t errlen) {
    rank_state *rs = &e->ranks[rank];
    if (rs->n_allocs == rs->cap_allocs) {
        int cap = rs->cap_allocs ? rs->cap_allocs * 2 : 16;
        gm_alloc *na = realloc(rs->allocs, (size_t)cap * sizeof *na);
        if (!na) { snprintf(err, errlen, "out of memory"); return ENGINE_ERR; }
        rs->allocs = na;
        rs->cap_allocs = cap;
    }
    uint8_t *host = map_zeroed(bytes);
    mseg *seg = host ? malloc(sizeof *seg) : NULL;
    if (!seg) {
        if (host) munmap(host, bytes ? bytes : 1);
        snprintf(err, errlen, "GM allocation '%s' of %llu bytes on rank %d: the host refused the mapping",
                 engine_string(e, name), (unsigned long long)bytes, rank);
        return ENGINE_ERR;
    }
    eng_seg_init(seg, host, bytes);
    seg->mapped = 1;
    int pos = rs->n_allocs;
    while (pos > 0 && rs->allocs[pos - 1].off > off) pos--;
    memmove(&rs->allocs[pos + 1], &rs->allocs[pos], (size_t)(rs->n_allocs - pos) * sizeof *rs->allocs);
    uint32_t n_words = 0;   /* words named before the allocation (eng_word_object) */
    for (int i = 0; i < rs->n_words; i++)
        if (rs->words[i].off < off + bytes && rs->words[i].off + rs->words[i].width > off) n_words++;
    rs->allocs[pos] = (gm_alloc){off, bytes, seg, name, n_words};
    rs->n_allocs++;
    eng_host_index_add(e, host, bytes, rank, off);
    rs->last_alloc = -1;
    return ENGINE_OK;
}

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

int engine_gm_alloc(engine *e, int rank, uint64_t bytes, const char *name, gm_t *out,
                    char *err, size_t errlen) {
    if (rank < 0 || rank >= e->n_ranks) {
        snprintf(err, errlen, "GM allocation '%s': rank %d does not exist (0..%d)", name, rank,
                 e->n_ranks - 1);
        return ENGINE_ERR;
    }
    if (bytes == 0 || bytes > (1ULL << 37)) {
        snprintf(err, errlen, "GM allocation '%s' on rank %d: size %llu must be 1 byte to 128 GiB",
                 name, rank, (unsigned long long)bytes);
        return ENGINE_ERR;
    }
    rank_state *rs = &e->ranks[rank];
    uint64_t off = rs->next_off;
    if (off + bytes >= (1ULL << 38)) {
        snprintf(err, errlen, "GM allocation '%s' on rank %d: the rank's private space is full", name, rank);
        return ENGINE_ERR;
    }
    /* 512 B apart, with a gap, so an overrun never reaches the next buffer */
    rs->next_off = align_up(off + bytes, 512) + 512;
    if (insert_alloc(e, rank, off, bytes, eng_intern(e, name), err, errlen)) return ENGINE_ERR;
    *out = gm_make(rank, off);
    return ENGINE_OK;
}

int engine_sym_alloc(engine *e, uint64_t bytes, const char *name, gm_t *out, char *err,
                     size_t errlen) {
    if (bytes == 0 || bytes > (1ULL << 37)) {
        snprintf(err, errlen, "symmetric allocation '%s': size %llu must be 1 byte to 128 GiB", name,
                 (unsigned long long)bytes);
        return ENGINE_ERR;
    }
    uint64_t off = e->sym_next;
    if (off + bytes >= GM_OFFSET_MASK) {
        snprintf(err, errlen, "symmetric allocation '%s': the symmetric heap is full", name);
        return ENGINE_ERR;
    }
    e->sym_next = align_up(off + bytes, 512) + 512;
    uint32_t id = eng_intern(e, name);
    for (int r = 0; r < e->n_ranks; r++)
        if (insert_alloc(e, r, off, bytes, id, err, errlen)) return ENGINE_ERR;
    *out = gm_make(0, off);
    return ENGINE_OK;
}

const gm_alloc *eng_gm_find(engine *e, gm_t p) {
    int rank = gm_rank(p);
    if (rank < 0 || rank >= e->n_ranks) return NULL;
    rank_state *rs = &e->ranks[rank];
    uint64_t off = gm_offset(p);
    /* An access is mostly followed by another to the same allocation (its
     * object's lookup, its completion's write): allocations do not
     * overlap, so one that holds off is the search's answer. */
    if ((unsigned)rs->last_alloc < (unsigned)rs->n_allocs) {
        const gm_alloc *a = &rs->allocs[rs->last_alloc];
        if (off >= a->off && off - a->off < a->size) return a;
    }
    int lo = 0, hi = rs->n_allocs - 1, best = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (rs->allocs[mid].off <= off) { best = mid; lo = mid + 1; } else hi = mid - 1;
    }
    if (best < 0) return NULL;
    rs->last_alloc = best;
    return &rs->allocs[best];
}

uint8_t *eng_gm_at(engine *e, gm_t p, uint64_t bytes, mseg **seg) {
    const gm_alloc *a = eng_gm_find(e, p);
    if (!a) return NULL;
    uint64_t off = gm_offset(p);
    if (off < a->off || off - a->off > a->size || bytes > a->size - (off - a->off)) return NULL;
    if (seg) *seg = a->seg;
    return a->seg->host + (off - a->off);
}

uint8_t *eng_gm_ptr(engine *e, gm_t p, uint64_t bytes) {
    mseg *seg;
    uint8_t *h = eng_gm_at(e, p, bytes, &seg);
    if (!h) return NULL;
    return eng_seg_lit(e, seg, eng_seg_off(seg, h), bytes);
}

void *engine_gm_host(engine *e, gm_t p, uint64_t bytes) {
    mseg *seg;
    uint8_t *h = eng_gm_at(e, p, bytes, &seg);
    if (!h) return NULL;
    eng_seg_touched(seg, bytes);   /* the host may write all of it */
    return eng_seg_lit(e, seg, eng_seg_off(seg, h), bytes);
}

int engine_gm_generate(engine *e, gm_t p, uint64_t rows, uint64_t row_bytes, engine_row_fn fn,
                       const void *params, size_t params_size, char *err, size_t errlen) {
    mseg *seg;
    uint64_t bytes = rows * row_bytes;
    if (!rows || !row_bytes || bytes / row_bytes != rows) {
        snprintf(err, errlen, "generated input at rank %d +0x%llx: %llu rows of %llu bytes is empty "
                 "or too large", gm_rank(p), (unsigned long long)gm_offset(p),
                 (unsigned long long)rows, (unsigned long long)row_bytes);
        return ENGINE_ERR;
    }
    uint8_t *h = eng_gm_at(e, p, bytes, &seg);
    if (!h) {
        snprintf(err, errlen, "generated input at rank %d +0x%llx (%llu bytes) is not inside one "
                 "GM allocation", gm_rank(p), (unsigned long long)gm_offset(p),
                 (unsigned long long)bytes);
        return ENGINE_ERR;
    }
    uint32_t origin = eng_origin_add(e, fn, params, params_size, rows, row_bytes);
    eng_seg_generate(e, seg, eng_seg_off(seg, h), origin);
    return ENGINE_OK;
}

int engine_gm_read(engine *e, gm_t p, void *out, uint64_t bytes) {
    mseg *seg;
    uint8_t *h = eng_gm_at(e, p, bytes, &seg);
    if (!h) return ENGINE_ERR;
    eng_seg_read(e, seg, eng_seg_off(seg, h), out, bytes);
    return ENGINE_OK;
}

int engine_gm_equal(engine *e, gm_t a, gm_t b, uint64_t bytes, uint64_t *diff) {
    mseg *sa, *sb;
    uint8_t *ha = eng_gm_at(e, a, bytes, &sa), *hb = eng_gm_at(e, b, bytes, &sb);
    if (!ha || !hb) return -1;
    return eng_seg_equal(e, sa, eng_seg_off(sa, ha), sb, eng_seg_off(sb, hb), bytes, diff);
}

int engine_gm_equal_host(engine *e, gm_t a, const void *want, uint64_t bytes, uint64_t *diff) {
    mseg *sa;
    uint8_t *ha = eng_gm_at(e, a, bytes, &sa);
    if (!ha) return -1;
    /* the wanted bytes as a literal segment of their own */
    mseg w;
    eng_seg_init(&w, (uint8_t *)(uintptr_t)want, bytes);
    return eng_seg_equal(e, sa, eng_seg_off(sa, ha), &w, 0, bytes, diff);
}

int engine_gm_equal_generated(engine *e, gm_t p, uint64_t rows, uint64_t row_bytes,
                              engine_row_fn fn, const void *params, size_t params_size,
                              uint64_t *diff) {
    mseg *seg;
    uint64_t bytes = rows * row_bytes;
    if (!row_bytes || bytes / row_bytes != rows) return -1;
    uint8_t *h = eng_gm_at(e, p, bytes, &seg);
    if (!h) return -1;
    return eng_seg_equal_generated(e, seg, eng_seg_off(seg, h), bytes, fn, params, params_size,
                                   row_bytes, diff);
}

/* Total bytes of GM allocated on all ranks (the logical GM). */
static uint64_t gm_allocated(const engine *e) {
    uint64_t total = 0;
    for (int r = 0; r < e->n_ranks; r++)
        for (int i = 0; i < e->ranks[r].n_allocs; i++) total += e->ranks[r].allocs[i].size;
    return total;
}

void engine_memory_get(const engine *e, engine_memory *m) {
    if (eng_split_memory(e, m)) return;   /* a split run's end: every process's */
    memset(m, 0, sizeof *m);
    m->logical_gm = gm_allocated(e);
    /* a split process counts the ranks it owns (the setup made every
     * rank's inputs everywhere): the sum over processes is the run's */
    for (int r = e->own_first; r < e->own_end; r++)
        for (int i = 0; i < e->ranks[r].n_allocs; i++) {
            const mseg *s = e->ranks[r].allocs[i].seg;
            eng_seg_stats(s, &m->reference_extents, &m->reference_bytes);
            m->literal_bytes += s->literal_bytes < s->size ? s->literal_bytes : s->size;
        }
    for (size_t i = (size_t)e->own_first * (size_t)e->cores_per_rank;
         i < (size_t)e->own_end * (size_t)e->cores_per_rank; i++)
        for (int sp = 0; sp <= LM_L0C; sp++) {
            const mseg *s = &e->cores[i].local[sp];
            eng_seg_stats(s, &m->reference_extents, &m->reference_bytes);
            m->literal_bytes += s->literal_bytes < s->size ? s->literal_bytes : s->size;
        }
}

const char *engine_payload_name(engine_payload p) { return p == PAYLOAD_FULL ? "full" : "ref"; }

int engine_payload_parse(const char *text, engine_payload *out) {
    if (!strcmp(text, "ref")) { *out = PAYLOAD_REF; return 0; }
    if (!strcmp(text, "full")) { *out = PAYLOAD_FULL; return 0; }
    return -1;
}

void eng_gm_check(core *c, gm_t p, uint64_t bytes, dev_site s, const char *what) {
    engine *e = c->e;
    int rank = gm_rank(p);
    if (rank < 0 || rank >= e->n_ranks)
        eng_fault(c, s, "%s: GM address 0x%llx names rank %d, which does not exist", what,
                  (unsigned long long)p.a, rank);
    if (eng_gm_at(e, p, bytes, NULL)) return;
    const gm_alloc *a = eng_gm_find(e, p);
    if (a)
        eng_fault(c, s, "%s: GM out of bounds: rank %d offset 0x%llx + %llu bytes is outside '%s' "
                  "[0x%llx, 0x%llx)", what, rank, (unsigned long long)gm_offset(p),
                  (unsigned long long)bytes, engine_string(e, a->name), (unsigned long long)a->off,
                  (unsigned long long)(a->off + a->size));
    eng_fault(c, s, "%s: GM out of bounds: rank %d offset 0x%llx is not inside any allocation", what,
              rank, (unsigned long long)gm_offset(p));
}

static const char *space_name(int space) {
    switch (space) {
    case LM_UB: return "UB";
    case LM_L1: return "L1";
    case LM_L0A: return "L0A";
    case LM_L0B: return "L0B";
    case LM_L0C: return "L0C";
    default: return "?";
    }
}

static uint32_t space_size(int space) {
    switch (space) {
    case LM_UB: return UB_BYTES;
    case LM_L1: return L1_BYTES;
    case LM_L0A: return L0A_BYTES;
    case LM_L0B: return L0B_BYTES;
    case LM_L0C: return L0C_BYTES;
    default: return 0;
    }
}

static int space_on_core(const core *c, int space) {
    return c->is_aic ? (space >= LM_L1 && space <= LM_L0C) : space == LM_UB;
}

uint8_t *eng_local_at(core *c, local_t l, uint64_t bytes, dev_site s, const char *what, mseg **seg) {
    if (l.space < LM_UB || l.space > LM_L0C || !space_on_core(c, (int)l.space))
        eng_fault(c, s, "%s: %s is not a local memory of an %s core", what, space_name((int)l.space),
                  c->is_aic ? "AIC" : "AIV");
    uint32_t size = space_size((int)l.space);
    if ((uint64_t)l.off + bytes > size)
        eng_fault(c, s, "%s: %s overflow: offset %u + %llu bytes exceeds %u", what,
                  space_name((int)l.space), l.off, (unsigned long long)bytes, size);
    mseg *m = &c->local[l.space];
    if (!m->host) {
        uint8_t *host = map_zeroed(size);
        if (!host) eng_fault(c, s, "%s: host out of memory for %s", what, space_name((int)l.space));
        eng_seg_init(m, host, size);
        m->mapped = 1;
    }
    *seg = m;
    return m->host + l.off;
}

uint8_t *eng_local_ptr(core *c, local_t l, uint64_t bytes, dev_site s, const char *what) {
    mseg *m;
    uint8_t *h = eng_local_at(c, l, bytes, s, what, &m);
    return eng_seg_lit(c->e, m, eng_seg_off(m, h), bytes);
}

void eng_local_free(core *c) {
    for (int sp = 0; sp <= LM_L0C; sp++) {
        mseg *m = &c->local[sp];
        if (m->host) munmap(m->host, m->size);
        eng_seg_free(m);
        m->host = NULL;
    }
}

local_t dev_alloc_local(int space, uint32_t bytes, dev_site s) {
    core *c = eng_current("AllocLocal");
    if (space < LM_UB || space > LM_L0C || !space_on_core(c, space))
        eng_fault(c, s, "AllocLocal: %s is not a local memory of an %s core", space_name(space),
                  c->is_aic ? "AIC" : "AIV");
    uint32_t size = space_size(space);
    uint32_t need = (bytes + UB_ALIGN - 1) / UB_ALIGN * UB_ALIGN;
    if (bytes == 0 || c->local_used[space] + (uint64_t)need > size)
        eng_fault(c, s, "AllocLocal: %s overflow: %u bytes requested, %u of %u already used",
                  space_name(space), bytes, c->local_used[space], size);
    local_t l = {(uint32_t)space, c->local_used[space]};
    c->local_used[space] += need;
    return l;
}

const char *eng_space_name(int space) { return space_name(space); }
