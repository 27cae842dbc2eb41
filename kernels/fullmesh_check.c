/*
 * fullmesh_check.c - CPU reference and data checks after a
 * fullmesh-dispatch-combine run, every round.
 *
 * In order, the first failure names what broke:
 *   1. guards: nothing was written past the end of an output;
 *   2. expandIdx on every rank equals the plan's;
 *   3. epRecvCount and expertTokenNum on every rank equal the plan's;
 *   4. expand_x: every received row equals, byte for byte, the token it
 *      should carry (rows are tagged, so a wrong row says whose it is, or
 *      that it is no token at all: the window was overwritten before the row
 *      was read); INT8: its int8 values and its dynamic_scales row equal,
 *      bit for bit, the CPU quantization of that token (fm_quantize_ref;
 *      the payload quantizes exactly, fullmesh_quant.c);
 *   5. the combined tokens: the weighted sum over top-k of the expert
 *      outputs (token times the expert's scale, rounded to bf16; INT8: the
 *      dequantized token, q * scale, times the expert's scale), in f32 and
 *      rounded to bf16, within 2 bf16 ulps, no NaN.
 */
#include "fullmesh.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct checker {
    engine *e;
    const fm_plan *p;
    const fm_args *a;
    uint16_t *row;
    uint8_t *got;       /* a received row, read without materializing */
    float *acc;
    float *val;         /* the token as the experts see it (INT8: dequantized) */
    int8_t *q;          /* INT8: the reference quantization of a row */
    float *scales;      /* and its block scales */
    float *got_scales;
    char *msg;
    size_t msglen;
} checker;

static int fail(checker *c, const char *what) {
    snprintf(c->msg, c->msglen, "%s", what);
    return 1;
}

static int check_metadata(checker *c, int round) {
    const fm_round_plan *rp = &c->p->round[round];
    const fm_args *a = c->a;
    int W = a->num_ranks, L = a->local_experts;
    size_t tk = (size_t)a->tokens * (size_t)a->topk;
    for (int s = 0; s < W; s++) {
        int at = round * W + s;
        const int32_t *idx = npurr_gm_host(c->e, a->expand_idx[at], tk * 4);
        const int32_t *epc = npurr_gm_host(c->e, a->ep_recv_count[at], (uint64_t)L * W * 4);
        const int64_t *etn = npurr_gm_host(c->e, a->expert_token_num[at], (uint64_t)L * 8);
        if (!idx || !epc || !etn) return fail(c, "fullmesh check: no host view of the metadata");
        for (size_t i = 0; i < tk; i++)
            if (idx[i] != rp->expand_idx[(size_t)s * tk + i]) {
                snprintf(c->msg, c->msglen,
                         "round %d rank %d expandIdx(%zu, %zu) is %d, expected %d (expert %d)",
                         round, s, i / (size_t)a->topk, i % (size_t)a->topk, idx[i],
                         rp->expand_idx[(size_t)s * tk + i], rp->expert_ids[(size_t)s * tk + i]);
                return 1;
            }
        for (int le = 0; le < L; le++) {
            for (int src = 0; src < W; src++) {
                int32_t want = rp->ep_recv_count[((size_t)s * L + (size_t)le) * W + (size_t)src];
                if (epc[le * W + src] != want) {
                    snprintf(c->msg, c->msglen,
                             "round %d rank %d epRecvCount[%d][%d] (local expert %d, source rank "
                             "%d) is %d, expected %d",
                             round, s, le, src, le, src, epc[le * W + src], want);
                    return 1;
                }
            }
            if (etn[le] != rp->expert_token_num[(size_t)s * L + (size_t)le]) {
                snprintf(c->msg, c->msglen, "round %d rank %d expertTokenNum[%d] is %lld, expected %lld",
                         round, s, le, (long long)etn[le],
                         (long long)rp->expert_token_num[(size_t)s * L + (size_t)le]);
                return 1;
            }
        }
    }
    return 0;
}

static const char *what_row_holds(const checker *c, const uint16_t *got, int round, char *buf,
                                  size_t n) {
    int r2, q2, t2;
    if (fm_decode_tag(got, c->a->hidden, &r2, &q2, &t2)) {
        snprintf(buf, n, "it holds token %d of rank %d from round %d%s", t2, q2, r2,
                 r2 != round ? " (a row of another round)" : " (the wrong position)");
        return buf;
    }
    int zero = 1;
    for (int j = 0; j < c->a->hidden; j++) zero &= got[j] == 0;
    return zero ? "it is zeros: never written"
                : "it is no token row: the window was overwritten before the row was read "
                  "(another EP op's data in the same block?)";
}

