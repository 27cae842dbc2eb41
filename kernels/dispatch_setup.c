/*
 * dispatch_setup.c - host side of a `-k dispatch-layered` run: buffers,
 * inputs, rings and named words, the launch, and the kernel descriptor.
 *
 * Per rank (engine_gm_alloc): x, x_scales, topk_idx, topk_weights, the
 * layout and notify tables, and per dispatch recv_x, recv_x_scales,
 * recv_topk_idx, recv_topk_weights, recv_src_meta, sized by the actual
 * receive counts of the routing (GM is backed only where touched, but a
 * production run touches all of recv_x). Symmetric (engine_sym_alloc):
 * the RDMA buffer and the HCCS buffer of seed 003 and the roles' words.
 * Every ring is declared, RDMA rings at level "rdma" (the analysis reads a
 * wait on their head as credit starvation) and HCCS rings at "hccs"; every
 * word a role waits on is named, so a deadlock report reads like a per-role
 * dump.
 */
#include "dispatch.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void dispatch_destroy(void *state) {
    dispatch_state *st = state;
    if (!st) return;
    dispatch_plan_free(&st->plan);
    free(st->tables);
    free(st->ring_ids);
    free(st);
}

static int alloc_rank(engine *e, int rank, uint64_t bytes, const char *name, gm_t *out, char *err,
                      size_t errlen) {
    uint64_t n = kit_align_up(bytes ? bytes : 1, UB_ALIGN);
    return npurr_gm_alloc(e, rank, n, name, out, err, errlen) == 0 ? 0 : -1;
}

static int alloc_sym(engine *e, uint64_t bytes, const char *name, gm_t *out, char *err,
                     size_t errlen) {
    uint64_t n = kit_align_up(bytes ? bytes : 1, UB_ALIGN);
    return npurr_sym_alloc(e, n, name, out, err, errlen) == 0 ? 0 : -1;
}

/* Carves every per-rank gm_t table of the args out of one block. */
static int carve_tables(dispatch_state *st, char *err, size_t errlen) {
    dispatch_args *a = &st->args;
    size_t R = (size_t)a->sh.num_ranks;
    gm_t **fixed[] = {&a->x, &a->x_scales, &a->topk_idx, &a->topk_weights, &a->layout_counts,
                      &a->part_rank, &a->is_token_in_rank, &a->token_idx_in_rank,
                      &a->notify_send, &a->notify_recv, &a->notify_out,
                      &a->a2_send, &a->a2_recv, &a->a2_scratch, &a->a2_tasks};
    size_t nfixed = sizeof fixed / sizeof fixed[0];
    size_t count = (nfixed + 5 * DISPATCH_MAX_DISPATCHES) * R;
    st->tables = calloc(count, sizeof(gm_t));
    if (!st->tables) {
        snprintf(err, errlen, "dispatch setup: out of host memory");
        return -1;
    }
    gm_t *next = st->tables;
    for (size_t i = 0; i < nfixed; i++, next += R) *fixed[i] = next;
    for (int d = 0; d < DISPATCH_MAX_DISPATCHES; d++) {
        a->recv_x[d] = next; next += R;
        a->recv_x_scales[d] = next; next += R;
        a->recv_topk_idx[d] = next; next += R;
        a->recv_topk_weights[d] = next; next += R;
        a->recv_src_meta[d] = next; next += R;
    }
    return 0;
}

/* Zeros: deep_ep.cpp allocates the notify blob with at::zeros, and npurr
 * fills only its count sections (dispatch_notify_a2.c). Generated, the
 * padded sections move as references instead of pages. */
static void zero_row(const void *params, uint64_t row, uint8_t *out) {
    (void)params;
    (void)row;
    memset(out, 0, 4);
}

