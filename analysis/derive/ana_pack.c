/*
 * ana_pack.c - the chunk format of packed derived tables (ana_pack.h):
 * rows gathered column by column, encoded and zstd-compressed, and back.
 *
 * Why columns: a derived table's rows repeat themselves column-wise (the
 * same rank, pipe and kind, addresses and times that grow by small steps),
 * which a row store keeps as a full record each; deltas of a column are
 * small varints and the few texts a column holds become one dictionary
 * per chunk, so zstd is left with little to do and does it fast.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "analysis/derive/ana_pack.h"
#include "analysis/derive/derive.h"

int ana_pack_init(ana_pack_chunk *c, int cols, size_t cap) {
    memset(c, 0, sizeof *c);
    if (cols <= 0 || cols > ANA_PACK_MAX_COLS) return -1;
    c->cols = cols;
    c->cap = cap;
    for (int i = 0; i < cols; i++) {
        c->col[i].val = malloc((cap ? cap : 1) * sizeof *c->col[i].val);
        c->col[i].null = calloc(cap ? cap : 1, 1);
        if (!c->col[i].val || !c->col[i].null) {
            ana_pack_free(c);
            return -1;
        }
    }
    return 0;
}

void ana_pack_reset(ana_pack_chunk *c) {
    for (int i = 0; i < c->cols; i++) {
        ana_pack_col *k = &c->col[i];
        if (!c->raw)
            for (uint32_t t = 0; t < k->ntext; t++) free(k->text[t]);
        k->ntext = 0;
        k->is_text = 0;
        if (k->hash) memset(k->hash, 0, k->caphash * sizeof *k->hash);
        memset(k->null, 0, c->cap ? c->cap : 1);
    }
    c->rows = 0;
}

void ana_pack_free(ana_pack_chunk *c) {
    ana_pack_reset(c);
    for (int i = 0; i < ANA_PACK_MAX_COLS; i++) {
        free(c->col[i].val);
        free(c->col[i].null);
        free(c->col[i].text);
        free(c->col[i].len);
        free(c->col[i].hash);
    }
    free(c->raw);
    memset(c, 0, sizeof *c);
}

int ana_pack_put_int(ana_pack_chunk *c, int col, int64_t v) {
    ana_pack_col *k = &c->col[col];
    if (k->is_text) return -1;
    k->val[c->rows] = v;
    return 0;
}

int ana_pack_put_null(ana_pack_chunk *c, int col) {
    ana_pack_col *k = &c->col[col];
    k->val[c->rows] = 0;   /* text: code 0 */
    k->null[c->rows] = 1;
    return 0;
}

static uint32_t str_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* The dictionary code of s in column k, added if new; 0 out of memory. */
static uint32_t dict_code(ana_pack_col *k, const char *s) {
    size_t n = strlen(s);
    if (2 * (k->ntext + 1) > k->caphash) {
        uint32_t cap = k->caphash ? 2 * k->caphash : 64;
        uint32_t *h = calloc(cap, sizeof *h);
        if (!h) return 0;
        for (uint32_t t = 0; t < k->ntext; t++) {
            uint32_t j = str_hash(k->text[t], k->len[t]) & (cap - 1);
            while (h[j]) j = (j + 1) & (cap - 1);
            h[j] = t + 1;
        }
        free(k->hash);
        k->hash = h;
        k->caphash = cap;
    }
    uint32_t j = str_hash(s, n) & (k->caphash - 1);
    for (; k->hash[j]; j = (j + 1) & (k->caphash - 1)) {
        uint32_t t = k->hash[j] - 1;
        if (k->len[t] == n && !memcmp(k->text[t], s, n)) return t + 1;
    }
    if (ana_grow((void **)&k->text, &k->captext, k->ntext + 1, sizeof *k->text, 16) ||
        ana_grow((void **)&k->len, &k->caplen, k->ntext + 1, sizeof *k->len, 16))
        return 0;
    char *copy = malloc(n + 1);
    if (!copy) return 0;
    memcpy(copy, s, n + 1);
    k->text[k->ntext] = copy;
    k->len[k->ntext] = (uint32_t)n;
    k->hash[j] = ++k->ntext;
    return k->ntext;
}

