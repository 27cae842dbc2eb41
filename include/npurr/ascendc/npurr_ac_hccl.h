/*
 * npurr_ac_hccl.h - the HCCL context of npurr's Ascend C headers:
 * GetHcclContext<group>() and Hccl<serverType> (Init, SetCcTiling,
 * GetWindowsInAddr / GetWindowsOutAddr, GetRankId, GetRankDim, BatchWrite,
 * Finalize), backed by npurr's symmetric windows and AICPU BatchWrite.
 *
 * The host side declares each group (npurr_host.hccl_group): a symmetric
 * context allocation whose bytes it fills as the kernel reads them (an A2
 * kernel casts it to its own HcclOpResParam and reads winSize), and the in
 * and out windows. An Hccl finds its group from the context it is given.
 * BatchWrite posts count items of npurr's batch_write_task layout to the
 * AICPU (npurr/device_calls.h), each one RDMA or HCCS write with the AICPU's
 * per-task cost.
 */
#ifndef NPURR_AC_HCCL_H
#define NPURR_AC_HCCL_H

#include "npurr_ac_base.h"

/* Group ids of GetHcclContext. */
constexpr int HCCL_GROUP_ID_0 = 0;
constexpr int HCCL_GROUP_ID_1 = 1;

namespace AscendC {

constexpr uint32_t HCCL_MAX_RANK_NUM = 32;

/* Where the HCCL server runs: npurr models the AICPU's. */
enum HcclServerType { HCCL_SERVER_TYPE_AICPU = 0, HCCL_SERVER_TYPE_END };

/* An RDMA work queue entry's data, as A2 contexts lay them out (opaque here). */
struct IbVerbsData {
    uint64_t remoteInput, remoteOutput, localInput, localOutput;
    uint8_t rsv[32];
};

/* This rank's context of HCCL group `group` (a GM pointer the host filled). */
template <int group> __aicore__ inline __gm__ uint8_t *GetHcclContext(npurr_site s = npurr_site()) {
    static_assert(group >= 0 && group < 4, "npurr: HCCL groups 0..3");
    return static_cast<__gm__ uint8_t *>(::dev_hccl_context(group, s.dev()));
}

/* A communicator over one HCCL group's windows. */
template <HcclServerType serverType = HCCL_SERVER_TYPE_AICPU> class Hccl {
  public:
    static_assert(serverType == HCCL_SERVER_TYPE_AICPU, "npurr models the AICPU HCCL server");
    /* Binds to the group whose context this is (GetHcclContext<g>()). */
    __aicore__ void Init(GM_ADDR context, __gm__ void *initTiling = nullptr,
                         npurr_site s = npurr_site()) {
        (void)initTiling;
        group_ = -1;
        for (int g = 0; g < 4 && group_ < 0; g++)
            if (declared(g) && ::dev_hccl_context(g, s.dev()) == context) group_ = g;
        if (group_ < 0)
            ::dev_unsupported("Hccl::Init: the context is no HCCL group's (GetHcclContext<g>())",
                              s.dev());
    }
    /* The collective's tiling: npurr's windows need none. */
    __aicore__ int32_t SetCcTiling(__gm__ void *ccTiling) {
        (void)ccTiling;
        return 0;
    }
    /* rank's in window (its GM as a pointer). */
    __aicore__ GM_ADDR GetWindowsInAddr(uint32_t rank, npurr_site s = npurr_site()) const {
        return static_cast<GM_ADDR>(::dev_hccl_window(group_, (int)rank, 0, s.dev()));
    }
    /* rank's out window. */
    __aicore__ GM_ADDR GetWindowsOutAddr(uint32_t rank, npurr_site s = npurr_site()) const {
        return static_cast<GM_ADDR>(::dev_hccl_window(group_, (int)rank, 1, s.dev()));
    }
    /* This rank in the group. */
    __aicore__ uint32_t GetRankId() const { return (uint32_t)::dev_rank(); }
    /* Ranks in the group. */
    __aicore__ uint32_t GetRankDim() const { return (uint32_t)::dev_rank_size(); }
    /* Bytes of each window. */
    __aicore__ uint64_t GetWindowsSize(npurr_site s = npurr_site()) const {
        return ::dev_hccl_window_size(group_, s.dev());
    }
    /* Posts count write tasks (npurr's batch_write_task, 32 bytes each) at
     * tasks to the AICPU: each one write to a peer's window. */
    template <bool commit = true>
    __aicore__ int32_t BatchWrite(GM_ADDR tasks, uint32_t count, npurr_site s = npurr_site()) {
        gm_t at;
        at = ::dev_gm_from_host(tasks, s.dev());
        ::dev_batch_write(at, count, s.dev());
        return 0;
    }
    /* Ends the group's use by this core: the AICPU server has nothing left
     * to do in npurr, so this only pays one scalar operation. */
    __aicore__ void Finalize(npurr_site s = npurr_site()) { ::dev_scalar_cycles(1, s.dev()); }
  private:
    static bool declared(int g) { return ::dev_hccl_declared(g); }
    int group_ = -1;
};

}  // namespace AscendC

#endif