/* --notify a2: the blob, recv_data, the index outputs and the task list. */
static int alloc_a2_rank(engine *e, dispatch_args *a, int r, char *err, size_t errlen) {
    const dispatch_a2_layout *al = &a->al;
    uint64_t R = (uint64_t)a->sh.num_ranks, blob = (uint64_t)al->len * 4;
    return alloc_rank(e, r, blob, "notify_a2_send", &a->a2_send[r], err, errlen) ||
           npurr_gm_generate(e, a->a2_send[r], al->len, 4, zero_row, NULL, 0, err, errlen) !=
               0 ||
           alloc_rank(e, r, R * blob, "notify_a2_recv", &a->a2_recv[r], err, errlen) ||
           alloc_rank(e, r, al->scratch_bytes, "notify_a2_index", &a->a2_scratch[r], err,
                      errlen) ||
           alloc_rank(e, r, (uint64_t)a->sh.nodes * sizeof(batch_write_task), "notify_a2_tasks",
                      &a->a2_tasks[r], err, errlen);
}

static int alloc_per_rank(engine *e, dispatch_state *st, char *err, size_t errlen) {
    const dispatch_plan *p = &st->plan;
    const dispatch_shape *sh = &p->sh;
    dispatch_args *a = &st->args;
    uint64_t R = (uint64_t)sh->num_ranks, K = (uint64_t)sh->topk, S4 = (uint64_t)sh->num_scales * 4;
    for (int r = 0; r < sh->num_ranks; r++) {
        uint64_t T = (uint64_t)sh->tokens[r], n = (uint64_t)p->recv_total[r];
        if (alloc_rank(e, r, T * sh->x_row_bytes, "x", &a->x[r], err, errlen) ||
            alloc_rank(e, r, T * S4, "x_scales", &a->x_scales[r], err, errlen) ||
            alloc_rank(e, r, T * K * 4, "topk_idx", &a->topk_idx[r], err, errlen) ||
            alloc_rank(e, r, T * K * 4, "topk_weights", &a->topk_weights[r], err, errlen) ||
            alloc_rank(e, r, (uint64_t)a->cl.padded * 4, "layout_counts", &a->layout_counts[r],
                       err, errlen) ||
            alloc_rank(e, r, (uint64_t)sh->block_dim * kit_align_up(R, 8) * 4, "part_rank",
                       &a->part_rank[r], err, errlen) ||
            alloc_rank(e, r, T * R, "is_token_in_rank", &a->is_token_in_rank[r], err, errlen) ||
            alloc_rank(e, r, T * R * 4, "token_idx_in_rank", &a->token_idx_in_rank[r], err,
                       errlen) ||
            alloc_rank(e, r, R * a->nl.row_stride, "notify_send", &a->notify_send[r], err,
                       errlen) ||
            alloc_rank(e, r, R * a->nl.row_stride, "notify_recv", &a->notify_recv[r], err,
                       errlen) ||
            alloc_rank(e, r, (uint64_t)a->nl.padded * 4, "notify_out", &a->notify_out[r], err,
                       errlen))
            return -1;
        if (sh->notify_a2 && alloc_a2_rank(e, a, r, err, errlen)) return -1;
        for (int d = 0; d < sh->dispatches; d++)
            if (alloc_rank(e, r, n * sh->x_row_bytes, "recv_x", &a->recv_x[d][r], err, errlen) ||
                alloc_rank(e, r, n * S4, "recv_x_scales", &a->recv_x_scales[d][r], err, errlen) ||
                alloc_rank(e, r, n * K * 4, "recv_topk_idx", &a->recv_topk_idx[d][r], err,
                           errlen) ||
                alloc_rank(e, r, n * K * 4, "recv_topk_weights", &a->recv_topk_weights[d][r], err,
                           errlen) ||
                alloc_rank(e, r, n * DISPATCH_RECV_SRC_INTS * 4, "recv_src_meta",
                           &a->recv_src_meta[d][r], err, errlen))
                return -1;
    }
    return 0;
}

/* --notify a2: windowOut and the IPC share window, one blob slot per
 * rank each, and the share window's flags. */
static int alloc_a2_symmetric(engine *e, dispatch_args *a, char *err, size_t errlen) {
    uint64_t R = (uint64_t)a->sh.num_ranks, N = (uint64_t)a->sh.nodes;
    return alloc_sym(e, R * a->al.slot_bytes, "notify_a2_window_out", &a->a2_window_out, err,
                     errlen) ||
           alloc_sym(e, R * a->al.slot_bytes, "notify_a2_share", &a->a2_share, err, errlen) ||
           alloc_sym(e, N * R * DISPATCH_A2_FLAG_BYTES, "notify_a2_flags", &a->a2_flags, err,
                     errlen);
}

