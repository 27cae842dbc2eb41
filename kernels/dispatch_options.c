/*
 * dispatch_options.c - `-k dispatch-layered` options -> a validated shape.
 *
 * Everything the host and the device agree on is decided here once: the
 * token record layout of seed 003 (S_token), the five role core counts of
 * seed 001 (defaults aivNum/4-1, 4, aivNum/4-1, aivNum/4-1, aivNum/4-1),
 * channels, ring and chunk sizes, and how each core carves its UB. Shapes
 * that could only hang or overflow UB are refused with a message naming
 * the option, before anything runs.
 */
#include "dispatch.h"

#include "kit.h"

#include <stdlib.h>
#include <string.h>

const kernel_option dispatch_options[] = {
    {"tokens", "128",
     "tokens per rank: one value, or one comma-separated value per rank (e.g. 64,0,17,...)"},
    KIT_OPT_HIDDEN("7168", ""),
    KIT_OPT_TOPK("8"),
    KIT_OPT_EXPERTS("256", ""),
    {"dtype", "bf16", "bf16 | fp8 (fp8 rows carry one float scale per 128 elements)"},
    {"channels", "0", "RDMA channels (rings per node pair); 0 = one per RDMASender core"},
    {"rdma-chunk", "32",
     "num_max_rdma_chunked_recv_tokens: tokens in one RDMA ring (per channel, per node)"},
    {"rdma-send-chunk", "8",
     "num_max_rdma_chunked_send_tokens: the RDMACoordinator writes in multiples of this"},
    {"hccs-chunk", "32",
     "num_max_hccs_chunked_recv_tokens: tokens in one HCCS ring (per channel, per peer)"},
    {"hccs-send-chunk", "8",
     "num_max_hccs_chunked_send_tokens: the forwarder publishes the HCCS tail this often"},
    {"credit-batch", "0",
     "tokens of RDMA credit returned per remote atomic; 0 = --rdma-send-chunk (seed 001 s6.1)"},
    {"rdma-senders", "0", "RDMASender cores per rank; 0 = aivNum/4-1"},
    {"rdma-coordinators", "4", "RDMACoordinator cores per rank, 1..aivNum"},
    {"forwarders", "0", "RDMA2HCCSForwarder cores per rank; 0 = aivNum/4-1"},
    {"forwarder-coordinators", "0", "ForwarderCoordinator cores per rank; 0 = aivNum/4-1"},
    {"hccs-receivers", "0", "HCCSReceiver cores per rank; 0 = aivNum/4-1"},
    KIT_OPT_ROUTING("uniform"),
    KIT_OPT_DATA_SEED("the routing and of the payload"),
    {"dispatches", "2",
     "data phases run with the same layout; every one must give the same bytes (1..4)"},
    {"notify", "deepep",
     "deepep | a2 | a2-pre211 (a2: NotifyDispatchA2 of sgl-kernel-npu, all-gather of a metadata "
     "blob padded to 4096 tokens, then its index passes; --nodes 2 and at most 4096 tokens, as on "
     "A2; a2-pre211: the same kernel as it was before sgl-kernel-npu PR #211, which the published "
     "two-server Notify_T rows timed: per-expert totals read one count at a time)"},
    KIT_OPT_INJECT("credit-leak (last partial credit batch never returned) | lost-tail (one "
                   "remote tail update dropped); in the last dispatch"),
    {NULL, NULL, NULL},
};

/* In the order of DISPATCH_INJECT_*. */
static const char *const dispatch_faults[] = {"none", "credit-leak", "lost-tail", NULL};


