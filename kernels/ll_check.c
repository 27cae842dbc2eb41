/*
 * ll_check.c - CPU reference and checks after a low-latency run (both
 * kernels; ll.h).
 *
 * In order, the first failure names what broke:
 *   1. guards: nothing was written past an output or a window;
 *   2. epRecvCount and expertTokenNum on every rank equal the plan's;
 *   3. expand_x: every received row is, byte for byte, the token the plan
 *      says it holds (int8: its CPU quantization, ll_quantize_ref, and its
 *      scale bit for bit); a wrong row says whose it is by its tag, or that
 *      it is zeros (never written); single: its (rank, token, k) triple;
 *   4. the combined tokens: the weighted sum over top-k of the expert
 *      outputs (the received value times the expert's scale, rounded to
 *      bf16), in f32, rounded to bf16, within 2 bf16 ulps;
 *   5. single: every status is zero again (each receiver cleared what it
 *      waited for; one still set arrived after its owner was done).
 */
#include "ll.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct checker {
    engine *e;
    const ll_state *st;
    uint16_t *row;
    uint8_t *got;
    float *acc, *val;
    int8_t *q;
    char *msg;
    size_t msglen;
} checker;

static int fail(checker *c, const char *what) {
    snprintf(c->msg, c->msglen, "%s", what);
    return 1;
}

static int check_counts(checker *c) {
    const ll_args *a = &c->st->args;
    const fm_round_plan *rp = &c->st->plan.round[0];
    int W = a->num_ranks, L = a->local_experts;
    for (int p = 0; p < W; p++) {
        const int32_t *epc = npurr_gm_host(c->e, a->ep_recv_count[p], (uint64_t)L * W * 4);
        const int64_t *etn = npurr_gm_host(c->e, a->expert_token_num[p], (uint64_t)L * 8);
        if (!epc || !etn) return fail(c, "low-latency check: no host view of the counts");
        for (int le = 0; le < L; le++) {
            for (int s = 0; s < W; s++) {
                int32_t want = rp->ep_recv_count[((size_t)p * L + (size_t)le) * W + (size_t)s];
                if (epc[le * W + s] == want) continue;
                snprintf(c->msg, c->msglen,
                         "rank %d epRecvCount[%d] (local expert %d, source rank %d) is %d, "
                         "expected %d",
                         p, le * W + s, le, s, epc[le * W + s], want);
                return 1;
            }
            int64_t want = rp->expert_token_num[(size_t)p * L + (size_t)le];
            if (etn[le] != want) {
                snprintf(c->msg, c->msglen, "rank %d expertTokenNum[%d] is %lld, expected %lld", p,
                         le, (long long)etn[le], (long long)want);
                return 1;
            }
        }
    }
    return 0;
}

/* Whose row is this: the tag of an int8 or bf16 received row. */
static void row_owner(const checker *c, const uint8_t *got, char *buf, size_t n) {
    const ll_args *a = &c->st->args;
    int zero = 1;
    for (uint32_t j = 0; j < a->xrow_bytes; j++) zero &= got[j] == 0;
    if (zero) {
        snprintf(buf, n, "it is zeros: never written");
        return;
    }
    const int8_t *q = (const int8_t *)got;
    int r2, q2, t2;
    if (a->dtype == LL_INT8 && (q[4] == 127 || q[4] == -127) && q[0] >= 0 && q[1] >= 0 &&
        q[2] >= 0 && q[3] >= 0)
        snprintf(buf, n, "it holds token %d of rank %d", q[0] | q[1] << 7 | q[2] << 14, q[3]);
    else if (a->dtype == LL_BF16 &&
             fm_decode_tag((const uint16_t *)(const void *)got, a->hidden, &r2, &q2, &t2))
        snprintf(buf, n, "it holds token %d of rank %d", t2, q2);
    else
        snprintf(buf, n, "it is no token row");
}