static int alloc_symmetric(engine *e, dispatch_args *a, char *err, size_t errlen) {
    const dispatch_shape *sh = &a->sh;
    if (sh->notify_a2 && alloc_a2_symmetric(e, a, err, errlen)) return -1;
    uint64_t C = (uint64_t)sh->channels, N = (uint64_t)sh->nodes, P = (uint64_t)sh->npus;
    uint64_t S = sh->token_bytes;
    uint64_t rdma = C * N * (uint64_t)sh->rdma_ring_tokens * S;
    uint64_t hccs = C * P * (uint64_t)sh->hccs_ring_tokens * S;
    return alloc_sym(e, rdma, "rdma_channel_data", &a->rdma_channel_data, err, errlen) ||
           alloc_sym(e, rdma, "rdma_channel_data_send", &a->rdma_channel_data_send, err, errlen) ||
           alloc_sym(e, C * N * DISPATCH_META_BYTES, "rdma_channel_meta", &a->rdma_channel_meta,
                     err, errlen) ||
           alloc_sym(e, C * N * DISPATCH_META_BYTES, "rdma_channel_meta_send",
                     &a->rdma_channel_meta_send, err, errlen) ||
           alloc_sym(e, C * N * 8, "rdma_channel_head", &a->rdma_channel_head, err, errlen) ||
           alloc_sym(e, C * N * 8, "rdma_channel_tail", &a->rdma_channel_tail, err, errlen) ||
           alloc_sym(e, hccs, "hccs_channel_x", &a->hccs_channel_x, err, errlen) ||
           alloc_sym(e, C * P * N * 4, "hccs_channel_prefix_start", &a->hccs_channel_prefix_start,
                     err, errlen) ||
           alloc_sym(e, C * P * N * 4, "hccs_channel_prefix_end", &a->hccs_channel_prefix_end, err,
                     errlen) ||
           alloc_sym(e, C * P * 4, "hccs_channel_head", &a->hccs_channel_head, err, errlen) ||
           alloc_sym(e, C * P * 4, "hccs_channel_tail", &a->hccs_channel_tail, err, errlen) ||
           alloc_sym(e, C * N * 4, "rdma_send_channel_lock", &a->rdma_send_channel_lock, err,
                     errlen) ||
           alloc_sym(e, C * N * 8, "rdma_send_channel_tail", &a->rdma_send_channel_tail, err,
                     errlen) ||
           alloc_sym(e, (uint64_t)sh->coordinators * 8, "rdma_coord_doorbell", &a->coord_doorbell,
                     err, errlen) ||
           alloc_sym(e, C * 8, "rdma_recv_doorbell", &a->rdma_recv_doorbell, err, errlen) ||
           alloc_sym(e, C * N * P * 8, "forwarder_head", &a->forwarder_head, err, errlen) ||
           alloc_sym(e, C * N * 8, "rdma_channel_meta_ack", &a->rdma_channel_meta_ack, err,
                     errlen) ||
           alloc_sym(e, (uint64_t)sh->fwd_coordinators * 8, "fwd_coord_doorbell",
                     &a->fwd_coord_doorbell, err, errlen) ||
           alloc_sym(e, (uint64_t)sh->receivers * 8, "hccs_recv_doorbell", &a->hccs_recv_doorbell,
                     err, errlen);
}

static int name(engine *e, gm_t at, uint32_t width, char *err, size_t errlen, const char *fmt,
                ...) __attribute__((format(printf, 6, 7)));
static int name(engine *e, gm_t at, uint32_t width, char *err, size_t errlen, const char *fmt,
                ...) {
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (npurr_name_word(e, at, width, OBJ_WORD, buf) == 0) {
        snprintf(err, errlen, "dispatch setup: the engine refused to name %s", buf);
        return -1;
    }
    return 0;
}

/* Rings and the words the roles wait on, on every rank. */
/* Every RDMA and HCCS ring, to the engine: rdma first, then hccs, so
 * their object ids follow the order of the tables they index. */
