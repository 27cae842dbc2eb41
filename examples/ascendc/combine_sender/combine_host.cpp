/*
 * combine_host.cpp - the host side of the Ascend C combine-sender as an
 * npurr plugin: the routing and the expert rows npurr's own combine-sender
 * runs on (npurr_moe_routing, npurr_moe_row), the dispatch metadata they
 * imply (what a dispatch would have left: x expert-major and rank-minor,
 * the offset and length tables, the receive layout), the HCCL window with
 * the rings, the two launches and the check of every token's weighted sum.
 *
 * The options are combine-sender's, with its defaults, so the same command
 * line runs both: `npurr record -k combine-sender` (C) and `npurr record
 * --plugin ... -k ascendc-combine-sender` (this) give the same out tensor.
 */
#include <cstdio>
#include <vector>

#include "npurr/ascendc_host.h"

#include "combine_tiling.h"
#include "moe_plan.h"

extern "C" void combine_send(uint8_t *x, uint8_t *offsetTable, uint8_t *lengthTable, uint8_t *tiling);
extern "C" void combine_recv(uint8_t *recvMeta, uint8_t *recv, uint8_t *expertIds, uint8_t *expandIdx,
                             uint8_t *topkWeights, uint8_t *expertWindowOffset, uint8_t *out,
                             uint8_t *tiling);

