/*
 * dispatch_plan.c - host side: the routing and the CPU reference.
 *
 * Everything the kernel computes on the device is computed here once more,
 * plainly, from the same routing: DeepEP's get_dispatch_layout outputs
 * (num_tokens_per_rank, num_tokens_per_rdma_rank, num_tokens_per_expert,
 * is_token_in_rank), each token's index in its destinations' streams, the
 * per-channel counts that size the rings, and each destination's receive
 * order: rows grouped by source rank in rank order (the prefix-matrix
 * order), tokens ascending within a source. Setup sizes recv_x from it (by
 * the actual counts, not the worst case); check compares against it.
 */
#include "dispatch.h"

#include <stdlib.h>
#include <string.h>

void dispatch_plan_free(dispatch_plan *p) {
    free(p->tables);
    free(p->recv_src_token);  /* recv_src_rank lives in the same block */
    memset(p, 0, sizeof *p);
}

int64_t dispatch_hccs_ring_total(const dispatch_plan *p, int d, int c, int l) {
    const dispatch_shape *sh = &p->sh;
    int64_t total = 0;
    for (int n = 0; n < sh->nodes; n++) {
        int s = n * sh->npus + l;
        total += p->channel_rank_count[((size_t)s * (size_t)sh->channels + (size_t)c) *
                                           (size_t)sh->num_ranks + (size_t)d];
    }
    return total;
}

/* npy:PATH as one file must hold exactly every rank's rows. */
static int check_npy_rows(const dispatch_plan *p, char *err, size_t errlen) {
    const dispatch_shape *sh = &p->sh;
    if (!routing_npy_file(sh->routing.text)) return 0;
    /* p may be a counting plan: only sh and token_base are filled */
    int64_t rows, cols;
    int per_rank;
    if (routing_npy_shape(&sh->routing, 0, &rows, &cols, &per_rank, err, errlen)) return -1;
    if (!per_rank && rows != p->token_base[sh->num_ranks]) {
        snprintf(err, errlen,
                 "--routing %s: the file has %lld rows but the %d ranks have %lld tokens in all "
                 "(--tokens); one file must hold every rank's rows in rank order",
                 sh->routing.text, (long long)rows, sh->num_ranks,
                 (long long)p->token_base[sh->num_ranks]);
        return -1;
    }
    return 0;
}

static int route(dispatch_plan *p, char *err, size_t errlen) {
    const dispatch_shape *sh = &p->sh;
    routing_shape rs = {.num_ranks = sh->num_ranks, .nodes = sh->nodes,
                        .npus_per_node = sh->npus, .experts = sh->experts, .topk = sh->topk};
    if (check_npy_rows(p, err, errlen)) return -1;
    for (int s = 0; s < sh->num_ranks; s++) {
        size_t at = (size_t)p->token_base[s] * (size_t)sh->topk;
        if (routing_generate_at(&sh->routing, &rs, sh->data_seed, s, p->token_base[s],
                                sh->tokens[s], p->topk_idx + at, p->topk_weights + at, err,
                                errlen))
            return -1;
    }
    return 0;
}

/* Layout of every source rank, token by token in order (the device does
 * the same per block and adds the blocks' prefixes). */
static void layout(dispatch_plan *p) {
    const dispatch_shape *sh = &p->sh;
    int R = sh->num_ranks, N = sh->nodes, E = sh->experts, C = sh->channels, K = sh->topk;
    int L = sh->local_experts;
    uint8_t node_hit[DISPATCH_MAX_RANKS];
    for (int s = 0; s < R; s++) {
        int32_t *per_rank = p->num_tokens_per_rank + (size_t)s * R;
        int32_t *per_node = p->num_tokens_per_rdma_rank + (size_t)s * N;
        int32_t *per_expert = p->num_tokens_per_expert + (size_t)s * E;
        int32_t *ch_rank = p->channel_rank_count + (size_t)s * C * R;
        int32_t *ch_node = p->channel_node_count + (size_t)s * C * N;
        for (int t = 0; t < sh->tokens[s]; t++) {
            size_t row = (size_t)(p->token_base[s] + t);
            const int32_t *ids = p->topk_idx + row * (size_t)K;
            uint8_t *in_rank = p->is_token_in_rank + row * (size_t)R;
            int32_t *idx = p->token_idx_in_rank + row * (size_t)R;
            int c = dispatch_token_channel(sh, t);
            memset(node_hit, 0, (size_t)N);
            for (int k = 0; k < K; k++) {
                if (ids[k] < 0) continue;
                per_expert[ids[k]]++;
                in_rank[ids[k] / L] = 1;
            }
            for (int d = 0; d < R; d++) {
                if (!in_rank[d]) {
                    idx[d] = -1;
                    continue;
                }
                idx[d] = per_rank[d]++;
                ch_rank[c * R + d]++;
                node_hit[d / sh->npus] = 1;
            }
            for (int n = 0; n < N; n++)
                if (node_hit[n]) {
                    per_node[n]++;
                    ch_node[c * N + n]++;
                }
        }
    }
}

