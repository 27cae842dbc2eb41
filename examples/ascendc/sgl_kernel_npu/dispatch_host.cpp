/*
 * dispatch_host.cpp - a host side for sgl-kernel-npu's cam_moe_dispatch_normal
 * (MIT, not part of npurr): the kernel unchanged, its inputs what
 * NotifyDispatch would leave (sendOffset, sendTokenIdx, recvOffset,
 * recvCount from npurr's routing), tiling key 10000 (no quant); the check:
 * every row an owner received is its token's, every slot arrived once.
 */
#include "kernel_operator.h"
#include "moe_distribute_base.h"
#include "cam_moe_dispatch_normal_tiling.h"
#include "comm_args.h"
#include "npurr/ascendc_host.h"
#include "moe_plan.h"

extern "C" void cam_moe_dispatch_normal(uint8_t *x, uint8_t *expertIds, uint8_t *send_offset,
                                        uint8_t *send_token_idx, uint8_t *recv_offset,
                                        uint8_t *recv_count, uint8_t *expandXOut,
                                        uint8_t *dynamicScalesOut, uint8_t *assist, uint8_t *stats,
                                        uint8_t *ws, uint8_t *tiling);
namespace {
struct SglState {
    explicit SglState(npurr_engine *e) : run(e) {}
    npurr::AscendcRun run;
    moe::Plan plan;
    npurr::Buffer x, out, assist;
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
    size_t R = pl.R, L = pl.L, E = pl.E, TK = pl.TK();
    uint64_t rb = (uint64_t)pl.H * 2, stride = (rb + 32 + 12 + 511) / 512 * 512;
    uint64_t winSize =
        Moe::NOTIFY_DISPATCH_BUFF_OFFSET + (3ull << 20) + 2 * TK * stride * 2 + (8ull << 20);
    int64_t maxX = pl.MaxXRows();
    st->x = h.alloc("x", pl.T * rb);
    npurr::Buffer ids = h.alloc("expert_ids", TK * 4), so = h.alloc("send_offset", E * 4);
    npurr::Buffer sti = h.alloc("send_token_idx", TK * 4), ro = h.alloc("recv_offset", E * 4);
    npurr::Buffer rc = h.alloc("recv_count", E * 4);
    st->out = h.alloc("expand_x", maxX * rb);
    npurr::Buffer scales = h.alloc("dynamic_scales", maxX * 4 + 32);
    st->assist = h.alloc("assist_info", maxX * 12 + 32);
    npurr::Buffer stats = h.alloc("stats", 4096), ws = h.alloc("workspace", 4096);
    npurr::Buffer ctx = h.hccl(0, sizeof(HcclOpResParam), winSize);
    for (int r = 0; r < pl.R; r++) {
        uint64_t w = winSize;
        h.write(ctx, r, &w, 8, offsetof(HcclOpResParam, winSize));
    }
    std::function<CamMoeDispatchNormalTilingData(int)> make = [&](int r) {
        CamMoeDispatchNormalTilingData t{};
        auto &i = t.camMoeDispatchNormalInfo;
        i.epWorldSize = pl.R;
        i.tpWorldSize = 1;
        i.epRankId = r;
        i.moeExpertNum = pl.E;
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
    // sendOffset[s][e]: exclusive prefix over experts of s's rows; recv tables on owner q
    std::vector<int32_t> sendOff(R * E);
    for (size_t s = 0; s < R; s++) {
        int32_t sum = 0;
        for (size_t e2 = 0; e2 < E; e2++) {
            sendOff[s * E + e2] = sum;
            sum += pl.Len(e2 / L, e2 % L, s);
        }
    }
    for (int r = 0; r < pl.R; r++) {
        std::vector<int32_t> rof(E), rcn(E);
        for (size_t le = 0; le < L; le++)
            for (size_t s = 0; s < R; s++) {
                rof[le * R + s] = sendOff[s * E + r * L + le];
                rcn[le * R + s] = pl.Off(r, le, s) + pl.Len(r, le, s);
            }
        h.write(ids, r, &pl.ids[r * TK], TK * 4);
        h.write(so, r, &sendOff[r * E], E * 4);
        h.write(sti, r, &pl.expandIdx[r * TK], TK * 4);
        h.write(ro, r, rof.data(), E * 4);
        h.write(rc, r, rcn.data(), E * 4);
        std::vector<uint16_t> row(pl.H);
        for (int t = 0; t < pl.T; t++) {
            npurr_moe_row(pl.seed, r, t, 0, 0, pl.H, row.data());
            h.write(st->x, r, row.data(), rb, t * rb);
        }
    }
    if (*h.error() ||
        h.launch("CamMoeDispatchNormal", cam_moe_dispatch_normal, topo.aiv,
                 {st->x, ids, so, sti, ro, rc, st->out, scales, st->assist, stats, ws, tiling},
                 10000)) {
        snprintf(err, errlen, "%s", h.error());
        delete st;
        return -1;
    }
    *state = st;
    return 0;
}
// every row an owner received is its source token's row, and every (s, t, k) arrived once
int check(npurr_engine *e, void *state, char *msg, size_t n) {
    SglState *st = static_cast<SglState *>(state);
    moe::Plan &pl = st->plan;
    uint64_t rb = (uint64_t)pl.H * 2;
    std::vector<uint16_t> got(pl.H), want(pl.H);
    std::vector<int> seen(pl.R * pl.TK(), 0);
    for (int q = 0; q < pl.R; q++) {
        int64_t rows = pl.xRows[q];
        std::vector<int32_t> tri(rows * 3);
        npurr_gm_read(e, st->assist.at[q], tri.data(), rows * 12);
        for (int64_t i = 0; i < rows; i++) {
            int s = tri[i * 3], t = tri[i * 3 + 1], k = tri[i * 3 + 2];
            if (s < 0 || s >= pl.R || t < 0 || t >= pl.T || k < 0 || k >= pl.K) {
                snprintf(msg, n, "rank %d row %lld: triple (%d, %d, %d)", q, (long long)i, s, t, k);
                return 1;
            }
            seen[s * pl.TK() + t * pl.K + k]++;
            npurr_gm_read(e, gm_add(st->out.at[q], i * rb), got.data(), rb);
            npurr_moe_row(pl.seed, s, t, 0, 0, pl.H, want.data());
            if (got != want) {
                snprintf(msg, n, "rank %d row %lld: not token %d of rank %d", q, (long long)i, t,
                         s);
                return 1;
            }
        }
    }
    for (size_t i = 0; i < seen.size(); i++)
        if (seen[i] != (pl.ids[i] >= 0 ? 1 : 0)) {
            snprintf(msg, n, "slot %zu arrived %d times", i, seen[i]);
            return 1;
        }
    return 0;
}
void destroy(void *s) {
    delete static_cast<SglState *>(s);
}
const npurr_option opts[] = {MOE_OPTIONS, {nullptr, nullptr, nullptr}};
npurr_kernel make_kernel() {
    npurr_kernel k{};
    k.name = "sgl-dispatch-normal";
    k.summary = "sgl-kernel-npu cam_moe_dispatch_normal";
    k.options = opts;
    k.setup = setup;
    k.check = check;
    k.destroy = destroy;
    return k;
}
const npurr_kernel sgl_kernel = make_kernel();
}  // namespace
NPURR_PLUGIN("sgl-dispatch-normal", &sgl_kernel)