namespace {

const char *const KERNEL = "ascendc-combine-sender";

struct CombineState {
    explicit CombineState(npurr_engine *e) : run(e) {}
    npurr::AscendcRun run;
    moe::Plan plan;
    npurr::Buffer out;
};

/* The shape, the routing and this kernel's own options: 0, or -1 with err. */
int read_plan(const npurr_opts *o, const npurr_topology &topo, moe::Plan &pl, CombineTiling &t, int &cores,
              char *err, size_t errlen) {
    int64_t staging, ring, senderCores;
    if (topo.nodes != 1) {
        std::snprintf(err, errlen, "%s moves data inside one node over HCCS: --nodes must be 1", KERNEL);
        return -1;
    }
    if (pl.Read(o, topo, err, errlen) ||
        npurr_opt_i64_range(o, "staging-bytes", 64, 96 * 1024, &staging, err, errlen) ||
        npurr_opt_i64_range(o, "ring-bytes", 32, (int64_t)1 << 36, &ring, err, errlen) ||
        npurr_opt_i64_range(o, "sender-cores", 0, topo.aiv - topo.ranks, &senderCores, err, errlen))
        return -1;
    if (staging % 32 || ring % 32) {
        std::snprintf(err, errlen, "--staging-bytes %lld and --ring-bytes %lld must be multiples of 32",
                      (long long)staging, (long long)ring);
        return -1;
    }
    t = CombineTiling{};
    t.ranks = pl.R;
    t.localExperts = pl.L;
    t.experts = pl.E;
    t.tokens = pl.T;
    t.topk = pl.K;
    t.hidden = pl.H;
    t.rowBytes = (uint32_t)pl.H * 2;
    t.stagingBytes = (uint32_t)staging;
    t.tableBytes = (uint32_t)((pl.L * pl.R * 4 + 31) / 32 * 32);
    t.ctrlBytes = (uint32_t)pl.R * CTRL_STRIDE;
    t.ringBytes = (uint64_t)ring;
    t.ringStride = ((uint64_t)ring + 511) / 512 * 512;
    cores = senderCores ? (int)senderCores : pl.R;
    return 0;
}

/* Every rank's inputs written, x as generated rows. */
int fill_inputs(npurr_engine *e, npurr::Host &h, moe::Plan &pl, const npurr::Buffer *x,
                const npurr::Buffer &offT, const npurr::Buffer &lenT, const npurr::Buffer &meta,
                const npurr::Buffer &ids, const npurr::Buffer &idx, const npurr::Buffer &w,
                const npurr::Buffer &ewo, char *err, size_t errlen) {
    size_t R = (size_t)pl.R, L = (size_t)pl.L, TK = (size_t)pl.T * pl.K;
    for (size_t r = 0; r < R; r++) {
        std::vector<int32_t> m(2 * R);
        for (size_t q = 0; q < R; q++) {
            m[q] = pl.recvRows[r * R + q];
            m[R + q] = pl.recvOffset[r * R + q];
        }
        if (h.write(offT, (int)r, &pl.offset[r * L * R], L * R * 4) ||
            h.write(lenT, (int)r, &pl.length[r * L * R], L * R * 4) ||
            h.write(meta, (int)r, m.data(), 2 * R * 4) ||
            h.write(ids, (int)r, &pl.ids[r * TK], TK * 4) ||
            h.write(idx, (int)r, &pl.expandIdx[r * TK], TK * 4) ||
            h.write(w, (int)r, &pl.weights[r * TK], TK * 4) ||
            h.write(ewo, (int)r, &pl.ewo[r * (size_t)pl.E], (size_t)pl.E * 4)) {
            std::snprintf(err, errlen, "%s: %s", KERNEL, h.error());
            return -1;
        }
    }
    return moe::FillX(e, pl, x->at, err, errlen);
}

int combine_setup(npurr_engine *e, const npurr_opts *o, void **state, char *err, size_t errlen) {
    *state = nullptr;
    CombineState *st = new CombineState(e);
    npurr::Host &h = st->run.host;
    moe::Plan &pl = st->plan;
    CombineTiling t;
    int cores = 0;
    if (read_plan(o, h.topology(), pl, t, cores, err, errlen)) {
        delete st;
        return -1;
    }
    /* x differs in size per rank: the largest everywhere (the rest unused). */
    int64_t maxX = pl.MaxXRows(), maxRecv = pl.MaxRecvRows();
    uint64_t rb = t.rowBytes, TK = (uint64_t)pl.T * pl.K;
    npurr::Buffer x = h.alloc("x", (uint64_t)maxX * rb);
    npurr::Buffer offT = h.alloc("offset_table", t.tableBytes), lenT = h.alloc("length_table", t.tableBytes);
    npurr::Buffer meta = h.alloc("recv_meta", 2 * (uint64_t)pl.R * 4);
    npurr::Buffer recv = h.alloc("recv", (uint64_t)maxRecv * rb);
    npurr::Buffer ids = h.alloc("expert_ids", TK * 4), idx = h.alloc("expand_idx", TK * 4);
    npurr::Buffer w = h.alloc("topk_weights", TK * 4), ewo = h.alloc("expert_window_offset", (uint64_t)pl.E * 4);
    st->out = h.alloc("out", (uint64_t)pl.T * rb);
    npurr::Buffer ctx = h.hccl(0, 64, t.ctrlBytes + (uint64_t)pl.R * t.ringStride);
    npurr::Buffer tiling = h.tiling(t);
    int failed = !x.ok() || !offT.ok() || !lenT.ok() || !meta.ok() || !recv.ok() || !ids.ok() ||
                 !idx.ok() || !w.ok() || !ewo.ok() || !st->out.ok() || !ctx.ok() || !tiling.ok();
    if (!failed && fill_inputs(e, h, pl, &x, offT, lenT, meta, ids, idx, w, ewo, err, errlen)) {
        delete st;
        return -1;
    }
    /* The rings, named for deadlock reports and the analysis's ring tables. */
    for (int s = 0; !failed && s < pl.R; s++)
        for (int p = 0; p < pl.R; p++) {
            char name[64];
            std::snprintf(name, sizeof name, "combine_ring[%d->%d]", p, s);
            gm_t block = gm_add(h.windows_in().at[(size_t)s], (int64_t)p * CTRL_STRIDE);
            if (!npurr_declare_ring(e, name, RING_HCCS, gm_add(block, CTRL_HEAD), gm_add(block, CTRL_TAIL), 8,
                                    t.ringBytes, p, s))
                failed = 1;
        }
    failed = failed || h.launch("CombineSender", combine_send, cores, {x, offT, lenT, tiling}) ||
             h.launch("CombineReceiver", combine_recv, pl.R, {meta, recv, ids, idx, w, ewo, st->out, tiling});
    if (failed) {
        std::snprintf(err, errlen, "%s: %s", KERNEL, *h.error() ? h.error() : "the engine refused a ring");
        delete st;
        return -1;
    }
    if (moe::NameOut(e, pl, st->out.at, err, errlen)) {
        delete st;
        return -1;
    }
    *state = st;
    return 0;
}

/* out on every rank against the weighted sum computed on the host. */
int combine_check(npurr_engine *e, void *state, char *msg, size_t msglen) {
    CombineState *st = static_cast<CombineState *>(state);
    return moe::CheckWeightedSum(e, st->plan, st->out.at, msg, msglen);
}

void combine_destroy(void *state) { delete static_cast<CombineState *>(state); }

const npurr_option combine_options[] = {
    MOE_OPTIONS,
    {"staging-bytes", "65536", "each of the two UB staging buffers = largest flush (multiple of 32)"},
    {"ring-bytes", "262144", "HCCS ring per (source, destination) pair (multiple of 32)"},
    {"sender-cores", "0", "AIV cores per rank for the sender; 0 = one per destination rank"},
    {nullptr, nullptr, nullptr},
};

const npurr_phase combine_phases[] = {
    {"combine", {"CombineSender", "CombineReceiver", nullptr}, {nullptr}},
    {nullptr, {nullptr}, {nullptr}},
};

npurr_kernel make_kernel() {
    npurr_kernel k{};
    k.name = KERNEL;
    k.summary = "example: seed 000's combine-sender (gather-pack, ring with head/tail) in Ascend C";
    k.options = combine_options;
    k.setup = combine_setup;
    k.check = combine_check;
    k.destroy = combine_destroy;
    k.check_splits = 1;
    k.phases = combine_phases;
    return k;
}
const npurr_kernel combine_kernel = make_kernel();

}  // namespace

NPURR_PLUGIN("ascendc-combine-sender-example", &combine_kernel)
