/*
 * combine_host.cpp - a host side for sgl-kernel-npu's cam_moe_combine_normal
 * (MIT, csrc/deepep/ops2/op_kernel/, not part of npurr): the kernel runs
 * unchanged on npurr's MoE inputs; the check is every token's weighted sum.
 * What A2's host side gives it: an HcclOpResParam context whose winSize the
 * kernel reads, windows of that size, the tiling per rank (epRankId).
 */
#include "kernel_operator.h"
#include "moe_distribute_base.h"
#include "cam_moe_combine_normal_tiling.h"
#include "comm_args.h"
#include "npurr/ascendc_host.h"
#include "moe_plan.h"

extern "C" void cam_moe_combine_normal(uint8_t *recvX, uint8_t *tokenSrcInfo, uint8_t *epRecvCount,
                                       uint8_t *topkWeights, uint8_t *tpRecvCount, uint8_t *XOut,
                                       uint8_t *sendCostStatsOut, uint8_t *workspaceGM,
                                       uint8_t *tilingGM);
namespace {
struct SglState {
    explicit SglState(npurr_engine *e) : run(e) {}
    npurr::AscendcRun run;
    moe::Plan plan;
    npurr::Buffer out;
};
int setup(npurr_engine *e, const npurr_opts *o, void **state, char *err, size_t errlen) {
    SglState *st = new SglState(e);
    npurr::Host &h = st->run.host;
    const npurr_topology &topo = h.topology();
    moe::Plan &pl = st->plan;
    if (pl.Read(o, topo, err, errlen)) {
        delete st;
        return -1;
    }
    uint64_t rb = (uint64_t)pl.H * 2, stride = (rb + 511) / 512 * 512;
    uint64_t winSize =
        Moe::NOTIFY_DISPATCH_BUFF_OFFSET + (3ull << 20) + pl.TK() * stride + (4ull << 20);
    int64_t maxX = pl.MaxXRows();
    npurr::Buffer x = h.alloc("recv_x", maxX * rb), info = h.alloc("token_src_info", maxX * 12);
    npurr::Buffer count = h.alloc("ep_recv_count", pl.E * 4),
                  w = h.alloc("topk_weights", pl.TK() * 4);
    npurr::Buffer tp = h.alloc("tp_recv_count", 64), stats = h.alloc("send_cost_stats", 4096);
    npurr::Buffer ws = h.alloc("workspace", 4096);
    st->out = h.alloc("out", pl.T * rb);
    npurr::Buffer ctx = h.hccl(0, sizeof(HcclOpResParam), winSize);
    for (int r = 0; r < pl.R; r++) {  // the kernel reads winSize from its context
        uint64_t ws64 = winSize;
        h.write(ctx, r, &ws64, 8, offsetof(HcclOpResParam, winSize));
    }
    std::function<CamMoeCombineNormalTilingData(int)> make = [&](int r) {
        CamMoeCombineNormalTilingData t{};
        auto &i = t.camMoeCombineNormalInfo;
        i.epWorldSize = pl.R;
        i.tpWorldSize = 1;
        i.epRankId = r;
        i.moeExpertNum = pl.E;
        i.moeExpertPerRankNum = pl.L;
        i.globalBs = pl.T * pl.R;
        i.bs = pl.T;
        i.k = pl.K;
        i.h = pl.H;
        i.aivNum = topo.aiv;
        i.totalUbSize = 192 * 1024;
        i.totalWinSize = winSize;
        return t;
    };
    npurr::Buffer tiling = h.tiling(make);
    for (int r = 0; r < pl.R; r++) {
        std::vector<int32_t> cum(pl.E);
        for (int i = 0; i < pl.E; i++)
            cum[i] = pl.offset[(size_t)r * pl.E + i] + pl.length[(size_t)r * pl.E + i];
        h.write(count, r, cum.data(), cum.size() * 4);
        if (pl.srcInfo[r].size())
            h.write(info, r, pl.srcInfo[r].data(), pl.srcInfo[r].size() * 4);
        h.write(w, r, &pl.weights[(size_t)r * pl.TK()], pl.TK() * 4);
    }
    if (*h.error() || moe::FillX(e, pl, x.at, err, errlen) ||
        h.launch("CamMoeCombineNormal", cam_moe_combine_normal, topo.aiv,
                 {x, info, count, w, tp, st->out, stats, ws, tiling})) {
        if (*h.error())
            snprintf(err, errlen, "%s", h.error());
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
int check(npurr_engine *e, void *state, char *msg, size_t n) {
    SglState *st = static_cast<SglState *>(state);
    return moe::CheckWeightedSum(e, st->plan, st->out.at, msg, n);
}
void destroy(void *s) {
    delete static_cast<SglState *>(s);
}
const npurr_option opts[] = {MOE_OPTIONS, {nullptr, nullptr, nullptr}};
npurr_kernel make_kernel() {
    npurr_kernel k{};
    k.name = "sgl-combine-normal";
    k.summary = "sgl-kernel-npu cam_moe_combine_normal";
    k.options = opts;
    k.setup = setup;
    k.check = check;
    k.destroy = destroy;
    return k;
}
const npurr_kernel sgl_kernel = make_kernel();
}  // namespace
NPURR_PLUGIN("sgl-combine-normal", &sgl_kernel)
