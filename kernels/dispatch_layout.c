/*
 * dispatch_layout.c - `npurr layout -k dispatch-layered`: every buffer of
 * a rank by the sizing formulas of seed 003, then the routing-dependent
 * buffers of each rank (from the same routing a run builds, counted, not
 * stored) and the UB each role carves.
 *
 * Seed 003's worked example (16 ranks, 10 channels, 1024-token chunks,
 * 1024-byte tokens, about 100 MB) is
 *   npurr layout -k dispatch-layered --nodes 2 --channels 10 \
 *       --rdma-chunk 1024 --hccs-chunk 1024 --hidden 448 --topk 8
 * (448 bf16 = 896 B + SourceMeta 44 B + 2 x 8 x 4 B top-k = 1004 B,
 * aligned to 1024 B). Beyond the seed's B_rdma + B_hccs the kernel also
 * allocates the send half of rdma_channel_data/meta (seed 001: each
 * channel's buffer holds send and recv); both totals are printed.
 */
#include "dispatch.h"

#include <stdlib.h>

static void human(char *buf, size_t n, uint64_t bytes) {
    if (bytes >= (1ull << 30)) snprintf(buf, n, "%.2f GiB", (double)bytes / (1ull << 30));
    else if (bytes >= (1ull << 20)) snprintf(buf, n, "%.3f MiB", (double)bytes / (1ull << 20));
    else if (bytes >= (1ull << 10)) snprintf(buf, n, "%.2f KiB", (double)bytes / (1ull << 10));
    else snprintf(buf, n, "%llu B", (unsigned long long)bytes);
}

static void line(FILE *out, const char *name, const char *formula, uint64_t bytes) {
    char h[32];
    human(h, sizeof h, bytes);
    fprintf(out, "  %-28s %-40s %14llu B  %12s\n", name, formula, (unsigned long long)bytes, h);
}

static void print_record(FILE *out, const dispatch_shape *sh) {
    fprintf(out,
            "token record S_token = %u B: hidden %u B (%d x %s, padded to 16 B) + SourceMeta %d B "
            "+ scales %d x 4 B + topk_idx %d x 4 B + topk_weights %d x 4 B = %u B, aligned to 32 B\n",
            sh->token_bytes, sh->hidden_bytes, sh->hidden, sh->dtype == DISPATCH_FP8 ? "fp8" : "bf16",
            DISPATCH_SOURCE_META_BYTES, sh->num_scales, sh->topk, sh->topk, sh->record_end);
    fprintf(out,
            "  (seed 003: SourceMeta is 8 B and records int4-aligned; here it also carries "
            "src_token_id and the token's index for each of %d NVL peers, and records are 32 B "
            "aligned for UB)\n",
            DISPATCH_MAX_NVL_PEERS);
}

/* Seed 003's two formulas; returns B_rdma + B_hccs and the send halves. */
static uint64_t print_buffers(FILE *out, const dispatch_shape *sh, uint64_t *send_half) {
    uint64_t C = (uint64_t)sh->channels, N = (uint64_t)sh->nodes, P = (uint64_t)sh->npus;
    uint64_t S = sh->token_bytes, Tr = (uint64_t)sh->rdma_ring_tokens;
    uint64_t Th = (uint64_t)sh->hccs_ring_tokens;
    char f[64];
    fprintf(out, "\nRDMA buffer per rank (symmetric): C = %llu channels x N_node = %llu\n",
            (unsigned long long)C, (unsigned long long)N);
    uint64_t data = C * N * Tr * S, meta = C * N * DISPATCH_META_BYTES, head = C * N * 8;
    snprintf(f, sizeof f, "C*N*T_rdma*S = %llu*%llu*%llu*%llu", (unsigned long long)C,
             (unsigned long long)N, (unsigned long long)Tr, (unsigned long long)S);
    line(out, "rdma_channel_data", f, data);
    line(out, "rdma_channel_meta", "C*N*(8*2+2)*4", meta);
    line(out, "rdma_channel_head", "C*N*8", head);
    line(out, "rdma_channel_tail", "C*N*8", head);
    uint64_t b_rdma = data + meta + 2 * head;
    line(out, "B_rdma", "C*N*(T_rdma*S + 72 + 8 + 8)", b_rdma);
    *send_half = data + meta;
    line(out, "send half (data + meta)", "staging for RdmaWrite (seed 001)", *send_half);

    fprintf(out, "\nHCCS buffer per rank: C = %llu channels x N_nvl = %llu peers\n",
            (unsigned long long)C, (unsigned long long)P);
    uint64_t x = C * P * Th * S, prefix = C * P * N * 4 * 2, hh = C * P * 4;
    snprintf(f, sizeof f, "C*P*T_hccs*S = %llu*%llu*%llu*%llu", (unsigned long long)C,
             (unsigned long long)P, (unsigned long long)Th, (unsigned long long)S);
    line(out, "hccs_channel_x", f, x);
    line(out, "hccs_channel_prefix_start/end", "C*P*N_node*4*2", prefix);
    line(out, "hccs_channel_head", "C*P*4", hh);
    line(out, "hccs_channel_tail", "C*P*4", hh);
    uint64_t b_hccs = x + prefix + 2 * hh;
    line(out, "B_hccs", "C*P*(T_hccs*S + 8*N_node + 4 + 4)", b_hccs);
    fprintf(out, "\n");
    line(out, "Total_Buffer (seed 003)", "B_rdma + B_hccs", b_rdma + b_hccs);
    return b_rdma + b_hccs;
}