static int declare_rings(engine *e, dispatch_state *st, char *err, size_t errlen) {
    dispatch_args *a = &st->args;
    const dispatch_shape *sh = &a->sh;
    int R = sh->num_ranks, C = sh->channels, N = sh->nodes, P = sh->npus;
    size_t nr = (size_t)R * (size_t)C * (size_t)N, nh = (size_t)R * (size_t)C * (size_t)P;
    st->ring_ids = calloc(nr + nh, sizeof(uint32_t));
    if (!st->ring_ids) {
        snprintf(err, errlen, "dispatch setup: out of host memory");
        return -1;
    }
    a->rdma_ring = st->ring_ids;
    a->hccs_ring = st->ring_ids + nr;
    char buf[96];
    for (int s = 0; s < R; s++)
        for (int c = 0; c < C; c++)
            for (int n = 0; n < N; n++) {
                int f = n * P + s % P;
                uint64_t w = (uint64_t)c * (uint64_t)N;
                snprintf(buf, sizeof buf, "rdma_channel[c%d][%d->%d]", c, s, f);
                uint32_t id = npurr_declare_ring(
                    e, buf, RING_RDMA, dispatch_word(a->rdma_channel_head, s, w + (uint64_t)n, 8),
                    dispatch_word(a->rdma_channel_tail, f, w + (uint64_t)(s / P), 8), 8,
                    (uint64_t)sh->rdma_ring_tokens, s, f);
                if (!id) goto refused;
                a->rdma_ring[((size_t)s * (size_t)C + (size_t)c) * (size_t)N + (size_t)n] = id;
            }
    for (int d = 0; d < R; d++)
        for (int c = 0; c < C; c++)
            for (int l = 0; l < P; l++) {
                int f = (d / P) * P + l;
                uint64_t w = (uint64_t)c * (uint64_t)P + (uint64_t)l;
                snprintf(buf, sizeof buf, "hccs_channel[c%d][%d->%d]", c, f, d);
                uint32_t id = npurr_declare_ring(
                    e, buf, RING_HCCS, dispatch_word(a->hccs_channel_head, d, w, 4),
                    dispatch_word(a->hccs_channel_tail, d, w, 4), 4,
                    (uint64_t)sh->hccs_ring_tokens, f, d);
                if (!id) goto refused;
                a->hccs_ring[((size_t)d * (size_t)C + (size_t)c) * (size_t)P + (size_t)l] = id;
            }
    return 0;
refused:
    snprintf(err, errlen, "dispatch setup: the engine refused to declare ring %s", buf);
    return -1;
}

/* The words of rank r that waits and reports name: channel locks, tails,
 * metadata ends and acks, forwarder heads, doorbells. */
