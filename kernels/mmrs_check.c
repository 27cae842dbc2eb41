/*
 * mmrs_check.c - CPU reference and data checks after a matmul-reduce-scatter
 * run.
 *
 * In order, the first failure names what broke:
 *   1. guards: the bytes after D and after every rank's workspace still hold
 *      what setup wrote (an edge tile written too wide or too long shows
 *      here);
 *   2. D on every rank equals rows r*M/R.. of sum over ranks of A_r x B,
 *      computed in double from the same fp16 inputs, within the f32
 *      rounding bound of a (K + R)-term sum: (K + R) * eps * sum |a*b|.
 * On a mismatch the message names the element, its mmad block, the round
 * and stage that carried it, and what the wrong value is made of when it
 * can tell: a peer's partial missing (never pulled), or a peer's partial of
 * a later round that reused the same workspace slot (the stage was
 * overwritten before it was pulled).
 */
#include "mmrs.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref {
    const mmrs_args *a;
    float *fa;        /* [R][M][K] */
    float *fb;        /* [K][N] */
    double *sum_a;    /* [M][K]: sum over ranks of A_r, exact in double */
    double *abs_a;    /* [M][K]: sum over ranks of |A_r| */
} ref;

/* D[row][col] of the full sum, and sum |a*b| over ranks and k for the
 * tolerance: A summed over ranks first (fp16 values, exact in double), so
 * the reference costs one matmul, not one per rank. */
static double reference(const ref *f, uint64_t row, uint32_t col, double *abs_sum) {
    const mmrs_args *a = f->a;
    const double *sa = f->sum_a + row * a->k, *aa = f->abs_a + row * a->k;
    double s = 0, as = 0;
    for (uint32_t k = 0; k < a->k; k++) {
        double b = f->fb[(uint64_t)k * a->n + col];
        s += sa[k] * b;
        as += aa[k] * fabs(b);
    }
    *abs_sum = as;
    return s;
}

/* Partial of rank q for global row `row` (of A_q) and column col. */
static double partial(const ref *f, int q, uint64_t row, uint32_t col) {
    const mmrs_args *a = f->a;
    const float *ar = f->fa + ((uint64_t)q * a->m + row) * a->k;
    double s = 0;
    for (uint32_t k = 0; k < a->k; k++) s += (double)ar[k] * (double)f->fb[(uint64_t)k * a->n + col];
    return s;
}

static int check_guards(engine *e, const mmrs_state *st, char *msg, size_t msglen) {
    const mmrs_args *a = &st->args;
    uint64_t d_bytes = (uint64_t)mmrs_in_rank_m(a) * a->n * 4;
    for (int r = 0; r < a->num_ranks; r++) {
        gm_t at[2] = {gm_add(a->d[r], (int64_t)d_bytes),
                      gm_add(gm_on_rank(a->symmetric, r), (int64_t)st->sh.workspace_bytes)};
        const char *what[2] = {"D", "the workspace"};
        for (int i = 0; i < 2; i++) {
            const uint8_t *h = npurr_gm_host(e, at[i], MMRS_GUARD_BYTES);
            if (!h) {
                snprintf(msg, msglen, "rank %d: no host view of the guard after %s", r, what[i]);
                return 1;
            }
            for (uint32_t b = 0; b < MMRS_GUARD_BYTES; b++)
                if (h[b] != MMRS_GUARD_BYTE) {
                    snprintf(msg, msglen,
                             "rank %d: byte %u after %s is 0x%02x, expected 0x%02x: a tile was "
                             "written past the end",
                             r, b, what[i], h[b], MMRS_GUARD_BYTE);
                    return 1;
                }
        }
    }
    return 0;
}

/* What rank q's workspace slot could have held when it was pulled. */
typedef struct candidate {
    double value;
    int round;      /* -1 the right tile, -2 nothing (never pulled), else the later round */
    uint32_t target;
} candidate;

#define MMRS_DIAG_CANDIDATES 16

typedef struct diag {
    candidate c[MMRS_MAX_RANKS][MMRS_DIAG_CANDIDATES];
    int n[MMRS_MAX_RANKS];
    int pick[MMRS_MAX_RANKS];
    int me, R;
    double target, tol;
    long budget;
} diag;

/* Depth-first over the peers: does some choice of slot contents add up to
 * the value D holds? The right tiles are tried first. */
static int explain(diag *g, int q, double sum) {
    if (g->budget-- <= 0) return 0;
    if (q == g->R) return fabs(sum - g->target) <= g->tol;
    if (q == g->me) return explain(g, q + 1, sum);
    for (int i = 0; i < g->n[q]; i++) {
        g->pick[q] = i;
        if (explain(g, q + 1, sum + g->c[q][i].value)) return 1;
    }
    return 0;
}

