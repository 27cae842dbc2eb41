/*
 * combine_layout.c - `npurr layout -k combine-sender[-inplace]`: every
 * buffer's size per rank for the given options, and each core's UB use.
 *
 * Sizes that depend on the routing (x, recv) come from the same plan setup
 * builds, so the figures are those of the run these options would record.
 */
#include "combine.h"

void combine_print_sizes(FILE *out, const uint64_t *bytes, int n) {
    for (int i = 0; i < n; i++) {
        char h[32];
        combine_human_bytes(h, sizeof h, bytes[i]);
        fprintf(out, " %12s", h);
    }
}

void combine_human_bytes(char *buf, size_t n, uint64_t bytes) {
    if (bytes >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)bytes / (1ull << 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, n, "%.2f MiB", (double)bytes / (1ull << 20));
    else if (bytes >= (1ull << 10)) snprintf(buf, n, "%.2f KiB", (double)bytes / (1ull << 10));
    else snprintf(buf, n, "%llu B", (unsigned long long)bytes);
}

int combine_layout(const kernel_opts *o, int scheme, const npurr_topology *topo, FILE *out,
                   char *err, size_t errlen) {
    combine_shape sh;
    if (combine_shape_from_topology(o, scheme, topo, &sh, err, errlen)) return -1;
    combine_plan p;
    if (combine_plan_build(&sh, &p, err, errlen)) return -1;
    int R = sh.num_ranks, L = sh.local_experts, T = sh.tokens, K = sh.topk;
    uint64_t rb = sh.row_bytes;
    fprintf(out, "%s (seed 000 scheme %d), 1 node x %d NPUs\n",
            scheme == COMBINE_SCHEME_INPLACE ? "combine-sender-inplace" : "combine-sender", scheme,
            R);
    fprintf(out,
            "tokens %d per rank, hidden %d (%llu B rows), topk %d, experts %d (%d per rank), "
            "routing %s, data seed %llu\n",
            T, sh.hidden, (unsigned long long)rb, K, sh.experts, L, sh.routing.text,
            (unsigned long long)sh.data_seed);
    fprintf(out, "%-5s %10s %12s %10s %12s %12s %12s %12s%s\n", "rank", "x_rows", "x", "recv_rows",
            "recv", "out", "rings", "tables",
            scheme == COMBINE_SCHEME_INPLACE ? "     x_sorted" : "");
    uint64_t sum = 0;
    for (int r = 0; r < R; r++) {
        uint64_t x = (uint64_t)p.x_rows[r] * rb, recv = (uint64_t)p.recv_total[r] * rb;
        uint64_t outb = (uint64_t)T * rb, rings = (uint64_t)R * sh.ring_bytes;
        uint64_t tables = (uint64_t)L * R * 4 * 2 + (uint64_t)T * K * 4 * 3 +
                          (uint64_t)sh.experts * 4 + (uint64_t)R * 8 +
                          (uint64_t)R * COMBINE_CTRL_STRIDE + (uint64_t)R * 32;
        fprintf(out, "%-5d %10lld", r, (long long)p.x_rows[r]);
        combine_print_sizes(out, &x, 1);
        fprintf(out, " %10lld", (long long)p.recv_total[r]);
        uint64_t sizes[] = {recv, outb, rings, tables, x};   /* x again: x_sorted */
        combine_print_sizes(out, sizes, scheme == COMBINE_SCHEME_INPLACE ? 5 : 4);
        fputc('\n', out);
        sum += x + recv + outb + rings + tables + (scheme == COMBINE_SCHEME_INPLACE ? x : 0);
    }
    char hsum[32];
    combine_human_bytes(hsum, sizeof hsum, sum);
    fprintf(out, "total GM over all ranks: %s (plus %u B guard after each buffer)\n", hsum,
            COMBINE_GUARD_BYTES);
    fprintf(out,
            "UB per sender core: %u B (staging_ub 2 x %u, read_temp_ub 2 x %u, offset/length tables "
            "2 x %llu)\n",
            combine_sender_ub_bytes(&sh), sh.staging_bytes, COMBINE_READ_TEMP_BYTES,
            (unsigned long long)kit_align_up((uint64_t)L * R * 4, UB_ALIGN));
    fprintf(out, "UB per receiver core: %u B (ring chunks 2 x %u, combine buffers, tables)\n",
            combine_receiver_ub_bytes(&sh), COMBINE_RECV_CHUNK_BYTES);
    fprintf(out, "cores per rank: %d sender + %d receiver AIV\n", sh.sender_cores, R);
    combine_plan_free(&p);
    return 0;
}

/* The memory estimate (kernels.h, the descriptor's estimate hook): the big
 * terms of the formulas above over every rank. */
int combine_estimate(const kernel_opts *o, int scheme, const npurr_topology *topo,
                     kernel_estimate *est, char *err, size_t errlen) {
    combine_shape sh;
    int payload_full = topo->payload_full;
    if (combine_shape_from_topology(o, scheme, topo, &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t row = sh.row_bytes;
    /* expert-major x (T*K rows on average per rank, twice for the in-place
     * reorder), the combined output, one ring per peer */
    est->gm_bytes = payload_full ? R * (2 * T * K * row + T * row + R * sh.ring_bytes)
                                            : R * (T * row + R * sh.ring_bytes);
    est->host_bytes = R * T * K * KIT_PLAN_BYTES_PER_SLOT;
    snprintf(est->driver, sizeof est->driver,
             "--tokens %d --hidden %d --topk %d on %d ranks", sh.tokens, sh.hidden, sh.topk,
             sh.num_ranks);
    return 0;
}
