/*
 * combine_normal_plan.c - combine-normal's options and shape on the host.
 *
 * combine-normal is A2's intranode normal-mode combine, CamMoeCombineNormal
 * (sgl-kernel-npu csrc/deepep/ops2/op_kernel/cam_moe_combine_normal.h and
 * op_host/cam_moe_combine_normal_tiling.cc at 3a90dfa1). Its tiling takes
 * every AIV core of the chip (aivNum = GetCoreNumAiv(), blockDim the same,
 * batch mode so all start together); --cores lets a user try fewer. The
 * routing, the dispatch metadata and tokenSrcInfo come from the shared plan
 * (combine_plan.c); this file reads the options and sizes UB.
 */
#include "combine.h"

const kernel_option combine_normal_options[] = {
    COMBINE_NORMAL_OPTS_SHAPE,
    KIT_OPT_DATA_SEED("the routing and of the payload"),
    KIT_OPT_INJECT("no-status-wait (the owner sums before the rows land) | status-first (the "
                   "status word is written before its row)"),
    COMBINE_NORMAL_OPT_CORES,
    {NULL, NULL, NULL},
};

/* In the order of the shape's inject fields (0 = none; 1 is the fault both
 * normal kernels have, combine_normal_read's). */
static const char *const normal_faults[] = {"none", "no-status-wait", "status-first", NULL};

uint32_t combine_normal_window_stride(const combine_shape *sh) {
    return (uint32_t)kit_align_up(sh->row_bytes, COMBINE_NORMAL_WIN_ALIGN);
}

/* A2 re-carves UB between its phases (tpipe_->Reset()); npurr's UB is
 * carved once, so the two phases share the row buffers and add the rest. */
uint32_t combine_normal_ub_bytes(const combine_shape *sh) {
    uint64_t H = (uint64_t)sh->hidden, K = (uint64_t)sh->topk;
    uint64_t rows = 2 * kit_align_up(H * 2, UB_ALIGN);
    uint64_t send = COMBINE_NORMAL_STATE_BYTES +
                    kit_align_up((uint64_t)COMBINE_NORMAL_SRC_INFO_ROWS *
                                     COMBINE_NORMAL_SRC_INFO_LEN * 4, UB_ALIGN);
    uint64_t sum = 2 * kit_align_up(H * 4, UB_ALIGN) + kit_align_up(H * 2, UB_ALIGN) +
                   K * COMBINE_NORMAL_STATE_BYTES + 2 * (uint64_t)COMBINE_META_BYTES;
    uint64_t total = rows + send + sum;
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int combine_normal_read(const kernel_opts *o, const char *kernel, const char *const *faults,
                        int nodes, int npus_per_node, int max_nodes, int num_aiv,
                        combine_shape *sh, int *which, char *err, size_t errlen) {
    int fault;
    if (combine_read_shape(o, COMBINE_SCHEME_NORMAL, kernel, nodes, npus_per_node, max_nodes, sh,
                           err, errlen) ||
        combine_read_inputs(o, faults, sh, &fault, err, errlen))
        return -1;
    sh->inject_no_status_wait = fault == 1;
    if (which) *which = fault;
    int64_t v;
    if (kopt_i64_range(o, "cores", 0, num_aiv, &v, err, errlen)) return -1;
    sh->cores = v == 0 ? num_aiv : (int)v;
    return 0;
}

int combine_normal_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node,
                                   int num_aiv, combine_shape *sh, char *err, size_t errlen) {
    int fault;
    if (combine_normal_read(o, "combine-normal", normal_faults, nodes, npus_per_node, 1, num_aiv,
                            sh, &fault, err, errlen))
        return -1;
    sh->inject_status_first = fault == 2;
    uint32_t need = combine_normal_ub_bytes(sh);
    return kit_check_ub(need, err, errlen,
                        "--hidden %d: combine-normal needs %u B of UB per core (two bf16 rows, "
                        "two f32 rows, the bf16 output and the tokenSrcInfo chunk)",
                        sh->hidden, need);
}
