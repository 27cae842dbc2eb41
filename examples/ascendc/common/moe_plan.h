/*
 * moe_plan.h - what the MoE combine examples' host sides share: npurr's
 * routing for every rank (npurr_moe_routing) and the dispatch metadata it
 * implies, as a dispatch would have left it for the combine; the expert
 * rows as generated inputs (npurr_moe_row); and the weighted sum every
 * combine must produce, computed here in the kernels' order.
 *
 * R ranks, L = E / R local experts, T tokens and K slots a rank; an
 * expert's rank p sends, a token's rank s receives.
 */
#ifndef MOE_PLAN_H
#define MOE_PLAN_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "npurr/plugin.h"

namespace moe {

/* The shape every combine example takes, with npurr's combines' defaults. */
#define MOE_OPTIONS                                                                            \
    {"tokens", "128", "tokens per rank"},                                                      \
        {"hidden", "7168", "hidden size: elements per token row"},                             \
        {"topk", "8", "experts per token (1..64)"},                                            \
        {"experts", "256", "experts in total; each rank holds experts / ranks"},               \
        {"routing", "uniform", "how tokens pick their experts (npurr's --routing grammar)"},   \
        {"data-seed", "1", "seed of the routing and of the payload"}

struct Plan {
    int R = 0, L = 0, E = 0, T = 0, K = 0, H = 0;
    uint64_t seed = 0;
    std::vector<int32_t> ids, expandIdx;        // [s][T][K]
    std::vector<float> weights;                 // [s][T][K]
    std::vector<int32_t> length, offset;        // [p][L][R]: x's segments, expert-major rank-minor
    std::vector<int64_t> xRows;                 // [p]
    std::vector<int32_t> recvRows, recvOffset;  // [s][p]: seed 000's receive layout
    std::vector<int64_t> recvTotal;             // [s]
    std::vector<int32_t> ewo;                   // [s][E]: expert e's first received row
    std::vector<std::vector<int32_t>> srcInfo;  // [p][x row][3]: (s, t, k), A2's tokenSrcInfo

    int32_t &Len(int p, int le, int s) { return length[((size_t)p * L + le) * R + s]; }
    int32_t &Off(int p, int le, int s) { return offset[((size_t)p * L + le) * R + s]; }
    size_t TK() const { return (size_t)T * K; }

    /* Reads the shape options and routes every rank. 0, or -1 with err. */
    int Read(const npurr_opts *o, const npurr_topology &topo, char *err, size_t errlen) {
        int64_t tokens, hidden, topk, experts, s;
        const char *routing;
        if (npurr_opt_i64_range(o, "tokens", 1, 1 << 20, &tokens, err, errlen) ||
            npurr_opt_i64_range(o, "hidden", 1, 1 << 16, &hidden, err, errlen) ||
            npurr_opt_i64_range(o, "topk", 1, 64, &topk, err, errlen) ||
            npurr_opt_i64_range(o, "experts", 1, 1 << 16, &experts, err, errlen) ||
            npurr_opt_i64(o, "data-seed", &s, err, errlen))
            return -1;
        if (npurr_opt_str(o, "routing", &routing)) return -1;
        R = topo.ranks;
        E = (int)experts;
        T = (int)tokens;
        K = (int)topk;
        H = (int)hidden;
        seed = (uint64_t)s;
        ids.resize((size_t)R * TK());
        weights.resize((size_t)R * TK());
        for (int r = 0; r < R; r++)
            if (npurr_moe_routing(&topo, routing, seed, E, K, r, T, &ids[(size_t)r * TK()],
                                  &weights[(size_t)r * TK()], err, errlen))
                return -1;
        L = E / R;
        LayoutX();
        LayoutRecv();
        LayoutSrcInfo();
        return 0;
    }

