/*
 * payload.c - bytes that only move are kept as references, not as bytes.
 *
 * Every memory the kernels touch (a GM allocation, a core's UB/L1/L0) is a
 * segment: a lazily backed host mapping that holds literal bytes, plus a
 * reference map that says which ranges hold bytes of an origin instead. An
 * origin is an immutable byte source: rows produced by a deterministic
 * generator (an input tensor's rows, from the kernel's data seed). A byte is
 * a reference iff an extent covers it; otherwise its value is in the mapping
 * at its own address, so a segment with no extents is exactly today's flat
 * memory and costs nothing extra.
 *
 * Copies (DataCopy, puts, RDMA writes, BatchWrite) splice: a referenced
 * source range becomes the same reference at the destination, a literal one
 * is copied as bytes. Everything else reads literal bytes through
 * eng_seg_lit, which materializes the references it touches (generates their
 * bytes in place and drops the extents): scalar loads and stores, atomics,
 * vector and cube ops, waits, host views. Reads that only compare (the output
 * checks) use eng_seg_equal/eng_seg_read, which compare two references to the
 * same origin bytes without generating them and generate into scratch
 * otherwise, so equality means the same bytes, never a weaker property.
 *
 * The reference map is a directory of 64 KiB blocks, each a small sorted
 * array of extents that never crosses its block, so an update costs a binary
 * search and a short memmove whatever the segment's size. In `--payload
 * full` mode generators write bytes at once and no extent ever exists.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BLOCK_SHIFT 16
#define BLOCK_SIZE (1ULL << BLOCK_SHIFT)
#define HUGE_MIN (4ULL << 20)   /* segments below this stay on small pages */

typedef struct ref_ext {
    uint32_t off, len;     /* within the block */
    uint32_t origin;       /* 1-based origin id */
    uint32_t pad;
    uint64_t src;          /* byte offset within the origin */
} ref_ext;

typedef struct ref_block {
    uint32_t n, cap;
    ref_ext x[];
} ref_block;

/* ------------------------------------------------------------ segments */
void eng_seg_init(mseg *s, uint8_t *host, uint64_t size) {
    memset(s, 0, sizeof *s);
    s->host = host;
    s->size = size;
}

void eng_seg_free(mseg *s) {
    if (s->blocks) {
        for (uint64_t i = 0; i < s->n_blocks; i++) free(s->blocks[i]);
        free(s->blocks);
    }
    s->blocks = NULL;
    s->n_blocks = 0;
    s->n_ext = 0;
}

static void hint_huge(mseg *s) {
    if (s->huge || !s->mapped || s->size < HUGE_MIN) return;
    s->huge = 1;
#ifdef MADV_HUGEPAGE
    /* first touch in 2 MiB steps instead of 4 KiB faults; advisory only */
    (void)madvise(s->host, s->size, MADV_HUGEPAGE);
#endif
}

/* Literal bytes written: once a large segment is mostly literal, back it with
 * huge pages (a payload-only segment never reaches this). */
static void lit_written(mseg *s, uint64_t bytes) {
    s->literal_bytes += bytes;
    if (!s->huge && s->mapped && s->size >= HUGE_MIN && s->literal_bytes >= s->size / 4)
        hint_huge(s);
}

void eng_seg_touched(mseg *s, uint64_t bytes) { lit_written(s, bytes); }