static int check_rows(checker *c) {
    const ll_args *a = &c->st->args;
    const fm_round_plan *rp = &c->st->plan.round[0];
    int W = a->num_ranks, T = a->tokens, K = a->topk, H = a->hidden;
    int64_t bad = 0, total = 0;
    for (int p = 0; p < W; p++)
        for (int64_t row = 0; row < rp->recv_rows[p]; row++, total++) {
            int32_t owner = rp->owner[rp->owner_base[p] + row];
            int s = owner / (T * K), t = (owner / K) % T, k = owner % K;
            ll_fill_token(c->row, H, a->dtype, c->st->plan.sh.data_seed, s, t);
            const void *want = c->row;
            float scale = 0, got_scale = 0;
            if (a->dtype == LL_INT8) {
                ll_quantize_ref(c->row, H, c->q, &scale);
                want = c->q;
            }
            int32_t tri[LL_IDX_INFO] = {s, t, k}, got_tri[LL_IDX_INFO] = {s, t, k};
            if (npurr_gm_read(c->e, gm_add(a->expand_x[p], row * (int64_t)a->xrow_bytes), c->got,
                              a->xrow_bytes) ||
                (a->dtype == LL_INT8 &&
                 npurr_gm_read(c->e, gm_add(a->dynamic_scales[p], row * 4), &got_scale, 4)) ||
                (a->kind == LL_KIND_SINGLE &&
                 npurr_gm_read(c->e, gm_add(a->expand_idx[p], row * LL_IDX_INFO * 4), got_tri,
                               sizeof got_tri)))
                return fail(c, "low-latency check: an output row outside its allocation");
            const char *what = NULL;
            char buf[160];
            if (memcmp(c->got, want, a->xrow_bytes) != 0) {
                row_owner(c, c->got, buf, sizeof buf);
                what = buf;
            } else if (memcmp(&got_scale, &scale, 4) != 0) {
                snprintf(buf, sizeof buf, "its dynamic scale is %.9g, expected %.9g",
                         (double)got_scale, (double)scale);
                what = buf;
            } else if (memcmp(got_tri, tri, sizeof tri) != 0) {
                snprintf(buf, sizeof buf, "its expandIdx triple is (%d, %d, %d)", got_tri[0],
                         got_tri[1], got_tri[2]);
                what = buf;
            }
            if (!what || bad++ > 0) continue;
            snprintf(c->msg, c->msglen,
                     "rank %d expand_x row %lld should be token %d of rank %d (slot %d, expert "
                     "%d)%s: %s",
                     p, (long long)row, t, s, k, rp->expert_ids[owner],
                     a->dtype == LL_INT8 ? " quantized to int8" : "", what);
        }
    if (!bad) return 0;
    size_t len = strlen(c->msg);
    snprintf(c->msg + len, c->msglen - len, " [%lld of %lld received rows differ]",
             (long long)bad, (long long)total);
    return 1;
}

