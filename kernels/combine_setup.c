/*
 * combine_setup.c - host side of a combine-sender run: buffers, inputs,
 * rings, launches, and the two kernel descriptors the CLI lists.
 *
 * Per rank (engine_gm_alloc): x, offset_table, length_table, x_sorted
 * (scheme 1 only), head_mirror, recv, recv_meta, expert_ids, expand_idx,
 * topk_weights, expert_window_offset, out. Symmetric (engine_sym_alloc, the
 * same offset on every rank): the rings and their control blocks, so a
 * sender finds its ring on any destination with gm_on_rank. Every buffer is
 * followed by COMBINE_GUARD_BYTES of a known pattern that the check verifies.
 *
 * Two launches per rank: the senders (sender_cores AIV) and the receivers
 * (one AIV per source rank), so the receivers' SyncAll counts only them.
 */
#include "combine.h"

#include <stdlib.h>
#include <string.h>

int combine_fill_i32(engine *e, gm_t at, const int32_t *src, size_t n) {
    if (n == 0) return 0;
    void *h = npurr_gm_host(e, at, n * 4);
    if (!h) return -1;
    memcpy(h, src, n * 4);
    return 0;
}

void combine_free_state(combine_plan *plan, kit_guards *guards, void *st) {
    combine_plan_free(plan);
    kit_guards_free(guards);
    free(st);
}

void combine_destroy(void *state) {
    combine_state *st = state;
    if (st) combine_free_state(&st->plan, &st->guards, st);
}

static int alloc_per_rank(engine *e, combine_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    combine_args *a = &st->args;
    size_t R = (size_t)sh->num_ranks, L = (size_t)sh->local_experts, E = (size_t)sh->experts;
    size_t T = (size_t)sh->tokens, K = (size_t)sh->topk;
    uint64_t rb = sh->row_bytes;
    for (size_t r = 0; r < R; r++) {
        kit_buffer bufs[] = {
            {(uint64_t)p->x_rows[r] * rb, "combine.x", 1, &a->x[r]},
            {L * R * 4, "combine.offset_table", 1, &a->offset_table[r]},
            {L * R * 4, "combine.length_table", 1, &a->length_table[r]},
            {R * 32, "combine.head_mirror", 1, &a->head_mirror[r]},
            {(uint64_t)p->recv_total[r] * rb, "combine.recv", 1, &a->recv[r]},
            {2 * R * 4, "combine.recv_meta", 1, &a->recv_meta[r]},
            {T * K * 4, "combine.expert_ids", 1, &a->expert_ids[r]},
            {T * K * 4, "combine.expand_idx", 1, &a->expand_idx[r]},
            {T * K * 4, "combine.topk_weights", 1, &a->topk_weights[r]},
            {E * 4, "combine.expert_window_offset", 1, &a->expert_window_offset[r]},
            {T * rb, "combine.out", 1, &a->out[r]},
            /* scheme 1 only: x reordered rank-major */
            {(uint64_t)p->x_rows[r] * rb, "combine.x_sorted", 1, &a->x_sorted[r]},
        };
        size_t n = sizeof bufs / sizeof bufs[0] - (sh->scheme == COMBINE_SCHEME_INPLACE ? 0 : 1);
        if (kit_alloc_all(e, &st->guards, (int)r, bufs, n, err, errlen) ||
            kit_name_rows(e, a->x[r], "combine.x", NPURR_DT_BF16, (uint64_t)p->x_rows[r],
                          (uint64_t)sh->hidden, err, errlen) ||
            kit_name_rows(e, a->out[r], "combine.out", NPURR_DT_BF16, T, (uint64_t)sh->hidden,
                          err, errlen))
            return -1;
    }
    return 0;
}

/* The ring from src to s: its guard, the unused bytes of its control block
 * (never written: zero stays zero) and its declaration to the engine. */
static int setup_ring(engine *e, combine_state *st, size_t src, size_t s, char *err,
                      size_t errlen) {
    combine_args *a = &st->args;
    gm_t ring_guard = gm_add(gm_on_rank(a->ring_base, (int)s),
                             (int64_t)(src * a->ring_stride + a->ring_bytes));
    gm_t block = gm_add(gm_on_rank(a->ctrl_base, (int)s), (int64_t)(src * COMBINE_CTRL_STRIDE));
    if (kit_guard_fill(e, &st->guards, ring_guard, COMBINE_GUARD_BYTES, "combine.ring", err,
                       errlen) ||
        kit_guard_expect(&st->guards, gm_add(block, 8), COMBINE_CTRL_HEAD - 8, 0,
                         "combine.ctrl (between tail and head)", err, errlen) ||
        kit_guard_expect(&st->guards, gm_add(block, COMBINE_CTRL_HEAD + 8),
                         COMBINE_CTRL_STRIDE - COMBINE_CTRL_HEAD - 8, 0,
                         "combine.ctrl (after head)", err, errlen))
        return -1;
    char name[64];
    snprintf(name, sizeof name, "combine_ring[%zu->%zu]", src, s);
    a->ring_id[src][s] = npurr_declare_ring(e, name, RING_HCCS, gm_add(block, COMBINE_CTRL_HEAD),
                                             gm_add(block, COMBINE_CTRL_TAIL), 8, a->ring_bytes,
                                             (int)src, (int)s);
    if (a->ring_id[src][s] == 0) {
        snprintf(err, errlen, "combine setup: the engine refused to declare %s", name);
        return -1;
    }
    return 0;
}

