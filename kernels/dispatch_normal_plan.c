/*
 * dispatch_normal_plan.c - dispatch-normal's options, shape and row
 * geometry, and the one notify table combine-normal's plan lacks.
 *
 * CamMoeDispatchNormal's tiling (sgl-kernel-npu csrc/deepep/ops2/op_host/
 * cam_moe_dispatch_normal_tiling.cc at 3a90dfa1) takes every AIV core
 * (aivNum = GetCoreNumAiv(), blockDim the same, batch mode); --cores lets
 * a user try fewer. Its inputs come from NotifyDispatch (notify_dispatch.h):
 * sendOffset[e] on a source is the exclusive prefix over global experts of
 * the rows it sends (so its share window is expert-major), recvOffset[le *
 * R + s] on an owner is s's sendOffset of the owner's expert le, and
 * recvCount the inclusive prefix of the rows in that same order. The
 * routing, sendTokenIdx (the plan's expand_idx) and the (expert, rank)
 * counts come from combine_plan_build; this file adds sendOffset and
 * derives an owner's recvOffset and recvCount from it.
 */
#include "dispatch_normal.h"

#include <stdlib.h>

const kernel_option dispatch_normal_options[] = {
    COMBINE_NORMAL_OPTS_SHAPE,
    KIT_OPT_DATA_SEED("the routing and of the token rows"),
    KIT_OPT_INJECT("no-status-wait (the owner copies rows out of the share windows before "
                   "their statuses say they are there; at --nodes 2, WaitWindow is skipped)"),
    COMBINE_NORMAL_OPT_CORES,
    {NULL, NULL, NULL},
};

static const char *const faults[] = {"none", "no-status-wait", NULL};

/* Init(): hUBAlignSize, hScaleSizeAlign (+ UB_ALIGN), hScaleIdxSize (+ the
 * triple), hOutGMAlignSize (512 B) and hOutUBAlignSize (32 B). */
dnormal_geometry dispatch_normal_geometry(int hidden) {
    dnormal_geometry g;
    g.row_bytes = (uint32_t)hidden * 2u;
    g.idx_offset = (uint32_t)kit_align_up(g.row_bytes, UB_ALIGN) + DNORMAL_SCALE_GAP;
    g.share_bytes = g.idx_offset + DNORMAL_IDX_LEN * 4u;
    g.share_ub_bytes = (uint32_t)kit_align_up(g.share_bytes, UB_ALIGN);
    g.window_stride = (uint32_t)kit_align_up(g.share_bytes, DNORMAL_WIN_ALIGN);
    return g;
}

/* What A2 holds at its peak, carved once here: the two xQueue buffers,
 * sendOffset (E), one chunk of expertIds and sendTokenIdx, SetStatus's and
 * WaitStatus's statuses (at least 256 B), recvOffset and recvCount (E each). */
uint32_t dispatch_normal_ub_bytes(const combine_shape *sh) {
    dnormal_geometry g = dispatch_normal_geometry(sh->hidden);
    uint64_t E = (uint64_t)sh->experts, cores = (uint64_t)sh->cores;
    uint64_t table = kit_align_up(E * 4, UB_ALIGN);
    uint64_t per_core = (E + cores - 1) / cores;
    uint64_t status = kit_align_up(per_core, 8) * DNORMAL_STATE_BYTES;
    if (status < 256) status = 256;
    uint64_t total = 2 * (uint64_t)g.share_ub_bytes + 3 * table +
                     2 * kit_align_up((uint64_t)DNORMAL_IDS_ROWS * 4, UB_ALIGN) + 2 * status;
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int dispatch_normal_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node,
                                    int num_aiv, combine_shape *sh, char *err, size_t errlen) {
    if (combine_normal_read(o, "dispatch-normal", faults, nodes, npus_per_node,
                            DNORMAL_MAX_NODES, num_aiv, sh, NULL, err, errlen))
        return -1;
    if (sh->nodes > 1) return dispatch_normal_a2l_check_shape(sh, err, errlen);
    uint32_t need = dispatch_normal_ub_bytes(sh);
    return kit_check_ub(need, err, errlen,
                        "--hidden %d --experts %d: dispatch-normal needs %u B of UB per core "
                        "(two rows with their triple, three 4 B-per-expert tables, the id "
                        "chunks)",
                        sh->hidden, sh->experts, need);
}

int dispatch_normal_shape_from_topology(const kernel_opts *o, const npurr_topology *topo,
                                      combine_shape *sh, char *err, size_t errlen) {
    int aiv = kit_cores(topo, CORE_AIV);
    return aiv < 0 ? -1
                   : dispatch_normal_shape_from_opts(o, topo->nodes, topo->npus_per_node, aiv, sh,
                                                     err, errlen);
}

int dispatch_normal_plan_from_topology(const kernel_opts *o, const npurr_topology *topo,
                                     combine_plan *p, char *err, size_t errlen) {
    combine_shape sh;
    return dispatch_normal_shape_from_topology(o, topo, &sh, err, errlen) ||
                   combine_plan_build(&sh, p, err, errlen)
               ? -1
               : 0;
}

int32_t *dispatch_normal_send_offsets(const combine_plan *p) {
    size_t R = (size_t)p->sh.num_ranks, L = (size_t)p->sh.local_experts;
    size_t E = (size_t)p->sh.experts;
    int32_t *off = malloc(sizeof(int32_t) * R * E + 1);
    if (!off) return NULL;
    for (size_t s = 0; s < R; s++) {
        int32_t sum = 0;
        for (size_t e = 0; e < E; e++) {
            size_t q = e / L, le = e % L;
            off[s * E + e] = sum;
            sum += p->length_table[(q * L + le) * R + s];
        }
    }
    return off;
}

void dispatch_normal_recv_tables(const combine_plan *p, const int32_t *send_offset, int r,
                                 int32_t *recv_offset, int32_t *recv_count) {
    size_t R = (size_t)p->sh.num_ranks, L = (size_t)p->sh.local_experts;
    size_t E = (size_t)p->sh.experts, q = (size_t)r;
    for (size_t le = 0; le < L; le++)
        for (size_t s = 0; s < R; s++) {
            size_t i = le * R + s, at = (q * L + le) * R + s;
            recv_offset[i] = send_offset[s * E + q * L + le];
            recv_count[i] = p->offset_table[at] + p->length_table[at];
        }
}