static int check_out(checker *c) {
    const ll_args *a = &c->st->args;
    const fm_round_plan *rp = &c->st->plan.round[0];
    int W = a->num_ranks, T = a->tokens, K = a->topk, H = a->hidden;
    int64_t bad = 0;
    for (int s = 0; s < W; s++) {
        const uint16_t *out = npurr_gm_host(c->e, a->out[s], (uint64_t)T * a->row_bytes);
        if (!out) return fail(c, "low-latency check: no host view of the combined tokens");
        for (int t = 0; t < T; t++) {
            ll_fill_token(c->row, H, a->dtype, c->st->plan.sh.data_seed, s, t);
            float qs = 0;
            if (a->dtype == LL_INT8) ll_quantize_ref(c->row, H, c->q, &qs);
            for (int j = 0; j < H; j++) c->acc[j] = 0.0f;
            for (int k = 0; k < K; k++) {
                size_t slot = ((size_t)s * (size_t)T + (size_t)t) * (size_t)K + (size_t)k;
                int32_t e = rp->expert_ids[slot];
                if (e < 0) continue;
                float w = rp->topk_weights[slot], scale = fm_expert_scale(e);
                for (int j = 0; j < H; j++) {
                    float v = a->dtype == LL_INT8 ? scale * ((float)c->q[j] * qs)
                                                  : scale * bf16_to_float(c->row[j]);
                    c->acc[j] += w * bf16_to_float(float_to_bf16(v));
                }
            }
            for (int j = 0; j < H; j++) {
                float want = bf16_to_float(float_to_bf16(c->acc[j]));
                float got = bf16_to_float(out[(size_t)t * (size_t)H + (size_t)j]);
                float tol = fabsf(want) * (1.0f / 64.0f) + 1e-6f;   /* 2 bf16 ulps */
                if (!isnan(got) && fabsf(got - want) <= tol) continue;
                if (bad++ > 0) continue;
                snprintf(c->msg, c->msglen,
                         "rank %d combined token %d element %d is %.6g, reference %.6g (weighted "
                         "sum of %d expert outputs, tolerance %.3g)%s",
                         s, t, j, (double)got, (double)want, K, (double)tol,
                         isnan(got) ? ": NaN" : "");
            }
        }
    }
    if (!bad) return 0;
    size_t len = strlen(c->msg);
    snprintf(c->msg + len, c->msglen - len, " [%lld of %lld elements differ]", (long long)bad,
             (long long)W * T * H);
    return 1;
}

/* Every byte of a status area zero again, on every rank. */
static int check_cleared(checker *c, gm_t base, uint64_t bytes, const char *what) {
    for (int r = 0; r < c->st->args.num_ranks; r++) {
        const uint8_t *h = npurr_gm_host(c->e, gm_on_rank(base, r), bytes);
        if (!h) return fail(c, "low-latency check: no host view of a status area");
        for (uint64_t b = 0; b < bytes; b++) {
            if (!h[b]) continue;
            snprintf(c->msg, c->msglen,
                     "rank %d %s %llu is still set after the run (byte %llu is 0x%02x): it "
                     "arrived after its receiver had waited and cleared it",
                     r, what, (unsigned long long)(b / LL_STATE_BYTES),
                     (unsigned long long)(b % LL_STATE_BYTES), h[b]);
            return 1;
        }
    }
    return 0;
}

int ll_check(engine *e, void *state, char *msg, size_t msglen) {
    ll_state *st = state;
    const ll_args *a = &st->args;
    checker c = {.e = e, .st = st, .msg = msg, .msglen = msglen};
    if (msglen) msg[0] = '\0';
    size_t H = (size_t)a->hidden;
    c.row = malloc(a->row_bytes);
    c.got = malloc(a->row_bytes);
    c.acc = malloc(sizeof(float) * H);
    c.val = malloc(sizeof(float) * H);
    c.q = malloc(H);
    int rc = 1;
    uint64_t TK = (uint64_t)a->tokens * (uint64_t)a->topk;
    if (!c.row || !c.got || !c.acc || !c.val || !c.q) {
        snprintf(msg, msglen, "low-latency check: out of host memory");
    } else {
        rc = kit_guards_check(e, &st->guards, msg, msglen) || check_counts(&c) ||
             check_rows(&c) || check_out(&c);
        if (!rc && a->kind == LL_KIND_SINGLE)
            rc = check_cleared(&c, a->dstate,
                               (uint64_t)a->num_ranks * (uint64_t)a->local_experts * LL_STATE_BYTES,
                               "dispatch status (local expert * ranks + source)") ||
                 check_cleared(&c, a->cstate, TK * LL_STATE_BYTES,
                               "combine status (token * topk + slot)");
    }
    free(c.row);
    free(c.got);
    free(c.acc);
    free(c.val);
    free(c.q);
    return rc;
}