static int name_rank_words(engine *e, const dispatch_args *a, int r, char *err, size_t errlen) {
    const dispatch_shape *sh = &a->sh;
    int C = sh->channels, N = sh->nodes, P = sh->npus;
    for (int c = 0; c < C; c++) {
        for (int n = 0; n < N; n++) {
            uint64_t w = (uint64_t)c * (uint64_t)N + (uint64_t)n;
            gm_t meta_end = gm_add(gm_on_rank(a->rdma_channel_meta, r),
                                   (int64_t)(w * DISPATCH_META_BYTES + (DISPATCH_META_INTS - 1) * 4));
            if (name(e, dispatch_word(a->rdma_send_channel_lock, r, w, 4), 4, err, errlen,
                     "rdma_send_channel_lock[c%d][node%d]@%d", c, n, r) ||
                name(e, dispatch_word(a->rdma_send_channel_tail, r, w, 8), 8, err, errlen,
                     "rdma_send_channel_tail[c%d][node%d]@%d", c, n, r) ||
                name(e, meta_end, 4, err, errlen, "rdma_channel_meta[c%d][node%d].end@%d", c, n,
                     r) ||
                name(e, dispatch_word(a->rdma_channel_meta_ack, r, w, 8), 8, err, errlen,
                     "rdma_channel_meta_ack[c%d][node%d]@%d", c, n, r))
                return -1;
            for (int g = 0; g < P; g++)
                if (name(e, dispatch_word(a->forwarder_head, r, w * (uint64_t)P + (uint64_t)g, 8),
                         8, err, errlen, "forwarder_head[c%d][node%d][g%d]@%d", c, n, g, r))
                    return -1;
        }
        if (name(e, dispatch_word(a->rdma_recv_doorbell, r, (uint64_t)c, 8), 8, err, errlen,
                 "rdma_recv_doorbell[c%d]@%d", c, r))
            return -1;
        for (int l = 0; l < P; l++)
            for (int n = 0; n < N; n++) {
                uint64_t w = ((uint64_t)c * (uint64_t)P + (uint64_t)l) * (uint64_t)N + (uint64_t)n;
                if (name(e, dispatch_word(a->hccs_channel_prefix_end, r, w, 4), 4, err, errlen,
                         "hccs_channel_prefix_end[c%d][%d][node%d]@%d", c, (r / P) * P + l, n,
                         r))
                    return -1;
            }
    }
    for (int k = 0; k < sh->coordinators; k++)
        if (name(e, dispatch_word(a->coord_doorbell, r, (uint64_t)k, 8), 8, err, errlen,
                 "rdma_coord_doorbell[%d]@%d", k, r))
            return -1;
    for (int k = 0; k < sh->fwd_coordinators; k++)
        if (name(e, dispatch_word(a->fwd_coord_doorbell, r, (uint64_t)k, 8), 8, err, errlen,
                 "fwd_coord_doorbell[%d]@%d", k, r))
            return -1;
    for (int k = 0; k < sh->receivers; k++)
        if (name(e, dispatch_word(a->hccs_recv_doorbell, r, (uint64_t)k, 8), 8, err, errlen,
                 "hccs_recv_doorbell[%d]@%d", k, r))
            return -1;
    return 0;
}

static int declare(engine *e, dispatch_state *st, char *err, size_t errlen) {
    if (declare_rings(e, st, err, errlen)) return -1;
    for (int r = 0; r < st->args.sh.num_ranks; r++)
        if (name_rank_words(e, &st->args, r, err, errlen)) return -1;
    return 0;
}

static int fill_inputs(engine *e, dispatch_state *st, char *err, size_t errlen) {
    const dispatch_plan *p = &st->plan;
    const dispatch_shape *sh = &p->sh;
    const dispatch_args *a = &st->args;
    uint64_t K = (uint64_t)sh->topk;
    for (int r = 0; r < sh->num_ranks; r++) {
        uint64_t T = (uint64_t)sh->tokens[r];
        if (T == 0) continue;
        if (dispatch_generate_x(e, a->x[r], sh, r, err, errlen)) return -1;
        int32_t *idx = npurr_gm_host(e, a->topk_idx[r], T * K * 4);
        float *w = npurr_gm_host(e, a->topk_weights[r], T * K * 4);
        float *sc = sh->num_scales ? npurr_gm_host(e, a->x_scales[r], T * sh->num_scales * 4) : NULL;
        if (!idx || !w || (sh->num_scales && !sc)) {
            snprintf(err, errlen, "dispatch setup: no host view of rank %d's inputs", r);
            return -1;
        }
        size_t at = (size_t)p->token_base[r] * (size_t)K;
        memcpy(idx, p->topk_idx + at, T * K * 4);
        memcpy(w, p->topk_weights + at, T * K * 4);
        for (uint64_t t = 0; sc && t < T; t++)
            dispatch_fill_scales(sc + t * (uint64_t)sh->num_scales, sh, r, (int)t);
    }
    return 0;
}