static uint64_t role_words(const dispatch_shape *sh) {
    uint64_t C = (uint64_t)sh->channels, N = (uint64_t)sh->nodes, P = (uint64_t)sh->npus;
    return C * N * 4 + 2 * C * N * 8 + C * 8 + C * N * P * 8 +
           8 * (uint64_t)(sh->coordinators + sh->fwd_coordinators + sh->receivers);
}

/* One row per rank: its inputs, tables, what it receives and its total
 * with the rings; returns the sum of the totals. */
static uint64_t print_ranks(FILE *out, const dispatch_shape *sh, const int64_t *recv_total,
                            uint64_t rings) {
    int R = sh->num_ranks;
    dispatch_count_layout cl;
    dispatch_notify_layout nl;
    dispatch_count_offsets(sh, &cl);
    dispatch_notify_offsets(sh, &nl);
    fprintf(out, "\nper rank (routing %s, data seed %llu, %d dispatch%s):\n", sh->routing.text,
            (unsigned long long)sh->data_seed, sh->dispatches, sh->dispatches == 1 ? "" : "es");
    fprintf(out, "%-5s %8s %12s %12s %12s %10s %14s %14s\n", "rank", "tokens", "x+scales",
            "topk", "tables", "recv_rows", "recv (all)", "total");
    uint64_t K = (uint64_t)sh->topk, sum = 0;
    for (int r = 0; r < R; r++) {
        uint64_t T = (uint64_t)sh->tokens[r], n = (uint64_t)recv_total[r];
        uint64_t x = T * (sh->x_row_bytes + (uint64_t)sh->num_scales * 4);
        uint64_t topk = T * K * 8;
        uint64_t tables = (uint64_t)cl.padded * 4 +
                          (uint64_t)sh->block_dim * kit_align_up((uint64_t)R, 8) * 4 +
                          T * (uint64_t)R * 5 + 2 * (uint64_t)R * nl.row_stride + (uint64_t)nl.padded * 4;
        uint64_t recv = (uint64_t)sh->dispatches * n *
                        (sh->x_row_bytes + (uint64_t)sh->num_scales * 4 + K * 8 + DISPATCH_RECV_SRC_INTS * 4);
        uint64_t total = x + topk + tables + recv + rings;
        char hx[32], ht[32], hb[32], hr[32], hs[32];
        human(hx, sizeof hx, x);
        human(ht, sizeof ht, topk);
        human(hb, sizeof hb, tables);
        human(hr, sizeof hr, recv);
        human(hs, sizeof hs, total);
        fprintf(out, "%-5d %8llu %12s %12s %12s %10llu %14s %14s\n", r, (unsigned long long)T, hx,
                ht, hb, (unsigned long long)n, hr, hs);
        sum += total;
    }
    return sum;
}

/* --notify a2's buffers, then each role's UB and core count. */
static void print_cores(FILE *out, const dispatch_shape *sh) {
    int R = sh->num_ranks;
    if (sh->notify_a2) {
        dispatch_a2_layout al;
        dispatch_a2_offsets(sh, &al);
        char hb[32], hr[32], hi[32], hw[32];
        human(hb, sizeof hb, (uint64_t)al.len * 4);
        human(hr, sizeof hr, (uint64_t)R * al.len * 4);
        human(hi, sizeof hi, al.scratch_bytes);
        human(hw, sizeof hw, 2 * (uint64_t)R * al.slot_bytes);
        fprintf(out,
                "--notify a2, per rank besides: blob %s (%u ints, padded to %d tokens), recv_data "
                "%s, index outputs %s, windowOut + share window %s (symmetric)\n",
                hb, al.len, DISPATCH_A2_MAX_BS, hr, hi, hw);
    }
    fprintf(out,
            "UB per core: notify %u B, RDMASender %u B (%d tokens of metadata at once), "
            "RDMACoordinator %u B, forwarder %u B (2 x %d records), ForwarderCoordinator %u B, "
            "HCCSReceiver %u B (%d records)\n",
            dispatch_ub_notify(sh), dispatch_ub_sender(sh), sh->sender_meta_tokens,
            dispatch_ub_coordinator(sh), dispatch_ub_forwarder(sh), sh->forward_batch,
            dispatch_ub_fwd_coordinator(sh), dispatch_ub_receiver(sh), sh->receive_batch);
    fprintf(out,
            "cores per rank: %d RDMASender + %d RDMACoordinator + %d RDMA2HCCSForwarder + %d "
            "ForwarderCoordinator + %d HCCSReceiver = %d AIV\n",
            sh->senders, sh->coordinators, sh->forwarders, sh->fwd_coordinators, sh->receivers,
            sh->block_dim);
}

