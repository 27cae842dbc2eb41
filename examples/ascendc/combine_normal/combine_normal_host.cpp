/*
 * combine_normal_host.cpp - the host side of the Ascend C combine-normal
 * as an npurr plugin: the routing and expert rows npurr's own
 * combine-normal runs on (npurr_moe_routing, npurr_moe_row), what A2's
 * normal dispatch hands its combine (recv_x expert-major and
 * source-rank-minor, tokenSrcInfo, epRecvCount), the HCCL window with the
 * status and data areas, the launch on --cores AIV cores of every rank, and
 * the check of every token's weighted sum.
 *
 * Its options are combine-normal's, with its defaults: the same command
 * line runs `-k combine-normal` (C) and this, and they give the same out.
 */
#include <cstdio>
#include <vector>

#include "npurr/ascendc_host.h"

#include "combine_normal_tiling.h"
#include "moe_plan.h"

extern "C" void cam_moe_combine_normal(uint8_t *recvX, uint8_t *tokenSrcInfo, uint8_t *epRecvCount,
                                       uint8_t *expertIds, uint8_t *topkWeights, uint8_t *xOut,
                                       uint8_t *tiling);

namespace {

const char *const KERNEL = "ascendc-combine-normal";

struct NormalState {
    explicit NormalState(npurr_engine *e) : run(e) {}
    npurr::AscendcRun run;
    moe::Plan plan;
    npurr::Buffer out;
};

int normal_setup(npurr_engine *e, const npurr_opts *o, void **state, char *err, size_t errlen) {
    *state = nullptr;
    NormalState *st = new NormalState(e);
    npurr::Host &h = st->run.host;
    const npurr_topology &topo = h.topology();
    moe::Plan &pl = st->plan;
    int64_t cores;
    if (topo.nodes != 1) {
        std::snprintf(err, errlen, "%s moves data inside one node over HCCS: --nodes must be 1", KERNEL);
        delete st;
        return -1;
    }
    if (pl.Read(o, topo, err, errlen) || npurr_opt_i64_range(o, "cores", 0, topo.aiv, &cores, err, errlen)) {
        delete st;
        return -1;
    }
    CombineNormalTiling t{};
    t.ranks = pl.R;
    t.experts = pl.E;
    t.tokens = pl.T;
    t.topk = pl.K;
    t.hidden = pl.H;
    t.rowBytes = (uint32_t)pl.H * 2;
    t.windowStride = (t.rowBytes + 511) / 512 * 512;
    t.stateBytes = pl.TK() * STATE_BYTES;
    uint64_t rb = t.rowBytes;
    int64_t maxX = pl.MaxXRows();
    npurr::Buffer x = h.alloc("recv_x", (uint64_t)maxX * rb);
    npurr::Buffer info = h.alloc("token_src_info", (uint64_t)maxX * 12);
    npurr::Buffer count = h.alloc("ep_recv_count", (uint64_t)pl.E * 4);
    npurr::Buffer ids = h.alloc("expert_ids", pl.TK() * 4), w = h.alloc("topk_weights", pl.TK() * 4);
    st->out = h.alloc("out", (uint64_t)pl.T * rb);
    npurr::Buffer ctx = h.hccl(0, 64, t.stateBytes + pl.TK() * t.windowStride);
    npurr::Buffer tiling = h.tiling(t);
    int failed = !x.ok() || !info.ok() || !count.ok() || !ids.ok() || !w.ok() || !st->out.ok() ||
                 !ctx.ok() || !tiling.ok();
    for (int r = 0; !failed && r < pl.R; r++) {
        /* epRecvCount: the inclusive prefix over (expert, source rank) */
        std::vector<int32_t> cum((size_t)pl.E);
        for (size_t i = 0; i < cum.size(); i++)
            cum[i] = pl.offset[(size_t)r * pl.E + i] + pl.length[(size_t)r * pl.E + i];
        const std::vector<int32_t> &si = pl.srcInfo[(size_t)r];
        failed = h.write(count, r, cum.data(), cum.size() * 4) ||
                 (si.size() && h.write(info, r, si.data(), si.size() * 4)) ||
                 h.write(ids, r, &pl.ids[(size_t)r * pl.TK()], pl.TK() * 4) ||
                 h.write(w, r, &pl.weights[(size_t)r * pl.TK()], pl.TK() * 4);
    }
    if (failed || moe::FillX(e, pl, x.at, err, errlen) ||
        h.launch("CamMoeCombineNormal", cam_moe_combine_normal, cores ? (int)cores : topo.aiv,
                 {x, info, count, ids, w, st->out, tiling})) {
        if (*h.error()) std::snprintf(err, errlen, "%s: %s", KERNEL, h.error());
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

int normal_check(npurr_engine *e, void *state, char *msg, size_t msglen) {
    NormalState *st = static_cast<NormalState *>(state);
    return moe::CheckWeightedSum(e, st->plan, st->out.at, msg, msglen);
}

void normal_destroy(void *state) { delete static_cast<NormalState *>(state); }

const npurr_option normal_options[] = {
    MOE_OPTIONS,
    {"cores", "0", "AIV cores per rank; 0 = all of them (48 on 910B2), as A2's tiling takes"},
    {nullptr, nullptr, nullptr},
};

const npurr_phase normal_phases[] = {
    {"combine", {"CamMoeCombineNormal", nullptr}, {"CamMoeCombineNormal", nullptr}},
    {nullptr, {nullptr}, {nullptr}},
};

npurr_kernel make_kernel() {
    npurr_kernel k{};
    k.name = KERNEL;
    k.summary = "example: the intranode normal combine (A2's CamMoeCombineNormal algorithm) in Ascend C";
    k.options = normal_options;
    k.setup = normal_setup;
    k.check = normal_check;
    k.destroy = normal_destroy;
    k.check_splits = 1;
    k.phases = normal_phases;
    return k;
}
const npurr_kernel normal_kernel = make_kernel();

}  // namespace

NPURR_PLUGIN("ascendc-combine-normal-example", &normal_kernel)