/* The faults need something to break; say so rather than run a clean pass. */
static int choose_injection(dispatch_state *st, char *err, size_t errlen) {
    const dispatch_plan *p = &st->plan;
    const dispatch_shape *sh = &p->sh;
    dispatch_args *a = &st->args;
    if (sh->inject == DISPATCH_INJECT_LOST_TAIL) {
        /* The first ring of rank 0 towards another node that carries tokens. */
        for (int c = 0; c < sh->channels; c++)
            for (int n = 1; n < sh->nodes; n++)
                if (dispatch_ring_total(p, 0, c, n) > 0) {
                    a->inject_rank = 0;
                    a->inject_c = c;
                    a->inject_n = n;
                    return 0;
                }
        snprintf(err, errlen,
                 "--inject lost-tail: rank 0 sends no token to another node, so there is no "
                 "remote tail update to lose (change --routing or --tokens)");
        return -1;
    }
    if (sh->inject == DISPATCH_INJECT_CREDIT_LEAK) {
        for (int s = 0; s < sh->num_ranks; s++)
            for (int c = 0; c < sh->channels; c++)
                for (int n = 0; n < sh->nodes; n++)
                    if (dispatch_ring_total(p, s, c, n) % sh->credit_batch) return 0;
        snprintf(err, errlen,
                 "--inject credit-leak: every ring's token count is a multiple of --credit-batch "
                 "%d, so no ring ends with a partial batch to leak (change --credit-batch or "
                 "--tokens)",
                 sh->credit_batch);
        return -1;
    }
    return 0;
}

static int dispatch_setup(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    dispatch_state *st = kit_state_new(sizeof *st, "dispatch setup", state, err, errlen);
    if (!st) return -1;
    dispatch_shape sh;
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    if (dispatch_shape_from_topology(o, &topo, &sh, err, errlen) ||
        dispatch_plan_build(&sh, &st->plan, err, errlen)) {
        dispatch_destroy(st);
        return -1;
    }
    dispatch_args *a = &st->args;
    a->sh = sh;
    dispatch_count_offsets(&sh, &a->cl);
    dispatch_notify_offsets(&sh, &a->nl);
    dispatch_a2_offsets(&sh, &a->al);
    if (choose_injection(st, err, errlen) || carve_tables(st, err, errlen) ||
        alloc_per_rank(e, st, err, errlen) || alloc_symmetric(e, a, err, errlen) ||
        declare(e, st, err, errlen) || fill_inputs(e, st, err, errlen) ||
        npurr_launch(e, "dispatch_layered", dispatch_kernel, a, sh.block_dim, CORE_AIV, err,
                      errlen) != 0) {
        dispatch_destroy(st);
        return -1;
    }
    *state = st;
    return 0;
}

/* Tokens the HCCS receivers have consumed (their ring heads count every
 * token of every dispatch) of all the run will receive. */
static int dispatch_progress(engine *e, const void *state, uint64_t *done, uint64_t *total,
                             const char **unit) {
    const dispatch_state *st = state;
    const dispatch_shape *sh = &st->plan.sh;
    uint64_t want = 0, got = 0;
    for (int d = 0; d < sh->num_ranks; d++) {
        want += (uint64_t)st->plan.recv_total[d];
        for (uint64_t w = 0; w < (uint64_t)sh->channels * (uint64_t)sh->npus; w++) {
            int32_t head = 0;
            if (npurr_gm_read(e, dispatch_word(st->args.hccs_channel_head, d, w, 4), &head, 4))
                return -1;
            got += head > 0 ? (uint64_t)head : 0;
        }
    }
    *done = got;
    *total = want * (uint64_t)sh->dispatches;
    *unit = "tokens received";
    return *total ? 0 : -1;
}

/* The notify phase and the data phase, as sgl-kernel-npu's A2 layered
 * dispatch runs them: two operators, NotifyDispatchA2 then DispatchNormalA2. */
static const kernel_phase dispatch_phases[] = {
    {"notify", {"NotifyDispatch", NULL}, {"NotifyDispatch", NULL}},
    {"dispatch", {"RDMASender", "RDMACoordinator", "RDMA2HCCSForwarder", "ForwarderCoordinator",
                  "HCCSReceiver", NULL},
     {"DispatchNormalA2", "CamMoeDispatchNormal", NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_dispatch_layered = {
    .name = "dispatch-layered",
    .summary = "MoE layered normal dispatch (seeds 001/003): RDMA rings between nodes, HCCS "
               "rings inside",
    .options = dispatch_options, .setup = dispatch_setup, .check = dispatch_check,
    .layout = dispatch_layout, .destroy = dispatch_destroy, .progress = dispatch_progress,
    .estimate = dispatch_estimate,
    .check_splits = 1,
    .phases = dispatch_phases,
};