int combine_sym_area(engine *e, kit_guards *g, int num_ranks, uint64_t bytes, const char *what,
                     gm_t *base, char *err, size_t errlen) {
    if (npurr_sym_alloc(e, bytes + COMBINE_GUARD_BYTES, what, base, err, errlen) != 0)
        return -1;
    for (int s = 0; s < num_ranks; s++)
        if (kit_guard_fill(e, g, gm_add(gm_on_rank(*base, s), (int64_t)bytes),
                           COMBINE_GUARD_BYTES, what, err, errlen))
            return -1;
    return 0;
}

/* Rings and control blocks, symmetric. */
static int setup_rings(engine *e, combine_state *st, char *err, size_t errlen) {
    combine_args *a = &st->args;
    size_t R = (size_t)a->num_ranks;
    uint64_t ring_area = R * a->ring_stride;
    if (npurr_sym_alloc(e, ring_area, "combine.rings", &a->ring_base, err, errlen) != 0 ||
        combine_sym_area(e, &st->guards, a->num_ranks, R * COMBINE_CTRL_STRIDE, "combine.ctrl",
                         &a->ctrl_base, err, errlen))
        return -1;
    for (size_t s = 0; s < R; s++)
        for (size_t src = 0; src < R; src++)
            if (setup_ring(e, st, src, s, err, errlen)) return -1;
    return 0;
}

static int fill_inputs(engine *e, combine_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    const combine_args *a = &st->args;
    size_t R = (size_t)sh->num_ranks, L = (size_t)sh->local_experts, E = (size_t)sh->experts;
    size_t T = (size_t)sh->tokens, K = (size_t)sh->topk;
    int32_t *meta = malloc(sizeof(int32_t) * 2 * R);
    if (!meta) {
        snprintf(err, errlen, "combine setup: out of host memory");
        return -1;
    }
    for (size_t r = 0; r < R; r++) {
        for (size_t q = 0; q < R; q++) {
            meta[q] = p->recv_rows[r * R + q];
            meta[R + q] = p->recv_row_offset[r * R + q];
        }
        if (combine_fill_i32(e, a->offset_table[r], p->offset_table + r * L * R, L * R) ||
            combine_fill_i32(e, a->length_table[r], p->length_table + r * L * R, L * R) ||
            combine_fill_i32(e, a->recv_meta[r], meta, 2 * R) ||
            combine_fill_i32(e, a->expert_ids[r], p->expert_ids + r * T * K, T * K) ||
            combine_fill_i32(e, a->expand_idx[r], p->expand_idx + r * T * K, T * K) ||
            combine_fill_i32(e, a->topk_weights[r],
                             (const int32_t *)(const void *)(p->topk_weights + r * T * K),
                             T * K) ||
            combine_fill_i32(e, a->expert_window_offset[r], p->expert_window_offset + r * E, E)) {
            free(meta);
            snprintf(err, errlen, "combine setup: no host view of rank %zu's tables", r);
            return -1;
        }
    }
    free(meta);
    return combine_fill_x(e, st, err, errlen);
}

int combine_fill_x(engine *e, const combine_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    const combine_args *a = &st->args;
    size_t R = (size_t)sh->num_ranks, L = (size_t)sh->local_experts;
    size_t T = (size_t)sh->tokens, K = (size_t)sh->topk;
    /* x on each expert rank p: row offset_table[p][le][s] + expand_idx holds
     * the expert output for token t, slot k of rank s. */
    uint64_t rb = sh->row_bytes;
    for (size_t s = 0; s < R; s++)
        for (size_t i = 0; i < T * K; i++) {
            int32_t e_id = p->expert_ids[s * T * K + i];
            if (e_id < 0) continue;
            size_t q = (size_t)e_id / L, le = (size_t)e_id % L;
            int64_t row = p->offset_table[(q * L + le) * R + s] + p->expand_idx[s * T * K + i];
            if (combine_generate_row(e, gm_add(a->x[q], row * (int64_t)rb), sh, (int)s,
                                     (int)(i / K), (int)(i % K), (int)q, err, errlen))
                return -1;
        }
    return 0;
}

