/*
 * fullmesh_int8.c - the device steps of the INT8 dispatch (--dtype int8),
 * after the A2 low-latency dispatch with dynamic quant (sgl-kernel-npu's
 * MoeDistributeDispatchV2, one scale per 128 elements; the steps as
 * ops-transformer's moe_distribute_dispatch_a2.h QuantProcess and
 * LocalWindowCopy take them):
 *
 * - the sender quantizes each token row it loaded into UB (VecQuantInt8:
 *   H int8 values then H / 128 f32 scales, the row it writes into the
 *   windows). Decision: once per token and core, reused for every
 *   destination the core owns, as the bf16 path reads x once; without
 *   smooth scales the chip's per-selection quantization gives the same
 *   bytes;
 * - the receiver copies each received window row into UB once and writes
 *   its int8 part to expand_x and its scales to dynamic_scales, row by row
 *   (the two outputs interleave in the window, as on the chip);
 * - the FFN loads a row's int8 values and scales side by side in UB and
 *   dequantizes them (VecDequantInt8) times the expert's scale.
 *
 * The f32 working buffer the chip's quant sequence needs is acc_ub, idle
 * during the dispatch, so fm_ub_bytes counts only the two quantized rows.
 * Device code: device.h only.
 */
#include "fullmesh.h"

/* Flag ids: MTE2_V / V_MTE3 b (quantizing row buffer b, set and waited at
 * once), MTE3_MTE2 / MTE2_MTE3 b as fm_copy_gm. */

uint32_t fm_quant_bytes(const fm_args *a) {
    return dev_quant_int8_bytes((uint32_t)a->hidden, FM_QUANT_BLOCK);
}

void fm_quantize_row(fm_core *fc, int b) {
    SetFlag(MTE2_V, b);
    WaitFlag(MTE2_V, b);
    /* q_ub[b] is free: its last send was read before row_ub[b] was refilled */
    VecQuantInt8(fc->q_ub[b], fc->row_ub[b], DT_BF16, fc->a->hidden, FM_QUANT_BLOCK);
    SetFlag(V_MTE3, b);
    WaitFlag(V_MTE3, b);
}

void fm_split_received(fm_core *fc, gm_t window_rows, int64_t first, int64_t n, int *buf) {
    const fm_args *a = fc->a;
    int at = fc->round * a->num_ranks + fc->me;
    uint32_t H = (uint32_t)a->hidden, sb = H / FM_QUANT_BLOCK * 4u;
    for (int64_t k = 0; k < n; k++) {
        int b = *buf;
        WaitFlag(MTE3_MTE2, b);   /* the last writes out of this buffer have read it */
        DataCopy(fc->row_ub[b], gm_add(window_rows, k * (int64_t)a->win_row_bytes), a->win_row_bytes);
        SetFlag(MTE2_MTE3, b);
        WaitFlag(MTE2_MTE3, b);
        DataCopy(gm_add(a->expand_x[at], (first + k) * (int64_t)H), fc->row_ub[b], H);
        DataCopyPadOut(gm_add(a->dynamic_scales[at], (first + k) * (int64_t)sb),
                       local_add(fc->row_ub[b], H), sb);
        SetFlag(MTE3_MTE2, b);
        *buf = b ^ 1;
    }
}

void fm_dequantize_row(fm_core *fc, int64_t row, float scale, int b) {
    const fm_args *a = fc->a;
    int at = fc->round * a->num_ranks + fc->me;
    uint32_t H = (uint32_t)a->hidden, sb = H / FM_QUANT_BLOCK * 4u;
    DataCopy(fc->row_ub[b], gm_add(a->expand_x[at], row * (int64_t)H), H);
    DataCopyPadIn(local_add(fc->row_ub[b], H), gm_add(a->dynamic_scales[at], row * (int64_t)sb), sb);
    SetFlag(MTE2_V, b);
    WaitFlag(MTE2_V, b);
    VecDequantInt8(fc->acc_ub, fc->row_ub[b], scale, H, FM_QUANT_BLOCK);
}
