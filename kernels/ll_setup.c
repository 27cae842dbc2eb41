/*
 * ll_setup.c - what the low-latency kernels' setups share: the host state
 * (shape, plan, guards), the per-rank buffers and inputs, symmetric areas
 * with a guard, and destroy.
 *
 * Per rank (kit_alloc_all, each output followed by a guard): the inputs x,
 * expertIds and the top-k weights (expertScales); the plan's counts the
 * dispatch's vector reductions yield (slot_count: expandIdx per slot,
 * expert_count: this source's slots per expert; ll.h says why they are
 * inputs); the per-core workspace; the outputs expand_x, dynamic_scales,
 * expand_idx, epRecvCount, expertTokenNum, the FFN's expert_out and the
 * combined tokens. Each kernel's setup adds its symmetric windows and
 * launches (ll_single_setup.c, ll_layered_setup.c).
 */
#include "ll.h"

#include <stdlib.h>
#include <string.h>

void ll_destroy(void *state) {
    ll_state *st = state;
    if (!st) return;
    fm_plan_free(&st->plan);
    kit_guards_free(&st->guards);
    free(st);
}

static void args_from_shape(ll_args *a, const ll_shape *sh) {
    memset(a, 0, sizeof *a);
    a->kind = sh->kind;
    a->num_ranks = sh->num_ranks;
    a->nodes = sh->nodes;
    a->npus = sh->npus_per_node;
    a->local_experts = sh->local_experts;
    a->experts = sh->experts;
    a->tokens = sh->tokens;
    a->topk = sh->topk;
    a->hidden = sh->hidden;
    a->dtype = sh->dtype;
    a->row_bytes = sh->row_bytes;
    a->xrow_bytes = sh->xrow_bytes;
    a->scale_at = sh->scale_at;
    a->info_at = sh->info_at;
    a->move_bytes = sh->move_bytes;
    a->win_row = sh->win_row;
    a->cwin_row = sh->cwin_row;
    a->inject = sh->inject;
    a->struct_bytes = sh->struct_bytes;
    a->tok_at = sh->tok_at;
    a->exp_at = sh->exp_at;
    a->sc_at = sh->sc_at;
    a->server_bytes = sh->server_bytes;
    a->ipc_seg = sh->ipc_seg;
}

ll_state *ll_state_begin(engine *e, const kernel_opts *o, int kind, const char *owner,
                         void **state, char *err, size_t errlen) {
    ll_state *st = kit_state_new(sizeof *st, owner, state, err, errlen);
    if (!st) return NULL;
    kit_guards_init(&st->guards, owner, LL_GUARD_BYTE);
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    ll_shape sh;
    if (ll_shape_from_topology(o, kind, &topo, &sh, err, errlen) ||
        ll_plan_build(&sh, &st->plan, err, errlen)) {
        ll_destroy(st);
        return NULL;
    }
    args_from_shape(&st->args, &sh);
    return st;
}

static int fill_i32(engine *e, gm_t at, const void *src, uint64_t n, char *err, size_t errlen) {
    if (!n) return 0;
    void *h = npurr_gm_host(e, at, n * 4);
    if (!h) {
        snprintf(err, errlen, "low-latency setup: no host view of an input table");
        return -1;
    }
    memcpy(h, src, n * 4);
    return 0;
}

int ll_alloc_rank_buffers(engine *e, ll_state *st, char *err, size_t errlen) {
    ll_args *a = &st->args;
    const fm_round_plan *rp = &st->plan.round[0];
    int W = a->num_ranks, L = a->local_experts, E = a->experts;
    uint64_t TK = (uint64_t)a->tokens * (uint64_t)a->topk;
    int32_t *counts = malloc(sizeof(int32_t) * (size_t)E);
    if (!counts) {
        snprintf(err, errlen, "low-latency setup: out of host memory");
        return -1;
    }
    int rc = 0;
    for (int r = 0; r < W && !rc; r++) {
        uint64_t rows = (uint64_t)rp->recv_rows[r];
        kit_buffer bufs[] = {
            {(uint64_t)a->tokens * a->row_bytes, "ll.x", 0, &a->x[r]},
            {TK * 4, "ll.expert_ids", 0, &a->expert_ids[r]},
            {TK * 4, "ll.topk_weights", 0, &a->topk_weights[r]},
            {TK * 4, "ll.slot_count", 0, &a->slot_count[r]},
            {(uint64_t)E * 4, "ll.expert_count", 0, &a->expert_count[r]},
            {(uint64_t)64 * LL_WS_BLOCK +
                 (a->kind == LL_KIND_LAYERED ? (uint64_t)a->tokens * LLL_FLAG_BYTES : 0),
             "ll.workspace", 1, &a->ws[r]},
            {rows * a->xrow_bytes, "ll.expand_x", 1, &a->expand_x[r]},
            {rows * 4, "ll.dynamic_scales", 1, &a->dynamic_scales[r]},
            {rows * LL_IDX_INFO * 4, "ll.expand_idx", 1, &a->expand_idx[r]},
            {(uint64_t)L * (uint64_t)W * 4, "ll.ep_recv_count", 1, &a->ep_recv_count[r]},
            {(uint64_t)L * 8, "ll.expert_token_num", 1, &a->expert_token_num[r]},
            {rows * a->row_bytes, "ll.expert_out", 1, &a->expert_out[r]},
            {(uint64_t)a->tokens * a->row_bytes, "ll.out", 1, &a->out[r]},
        };
        rc = kit_alloc_all(e, &st->guards, r, bufs, sizeof bufs / sizeof bufs[0], err, errlen);
        if (!rc && a->kind == LL_KIND_LAYERED) {   /* the combine's tables the dispatch builds */
            uint64_t N = (uint64_t)a->nodes, T = (uint64_t)a->tokens;
            kit_buffer tables[] = {
                {N * (T + 1) * 4, "ll.inner_cnt", 1, &a->c_inner_cnt[r]},
                {N * TK * 4, "ll.inner_off", 1, &a->c_inner_off[r]},
                {T * 4, "ll.outer_cnt", 1, &a->c_outer_cnt[r]},
                {T * N * 4, "ll.outer_off", 1, &a->c_outer_off[r]},
                {T * N * 4, "ll.outer_per", 1, &a->c_outer_per[r]},
            };
            rc = kit_alloc_all(e, &st->guards, r, tables, sizeof tables / sizeof tables[0], err,
                               errlen);
        }
        if (rc) break;
        for (int x = 0; x < E; x++) counts[x] = rp->send_count[(size_t)r * (size_t)E + (size_t)x];
        rc = fill_i32(e, a->expert_ids[r], rp->expert_ids + (size_t)r * TK, TK, err, errlen) ||
             fill_i32(e, a->topk_weights[r], rp->topk_weights + (size_t)r * TK, TK, err, errlen) ||
             fill_i32(e, a->slot_count[r], rp->expand_idx + (size_t)r * TK, TK, err, errlen) ||
             fill_i32(e, a->expert_count[r], counts, (uint64_t)E, err, errlen) ||
             ll_generate_x(e, a->x[r], &(ll_shape){.data_seed = st->plan.sh.data_seed,
                                                    .hidden = a->hidden, .dtype = a->dtype,
                                                    .tokens = a->tokens,
                                                    .row_bytes = a->row_bytes},
                           r, err, errlen);
    }
    free(counts);
    return rc ? -1 : 0;
}

int ll_sym(engine *e, ll_state *st, uint64_t bytes, const char *what, gm_t *out, char *err,
           size_t errlen) {
    return kit_sym_guarded(e, &st->guards, st->args.num_ranks, bytes, what, out, err, errlen);
}
