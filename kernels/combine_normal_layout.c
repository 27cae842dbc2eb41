/*
 * combine_normal_layout.c - `npurr layout -k combine-normal` and the memory
 * estimate `record` checks before it builds anything.
 *
 * Sizes that depend on the routing (x, tokenSrcInfo) come from the same
 * plan setup builds; the window and status areas follow A2's layout
 * (cam_moe_combine_normal.h at 3a90dfa1): a 512 B aligned row and a 32 B
 * status per (token, top-k) slot of the owner.
 */
#include "combine.h"

#include <stdarg.h>

uint64_t combine_normal_layout_row(FILE *out, int rank, int64_t rows, const uint64_t *sizes,
                                   int n) {
    fprintf(out, "%-5d %10lld", rank, (long long)rows);
    combine_print_sizes(out, sizes, n);
    fputc('\n', out);
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) sum += sizes[i];
    return sum;
}

void combine_normal_layout_total(FILE *out, uint64_t sum, uint32_t ub, const char *what, ...) {
    char hsum[32];
    combine_human_bytes(hsum, sizeof hsum, sum);
    fprintf(out, "total GM over all ranks: %s (plus %u B guard after each buffer)\n", hsum,
            COMBINE_GUARD_BYTES);
    fprintf(out, "UB per core: %u B (", ub);
    va_list ap;
    va_start(ap, what);
    vfprintf(out, what, ap);
    va_end(ap);
    fputs(")\n", out);
}

int combine_normal_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                          size_t errlen) {
    combine_shape sh;
    if (combine_shape_from_topology(o, COMBINE_SCHEME_NORMAL, topo, &sh, err, errlen)) return -1;
    combine_plan p;
    if (combine_plan_build(&sh, &p, err, errlen)) return -1;
    int R = sh.num_ranks, T = sh.tokens, K = sh.topk;
    uint64_t rb = sh.row_bytes, stride = combine_normal_window_stride(&sh);
    uint64_t slots = (uint64_t)T * (uint64_t)K;
    fprintf(out, "combine-normal (A2 CamMoeCombineNormal), 1 node x %d NPUs\n", R);
    fprintf(out,
            "tokens %d per rank, hidden %d (%llu B rows, %llu B window stride), topk %d, "
            "experts %d (%d per rank), routing %s, data seed %llu\n",
            T, sh.hidden, (unsigned long long)rb, (unsigned long long)stride, K, sh.experts,
            sh.local_experts, sh.routing.text, (unsigned long long)sh.data_seed);
    fprintf(out, "%-5s %10s %12s %12s %12s %12s %12s %12s\n", "rank", "x_rows", "x", "src_info",
            "window", "state", "out", "tables");
    uint64_t sum = 0;
    for (int r = 0; r < R; r++) {
        uint64_t x = (uint64_t)p.x_rows[r] * rb;
        uint64_t info = (uint64_t)p.x_rows[r] * COMBINE_NORMAL_SRC_INFO_LEN * 4;
        uint64_t window = slots * stride, state = slots * COMBINE_NORMAL_STATE_BYTES;
        uint64_t outb = (uint64_t)T * rb;
        uint64_t tables = (uint64_t)sh.local_experts * (uint64_t)R * 4 + slots * 4 * 2;
        uint64_t sizes[] = {x, info, window, state, outb, tables};
        sum += combine_normal_layout_row(out, r, p.x_rows[r], sizes, 6);
    }
    combine_normal_layout_total(out, sum, combine_normal_ub_bytes(&sh),
                                "two bf16 rows, two f32 rows, the bf16 output, %u rows of "
                                "tokenSrcInfo, weights and ids",
                                COMBINE_NORMAL_SRC_INFO_ROWS);
    fprintf(out, "cores per rank: %d AIV, each sends its share of x's rows, then sums its share "
            "of the rank's tokens\n", sh.cores);
    combine_plan_free(&p);
    return 0;
}

int combine_normal_estimate(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est,
                            char *err, size_t errlen) {
    combine_shape sh;
    int payload_full = topo->payload_full;
    if (combine_shape_from_topology(o, COMBINE_SCHEME_NORMAL, topo, &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t row = sh.row_bytes, stride = combine_normal_window_stride(&sh);
    /* Moved rows (x, the windows) are references unless payload is full;
     * tokenSrcInfo, ids, weights and status are per slot, the output per token. */
    uint64_t per_slot = COMBINE_NORMAL_SRC_INFO_LEN * 4 + 8 + COMBINE_NORMAL_STATE_BYTES;
    est->gm_bytes = R * (T * row + T * K * per_slot);
    if (payload_full) est->gm_bytes += R * T * K * (row + stride);
    est->host_bytes = R * T * K * (KIT_PLAN_BYTES_PER_SLOT + COMBINE_NORMAL_SRC_INFO_LEN * 4);
    snprintf(est->driver, sizeof est->driver, "--tokens %d --hidden %d --topk %d on %d ranks",
             sh.tokens, sh.hidden, sh.topk, sh.num_ranks);
    return 0;
}