/* What the experts receive of a token row: the bf16 values, or INT8's
 * reference quantization (into c->q, c->scales) dequantized. */
static void token_values(checker *c, const uint16_t *row) {
    int H = c->a->hidden;
    if (c->a->dtype != FM_INT8) {
        for (int j = 0; j < H; j++) c->val[j] = bf16_to_float(row[j]);
        return;
    }
    fm_quantize_ref(row, H, c->q, c->scales);
    for (int j = 0; j < H; j++) c->val[j] = (float)c->q[j] * c->scales[j / FM_QUANT_BLOCK];
}

/* INT8 expand_x row `row` of rank p against token t of rank s: values,
 * then scales. 0 equal, 1 differs (the message when `report`), -1 error. */
static int check_recv_int8(checker *c, int round, int p, int64_t row, int s, int t, int k,
                           int32_t expert, int report) {
    const fm_args *a = c->a;
    int H = a->hidden, nb = H / FM_QUANT_BLOCK, W = a->num_ranks;
    fm_fill_token(c->row, H, a->dtype, c->p->sh.data_seed, round, s, t);
    fm_quantize_ref(c->row, H, c->q, c->scales);
    if (npurr_gm_read(c->e, gm_add(a->expand_x[round * W + p], row * (int64_t)H), c->got, (uint64_t)H) ||
        npurr_gm_read(c->e, gm_add(a->dynamic_scales[round * W + p], row * (int64_t)nb * 4),
                       c->got_scales, (uint64_t)nb * 4)) {
        fail(c, "fullmesh check: expand_x or dynamic_scales row outside its allocation");
        return -1;
    }
    if (memcmp(c->got, c->q, (size_t)H) != 0) {
        if (!report) return 1;
        int r2, q2, t2;
        char buf[160];
        if (fm_decode_tag_int8((const int8_t *)c->got, H, &r2, &q2, &t2))
            snprintf(buf, sizeof buf, "it holds token %d of rank %d from round %d%s", t2, q2, r2,
                     r2 != round ? " (a row of another round)" : " (the wrong position)");
        else {
            int zero = 1;
            for (int j = 0; j < H; j++) zero &= c->got[j] == 0;
            snprintf(buf, sizeof buf, "%s",
                     zero ? "it is zeros: never written"
                          : "it is no token row: the window was overwritten before the row was "
                            "read (another EP op's data in the same block?)");
        }
        snprintf(c->msg, c->msglen,
                 "round %d rank %d expand_x row %lld should be token %d of rank %d (slot %d, "
                 "expert %d) quantized to int8: %s",
                 round, p, (long long)row, t, s, k, expert, buf);
        return 1;
    }
    for (int b = 0; b < nb; b++)
        if (memcmp(&c->got_scales[b], &c->scales[b], 4) != 0) {
            if (!report) return 1;
            snprintf(c->msg, c->msglen,
                     "round %d rank %d dynamic_scales row %lld block %d is %.9g, expected %.9g "
                     "(the block's scale in token %d of rank %d, slot %d, expert %d)",
                     round, p, (long long)row, b, (double)c->got_scales[b], (double)c->scales[b], t,
                     s, k, expert);
            return 1;
        }
    return 0;
}

static int check_recv(checker *c, int round) {
    const fm_round_plan *rp = &c->p->round[round];
    const fm_args *a = c->a;
    int W = a->num_ranks, T = a->tokens, K = a->topk;
    uint64_t rb = a->row_bytes;
    int64_t bad = 0, total = 0;
    for (int p = 0; p < W; p++) {
        int64_t rows = rp->recv_rows[p];
        total += rows;
        if (rows == 0) continue;
        gm_t x = a->expand_x[round * W + p];
        for (int64_t row = 0; row < rows; row++) {
            int32_t owner = rp->owner[rp->owner_base[p] + row];
            int s = owner / (T * K), t = (owner / K) % T, k = owner % K;
            if (a->dtype == FM_INT8) {
                int rc = check_recv_int8(c, round, p, row, s, t, k, rp->expert_ids[owner], bad == 0);
                if (rc < 0) return 1;
                bad += rc;
                continue;
            }
            fm_fill_token(c->row, a->hidden, a->dtype, c->p->sh.data_seed, round, s, t);
            const uint8_t *got = c->got;
            if (npurr_gm_read(c->e, gm_add(x, row * (int64_t)rb), c->got, rb))
                return fail(c, "fullmesh check: expand_x row outside its allocation");
            if (memcmp(got, c->row, rb) == 0) continue;
            if (bad++ > 0) continue;
            char buf[160];
            snprintf(c->msg, c->msglen,
                     "round %d rank %d expand_x row %lld should be token %d of rank %d (slot %d, "
                     "expert %d): %s",
                     round, p, (long long)row, t, s, k, rp->expert_ids[owner],
                     what_row_holds(c, (const uint16_t *)(const void *)got, round, buf, sizeof buf));
        }
    }
    if (bad) {
        size_t len = strlen(c->msg);
        snprintf(c->msg + len, c->msglen - len, " [%lld of %lld received rows differ]",
                 (long long)bad, (long long)total);
        return 1;
    }
    return 0;
}