/* "N" for every rank or "N0,N1,..." with exactly one value per rank. */
static int parse_tokens(const char *v, dispatch_shape *sh, char *err, size_t errlen) {
    int R = sh->num_ranks, n = 0;
    const char *p = v;
    int vals[DISPATCH_MAX_RANKS];
    for (;;) {
        char *end = NULL;
        long long x = strtoll(p, &end, 10);
        if (end == p || x < 0 || x > (1 << 24)) {
            snprintf(err, errlen, "--tokens %s: '%.*s' is not a token count between 0 and %d", v,
                     (int)strcspn(p, ","), p, 1 << 24);
            return -1;
        }
        if (n == DISPATCH_MAX_RANKS) {
            snprintf(err, errlen, "--tokens %s: more than %d values", v, DISPATCH_MAX_RANKS);
            return -1;
        }
        vals[n++] = (int)x;
        if (*end == '\0') break;
        if (*end != ',') {
            snprintf(err, errlen, "--tokens %s: expected a number or a comma-separated list", v);
            return -1;
        }
        p = end + 1;
    }
    if (n != 1 && n != R) {
        snprintf(err, errlen, "--tokens %s: %d values given; give one for every rank or exactly %d",
                 v, n, R);
        return -1;
    }
    sh->max_tokens = 0;
    for (int r = 0; r < R; r++) {
        sh->tokens[r] = vals[n == 1 ? 0 : r];
        if (sh->tokens[r] > sh->max_tokens) sh->max_tokens = sh->tokens[r];
    }
    return 0;
}

void dispatch_count_offsets(const dispatch_shape *sh, dispatch_count_layout *cl) {
    uint32_t R = (uint32_t)sh->num_ranks, N = (uint32_t)sh->nodes, E = (uint32_t)sh->experts;
    uint32_t C = (uint32_t)sh->channels;
    cl->per_rank = 0;
    cl->per_node = cl->per_rank + R;
    cl->per_expert = cl->per_node + N;
    cl->ch_rank = cl->per_expert + E;
    cl->ch_node = cl->ch_rank + C * R;
    cl->total = cl->ch_node + C * N;
    cl->padded = (uint32_t)kit_align_up(cl->total, 8);   /* 32 B for DataCopy */
}

void dispatch_notify_offsets(const dispatch_shape *sh, dispatch_notify_layout *nl) {
    uint32_t R = (uint32_t)sh->num_ranks, N = (uint32_t)sh->nodes, L = (uint32_t)sh->local_experts;
    nl->rank_prefix = 0;
    nl->rdma_prefix = R;
    nl->expert_prefix = nl->rdma_prefix + N;
    nl->per_expert = nl->expert_prefix + R * L;
    nl->total = nl->per_expert + L;
    nl->padded = (uint32_t)kit_align_up(nl->total, 8);
    nl->row_ints = 1 + L;
    nl->row_stride = (uint32_t)kit_align_up((uint64_t)nl->row_ints * 4, UB_ALIGN);
}

void dispatch_a2_offsets(const dispatch_shape *sh, dispatch_a2_layout *al) {
    uint64_t E = (uint64_t)sh->experts, N = (uint64_t)sh->nodes, R = (uint64_t)sh->num_ranks;
    uint64_t L = (uint64_t)sh->local_experts, M = DISPATCH_A2_MAX_BS;
    memset(al, 0, sizeof *al);
    /* deep_ep.cpp get_dispatch_layout: E * (1 + MAX_BS) + N + MAX_BS * (1 + 2N + E). */
    uint64_t a2_len = E * (1 + M) + N + M * (1 + 2 * N + E);
    al->per_expert = 0;
    al->per_server = (uint32_t)E;
    /* notify_dispatch_a2.h: tokens per server [M][N], token server count [M],
     * token server index [M][N], then the token-expert order [M][E], then
     * expertMaxBsSrc [E][M]. */
    al->token_expert = (uint32_t)(E + N + M * N + M + M * N);
    al->expert_src = (uint32_t)(al->token_expert + M * E);
    al->per_rank = (uint32_t)a2_len;
    al->len = (uint32_t)(a2_len + R);
    al->slot_bytes = kit_align_up((uint64_t)al->len * 4 + 2 * DISPATCH_A2_STATUS_BYTES, UB_ALIGN);
    uint64_t at = 0;
    uint64_t *outs[] = {&al->g_rank_ep, &al->g_exp_src, &al->ep_rank, &al->local_ep,
                        &al->total_recv, &al->token_server_idx, &al->count_outer,
                        &al->unique_server, &al->expand_idx, &al->offset_inner, &al->src_off,
                        &al->dst_off};
    uint64_t sizes[] = {R * E * 4, R * E * M * 4, E * R * 4, L * 8, 4, N * M * 4, M * 4, N * 4,
                        E * M * 4, 2 * M * E * 4, E * R * M * 4, E * R * M * 4};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *outs[i] = at;
        at += kit_align_up(sizes[i], UB_ALIGN);
    }
    al->scratch_bytes = at;
}