/* ------------------------------------------------------------ one block */
/* First extent whose end is above rel. */
static uint32_t first_after(const ref_block *b, uint32_t rel) {
    uint32_t lo = 0, hi = b->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (b->x[mid].off + b->x[mid].len <= rel) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static ref_block *block_reserve(ref_block *b, uint32_t extra) {
    uint32_t n = b ? b->n : 0, cap = b ? b->cap : 0;
    if (n + extra <= cap) return b;
    uint32_t nc = cap ? cap * 2 : 4;
    while (nc < n + extra) nc *= 2;
    ref_block *nb = realloc(b, sizeof *nb + (size_t)nc * sizeof(ref_ext));
    if (!nb) abort();
    if (!b) nb->n = 0;
    nb->cap = nc;
    return nb;
}

/* Drops coverage of [lo, hi) in block i; returns extents removed (net). */
static int64_t block_clear(mseg *s, uint64_t i, uint32_t lo, uint32_t hi) {
    ref_block *b = s->blocks[i];
    if (!b || !b->n) return 0;
    uint32_t a = first_after(b, lo);
    uint32_t z = a;
    while (z < b->n && b->x[z].off < hi) z++;
    if (a == z) return 0;
    ref_ext left = b->x[a], right = b->x[z - 1];
    int keep_left = left.off < lo, keep_right = right.off + right.len > hi;
    ref_ext pieces[2];
    int np = 0;
    if (keep_left) { left.len = lo - left.off; pieces[np++] = left; }
    if (keep_right) {
        uint32_t cut = hi - right.off;
        right.off = hi; right.len -= cut; right.src += cut;
        pieces[np++] = right;
    }
    int64_t removed = (int64_t)(z - a) - np;
    if (removed < 0) {
        b = s->blocks[i] = block_reserve(b, 1);
    }
    memmove(&b->x[a + (uint32_t)np], &b->x[z], (size_t)(b->n - z) * sizeof(ref_ext));
    b->n = (uint32_t)((int64_t)b->n - removed);
    for (int k = 0; k < np; k++) b->x[a + (uint32_t)k] = pieces[k];
    return removed;
}

/* [lo, lo+len) of block i refers to origin bytes at src; the range holds no
 * extent (cleared by the caller). Merges with contiguous neighbours. */
static void block_insert(mseg *s, uint64_t i, uint32_t lo, uint32_t len, uint32_t origin,
                         uint64_t src) {
    ref_block *b = s->blocks[i];
    uint32_t pos = b ? first_after(b, lo) : 0;
    if (b && pos > 0) {
        ref_ext *p = &b->x[pos - 1];
        if (p->off + p->len == lo && p->origin == origin && p->src + p->len == src) {
            p->len += len;
            if (pos < b->n) {
                ref_ext *q = &b->x[pos];
                if (q->off == lo + len && q->origin == origin && q->src == src + len) {
                    p->len += q->len;
                    memmove(q, q + 1, (size_t)(b->n - pos - 1) * sizeof(ref_ext));
                    b->n--;
                    s->n_ext--;
                }
            }
            return;
        }
    }
    if (b && pos < b->n) {
        ref_ext *q = &b->x[pos];
        if (q->off == lo + len && q->origin == origin && q->src == src + len) {
            q->off = lo; q->len += len; q->src = src;
            return;
        }
    }
    b = s->blocks[i] = block_reserve(b, 1);
    memmove(&b->x[pos + 1], &b->x[pos], (size_t)(b->n - pos) * sizeof(ref_ext));
    b->x[pos] = (ref_ext){lo, len, origin, 0, src};
    b->n++;
    s->n_ext++;
}

/* ------------------------------------------------------------ ranges */
static void seg_clear(mseg *s, uint64_t off, uint64_t len) {
    if (!s->n_ext || !len) return;
    uint64_t end = off + len;
    for (uint64_t i = off >> BLOCK_SHIFT; i < s->n_blocks && (i << BLOCK_SHIFT) < end; i++) {
        uint64_t base = i << BLOCK_SHIFT;
        uint32_t lo = off > base ? (uint32_t)(off - base) : 0;
        uint32_t hi = end - base < BLOCK_SIZE ? (uint32_t)(end - base) : (uint32_t)BLOCK_SIZE;
        int64_t removed = block_clear(s, i, lo, hi);
        s->n_ext = (uint64_t)((int64_t)s->n_ext - removed);
    }
}

/* [off, off+len) refers to origin bytes at src; the range holds no extent. */
static void seg_put_ref_cleared(mseg *s, uint64_t off, uint64_t len, uint32_t origin, uint64_t src) {
    if (!s->blocks) {
        s->n_blocks = (s->size + BLOCK_SIZE - 1) >> BLOCK_SHIFT;
        s->blocks = calloc(s->n_blocks ? s->n_blocks : 1, sizeof *s->blocks);
        if (!s->blocks) abort();
    }
    while (len) {
        uint64_t i = off >> BLOCK_SHIFT, base = i << BLOCK_SHIFT;
        uint64_t n = base + BLOCK_SIZE - off;
        if (n > len) n = len;
        block_insert(s, i, (uint32_t)(off - base), (uint32_t)n, origin, src);
        off += n; src += n; len -= n;
    }
}

static void seg_put_ref(mseg *s, uint64_t off, uint64_t len, uint32_t origin, uint64_t src) {
    seg_clear(s, off, len);
    seg_put_ref_cleared(s, off, len, origin, src);
}

/* What [off, off+max) starts with: a literal run (origin 0) or a reference. */
typedef struct piece {
    uint64_t len;
    uint32_t origin;
    uint64_t src;
} piece;

static piece piece_at(const mseg *s, uint64_t off, uint64_t max) {
    piece p = {max, 0, 0};
    if (!s->n_ext) return p;
    uint64_t i = off >> BLOCK_SHIFT, base = i << BLOCK_SHIFT;
    uint32_t rel = (uint32_t)(off - base);
    uint64_t room = BLOCK_SIZE - rel;
    const ref_block *b = i < s->n_blocks ? s->blocks[i] : NULL;
    uint32_t k = b ? first_after(b, rel) : 0;
    if (b && k < b->n && b->x[k].off <= rel) {
        const ref_ext *x = &b->x[k];
        p.origin = x->origin;
        p.src = x->src + (rel - x->off);
        p.len = x->off + x->len - rel;
    } else {
        p.len = b && k < b->n ? b->x[k].off - rel : room;
    }
    if (p.len > max) p.len = max;
    return p;
}

int eng_seg_has_refs(const mseg *s, uint64_t off, uint64_t len) {
    if (!s->n_ext) return 0;
    for (uint64_t done = 0; done < len;) {
        piece p = piece_at(s, off + done, len - done);
        if (p.origin) return 1;
        done += p.len;
    }
    return 0;
}

/* ------------------------------------------------------------ origins */
uint32_t eng_origin_add(engine *e, engine_row_fn fn, const void *params, size_t params_size,
                        uint64_t rows, uint64_t row_bytes) {
    if (e->n_origins == e->cap_origins) {
        uint32_t cap = e->cap_origins ? e->cap_origins * 2 : 64;
        mem_origin *no = realloc(e->origins, (size_t)cap * sizeof *no);
        if (!no) abort();
        e->origins = no;
        e->cap_origins = cap;
    }
    size_t at = (e->origin_params_n + 15) & ~(size_t)15;
    if (at + params_size > e->origin_params_cap) {
        size_t cap = e->origin_params_cap ? e->origin_params_cap : 4096;
        while (cap < at + params_size) cap *= 2;
        uint8_t *np = realloc(e->origin_params, cap);
        if (!np) abort();
        e->origin_params = np;
        e->origin_params_cap = cap;
    }
    if (params_size) memcpy(e->origin_params + at, params, params_size);
    e->origin_params_n = at + params_size;
    e->origins[e->n_origins] = (mem_origin){fn, at, params_size, rows, row_bytes};
    return ++e->n_origins;
}

/* Bytes [src, src+len) of an origin into out. Whole rows are generated in
 * place; a partial row goes through a one-row cache, since over-read and
 * crop touch the same row's edges again and again. */
static void origin_bytes(engine *e, uint32_t id, uint64_t src, uint8_t *out, uint64_t len) {
    const mem_origin *o = &e->origins[id - 1];
    const void *params = e->origin_params + o->params_at;
    while (len) {
        uint64_t row = src / o->row_bytes, within = src % o->row_bytes;
        uint64_t n = o->row_bytes - within;
        if (n > len) n = len;
        if (within == 0 && n == o->row_bytes) {
            o->fn(params, row, out);
        } else {
            if (e->gen_cache_origin != id || e->gen_cache_row != row) {
                if (e->gen_cache_cap < o->row_bytes) {
                    free(e->gen_cache);
                    e->gen_cache = malloc(o->row_bytes);
                    if (!e->gen_cache) abort();
                    e->gen_cache_cap = o->row_bytes;
                }
                o->fn(params, row, e->gen_cache);
                e->gen_cache_origin = id;
                e->gen_cache_row = row;
            }
            memcpy(out, e->gen_cache + within, n);
        }
        out += n; src += n; len -= n;
    }
}

/* ------------------------------------------------------------ operations */
uint8_t *eng_seg_lit(engine *e, mseg *s, uint64_t off, uint64_t len) {
    if (s->n_ext && len) {
        uint64_t made = 0;
        for (uint64_t done = 0; done < len;) {
            piece p = piece_at(s, off + done, len - done);
            if (p.origin) {
                origin_bytes(e, p.origin, p.src, s->host + off + done, p.len);
                made += p.len;
            }
            done += p.len;
        }
        if (made) {
            seg_clear(s, off, len);
            lit_written(s, made);
        }
    }
    return s->host + off;
}

uint8_t *eng_seg_overwrite(mseg *s, uint64_t off, uint64_t len) {
    seg_clear(s, off, len);
    lit_written(s, len);
    return s->host + off;
}

/* One pass over the source's pieces and one clear of the destination: a
 * completion's copy is the engine's most frequent operation. */
void eng_seg_copy(engine *e, mseg *d, uint64_t doff, mseg *s, uint64_t soff, uint64_t len) {
    if (!len) return;
    piece p = piece_at(s, soff, len);
    if (!p.origin && p.len == len) {
        memmove(d->host + doff, s->host + soff, len);
        eng_seg_overwrite(d, doff, len);
        return;
    }
    if (d == s && doff < soff + len && soff < doff + len) {
        /* overlapping move within one segment: rare, do it on bytes */
        eng_seg_lit(e, s, soff, len);
        memmove(d->host + doff, s->host + soff, len);
        eng_seg_overwrite(d, doff, len);
        return;
    }
    seg_clear(d, doff, len);
    uint64_t literal = 0;
    for (uint64_t done = 0;;) {
        if (p.origin) {
            seg_put_ref_cleared(d, doff + done, p.len, p.origin, p.src);
        } else {
            memmove(d->host + doff + done, s->host + soff + done, p.len);
            literal += p.len;
        }
        done += p.len;
        if (done == len) break;
        p = piece_at(s, soff + done, len - done);
    }
    if (literal) lit_written(d, literal);
}

void eng_seg_generate(engine *e, mseg *s, uint64_t off, uint32_t origin) {
    const mem_origin *o = &e->origins[origin - 1];
    uint64_t len = o->rows * o->row_bytes;
    if (e->cfg.payload == PAYLOAD_FULL) {
        origin_bytes(e, origin, 0, eng_seg_overwrite(s, off, len), len);
        return;
    }
    seg_put_ref(s, off, len, origin, 0);
}

void eng_seg_read(engine *e, const mseg *s, uint64_t off, void *out, uint64_t len) {
    uint8_t *o = out;
    for (uint64_t done = 0; done < len;) {
        piece p = piece_at(s, off + done, len - done);
        if (p.origin) origin_bytes(e, p.origin, p.src, o + done, p.len);
        else memcpy(o + done, s->host + off + done, p.len);
        done += p.len;
    }
}

/* Equal when every piece pair is the same reference (same origin, same
 * bytes of it) or reads back the same; *diff gets the first differing byte. */
int eng_seg_equal(engine *e, const mseg *a, uint64_t aoff, const mseg *b, uint64_t boff,
                  uint64_t len, uint64_t *diff) {
    uint8_t ba[4096], bb[4096];
    for (uint64_t done = 0; done < len;) {
        piece pa = piece_at(a, aoff + done, len - done);
        piece pb = piece_at(b, boff + done, len - done);
        uint64_t n = pa.len < pb.len ? pa.len : pb.len;
        if (pa.origin && pa.origin == pb.origin && pa.src == pb.src) {
            done += n;
            continue;
        }
        if (n > sizeof ba) n = sizeof ba;
        const uint8_t *xa = a->host + aoff + done, *xb = b->host + boff + done;
        if (pa.origin) { origin_bytes(e, pa.origin, pa.src, ba, n); xa = ba; }
        if (pb.origin) { origin_bytes(e, pb.origin, pb.src, bb, n); xb = bb; }
        if (memcmp(xa, xb, n)) {
            uint64_t k = 0;
            while (xa[k] == xb[k]) k++;
            if (diff) *diff = done + k;
            return 0;
        }
        done += n;
    }
    return 1;
}

/* Bytes [src, src+len) of what fn(params) generates, one row at a time
 * through row (row_bytes of scratch). */
static void generated_bytes(engine_row_fn fn, const void *params, uint64_t row_bytes,
                            uint64_t src, uint8_t *out, uint64_t len, uint8_t *row) {
    while (len) {
        uint64_t r = src / row_bytes, within = src % row_bytes, n = row_bytes - within;
        if (n > len) n = len;
        fn(params, r, row);
        memcpy(out, row + within, n);
        out += n; src += n; len -= n;
    }
}

static int same_generator(const engine *e, uint32_t origin, engine_row_fn fn, const void *params,
                          size_t params_size, uint64_t row_bytes) {
    const mem_origin *o = &e->origins[origin - 1];
    return o->fn == fn && o->row_bytes == row_bytes && o->params_size == params_size &&
           !memcmp(e->origin_params + o->params_at, params, params_size);
}

int eng_seg_equal_generated(engine *e, const mseg *s, uint64_t off, uint64_t len,
                            engine_row_fn fn, const void *params, size_t params_size,
                            uint64_t row_bytes, uint64_t *diff) {
    uint8_t got[4096], want[4096];
    uint8_t *row = NULL;
    int eq = 1;
    for (uint64_t done = 0; done < len && eq;) {
        piece p = piece_at(s, off + done, len - done);
        if (p.origin && p.src == done &&
            same_generator(e, p.origin, fn, params, params_size, row_bytes)) {
            done += p.len;
            continue;
        }
        uint64_t n = p.len < sizeof got ? p.len : sizeof got;
        if (!row && !(row = malloc(row_bytes))) abort();
        const uint8_t *g = s->host + off + done;
        if (p.origin) { origin_bytes(e, p.origin, p.src, got, n); g = got; }
        generated_bytes(fn, params, row_bytes, done, want, n, row);
        if (memcmp(g, want, n)) {
            uint64_t k = 0;
            while (g[k] == want[k]) k++;
            if (diff) *diff = done + k;
            eq = 0;
        }
        done += n;
    }
    free(row);
    return eq;
}

void eng_seg_stats(const mseg *s, uint64_t *extents, uint64_t *ref_bytes) {
    if (!s->n_ext) return;
    *extents += s->n_ext;
    for (uint64_t i = 0; i < s->n_blocks; i++)
        if (s->blocks[i])
            for (uint32_t k = 0; k < s->blocks[i]->n; k++) *ref_bytes += s->blocks[i]->x[k].len;
}

/* ------------------------------------------------------------ on the wire */
/* A range as pieces, for a split run's RDMA: 'L' len bytes (literal), or
 * 'R' len origin src (a reference; origins are numbered alike everywhere,
 * since every process runs the same setup). */
void eng_seg_pack(const mseg *s, uint64_t off, uint64_t len, engine_buf *out) {
    for (uint64_t done = 0; done < len;) {
        piece p = piece_at(s, off + done, len - done);
        uint8_t tag = p.origin ? 'R' : 'L';
        engine_buf_put(out, &tag, 1);
        engine_buf_put(out, &p.len, sizeof p.len);
        if (p.origin) {
            engine_buf_put(out, &p.origin, sizeof p.origin);
            engine_buf_put(out, &p.src, sizeof p.src);
        } else {
            engine_buf_put(out, s->host + off + done, p.len);
        }
        done += p.len;
    }
}

/* The pieces of len bytes from in into d at doff; returns the bytes of in
 * used, 0 if they do not add up (a corrupt message). */
size_t eng_seg_unpack(mseg *d, uint64_t doff, uint64_t len, const uint8_t *in, size_t avail) {
    size_t at = 0;
    uint64_t literal = 0;
    for (uint64_t done = 0; done < len;) {
        uint8_t tag;
        piece p = {0, 0, 0};
        if (avail - at < 1 + sizeof p.len) return 0;
        tag = in[at++];
        memcpy(&p.len, in + at, sizeof p.len);
        at += sizeof p.len;
        if (p.len == 0 || p.len > len - done) return 0;
        if (tag == 'R') {
            if (avail - at < sizeof p.origin + sizeof p.src) return 0;
            memcpy(&p.origin, in + at, sizeof p.origin);
            at += sizeof p.origin;
            memcpy(&p.src, in + at, sizeof p.src);
            at += sizeof p.src;
            seg_put_ref(d, doff + done, p.len, p.origin, p.src);
        } else if (tag == 'L') {
            if (avail - at < p.len) return 0;
            memcpy(d->host + doff + done, in + at, p.len);
            at += p.len;
            literal += p.len;
        } else {
            return 0;
        }
        done += p.len;
    }
    if (literal) lit_written(d, literal);
    return at;
}