static int check_out(checker *c, int round) {
    const fm_round_plan *rp = &c->p->round[round];
    const fm_args *a = c->a;
    int W = a->num_ranks, T = a->tokens, K = a->topk, H = a->hidden;
    int64_t bad = 0;
    for (int s = 0; s < W; s++) {
        const uint16_t *out = npurr_gm_host(c->e, a->out[round * W + s], (uint64_t)T * a->row_bytes);
        if (!out) return fail(c, "fullmesh check: no host view of the combined tokens");
        for (int t = 0; t < T; t++) {
            fm_fill_token(c->row, H, a->dtype, c->p->sh.data_seed, round, s, t);
            token_values(c, c->row);
            for (int j = 0; j < H; j++) c->acc[j] = 0.0f;
            for (int k = 0; k < K; k++) {
                size_t slot = ((size_t)s * (size_t)T + (size_t)t) * (size_t)K + (size_t)k;
                int32_t e = rp->expert_ids[slot];
                if (e < 0) continue;
                float w = rp->topk_weights[slot], scale = fm_expert_scale(e);
                for (int j = 0; j < H; j++)
                    c->acc[j] += w * bf16_to_float(float_to_bf16(scale * c->val[j]));
            }
            for (int j = 0; j < H; j++) {
                float want = bf16_to_float(float_to_bf16(c->acc[j]));
                float got = bf16_to_float(out[(size_t)t * (size_t)H + (size_t)j]);
                float tol = fabsf(want) * (1.0f / 64.0f) + 1e-6f;   /* 2 bf16 ulps */
                if (!isnan(got) && fabsf(got - want) <= tol) continue;
                if (bad++ > 0) continue;
                snprintf(c->msg, c->msglen,
                         "round %d rank %d combined token %d element %d is %.6g, reference %.6g "
                         "(weighted sum of %d expert outputs, tolerance %.3g)%s",
                         round, s, t, j, (double)got, (double)want, K, (double)tol,
                         isnan(got) ? ": NaN" : "");
            }
        }
    }
    if (bad) {
        size_t len = strlen(c->msg);
        snprintf(c->msg + len, c->msglen - len, " [%lld of %lld elements differ]", (long long)bad,
                 (long long)W * T * H);
        return 1;
    }
    return 0;
}

int fm_check(engine *e, void *state, char *msg, size_t msglen) {
    fm_state *st = state;
    checker c = {.e = e, .p = &st->plan, .a = &st->args, .msg = msg, .msglen = msglen};
    if (msglen) msg[0] = '\0';
    size_t H = (size_t)st->args.hidden, nb = H / FM_QUANT_BLOCK + 1;
    c.row = malloc(st->args.row_bytes);
    c.got = malloc(st->args.row_bytes);
    c.acc = malloc(sizeof(float) * H);
    c.val = malloc(sizeof(float) * H);
    c.q = malloc(H);
    c.scales = malloc(sizeof(float) * nb);
    c.got_scales = malloc(sizeof(float) * nb);
    int rc = 1;
    if (!c.row || !c.got || !c.acc || !c.val || !c.q || !c.scales || !c.got_scales) {
        snprintf(msg, msglen, "fullmesh check: out of host memory");
    } else {
        rc = kit_guards_check(e, &st->guards, msg, msglen);
        for (int r = 0; !rc && r < st->args.rounds; r++)
            rc = check_metadata(&c, r) || check_recv(&c, r) || check_out(&c, r);
    }
    free(c.row);
    free(c.got);
    free(c.acc);
    free(c.val);
    free(c.q);
    free(c.scales);
    free(c.got_scales);
    return rc;
}
