/*
 * combine_check.c - CPU reference and data checks after a combine run.
 *
 * In order, the first failure names what broke:
 *   1. guards: every byte after every buffer (and the unused bytes of the
 *      ring control blocks) still holds what setup wrote: nothing was
 *      written out of bounds;
 *   2. rings: each ring's head and tail both equal the bytes its sender had
 *      to send (padded to 32 B): everything sent was consumed, nothing more;
 *   3. receive buffers: every row equals, byte for byte, the expert output
 *      of the token that owns that position (rows carry token tags). As the
 *      receiver copies each ring byte exactly once, a ring slot overwritten
 *      before it was consumed, or consumed before its data landed, shows up
 *      here; the message says which by comparing the bad bytes with the
 *      ring's previous and next lap;
 *   4. combine output: each token's weighted sum, recomputed in f32 and
 *      rounded to bf16, within 2 bf16 ulps, and no NaN.
 */
#include "combine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct checker {
    engine *e;
    const combine_plan *p;
    const combine_args *a;
    uint16_t *row;      /* scratch: one expected row */
    uint16_t *row2;     /* scratch: a row of another lap */
    uint8_t *got;       /* scratch: a received row, read without materializing */
} checker;

static int64_t read_word(engine *e, gm_t at) {
    int64_t v = 0;
    const void *h = npurr_gm_host(e, at, 8);
    if (h) memcpy(&v, h, 8);
    return v;
}

int combine_count_bad(char *msg, size_t msglen, int64_t bad, int64_t total, const char *what) {
    if (bad == 0) return 0;
    size_t len = strlen(msg);
    snprintf(msg + len, msglen - len, " [%lld of %lld %s differ]", (long long)bad,
             (long long)total, what);
    return 1;
}

static int check_rings(const checker *c, char *msg, size_t msglen) {
    const combine_shape *sh = &c->p->sh;
    int R = sh->num_ranks;
    for (int s = 0; s < R; s++)
        for (int q = 0; q < R; q++) {
            gm_t block = gm_add(gm_on_rank(c->a->ctrl_base, s), (int64_t)q * COMBINE_CTRL_STRIDE);
            int64_t tail = read_word(c->e, gm_add(block, COMBINE_CTRL_TAIL));
            int64_t head = read_word(c->e, gm_add(block, COMBINE_CTRL_HEAD));
            int64_t expect = (int64_t)kit_align_up(
                (uint64_t)c->p->recv_rows[s * R + q] * sh->row_bytes, UB_ALIGN);
            if (tail != expect || head != expect) {
                snprintf(msg, msglen,
                         "ring %d->%d: tail %lld and head %lld after the run, expected both %lld "
                         "(%d rows of %u B, padded to 32 B)",
                         q, s, (long long)tail, (long long)head, (long long)expect,
                         c->p->recv_rows[s * R + q], sh->row_bytes);
                return 1;
            }
        }
    return 0;
}

/* Fills buf with the expected row at recv position `row` of s;
 * returns the expert rank it comes from. */
static int expected_row(const checker *c, int s, int64_t row, uint16_t *buf, int *t, int *k) {
    const combine_shape *sh = &c->p->sh;
    int K = sh->topk;
    int32_t owner = c->p->recv_owner[c->p->recv_owner_base[s] + row];
    *t = owner / K;
    *k = owner % K;
    int32_t e = c->p->expert_ids[((size_t)s * (size_t)sh->tokens + (size_t)*t) * (size_t)K + (size_t)*k];
    int q = e / sh->local_experts;
    combine_fill_row(buf, sh->hidden, sh->data_seed, s, *t, *k, q);
    return q;
}

/* Expected byte of the stream q -> s at stream offset off (0 past its end). */
static int stream_byte(const checker *c, int s, int q, uint64_t off, uint8_t *out) {
    const combine_shape *sh = &c->p->sh;
    int R = sh->num_ranks;
    uint64_t rows = (uint64_t)c->p->recv_rows[s * R + q];
    if (off >= rows * sh->row_bytes) return 0;
    int t, k;
    expected_row(c, s, c->p->recv_row_offset[s * R + q] + (int64_t)(off / sh->row_bytes), c->row2,
                 &t, &k);
    *out = ((const uint8_t *)c->row2)[off % sh->row_bytes];
    return 1;
}

/* Why do the bytes at stream offset [off, off + n) differ? Compare them with
 * what the same ring slot held one lap earlier (zero on the first lap) and
 * will hold one lap later. */
static const char *diagnose(const checker *c, int s, int q, uint64_t off, const uint8_t *got,
                            uint32_t n) {
    uint64_t cap = c->a->ring_bytes;
    int prev = 1, next = 1, zero = 1;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t b;
        if (got[i] != 0) zero = 0;
        if (off + i >= cap) {
            if (!stream_byte(c, s, q, off + i - cap, &b) || b != got[i]) prev = 0;
        } else if (got[i] != 0) {
            prev = 0;
        }
        if (!stream_byte(c, s, q, off + i + cap, &b) || b != got[i]) next = 0;
    }
    if (prev && off < cap && zero)
        return "they are still the zeros of the fresh ring: the receiver read the slot before "
               "the sender's data landed (tail committed before MTE3 completed?)";
    if (prev)
        return "they are the previous lap's bytes of that ring slot: the receiver read the slot "
               "before the sender's data landed (tail committed before MTE3 completed?)";
    if (next)
        return "they are the next lap's bytes of that ring slot: the sender overwrote the slot "
               "before the receiver consumed it (flow control broken)";
    return "they match neither the previous nor the next lap of the ring slot (bad crop, offset "
           "or carry?)";
}