/* Receive order of every destination: sources in rank order, then tokens. */
static int receive_order(dispatch_plan *p, char *err, size_t errlen) {
    const dispatch_shape *sh = &p->sh;
    int R = sh->num_ranks;
    int64_t all = 0;
    for (int d = 0; d < R; d++) {
        p->recv_base[d] = all;
        for (int s = 0; s < R; s++) {
            int32_t n = p->num_tokens_per_rank[(size_t)s * R + d];
            p->recv_from[(size_t)d * R + s] = n;
            p->recv_total[d] += n;
        }
        all += p->recv_total[d];
    }
    p->recv_base[R] = all;
    /* sized by the layout, so a block of its own: token ids, then ranks */
    size_t rows = (size_t)(all ? all : 1);
    p->recv_src_token = malloc(sizeof(int32_t) * 2 * rows);
    if (!p->recv_src_token) {
        snprintf(err, errlen, "--tokens: out of host memory for %lld received rows",
                 (long long)all);
        return -1;
    }
    p->recv_src_rank = p->recv_src_token + rows;
    for (int d = 0; d < R; d++) {
        int64_t row = p->recv_base[d];
        for (int s = 0; s < R; s++)
            for (int t = 0; t < sh->tokens[s]; t++)
                if (p->is_token_in_rank[(size_t)(p->token_base[s] + t) * R + d]) {
                    p->recv_src_token[row] = t;
                    p->recv_src_rank[row] = s;
                    row++;
                }
    }
    return 0;
}

/* Where the next table of `bytes` starts in block b (NULL while only
 * measuring): every table 8-byte aligned. */
static void *place(char *b, size_t *at, size_t bytes) {
    void *table = b ? b + *at : NULL;
    *at += (bytes + 7) & ~(size_t)7;
    return table;
}

/* Points every table sized by the shape into block b (NULL: only
 * measures); returns the bytes they take. */
static size_t place_tables(dispatch_plan *p, char *b) {
    const dispatch_shape *sh = &p->sh;
    size_t R = (size_t)sh->num_ranks, N = (size_t)sh->nodes, E = (size_t)sh->experts;
    size_t C = (size_t)sh->channels, K = (size_t)sh->topk;
    size_t T = (size_t)p->token_base[R] ? (size_t)p->token_base[R] : 1;
    size_t at = 0;
    p->topk_idx = place(b, &at, sizeof(int32_t) * T * K);
    p->topk_weights = place(b, &at, sizeof(float) * T * K);
    p->is_token_in_rank = place(b, &at, T * R);
    p->token_idx_in_rank = place(b, &at, sizeof(int32_t) * T * R);
    p->num_tokens_per_rank = place(b, &at, sizeof(int32_t) * R * R);
    p->num_tokens_per_rdma_rank = place(b, &at, sizeof(int32_t) * R * N);
    p->num_tokens_per_expert = place(b, &at, sizeof(int32_t) * R * E);
    p->channel_rank_count = place(b, &at, sizeof(int32_t) * R * C * R);
    p->channel_node_count = place(b, &at, sizeof(int32_t) * R * C * N);
    p->recv_from = place(b, &at, sizeof(int32_t) * R * R);
    p->recv_total = place(b, &at, sizeof(int64_t) * R);
    p->recv_base = place(b, &at, sizeof(int64_t) * (R + 1));
    return at;
}

int dispatch_plan_build(const dispatch_shape *sh, dispatch_plan *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    p->sh = *sh;
    for (int s = 0; s < sh->num_ranks; s++) p->token_base[s + 1] = p->token_base[s] + sh->tokens[s];
    /* one zeroed block for every table: measure, allocate, point */
    p->tables = calloc(place_tables(p, NULL), 1);
    if (!p->tables) {
        snprintf(err, errlen, "--tokens: out of host memory for the routing of %lld tokens",
                 (long long)p->token_base[sh->num_ranks]);
        return -1;
    }
    place_tables(p, p->tables);
    if (route(p, err, errlen)) {
        dispatch_plan_free(p);
        return -1;
    }
    layout(p);
    if (receive_order(p, err, errlen)) {
        dispatch_plan_free(p);
        return -1;
    }
    return 0;
}

/* The rows each rank receives, routed one source rank at a time and only
 * counted: what `npurr layout` needs, in the memory of one rank's top-k
 * instead of the whole plan's per-token tables. */
int dispatch_recv_counts(const dispatch_shape *sh, int64_t *recv_total, char *err, size_t errlen) {
    dispatch_plan p;
    memset(&p, 0, sizeof p);
    p.sh = *sh;
    int R = sh->num_ranks, K = sh->topk, L = sh->local_experts;
    for (int s = 0; s < R; s++) p.token_base[s + 1] = p.token_base[s] + sh->tokens[s];
    if (check_npy_rows(&p, err, errlen)) return -1;
    memset(recv_total, 0, sizeof *recv_total * (size_t)R);
    routing_shape rs = {.num_ranks = R, .nodes = sh->nodes, .npus_per_node = sh->npus,
                        .experts = sh->experts, .topk = K};
    size_t most = 1;
    for (int s = 0; s < R; s++)
        if ((size_t)sh->tokens[s] > most) most = (size_t)sh->tokens[s];
    int32_t *ids = malloc(sizeof *ids * most * (size_t)K);
    float *w = malloc(sizeof *w * most * (size_t)K);
    if (!ids || !w) {
        free(ids);
        free(w);
        snprintf(err, errlen, "--tokens: out of host memory for the routing of %zu tokens", most);
        return -1;
    }
    int rc = 0;
    for (int s = 0; !rc && s < R; s++) {
        rc = routing_generate_at(&sh->routing, &rs, sh->data_seed, s, p.token_base[s],
                                 sh->tokens[s], ids, w, err, errlen);
        for (int t = 0; !rc && t < sh->tokens[s]; t++) {
            uint8_t hit[DISPATCH_MAX_RANKS] = {0};
            for (int k = 0; k < K; k++) {
                int32_t e = ids[(size_t)t * (size_t)K + (size_t)k];
                if (e >= 0 && !hit[e / L]) {
                    hit[e / L] = 1;
                    recv_total[e / L]++;
                }
            }
        }
    }
    free(ids);
    free(w);
    return rc;
}