/* Explains got != want for D[me][i][j]; appends to msg. */
static void diagnose(const ref *f, int me, uint32_t i, uint32_t j, double got, double tol,
                     char *msg, size_t msglen) {
    const mmrs_args *a = f->a;
    uint32_t R = (uint32_t)a->num_ranks, mr = mmrs_in_rank_m(a);
    uint32_t mi = i / a->block_m, ni = j / a->block_n, ln = mmrs_loops_n(a);
    uint32_t loop = mi * ln + ni, c = loop / a->block_per_comm_in_rank;
    uint32_t b = loop % a->block_per_comm_in_rank, off_r = i % a->block_m, off_c = j % a->block_n;
    uint32_t stage = c % a->stages;
    size_t len = strlen(msg);
    snprintf(msg + len, msglen - len, "; mmad block (%u, %u), round %u, stage %u", mi, ni, c, stage);
    diag *g = calloc(1, sizeof *g);
    if (!g) return;
    g->me = me;
    g->R = (int)R;
    g->tol = tol;
    g->budget = 1000000;
    uint64_t grow = (uint64_t)me * mr + i;
    g->target = got - partial(f, me, grow, j);
    uint32_t slot = (uint32_t)me * (mmrs_actual_block_per_comm(a, c) / R) + b;
    for (uint32_t q = 0; q < R; q++) {
        if ((int)q == me) continue;
        g->c[q][g->n[q]++] = (candidate){partial(f, (int)q, grow, j), -1, (uint32_t)me};
        g->c[q][g->n[q]++] = (candidate){0.0, -2, 0};
        /* A later round that reuses this slot of q's workspace. */
        for (uint32_t c2 = c + a->stages;
             c2 < mmrs_comm_loops(a) && g->n[q] < MMRS_DIAG_CANDIDATES; c2 += a->stages) {
            uint32_t in_rank2 = mmrs_actual_block_per_comm(a, c2) / R;
            uint32_t target2 = slot / in_rank2;
            if (slot >= in_rank2 * R || target2 == q) continue;
            uint32_t mi2, ni2, am2, an2;
            mmrs_block_coord(a, c2 * a->block_per_comm_in_rank + slot % in_rank2, &mi2, &ni2,
                             &am2, &an2);
            if (off_r >= am2 || off_c >= an2) continue;
            double p2 = partial(f, (int)q, (uint64_t)target2 * mr + (uint64_t)mi2 * a->block_m + off_r,
                                ni2 * a->block_n + off_c);
            g->c[q][g->n[q]++] = (candidate){p2, (int)c2, target2};
        }
    }
    if (explain(g, 0, 0.0)) {
        int overwritten = 0;
        for (uint32_t q = 0; q < R; q++) {
            if ((int)q == me) continue;
            const candidate *k = &g->c[q][g->pick[q]];
            len = strlen(msg);
            if (k->round == -2)
                snprintf(msg + len, msglen - len, "; rank %u's partial is missing (never pulled)", q);
            else if (k->round >= 0) {
                overwritten = 1;
                snprintf(msg + len, msglen - len,
                         "; rank %u's slot held its round-%d tile for rank %u instead", q, k->round,
                         k->target);
            }
        }
        len = strlen(msg);
        if (overwritten)
            snprintf(msg + len, msglen - len,
                     ": the AIC overwrote stage %u before the AIVs pulled it", stage);
    }
    free(g);
}

int mmrs_check(engine *e, void *state, char *msg, size_t msglen) {
    mmrs_state *st = state;
    const mmrs_args *a = &st->args;
    if (msglen) msg[0] = '\0';
    if (check_guards(e, st, msg, msglen)) return 1;
    uint32_t R = (uint32_t)a->num_ranks, mr = mmrs_in_rank_m(a);
    ref f = {.a = a};
    f.fa = malloc(sizeof(float) * (size_t)R * a->m * a->k);
    f.fb = malloc(sizeof(float) * (size_t)a->k * a->n);
    f.sum_a = calloc((size_t)a->m * a->k, sizeof(double));
    f.abs_a = calloc((size_t)a->m * a->k, sizeof(double));
    if (!f.fa || !f.fb || !f.sum_a || !f.abs_a) {
        free(f.fa);
        free(f.fb);
        free(f.sum_a);
        free(f.abs_a);
        snprintf(msg, msglen, "mmrs check: out of host memory");
        return 1;
    }
    for (uint32_t q = 0; q < R; q++)
        for (uint64_t x = 0; x < (uint64_t)a->m * a->k; x++)
            f.fa[(uint64_t)q * a->m * a->k + x] = mmrs_f16_to_float(mmrs_input(st->sh.data_seed, 0, (int)q, x));
    for (uint64_t x = 0; x < (uint64_t)a->k * a->n; x++)
        f.fb[x] = mmrs_f16_to_float(mmrs_input(st->sh.data_seed, 1, 0, x));
    for (uint32_t q = 0; q < R; q++)
        for (uint64_t x = 0; x < (uint64_t)a->m * a->k; x++) {
            double v = f.fa[(uint64_t)q * a->m * a->k + x];
            f.sum_a[x] += v;
            f.abs_a[x] += fabs(v);
        }
    int64_t bad = 0;
    for (uint32_t me = 0; me < R && bad == 0; me++) {
        const float *d = npurr_gm_host(e, a->d[me], (uint64_t)mr * a->n * 4);
        if (!d) {
            snprintf(msg, msglen, "rank %u: no host view of D", me);
            bad = 1;
            break;
        }
        for (uint32_t i = 0; i < mr; i++)
            for (uint32_t j = 0; j < a->n; j++) {
                double abs_sum;
                double want = reference(&f, (uint64_t)me * mr + i, j, &abs_sum);
                double tol = (double)(a->k + R) * FLT_EPSILON * abs_sum + FLT_MIN;
                double got = d[(uint64_t)i * a->n + j];
                if (!isnan(got) && fabs(got - want) <= tol) continue;
                if (bad++ > 0) continue;
                snprintf(msg, msglen,
                         "rank %u D[%u][%u] (global row %llu) is %.9g, reference %.9g "
                         "(tolerance %.3g)%s",
                         me, i, j, (unsigned long long)((uint64_t)me * mr + i), got, want, tol,
                         isnan(got) ? ": NaN" : "");
                diagnose(&f, (int)me, i, j, got, tol, msg, msglen);
            }
        if (bad > 0) {
            size_t len = strlen(msg);
            snprintf(msg + len, msglen - len, " [%lld of %llu elements of rank %u differ]",
                     (long long)bad, (unsigned long long)mr * a->n, me);
        }
    }
    free(f.fa);
    free(f.fb);
    free(f.sum_a);
    free(f.abs_a);
    return bad > 0;
}
