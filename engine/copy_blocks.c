/*
 * copy_blocks.c - a DataCopy of several blocks with gaps between them as
 * one DMA: Ascend C's DataCopyParams and DataCopyExtParams forms
 * (npurr/device_calls.h: dev_copy_blocks_in / _out).
 *
 * One transfer on MTE2 (GM -> local) or MTE3 (local -> GM): it is busy for
 * the bytes of its blocks, not of the gaps, over the same HBM and HCCS
 * resources as a plain DataCopy, and lands all its blocks at its completion.
 * Each block's local side starts 32 B aligned and is padded to 32 B (with
 * the pad value around the data when the copy pads, else zeros); blocks
 * that are only moved stay payload references, as any copy's do.
 */
#include "internal.h"

#include <string.h>

static uint64_t align32(uint64_t v) { return (v + 31) / 32 * 32; }

/* Bytes of a block on the local side, padding included. */
static uint64_t local_block(const dev_copy_blocks *b) {
    uint64_t pads = b->pad ? (uint64_t)(b->pad_left + b->pad_right) * b->elem_bytes : 0;
    return align32(b->block_bytes + pads);
}

static uint64_t gm_extent(const dev_copy_blocks *b) {
    return b->count ? (uint64_t)(b->count - 1) * (b->block_bytes + b->gm_gap) + b->block_bytes : 0;
}

static uint64_t local_extent(const dev_copy_blocks *b) {
    return b->count ? (uint64_t)(b->count - 1) * (local_block(b) + b->local_gap) + local_block(b) : 0;
}

static void check(core *c, const dev_copy_blocks *b, local_t l, dev_site s, const char *api) {
    if (!b->count || !b->block_bytes)
        eng_fault(c, s, "%s: blockCount %u and blockLen %u must both be positive", api, b->count,
                  b->block_bytes);
    if (l.off % UB_ALIGN || b->local_gap % UB_ALIGN)
        eng_fault(c, s, "%s: local address %u and local stride %u must be 32 B aligned", api,
                  l.off, b->local_gap);
    if (b->pad && (!b->elem_bytes || b->elem_bytes > 8 ||
                   (b->pad_left + b->pad_right) * b->elem_bytes > 32))
        eng_fault(c, s, "%s: padding of %u + %u elements of %u bytes (at most 32 bytes)", api,
                  b->pad_left, b->pad_right, b->elem_bytes);
}

static void issue(core *c, xfer *x, int to_gm, gm_t g, const dev_copy_blocks *b, dev_site s,
                  const char *api) {
    resource *res[4];
    uint64_t lat, held;
    int n = eng_gm_path(c, g, to_gm, res, &lat, &held, s, api);
    x->blocks = *b;
    x->op = OP_COPY_BLOCKS;
    x->bytes = (uint64_t)b->count * b->block_bytes;
    x->peer = gm_rank(g);
    eng_xfer_issue_on(c, x, eng_mte_rate(c, gm_rank(g)), held, res, n, lat, s);
}

void dev_copy_blocks_in(local_t dst, gm_t src, const dev_copy_blocks *b, dev_site s) {
    core *c = eng_current("DataCopy GM->local");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    check(c, b, dst, s, "DataCopy GM->local");
    if (dst.space == LM_L0C || dst.space == LM_L0A || dst.space == LM_L0B)
        eng_fault(c, s, "DataCopy: no data path from GM to %s on 910B", eng_space_name((int)dst.space));
    uint64_t gext = gm_extent(b), lext = local_extent(b);
    mseg *dseg;
    uint8_t *d = eng_local_at(c, dst, lext, s, "DataCopy GM->local", &dseg);
    eng_gm_check(c, src, gext, s, "DataCopy GM->local");
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->kind = XFER_MTE2; x->pipe = PIPE_MTE2;
    x->dst = d; x->dseg = dseg; x->src = eng_gm_at(e, src, gext, &x->sseg);
    x->dst_raw = local_raw(dst); x->src_raw = src.a;
    x->ext[0] = lext; x->ext[1] = gext;
    issue(c, x, 0, src, b, s, "DataCopy GM->local");
}