static int check_recv(const checker *c, char *msg, size_t msglen) {
    const combine_shape *sh = &c->p->sh;
    int R = sh->num_ranks;
    uint64_t rb = sh->row_bytes;
    int64_t bad = 0, total = 0;
    for (int s = 0; s < R; s++) {
        int64_t rows = c->p->recv_total[s];
        total += rows;
        if (rows == 0) continue;
        for (int64_t row = 0; row < rows; row++) {
            int t, k;
            int q = expected_row(c, s, row, c->row, &t, &k);
            const uint8_t *got = c->got;
            if (npurr_gm_read(c->e, gm_add(c->a->recv[s], row * (int64_t)rb), c->got, rb)) {
                snprintf(msg, msglen, "recv on rank %d: row %lld is outside its allocation", s,
                         (long long)row);
                return 1;
            }
            if (memcmp(got, c->row, rb) == 0) continue;
            if (bad++ > 0) continue;
            uint32_t b = 0;
            while (((const uint8_t *)c->row)[b] == got[b]) b++;
            uint32_t e = b;
            while (e < rb && e - b < 64 && ((const uint8_t *)c->row)[e] != got[e]) e++;
            uint64_t stream_off = (uint64_t)(row - c->p->recv_row_offset[s * R + q]) * rb + b;
            int ft, fk, fp;
            char found[128] = "";
            if (combine_decode_tag((const uint16_t *)(const void *)got, sh->hidden, &ft, &fk, &fp) &&
                (ft != t || fk != k || fp != q))
                snprintf(found, sizeof found, "; the row's tag says token %d slot %d from rank %d",
                         ft, fk, fp);
            snprintf(msg, msglen,
                     "rank %d recv row %lld (token %d slot %d, from rank %d, ring %d->%d stream "
                     "bytes %llu..%llu): row byte %u is 0x%02x, expected 0x%02x; %s%s",
                     s, (long long)row, t, k, q, q, s, (unsigned long long)stream_off,
                     (unsigned long long)(stream_off + (e - b)), b, got[b],
                     ((const uint8_t *)c->row)[b], diagnose(c, s, q, stream_off, got + b, e - b),
                     found);
        }
    }
    return combine_count_bad(msg, msglen, bad, total, "received rows");
}

/* Shared with combine-normal (combine_normal_check.c), whose output is the
 * same weighted sum. */
int combine_check_out(engine *e, const combine_plan *p, const combine_args *a, char *msg,
                      size_t msglen) {
    const combine_shape *sh = &p->sh;
    int T = sh->tokens, K = sh->topk, H = sh->hidden;
    float *acc = malloc(sizeof(float) * (size_t)H);
    uint16_t *row = malloc(sh->row_bytes);
    if (!acc || !row) {
        free(acc);
        free(row);
        snprintf(msg, msglen, "combine check: out of host memory");
        return 1;
    }
    int64_t bad = 0;
    for (int s = 0; s < sh->num_ranks; s++) {
        const uint16_t *out = npurr_gm_host(e, a->out[s], (uint64_t)T * sh->row_bytes);
        if (!out) {
            free(acc);
            free(row);
            snprintf(msg, msglen, "out on rank %d: no host view", s);
            return 1;
        }
        for (int t = 0; t < T; t++) {
            for (int j = 0; j < H; j++) acc[j] = 0.0f;
            for (int k = 0; k < K; k++) {
                size_t slot = ((size_t)s * (size_t)T + (size_t)t) * (size_t)K + (size_t)k;
                int32_t ex = p->expert_ids[slot];
                if (ex < 0) continue;
                float w = p->topk_weights[slot];
                combine_fill_row(row, H, sh->data_seed, s, t, k, ex / sh->local_experts);
                for (int j = 0; j < H; j++) acc[j] += w * bf16_to_float(row[j]);
            }
            for (int j = 0; j < H; j++) {
                float ref = bf16_to_float(float_to_bf16(acc[j]));
                float got = bf16_to_float(out[(size_t)t * (size_t)H + (size_t)j]);
                /* 2 bf16 ulps: the kernel may fuse multiply and add. */
                float tol = fabsf(ref) * (1.0f / 64.0f) + 1e-6f;
                if (!isnan(got) && fabsf(got - ref) <= tol) continue;
                if (bad++ > 0) continue;
                snprintf(msg, msglen,
                         "rank %d combined token %d element %d: got %.6g, reference %.6g "
                         "(weighted sum of %d expert outputs, tolerance %.3g)%s",
                         s, t, j, (double)got, (double)ref, K, (double)tol,
                         isnan(got) ? ": NaN" : "");
            }
        }
    }
    free(acc);
    free(row);
    return combine_count_bad(msg, msglen, bad, (int64_t)sh->num_ranks * T * H, "output elements");
}

int combine_check(engine *e, void *state, char *msg, size_t msglen) {
    combine_state *st = state;
    checker c = {.e = e, .p = &st->plan, .a = &st->args};
    c.row = malloc(st->plan.sh.row_bytes);
    c.row2 = malloc(st->plan.sh.row_bytes);
    c.got = malloc(st->plan.sh.row_bytes);
    int rc = 1;
    if (!c.row || !c.row2 || !c.got)
        snprintf(msg, msglen, "combine check: out of host memory");
    else
        rc = kit_guards_check(e, &st->guards, msg, msglen) || check_rings(&c, msg, msglen) ||
             check_recv(&c, msg, msglen) || combine_check_out(e, c.p, c.a, msg, msglen);
    free(c.row);
    free(c.row2);
    free(c.got);
    if (rc == 0 && msglen) msg[0] = '\0';
    return rc;
}