    /* Each (t, k)'s index in its (expert, source) segment, in token order as
     * a dispatch appends them; x's rows expert-major, rank-minor. */
    void LayoutX() {
        length.assign((size_t)R * L * R, 0);
        offset.assign((size_t)R * L * R, 0);
        expandIdx.assign((size_t)R * TK(), -1);
        for (int s = 0; s < R; s++)
            for (size_t i = 0; i < TK(); i++) {
                int32_t e = ids[(size_t)s * TK() + i];
                if (e >= 0) expandIdx[(size_t)s * TK() + i] = Len(e / L, e % L, s)++;
            }
        xRows.assign((size_t)R, 0);
        for (int p = 0; p < R; p++) {
            int64_t row = 0;
            for (int le = 0; le < L; le++)
                for (int s = 0; s < R; s++) {
                    Off(p, le, s) = (int32_t)row;
                    row += Len(p, le, s);
                }
            xRows[(size_t)p] = row;
        }
    }
    /* On s: each source's stream in rank order, expert e's rows at ewo[e]. */
    void LayoutRecv() {
        recvRows.assign((size_t)R * R, 0);
        recvOffset.assign((size_t)R * R, 0);
        recvTotal.assign((size_t)R, 0);
        ewo.assign((size_t)R * E, 0);
        for (int s = 0; s < R; s++) {
            int64_t row = 0;
            for (int p = 0; p < R; p++) {
                recvOffset[(size_t)s * R + p] = (int32_t)row;
                int64_t from = 0;
                for (int le = 0; le < L; le++) {
                    ewo[(size_t)s * E + (size_t)p * L + le] = (int32_t)(row + from);
                    from += Len(p, le, s);
                }
                recvRows[(size_t)s * R + p] = (int32_t)from;
                row += from;
            }
            recvTotal[(size_t)s] = row;
        }
    }
    /* Which (s, t, k) each row of x on p holds. */
    void LayoutSrcInfo() {
        srcInfo.assign((size_t)R, {});
        for (int p = 0; p < R; p++) srcInfo[(size_t)p].assign((size_t)xRows[(size_t)p] * 3, 0);
        for (int s = 0; s < R; s++)
            for (size_t i = 0; i < TK(); i++) {
                int32_t e = ids[(size_t)s * TK() + i];
                if (e < 0) continue;
                int p = e / L;
                int64_t row = Off(p, e % L, s) + expandIdx[(size_t)s * TK() + i];
                int32_t *info = &srcInfo[(size_t)p][(size_t)row * 3];
                info[0] = s;
                info[1] = (int32_t)(i / (size_t)K);
                info[2] = (int32_t)(i % (size_t)K);
            }
    }
    /* The largest x and receive buffer of any rank, in rows (at least 1). */
    int64_t MaxXRows() const { return std::max<int64_t>(1, *std::max_element(xRows.begin(), xRows.end())); }
    int64_t MaxRecvRows() const {
        return std::max<int64_t>(1, *std::max_element(recvTotal.begin(), recvTotal.end()));
    }
};

/* A row of x as a generated input: npurr's tagged expert output. */
struct RowParams {
    uint64_t seed;
    int hidden, s, t, k, p;
};
inline void MakeRow(const void *params, uint64_t row, uint8_t *out) {
    (void)row;
    const RowParams *r = static_cast<const RowParams *>(params);
    npurr_moe_row(r->seed, r->s, r->t, r->k, r->p, r->hidden, reinterpret_cast<uint16_t *>(out));
}

/* x on every expert rank: row Off(p, le, s) + expandIdx of its (s, t, k),
 * generated (14 KB rows cost no host memory until computed on). */
inline int FillX(npurr_engine *e, Plan &pl, const std::vector<gm_t> &x, char *err, size_t errlen) {
    uint64_t rb = (uint64_t)pl.H * 2;
    for (int s = 0; s < pl.R; s++)
        for (size_t i = 0; i < pl.TK(); i++) {
            int32_t eid = pl.ids[(size_t)s * pl.TK() + i];
            if (eid < 0) continue;
            int p = eid / pl.L;
            int64_t row = pl.Off(p, eid % pl.L, s) + pl.expandIdx[(size_t)s * pl.TK() + i];
            RowParams rp = {pl.seed, pl.H, s, (int)(i / (size_t)pl.K), (int)(i % (size_t)pl.K), p};
            if (npurr_gm_generate(e, gm_add(x[(size_t)p], row * (int64_t)rb), 1, rb, MakeRow, &rp,
                                  sizeof rp, err, errlen))
                return -1;
        }
    return 0;
}

/* out (every rank's [T, H] bf16) named "out": `record --dump out@R=F.npy`
 * writes it. 0, or -1 with err. */
inline int NameOut(npurr_engine *e, const Plan &pl, const std::vector<gm_t> &out, char *err, size_t errlen) {
    npurr_tensor t = {NPURR_DT_BF16, 2, {(uint64_t)pl.T, (uint64_t)pl.H}};
    for (int r = 0; r < pl.R; r++)
        if (npurr_name_tensor(e, out[(size_t)r], &t, "out", err, errlen)) return -1;
    return 0;
}

inline float Bf16ToFloat(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
/* f rounded to the nearest bf16, ties to even. */
inline uint16_t FloatToBf16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* out (every local rank's [T, H] bf16) against the weighted sum of the
 * rank's rows: acc += (float)(w * row) in slot order, rounded to bf16. 0
 * when every element matches; else 1 with msg naming the first that does not. */
inline int CheckWeightedSum(npurr_engine *e, const Plan &pl, const std::vector<gm_t> &out, char *msg,
                            size_t msglen) {
    size_t H = (size_t)pl.H;
    std::vector<uint16_t> got((size_t)pl.T * H), row(H);
    std::vector<float> acc(H);
    for (int s = 0; s < pl.R; s++) {
        if (!npurr_rank_local(e, s)) continue;
        if (npurr_gm_read(e, out[(size_t)s], got.data(), got.size() * 2)) {
            std::snprintf(msg, msglen, "rank %d: out cannot be read", s);
            return 1;
        }
        for (int t = 0; t < pl.T; t++) {
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int k = 0; k < pl.K; k++) {
                size_t i = (size_t)s * pl.TK() + (size_t)t * pl.K + k;
                if (pl.ids[i] < 0) continue;
                npurr_moe_row(pl.seed, s, t, k, pl.ids[i] / pl.L, pl.H, row.data());
                for (size_t j = 0; j < H; j++) {
                    float scaled = pl.weights[i] * Bf16ToFloat(row[j]);
                    acc[j] = acc[j] + scaled;
                }
            }
            for (size_t j = 0; j < H; j++) {
                uint16_t want = FloatToBf16(acc[j]), have = got[(size_t)t * H + j];
                if (want != have) {
                    std::snprintf(msg, msglen, "rank %d: out[%d][%zu] = %g, expected %g", s, t, j,
                                  (double)Bf16ToFloat(have), (double)Bf16ToFloat(want));
                    return 1;
                }
            }
        }
    }
    return 0;
}

}  // namespace moe

#endif