void dev_copy_blocks_out(gm_t dst, local_t src, const dev_copy_blocks *b, dev_site s) {
    core *c = eng_current("DataCopy local->GM");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    check(c, b, src, s, "DataCopy local->GM");
    if (b->pad) eng_fault(c, s, "DataCopyPad local->GM takes no padding values");
    if (src.space != LM_UB) eng_fault(c, s, "DataCopy local->GM: MTE3 copies out of UB");
    uint64_t gext = gm_extent(b), lext = local_extent(b);
    mseg *sseg;
    uint8_t *sp = eng_local_at(c, src, lext, s, "DataCopy local->GM", &sseg);
    eng_gm_check(c, dst, gext, s, "DataCopy local->GM");
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->kind = XFER_MTE3; x->pipe = PIPE_MTE3;
    x->dst = eng_gm_at(e, dst, gext, &x->dseg); x->src = sp; x->sseg = sseg;
    x->dst_raw = dst.a; x->src_raw = local_raw(src);
    x->atomic_dtype = c->atomic_dtype; x->atomic_op = c->atomic_op;
    x->dst_rank = gm_rank(dst); x->dst_off = gm_offset(dst);
    x->object = eng_word_object(e, dst);
    x->ext[0] = gext; x->ext[1] = lext;
    issue(c, x, 1, dst, b, s, "DataCopy local->GM");
}

/* Where block i is on each side, in bytes from its operand's start. */
static void block_at(const xfer *x, uint32_t i, uint64_t *gm_off, uint64_t *local_off) {
    const dev_copy_blocks *b = &x->blocks;
    *gm_off = (uint64_t)i * (b->block_bytes + b->gm_gap);
    *local_off = (uint64_t)i * (local_block(b) + b->local_gap);
}

void eng_copy_blocks_apply(engine *e, xfer *x) {
    const dev_copy_blocks *b = &x->blocks;
    int in = x->pipe == PIPE_MTE2;
    uint64_t lb = local_block(b), left = b->pad ? (uint64_t)b->pad_left * b->elem_bytes : 0;
    for (uint32_t i = 0; i < b->count; i++) {
        uint64_t g, l;
        block_at(x, i, &g, &l);
        uint64_t doff = eng_seg_off(x->dseg, x->dst) + (in ? l + left : g);
        uint64_t soff = eng_seg_off(x->sseg, x->src) + (in ? g : l);
        if (x->atomic_dtype)
            eng_atomic_accumulate(eng_seg_lit(e, x->dseg, doff, b->block_bytes),
                                  eng_seg_lit(e, x->sseg, soff, b->block_bytes), b->block_bytes,
                                  x->atomic_dtype, x->atomic_op);
        else
            eng_seg_copy(e, x->dseg, doff, x->sseg, soff, b->block_bytes);
        if (!in) continue;
        /* the block's padding in local memory: the pad value, else zeros */
        uint64_t base = eng_seg_off(x->dseg, x->dst) + l;
        uint8_t *pre = left ? eng_seg_overwrite(x->dseg, base, left) : NULL;
        uint64_t tail = lb - left - b->block_bytes;
        uint8_t *post = tail ? eng_seg_overwrite(x->dseg, base + left + b->block_bytes, tail) : NULL;
        if (pre) memset(pre, 0, left);
        if (post) memset(post, 0, tail);
        if (b->pad) {
            for (uint64_t k = 0; k < left; k += b->elem_bytes) memcpy(pre + k, &b->pad_value, b->elem_bytes);
            uint64_t right = (uint64_t)b->pad_right * b->elem_bytes;
            for (uint64_t k = 0; k < right && k < tail; k += b->elem_bytes)
                memcpy(post + k, &b->pad_value, b->elem_bytes);
        }
    }
}

void eng_copy_blocks_ranges(const xfer *x, void (*fn)(void *ctx, uint64_t addr, uint64_t len,
                                                      int write), void *ctx) {
    const dev_copy_blocks *b = &x->blocks;
    int in = x->pipe == PIPE_MTE2;
    for (uint32_t i = 0; i < b->count; i++) {
        uint64_t g, l;
        block_at(x, i, &g, &l);
        fn(ctx, x->src_raw + (in ? g : l), b->block_bytes, 0);
        fn(ctx, x->dst_raw + (in ? l : g), in ? local_block(b) : b->block_bytes, 1);
    }
}