int dispatch_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                    size_t errlen) {
    dispatch_shape sh;
    /* No engine call: the role core counts against the chip's AIV. */
    if (dispatch_shape_from_topology(o, topo, &sh, err, errlen)) return -1;
    int R = sh.num_ranks;
    int64_t *recv_total = calloc((size_t)R, sizeof *recv_total);
    if (!recv_total) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    if (dispatch_recv_counts(&sh, recv_total, err, errlen)) {
        free(recv_total);
        return -1;
    }
    fprintf(out,
            "dispatch-layered: %d nodes x %d NPUs = %d ranks, %d channels, RDMA ring %d tokens "
            "(send chunk %d, credit batch %d), HCCS ring %d tokens (send chunk %d)\n",
            sh.nodes, sh.npus, R, sh.channels, sh.rdma_ring_tokens, sh.rdma_send_chunk,
            sh.credit_batch, sh.hccs_ring_tokens, sh.hccs_send_chunk);
    print_record(out, &sh);
    uint64_t send_half;
    uint64_t seed_total = print_buffers(out, &sh, &send_half);
    uint64_t words = role_words(&sh);
    line(out, "role words", "locks, send tails, acks, doorbells, heads", words);
    line(out, "allocated rings per rank", "Total_Buffer + send half + role words",
         seed_total + send_half + words);

    uint64_t sum = print_ranks(out, &sh, recv_total, seed_total + send_half + words);
    char hsum[32];
    human(hsum, sizeof hsum, sum);
    fprintf(out, "total GM over all ranks: %s (rings are backed only where written)\n", hsum);
    print_cores(out, &sh);
    free(recv_total);
    return 0;
}

/* The memory estimate (kernels.h, the descriptor's estimate hook): the big
 * terms of the formulas above over every rank. */
int dispatch_estimate(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est,
                      char *err, size_t errlen) {
    dispatch_shape sh;
    int payload_full = topo->payload_full;
    if (dispatch_shape_from_topology(o, topo, &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, K = (uint64_t)sh.topk, T = 0;
    for (int r = 0; r < sh.num_ranks; r++) T += (uint64_t)sh.tokens[r];
    uint64_t row = sh.x_row_bytes + (uint64_t)sh.num_scales * 4;
    uint64_t fan = K < R ? K : R;   /* ranks a token reaches at most */
    uint64_t C = (uint64_t)sh.channels, N = (uint64_t)sh.nodes, P = (uint64_t)sh.npus;
    uint64_t S = sh.token_bytes;
    uint64_t rings = 2 * C * N * (uint64_t)sh.rdma_ring_tokens * S +
                     C * P * (uint64_t)sh.hccs_ring_tokens * S;
    /* inputs, top-k, received rows of every dispatch, rings of every rank */
    /* Rings are backed only where written: at least a page per record
     * (its metadata). Full mode also stores every row of x and recv_x. */
    uint64_t ring_pages = R * (rings / S) * kit_page_of(S);
    if (payload_full)
        est->gm_bytes = T * (row + K * 8) + (uint64_t)sh.dispatches * T * fan * (row + K * 8 + 16) +
                        ring_pages;
    else   /* rows are references */
        est->gm_bytes = T * K * 8 + (uint64_t)sh.dispatches * T * fan * (K * 8 + 16) + ring_pages;
    if (sh.notify_a2) {
        /* --notify a2 writes as bytes the vector passes' [MAX_BS][E] outputs;
         * the blobs and the sections copied from them stay references to the
         * zero blob. */
        uint64_t M = DISPATCH_A2_MAX_BS, E = (uint64_t)sh.experts;
        est->gm_bytes += R * (3 * M * E * 4 + N * M * 4);
    }
    est->host_bytes = T * K * KIT_PLAN_BYTES_PER_SLOT;
    snprintf(est->driver, sizeof est->driver,
             "--tokens %d --hidden %d --topk %d on %d ranks", sh.max_tokens, sh.hidden, sh.topk,
             sh.num_ranks);
    return 0;
}
