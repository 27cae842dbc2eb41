/*
 * kit_moe.c - the MoE inputs the plugin ABI lends to kernels written
 * elsewhere (npurr_host.moe_routing, .moe_row): the same routing generator
 * and tagged expert rows the built-in MoE kernels run on, so an Ascend C
 * or C plugin given the same options sees the same data and its outputs
 * can be compared with a built-in's byte for byte.
 */
#include "kit.h"

#include "combine.h"
#include "routing.h"

#include <stdio.h>

int kit_moe_routing(const npurr_topology *t, const char *spec, uint64_t seed, int experts,
                    int topk, int rank, int tokens, int32_t *expert_ids, float *weights,
                    char *err, size_t errlen) {
    routing_spec rs;
    if (!t || t->ranks < 1 || rank < 0 || rank >= t->ranks || tokens < 0) {
        snprintf(err, errlen, "moe_routing: rank %d of %d ranks, %d tokens", rank, t ? t->ranks : 0,
                 tokens);
        return -1;
    }
    if (routing_parse(spec ? spec : "", &rs, err, errlen) ||
        routing_check_ranks(&rs, t->ranks, err, errlen) ||
        routing_check_experts(experts, t->ranks, err, errlen) ||
        routing_check_topk(topk, experts, err, errlen))
        return -1;
    routing_shape shape = {.num_ranks = t->ranks, .nodes = t->nodes > 0 ? t->nodes : 1,
                           .npus_per_node = t->npus_per_node, .experts = experts, .topk = topk};
    return routing_generate(&rs, &shape, seed, rank, tokens, expert_ids, weights, err, errlen);
}

void kit_moe_row(uint64_t seed, int s, int t, int k, int p, int hidden, uint16_t *row) {
    combine_fill_row(row, hidden, seed, s, t, k, p);
}