/* ------------------------------------------------------------ UB budgets */

static uint64_t a32(uint64_t v) { return kit_align_up(v ? v : 1, UB_ALIGN); }

static uint64_t notify_layout_bytes(const dispatch_shape *sh, int block) {
    uint64_t R = (uint64_t)sh->num_ranks, K = (uint64_t)sh->topk, B = (uint64_t)block;
    dispatch_count_layout cl;
    dispatch_count_offsets(sh, &cl);
    return a32(B * K * 4) + a32(B * R) + a32(B * R * 4) + a32((uint64_t)cl.padded * 4) +
           a32((uint64_t)sh->block_dim * kit_align_up(R, 8) * 4) + a32(R * 4);
}

uint32_t dispatch_ub_notify_a2(const dispatch_shape *sh) {
    uint64_t copy = 2 * (uint64_t)DISPATCH_A2_COPY_CHUNK + 2 * UB_ALIGN;
    uint64_t M4 = (uint64_t)DISPATCH_A2_MAX_BS * 4, E4 = a32((uint64_t)sh->experts * 4);
    uint64_t RL4 = a32((uint64_t)sh->num_ranks * (uint64_t)sh->local_experts * 4);
    uint64_t ints = E4 > RL4 ? E4 : RL4;
    uint64_t calc = 3 * M4 + 3 * ints + E4 + UB_ALIGN;
    uint64_t m = copy > calc ? copy : calc;
    return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

uint32_t dispatch_ub_notify(const dispatch_shape *sh) {
    dispatch_count_layout cl;
    dispatch_notify_layout nl;
    dispatch_count_offsets(sh, &cl);
    dispatch_notify_offsets(sh, &nl);
    uint64_t layout = notify_layout_bytes(sh, sh->notify_block);
    uint64_t exchange = a32((uint64_t)cl.padded * 4) + a32(nl.row_stride);
    uint64_t prefix = a32((uint64_t)sh->num_ranks * dispatch_prefix_row_stride(sh, &nl)) +
                      a32((uint64_t)nl.padded * 4);
    if (sh->notify_a2) exchange = dispatch_ub_notify_a2(sh);
    uint64_t m = layout > exchange ? layout : exchange;
    m = m > prefix ? m : prefix;
    return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static uint64_t sender_bytes(const dispatch_shape *sh, int meta_tokens) {
    uint64_t span = (uint64_t)(meta_tokens - 1) * (uint64_t)sh->senders + 1;
    uint64_t K = (uint64_t)sh->topk, R = (uint64_t)sh->num_ranks;
    return 2 * a32(sh->token_bytes) + a32(span * K * 4) * 2 + a32(span * R * 4) +
           (sh->num_scales ? a32(span * (uint64_t)sh->num_scales * 4) : 0) +
           a32((uint64_t)sh->channels * (uint64_t)sh->nodes * 4);
}
uint32_t dispatch_ub_sender(const dispatch_shape *sh) {
    uint64_t b = sender_bytes(sh, sh->sender_meta_tokens);
    return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

uint32_t dispatch_ub_coordinator(const dispatch_shape *sh) {
    dispatch_count_layout cl;
    dispatch_count_offsets(sh, &cl);
    return (uint32_t)(a32(DISPATCH_META_BYTES) +
                      a32((uint64_t)(cl.total - cl.ch_rank) * 4));
}

static uint64_t forwarder_bytes(const dispatch_shape *sh, int batch) {
    return 2 * a32((uint64_t)batch * sh->token_bytes) +
           a32((uint64_t)sh->nodes * DISPATCH_META_UB_STRIDE);
}
uint32_t dispatch_ub_forwarder(const dispatch_shape *sh) {
    uint64_t b = forwarder_bytes(sh, sh->forward_batch);
    return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

uint32_t dispatch_ub_fwd_coordinator(const dispatch_shape *sh) {
    return (uint32_t)a32(DISPATCH_META_BYTES);
}

static uint64_t receiver_scratch(const dispatch_shape *sh) {
    uint64_t K = (uint64_t)sh->topk;
    return 2 * a32(K * 4) + a32(DISPATCH_RECV_SRC_INTS * 4) +
           (sh->num_scales ? a32((uint64_t)sh->num_scales * 4) : 0);
}
static uint64_t receiver_bytes(const dispatch_shape *sh, int batch) {
    return a32((uint64_t)batch * sh->token_bytes) + (uint64_t)batch * receiver_scratch(sh) +
           a32((uint64_t)sh->num_ranks * 4) + a32((uint64_t)sh->nodes * 4);
}
uint32_t dispatch_ub_receiver(const dispatch_shape *sh) {
    uint64_t b = receiver_bytes(sh, sh->receive_batch);
    return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

/* Largest count in [1, cap] whose bytes fit in UB; 0 if even 1 does not. */
static int fit(const dispatch_shape *sh, int cap, uint64_t (*bytes)(const dispatch_shape *, int)) {
    int best = 0;
    for (int n = 1; n <= cap; n++)
        if (bytes(sh, n) <= UB_BYTES) best = n;
        else break;
    return best;
}

/* ------------------------------------------------------------ shape */

static int parse_roles(const kernel_opts *o, int num_aiv, dispatch_shape *sh, char *err,
                       size_t errlen) {
    int def = num_aiv / 4 - 1;
    int64_t v;
    /* lo 0: 0 asks for the default (aivNum/4-1, as the help says); the
     * coordinators' default is a plain 4, so 0 is no value of theirs. */
    struct { const char *name; int *field; int def, lo; } roles[] = {
        {"rdma-senders", &sh->senders, def, 0},
        {"rdma-coordinators", &sh->coordinators, 4, 1},
        {"forwarders", &sh->forwarders, def, 0},
        {"forwarder-coordinators", &sh->fwd_coordinators, def, 0},
        {"hccs-receivers", &sh->receivers, def, 0},
    };
    sh->block_dim = 0;
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        if (kopt_i64_range(o, roles[i].name, roles[i].lo, num_aiv, &v, err, errlen)) return -1;
        *roles[i].field = v == 0 ? roles[i].def : (int)v;
        if (*roles[i].field < 1) {
            snprintf(err, errlen, "--%s: a %d-AIV chip leaves no core for this role", roles[i].name,
                     num_aiv);
            return -1;
        }
        sh->block_dim += *roles[i].field;
    }
    if (sh->block_dim > num_aiv) {
        snprintf(err, errlen,
                 "--rdma-senders %d + --rdma-coordinators %d + --forwarders %d + "
                 "--forwarder-coordinators %d + --hccs-receivers %d = %d AIV cores, more than the "
                 "chip's %d",
                 sh->senders, sh->coordinators, sh->forwarders, sh->fwd_coordinators,
                 sh->receivers, sh->block_dim, num_aiv);
        return -1;
    }
    if (kopt_i64_range(o, "channels", 0, DISPATCH_MAX_CHANNELS, &v, err, errlen)) return -1;
    sh->channels = v == 0 ? sh->senders : (int)v;
    /* Seed 001 s5.1: channels = RDMASender = RDMA2HCCSForwarder cores, and a
     * channel may have several cores, never none. */
    if (sh->senders < sh->channels) {
        snprintf(err, errlen, "--rdma-senders %d: every one of the %d channels needs a core",
                 sh->senders, sh->channels);
        return -1;
    }
    if (sh->forwarders < sh->channels) {
        snprintf(err, errlen, "--forwarders %d: every one of the %d channels needs a core",
                 sh->forwarders, sh->channels);
        return -1;
    }
    return 0;
}

static int parse_rings(const kernel_opts *o, dispatch_shape *sh, char *err, size_t errlen) {
    int64_t v;
    if (kopt_i64_range(o, "rdma-chunk", 1, 1 << 20, &v, err, errlen)) return -1;
    sh->rdma_ring_tokens = (int)v;
    if (kopt_i64_range(o, "rdma-send-chunk", 1, sh->rdma_ring_tokens, &v, err, errlen)) return -1;
    sh->rdma_send_chunk = (int)v;
    if (kopt_i64_range(o, "credit-batch", 0, sh->rdma_ring_tokens, &v, err, errlen)) return -1;
    sh->credit_batch = v == 0 ? sh->rdma_send_chunk : (int)v;
    /* The coordinator holds back less than one send chunk and the forwarder
     * coordinator less than one credit batch; a sender waiting for a slot
     * needs both to fit in the ring or nobody moves. */
    if (sh->rdma_send_chunk + sh->credit_batch - 1 > sh->rdma_ring_tokens) {
        snprintf(err, errlen,
                 "--rdma-chunk %d: smaller than --rdma-send-chunk %d + --credit-batch %d - 1; "
                 "tokens held back for a full chunk and credits held back for a full batch "
                 "would fill the ring and hang the senders",
                 sh->rdma_ring_tokens, sh->rdma_send_chunk, sh->credit_batch);
        return -1;
    }
    if (kopt_i64_range(o, "hccs-chunk", 1, 1 << 20, &v, err, errlen)) return -1;
    sh->hccs_ring_tokens = (int)v;
    if (kopt_i64_range(o, "hccs-send-chunk", 1, sh->hccs_ring_tokens, &v, err, errlen)) return -1;
    sh->hccs_send_chunk = (int)v;
    return 0;
}

static int parse_record(const kernel_opts *o, dispatch_shape *sh, char *err, size_t errlen) {
    const char *s;
    static const kit_moe_limits lim = {.tokens = 0 /* per rank: parse_tokens */,
                                        .hidden = 1 << 16, .topk = DISPATCH_MAX_TOPK,
                                        .experts = 1 << 14};
    kit_moe m;
    if (kit_read_moe(o, sh->num_ranks, &lim, &m, err, errlen)) return -1;
    sh->hidden = m.hidden;
    sh->experts = m.experts;
    sh->local_experts = m.local_experts;
    sh->topk = m.topk;
    if (kit_read_str(o, "dtype", &s, err, errlen)) return -1;
    if (strcmp(s, "bf16") == 0) {
        sh->dtype = DISPATCH_BF16;
        sh->elem_bytes = 2;
        sh->num_scales = 0;
    } else if (strcmp(s, "fp8") == 0) {
        sh->dtype = DISPATCH_FP8;
        sh->elem_bytes = 1;
        if (sh->hidden % DISPATCH_FP8_BLOCK) {
            snprintf(err, errlen, "--hidden %d: fp8 needs a multiple of %d (one scale per block)",
                     sh->hidden, DISPATCH_FP8_BLOCK);
            return -1;
        }
        sh->num_scales = sh->hidden / DISPATCH_FP8_BLOCK;
    } else {
        snprintf(err, errlen, "--dtype %s: expected bf16 or fp8", s);
        return -1;
    }
    sh->x_row_bytes = (uint32_t)sh->hidden * (uint32_t)sh->elem_bytes;
    sh->hidden_bytes = (uint32_t)kit_align_up(sh->x_row_bytes, 16);
    sh->off_meta = sh->hidden_bytes;
    sh->off_scales = sh->off_meta + DISPATCH_SOURCE_META_BYTES;
    sh->off_topk = sh->off_scales + 4u * (uint32_t)sh->num_scales;
    sh->off_weights = sh->off_topk + 4u * (uint32_t)sh->topk;
    sh->record_end = sh->off_weights + 4u * (uint32_t)sh->topk;
    sh->token_bytes = (uint32_t)kit_align_up(sh->record_end, UB_ALIGN);
    return 0;
}

/* A2's notify is written for what A2 runs: exactly two servers (it takes
 * the other server's same-numbered rank as its only RDMA peer) and batches
 * of at most MAX_BS tokens (its sections are padded to that). */
static int parse_notify(const kernel_opts *o, dispatch_shape *sh, char *err, size_t errlen) {
    const char *s;
    if (kit_read_str(o, "notify", &s, err, errlen)) return -1;
    if (strcmp(s, "deepep") == 0) {
        sh->notify_a2 = 0;
        return 0;
    }
    int pre211 = strcmp(s, "a2-pre211") == 0;
    if (strcmp(s, "a2") != 0 && !pre211) {
        snprintf(err, errlen, "--notify %s: expected deepep, a2 or a2-pre211", s);
        return -1;
    }
    if (sh->nodes != 2) {
        snprintf(err, errlen,
                 "--notify %s with --nodes %d: A2's NotifyDispatchA2 runs on exactly 2 nodes (its "
                 "RDMA peer is the other node's same-numbered rank)",
                 s, sh->nodes);
        return -1;
    }
    if (sh->max_tokens > DISPATCH_A2_MAX_BS) {
        snprintf(err, errlen,
                 "--notify %s with --tokens %d: A2 pads its notify to %d tokens a rank, at most",
                 s, sh->max_tokens, DISPATCH_A2_MAX_BS);
        return -1;
    }
    sh->notify_a2 = 1;
    sh->notify_a2_pre211 = pre211;
    return 0;
}

static int choose_ub(dispatch_shape *sh, char *err, size_t errlen) {
    sh->sender_meta_tokens = fit(sh, 16, sender_bytes);
    sh->forward_batch = fit(sh, 64, forwarder_bytes);
    sh->receive_batch = fit(sh, 64, receiver_bytes);
    sh->notify_block = fit(sh, 64, notify_layout_bytes);
    if (!sh->sender_meta_tokens || !sh->forward_batch || !sh->receive_batch) {
        snprintf(err, errlen,
                 "--hidden %d: a token record of %u B does not fit twice in the %u B UB of an AIV "
                 "core (RDMASender and forwarder double-buffer records)",
                 sh->hidden, sh->token_bytes, UB_BYTES);
        return -1;
    }
    if (!sh->notify_block || dispatch_ub_coordinator(sh) > UB_BYTES ||
        dispatch_ub_notify(sh) > UB_BYTES) {
        snprintf(err, errlen,
                 "--experts %d, --channels %d and %d ranks: the layout counters (%u B) do not fit "
                 "in the %u B UB of an AIV core",
                 sh->experts, sh->channels, sh->num_ranks, dispatch_ub_notify(sh), UB_BYTES);
        return -1;
    }
    return 0;
}

int dispatch_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node, int num_aiv,
                             dispatch_shape *sh, char *err, size_t errlen) {
    memset(sh, 0, sizeof *sh);
    if (nodes < 1) {
        snprintf(err, errlen, "--nodes %d: at least one node", nodes);
        return -1;
    }
    if (npus_per_node < 1 || npus_per_node > DISPATCH_MAX_NVL_PEERS) {
        snprintf(err, errlen, "--npus-per-node %d: 1..%d NVL peers", npus_per_node,
                 DISPATCH_MAX_NVL_PEERS);
        return -1;
    }
    if (nodes > DISPATCH_MAX_NODES) {
        snprintf(err, errlen, "--nodes %d: dispatch-layered supports up to %d nodes", nodes,
                 DISPATCH_MAX_NODES);
        return -1;
    }
    sh->nodes = nodes;
    sh->npus = npus_per_node;
    sh->num_ranks = nodes * npus_per_node;
    const char *s;
    int64_t v;
    if (kit_read_str(o, "tokens", &s, err, errlen) || parse_tokens(s, sh, err, errlen)) return -1;
    if (parse_record(o, sh, err, errlen)) return -1;
    if ((int64_t)sh->max_tokens * sh->num_ranks > INT32_MAX / 2) {
        snprintf(err, errlen, "--tokens %d on %d ranks: too many rows for int32 offsets",
                 sh->max_tokens, sh->num_ranks);
        return -1;
    }
    if (parse_roles(o, num_aiv, sh, err, errlen) || parse_rings(o, sh, err, errlen)) return -1;
    if (kit_read_routing(o, sh->num_ranks, &sh->routing, err, errlen) ||
        kit_read_seed(o, &sh->data_seed, err, errlen))
        return -1;
    if (kopt_i64_range(o, "dispatches", 1, DISPATCH_MAX_DISPATCHES, &v, err, errlen)) return -1;
    sh->dispatches = (int)v;
    int fault;
    if (kit_read_inject(o, dispatch_faults, &fault, err, errlen)) return -1;
    sh->inject = fault;
    if (parse_notify(o, sh, err, errlen)) return -1;
    return choose_ub(sh, err, errlen);
}

int dispatch_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, dispatch_shape *sh,
                               char *err, size_t errlen) {
    int aiv = kit_cores(topo, CORE_AIV);
    return aiv < 0 ? -1
                   : dispatch_shape_from_opts(o, topo->nodes, topo->npus_per_node, aiv, sh, err,
                                              errlen);
}