void combine_args_init(combine_args *a, const combine_shape *sh) {
    a->num_ranks = sh->num_ranks;
    a->num_local_experts = sh->local_experts;
    a->num_experts = sh->experts;
    a->tokens = sh->tokens;
    a->topk = sh->topk;
    a->hidden = sh->hidden;
    a->row_bytes = sh->row_bytes;
}

combine_state *combine_state_begin(engine *e, const kernel_opts *o, int scheme, const char *owner,
                                   void **state, char *err, size_t errlen) {
    combine_state *st = kit_state_new(sizeof *st, owner, state, err, errlen);
    if (!st) return NULL;
    kit_guards_init(&st->guards, owner, COMBINE_GUARD_BYTE);
    combine_shape sh;
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    if (combine_shape_from_topology(o, scheme, &topo, &sh, err, errlen) ||
        combine_plan_build(&sh, &st->plan, err, errlen)) {
        combine_destroy(st);
        return NULL;
    }
    combine_args_init(&st->args, &sh);
    return st;
}

static int combine_setup(engine *e, const kernel_opts *o, int scheme, void **state, char *err,
                  size_t errlen) {
    combine_state *st = combine_state_begin(e, o, scheme, "combine setup", state, err, errlen);
    if (!st) return -1;
    const combine_shape sh = st->plan.sh;
    combine_args *a = &st->args;
    a->staging_bytes = sh.staging_bytes;
    a->table_ub_bytes = (uint32_t)kit_align_up(
        (uint64_t)sh.local_experts * (uint64_t)sh.num_ranks * 4, UB_ALIGN);
    a->ring_bytes = sh.ring_bytes;
    a->ring_stride = sh.ring_bytes + COMBINE_GUARD_BYTES;
    a->inject_no_mte3_wait = sh.inject_no_mte3_wait;
    int inplace = scheme == COMBINE_SCHEME_INPLACE;
    int failed =
        alloc_per_rank(e, st, err, errlen) || setup_rings(e, st, err, errlen) ||
        fill_inputs(e, st, err, errlen) ||
        npurr_launch(e, inplace ? "combine_sender_inplace" : "combine_sender",
                   inplace ? combine_sender_inplace_kernel : combine_sender_kernel, a,
                   sh.sender_cores, CORE_AIV, err, errlen) != 0 ||
        npurr_launch(e, "combine_receiver", combine_receiver_kernel, a, sh.num_ranks, CORE_AIV,
                   err, errlen) != 0;
    return kit_setup_finish(failed, st, combine_destroy, state);
}

/* ------------------------------------------------------------ descriptors */

static int setup_gather(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    return combine_setup(e, o, COMBINE_SCHEME_GATHER, state, err, errlen);
}
static int setup_inplace(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    return combine_setup(e, o, COMBINE_SCHEME_INPLACE, state, err, errlen);
}
static int layout_gather(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                         size_t errlen) {
    return combine_layout(o, COMBINE_SCHEME_GATHER, topo, out, err, errlen);
}
static int layout_inplace(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                          size_t errlen) {
    return combine_layout(o, COMBINE_SCHEME_INPLACE, topo, out, err, errlen);
}

static int estimate_gather(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est,
                           char *err, size_t errlen) {
    return combine_estimate(o, COMBINE_SCHEME_GATHER, topo, est, err, errlen);
}
static int estimate_inplace(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est,
                            char *err, size_t errlen) {
    return combine_estimate(o, COMBINE_SCHEME_INPLACE, topo, est, err, errlen);
}

/* Sender and receiver run side by side: one phase. */
static const kernel_phase combine_phases[] = {
    {"combine", {"CombineReorder", "CombineSender", "CombineReceiver", "CombineSum", NULL}, {NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_combine_sender = {
    .name = "combine-sender",
    .summary = "MoE combine (seed 000 scheme 2): gather-pack x through UB into HCCS rings, then "
               "weighted sum",
    .options = combine_options, .setup = setup_gather, .check = combine_check,
    .layout = layout_gather, .destroy = combine_destroy, .estimate = estimate_gather,
    .phases = combine_phases,
};

const kernel_desc kernel_combine_sender_inplace = {
    .name = "combine-sender-inplace",
    .summary = "MoE combine (seed 000 scheme 1): reorder x to rank-major in GM, copy out, then "
               "weighted sum",
    .options = combine_options, .setup = setup_inplace, .check = combine_check,
    .layout = layout_inplace, .destroy = combine_destroy, .estimate = estimate_inplace,
    .phases = combine_phases,
};