int ana_pack_put_text(ana_pack_chunk *c, int col, const char *s) {
    ana_pack_col *k = &c->col[col];
    if (!s || !*s) return ana_pack_put_null(c, col);
    if (!k->is_text) {
        /* a column turns text on its first text; integers before it may
         * only have been NULLs */
        for (size_t r = 0; r < c->rows; r++)
            if (!k->null[r]) return -1;
        k->is_text = 1;
    }
    uint32_t code = dict_code(k, s);
    if (!code) return -1;
    k->val[c->rows] = code;
    return 0;
}

/* ------------------------------------------------------------ encoding */

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} wbuf;

static void need(wbuf *w, size_t more) {
    if (w->oom || w->n + more <= w->cap) return;
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->n + more) cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p) {
        w->oom = 1;
        return;
    }
    w->p = p;
    w->cap = cap;
}

static void put_varint(wbuf *w, uint64_t v) {
    need(w, 10);
    if (w->oom) return;
    while (v >= 0x80) {
        w->p[w->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    w->p[w->n++] = (uint8_t)v;
}

static void put_bytes(wbuf *w, const void *b, size_t n) {
    need(w, n);
    if (w->oom) return;
    memcpy(w->p + w->n, b, n);
    w->n += n;
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static int64_t unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

static int varint_len(uint64_t v) {
    int n = 1;
    while (v >= 0x80) v >>= 7, n++;
    return n;
}

/* The reference of integer column i that makes its varints shortest: 0
 * the column's previous non-NULL value, j + 1 column j (< i) of the same
 * row, where j is an integer column never NULL where i is not (a transfer's
 * done_ps against its start_ps is its duration, small where the times
 * themselves are not). */
static int best_ref(const ana_pack_chunk *c, int i) {
    const ana_pack_col *k = &c->col[i];
    uint64_t best = 0;
    int64_t prev = 0;
    for (size_t r = 0; r < c->rows; r++) {
        if (k->null[r]) continue;
        best += (uint64_t)varint_len(zigzag((int64_t)((uint64_t)k->val[r] - (uint64_t)prev)));
        prev = k->val[r];
    }
    int ref = 0;
    for (int j = 0; j < i; j++) {
        const ana_pack_col *o = &c->col[j];
        if (o->is_text) continue;
        uint64_t cost = 0;
        for (size_t r = 0; r < c->rows && cost < best; r++) {
            if (k->null[r]) continue;
            if (o->null[r]) {
                cost = UINT64_MAX;
                break;
            }
            cost += (uint64_t)varint_len(zigzag((int64_t)((uint64_t)k->val[r] -
                                                          (uint64_t)o->val[r])));
        }
        if (cost < best) {
            best = cost;
            ref = j + 1;
        }
    }
    return ref;
}

/* Column i's body into w (after its tag and reference). */
static void encode_body(wbuf *w, const ana_pack_chunk *c, int i, int ref) {
    const ana_pack_col *k = &c->col[i];
    size_t rows = c->rows;
    if (k->is_text) {
        put_varint(w, k->ntext);
        for (uint32_t t = 0; t < k->ntext; t++) {
            put_varint(w, k->len[t]);
            put_bytes(w, k->text[t], k->len[t]);
        }
        for (size_t r = 0; r < rows; r++) put_varint(w, (uint64_t)k->val[r]);
        return;
    }
    int nulls = 0;
    for (size_t r = 0; r < rows && !nulls; r++) nulls = k->null[r];
    put_bytes(w, nulls ? "\1" : "\0", 1);
    if (nulls) {
        need(w, (rows + 7) / 8);
        if (w->oom) return;
        memset(w->p + w->n, 0, (rows + 7) / 8);
        for (size_t r = 0; r < rows; r++)
            if (k->null[r]) w->p[w->n + r / 8] |= (uint8_t)(1u << (r % 8));
        w->n += (rows + 7) / 8;
    }
    int64_t prev = 0;
    for (size_t r = 0; r < rows; r++) {
        if (k->null[r]) continue;
        int64_t base = ref ? c->col[ref - 1].val[r] : prev;
        put_varint(w, zigzag((int64_t)((uint64_t)k->val[r] - (uint64_t)base)));
        prev = k->val[r];
    }
}

/* Column i: tag, reference (integers), the length of the zstd frame of
 * its body, the frame. A frame per column lets a reader decompress only
 * the columns a query reads. */
static void encode_col(wbuf *w, wbuf *body, wbuf *z, const ana_pack_chunk *c, int i) {
    int text = c->col[i].is_text;
    int ref = text ? 0 : best_ref(c, i);
    body->n = 0;
    encode_body(body, c, i, ref);
    size_t bound = ZSTD_compressBound(body->n);
    z->n = 0;
    need(z, bound);
    if (body->oom || z->oom) {
        w->oom = 1;
        return;
    }
    size_t n = ZSTD_compress(z->p, bound, body->p, body->n, 3);
    if (ZSTD_isError(n)) {
        w->oom = 1;
        return;
    }
    uint8_t head[2] = {(uint8_t)text, (uint8_t)ref};
    put_bytes(w, head, text ? 1 : 2);
    put_varint(w, n);
    put_bytes(w, z->p, n);
}

int ana_pack_encode(const ana_pack_chunk *c, void **out, size_t *outlen, char *err,
                    size_t errlen) {
    wbuf w = {0}, body = {0}, z = {0};
    put_varint(&w, c->rows);
    put_varint(&w, (uint64_t)c->cols);
    for (int i = 0; i < c->cols; i++) encode_col(&w, &body, &z, c, i);
    free(body.p);
    free(z.p);
    if (w.oom) {
        free(w.p);
        ana_err(err, errlen, "out of memory packing a chunk of %zu rows", c->rows);
        return -1;
    }
    *out = w.p;
    *outlen = w.n;
    return 0;
}

/* ------------------------------------------------------------ decoding */

typedef struct rbuf {
    const uint8_t *p, *end;
    int bad;
} rbuf;

static uint64_t get_varint(rbuf *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

static int grow_rows(ana_pack_chunk *c, size_t rows) {
    if (rows <= c->cap && c->col[0].val) return 0;
    for (int i = 0; i < ANA_PACK_MAX_COLS; i++) {
        int64_t *v = realloc(c->col[i].val, (rows ? rows : 1) * sizeof *v);
        if (v) c->col[i].val = v;
        uint8_t *z = realloc(c->col[i].null, rows ? rows : 1);
        if (z) c->col[i].null = z;
        if (!v || !z) return -1;
    }
    c->cap = rows;
    return 0;
}

/* Column i's body from r, its tag and reference read already. */
static int decode_col(rbuf *r, ana_pack_chunk *c, int i, int tag, int ref) {
    ana_pack_col *k = &c->col[i];
    size_t rows = c->rows;
    if (tag == 1) {
        k->is_text = 1;
        k->interned = 0;
        uint64_t d = get_varint(r);
        if (d > (uint64_t)(r->end - r->p)) return -1;
        if (ana_grow((void **)&k->text, &k->captext, d + 1, sizeof *k->text, 16) ||
            ana_grow((void **)&k->len, &k->caplen, d + 1, sizeof *k->len, 16))
            return -1;
        k->ntext = (uint32_t)d;
        for (uint64_t t = 0; t < d; t++) {
            uint64_t n = get_varint(r);
            if (r->bad || n > (uint64_t)(r->end - r->p)) return -1;
            /* the byte after a text is overwritten by its NUL only once
             * everything after it has been read: see ana_pack_decode */
            k->text[t] = (char *)r->p;
            k->len[t] = (uint32_t)n;
            r->p += n;
        }
        for (size_t x = 0; x < rows; x++) {
            uint64_t code = get_varint(r);
            if (code > d) return -1;
            k->val[x] = (int64_t)code;
            k->null[x] = code == 0;
        }
        return r->bad ? -1 : 0;
    }
    if (tag != 0 || r->p >= r->end) return -1;
    k->is_text = 0;
    k->ntext = 0;
    uint8_t nulls = *r->p++;
    const uint8_t *bits = NULL;
    if (nulls) {
        if ((rows + 7) / 8 > (size_t)(r->end - r->p)) return -1;
        bits = r->p;
        r->p += (rows + 7) / 8;
    }
    if (ref > i || (ref && c->col[ref - 1].is_text)) return -1;
    const int64_t *base = ref ? c->col[ref - 1].val : NULL;
    const uint8_t *base_null = ref ? c->col[ref - 1].null : NULL;
    int64_t prev = 0;
    for (size_t x = 0; x < rows; x++) {
        if (bits && (bits[x / 8] >> (x % 8) & 1)) {
            k->null[x] = 1;
            k->val[x] = 0;
            continue;
        }
        k->null[x] = 0;
        /* inline fast path: most deltas fit one byte */
        uint64_t u;
        if (r->p < r->end && !(*r->p & 0x80)) u = *r->p++;
        else u = get_varint(r);
        if (base) {
            if (base_null[x]) return -1;
            prev = (int64_t)((uint64_t)base[x] + (uint64_t)unzigzag(u));
        } else {
            prev = (int64_t)((uint64_t)prev + (uint64_t)unzigzag(u));
        }
        k->val[x] = prev;
    }
    return r->bad ? -1 : 0;
}

int ana_pack_decode(ana_pack_chunk *c, int cols, uint32_t cols_wanted, const void *data,
                    size_t len, char *err, size_t errlen) {
    rbuf r = {(const uint8_t *)data, (const uint8_t *)data + len, 0};
    uint64_t rows = get_varint(&r), ncols = get_varint(&r);
    if (r.bad || ncols != (uint64_t)cols || cols > ANA_PACK_MAX_COLS || rows > (1u << 30) ||
        grow_rows(c, (size_t)rows)) {
        ana_err(err, errlen, "a packed chunk has %llu columns, the table %d",
                (unsigned long long)ncols, cols);
        return -1;
    }
    c->cols = cols;
    c->rows = (size_t)rows;
    c->decoded = 0;
    /* where each column's frame is, and which ones the wanted ones refer to */
    const uint8_t *frame[ANA_PACK_MAX_COLS];
    size_t flen[ANA_PACK_MAX_COLS], raw_at[ANA_PACK_MAX_COLS + 1];
    int tag[ANA_PACK_MAX_COLS], ref[ANA_PACK_MAX_COLS];
    for (int i = 0; i < cols; i++) {
        if (r.p + 2 > r.end) goto damaged;
        tag[i] = *r.p++;
        ref[i] = tag[i] == 0 ? *r.p++ : 0;
        uint64_t n = get_varint(&r);
        if (r.bad || n > (uint64_t)(r.end - r.p) || ref[i] > i) goto damaged;
        frame[i] = r.p;
        flen[i] = (size_t)n;
        r.p += n;
    }
    for (int i = cols; i-- > 0;)
        if ((cols_wanted >> i & 1) && ref[i]) cols_wanted |= 1u << (ref[i] - 1);
    /* one buffer for the wanted bodies, each with a spare byte: texts are
     * NUL-terminated in place, over the byte after them (read already) */
    raw_at[0] = 0;
    for (int i = 0; i < cols; i++) {
        size_t size = 0;
        if (cols_wanted >> i & 1) {
            unsigned long long n = ZSTD_getFrameContentSize(frame[i], flen[i]);
            if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n > (1ull << 31))
                goto damaged;
            size = (size_t)n + 1;
        }
        raw_at[i + 1] = raw_at[i] + size;
    }
    char *raw = realloc(c->raw, raw_at[cols] + 1);
    if (!raw) {
        ana_err(err, errlen, "out of memory decoding a chunk");
        return -1;
    }
    c->raw = raw;
    for (int i = 0; i < cols; i++) {
        c->col[i].ntext = 0;
        if (!(cols_wanted >> i & 1)) continue;
        size_t want = raw_at[i + 1] - raw_at[i] - 1;
        size_t n = ZSTD_decompress(raw + raw_at[i], want, frame[i], flen[i]);
        if (ZSTD_isError(n) || n != want) goto damaged;
        rbuf body = {(const uint8_t *)raw + raw_at[i], (const uint8_t *)raw + raw_at[i] + n, 0};
        if (decode_col(&body, c, i, tag[i], ref[i]) || body.p != body.end) goto damaged;
        c->decoded |= 1u << i;
    }
    /* All read: terminate the texts in place. */
    for (int i = 0; i < cols; i++)
        for (uint32_t t = 0; t < c->col[i].ntext; t++) c->col[i].text[t][c->col[i].len[t]] = 0;
    return 0;
damaged:
    c->decoded = 0;
    ana_err(err, errlen, "a packed chunk is damaged");
    return -1;
}
