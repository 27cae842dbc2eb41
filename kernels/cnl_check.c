/*
 * cnl_check.c - the checks after a combine-normal-layered run.
 *
 * In order, the first failure names what broke:
 *   1. guards: nothing was written past an output or a window;
 *   2. the combined tokens against the CPU reference in the chip's order:
 *      per server (in order) a partial sum over the token's experts there
 *      (ascending), each the expert output (combine-normal's generated
 *      row) times its top-k weight, accumulated in f32 and rounded to bf16;
 *      then the partials added in f32 and rounded to bf16. Within 2 bf16
 *      ulps, no NaN (the order is the chip's, so equal bits are expected).
 */
#include "cnl.h"

#include <math.h>
#include <stdlib.h>

static int check_out(engine *e, const cnl_state *st, uint16_t *row, float *part, float *acc,
                     char *msg, size_t msglen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    const cnl_args *a = &st->args;
    int W = a->num_ranks, T = a->tokens, K = a->topk, H = a->hidden, N = a->nodes;
    int PL = W / N * a->local_experts;
    int64_t bad = 0;
    for (int s = 0; s < W; s++) {
        const uint16_t *out = npurr_gm_host(e, a->out[s], (uint64_t)T * a->row_bytes);
        if (!out) {
            snprintf(msg, msglen, "combine-normal-layered check: no host view of the output");
            return 1;
        }
        const int32_t *ids = p->expert_ids + (size_t)s * (size_t)T * (size_t)K;
        const float *w = p->topk_weights + (size_t)s * (size_t)T * (size_t)K;
        for (int t = 0; t < T; t++) {
            for (int j = 0; j < H; j++) acc[j] = 0.0f;
            for (int n = 0; n < N; n++) {
                int any = 0;
                for (int j = 0; j < H; j++) part[j] = 0.0f;
                for (int x = 0; x < PL; x++)   /* the server's experts, ascending */
                    for (int k = 0; k < K; k++) {
                        if (ids[t * K + k] != n * PL + x) continue;
                        any = 1;
                        combine_fill_row(row, H, sh->data_seed, s, t, k, ids[t * K + k] / a->local_experts);
                        for (int j = 0; j < H; j++) part[j] += w[t * K + k] * bf16_to_float(row[j]);
                    }
                if (any)
                    for (int j = 0; j < H; j++) acc[j] += bf16_to_float(float_to_bf16(part[j]));
            }
            for (int j = 0; j < H; j++) {
                float want = bf16_to_float(float_to_bf16(acc[j]));
                float got = bf16_to_float(out[(size_t)t * (size_t)H + (size_t)j]);
                float tol = fabsf(want) * (1.0f / 64.0f) + 1e-6f;
                if (!isnan(got) && fabsf(got - want) <= tol) continue;
                if (bad++ > 0) continue;
                snprintf(msg, msglen,
                         "rank %d combined token %d element %d is %.6g, reference %.6g (per-server "
                         "partial sums of its %d expert outputs, tolerance %.3g)%s",
                         s, t, j, (double)got, (double)want, K, (double)tol,
                         isnan(got) ? ": NaN" : "");
            }
        }
    }
    return combine_count_bad(msg, msglen, bad, (int64_t)W * T * H, "elements");
}

int cnl_check(engine *e, void *state, char *msg, size_t msglen) {
    cnl_state *st = state;
    size_t H = (size_t)st->args.hidden;
    uint16_t *row = malloc(H * 2);
    float *part = malloc(H * sizeof(float)), *acc = malloc(H * sizeof(float));
    int rc = 1;
    if (msglen) msg[0] = '\0';
    if (!row || !part || !acc)
        snprintf(msg, msglen, "combine-normal-layered check: out of host memory");
    else
        rc = kit_guards_check(e, &st->guards, msg, msglen) ||
             check_out(e, st, row, part, acc, msg, msglen);
    free(row);
    free(part);
    free(acc);
    if (rc == 0 && msglen) msg[0] = '\0';
    return rc;
}
