/*
 * bad_plugin.c - plugins that go wrong, for tests/e2e/plugin.sh: built with
 * `cc -shared -fPIC -I include -DBAD=...`, one shared object per way a
 * user's plugin can fail. Each is a small, otherwise correct kernel
 * ("bad-kernel": one AIV core per rank copies 64 bytes through UB) with one
 * defect, chosen by BAD:
 *   BAD_NONE        none (the control: records, checks and replays)
 *   BAD_ABI_MAJOR   built for another major version of the ABI
 *   BAD_NO_ABI      no npurr_plugin_abi symbol: not a plugin
 *   BAD_COLLIDE     its kernel is named like a built-in (combine-sender)
 *   BAD_SETUP       setup refuses its options
 *   BAD_GM          device code copies from an address outside every allocation
 *   BAD_UB          device code takes more UB than a core has
 *   BAD_WAIT        device code waits for a word nobody writes
 *   BAD_HOST_CRASH  setup dereferences NULL
 *   BAD_DEVICE_CRASH device code dereferences NULL
 *   BAD_OPTION      an option named like an engine option (--nodes)
 */
#include <stdlib.h>
#include <string.h>

#include "npurr/device.h"
#include "npurr/plugin.h"

/* macros, not an enum: the preprocessor chooses the entry symbols below */
#define BAD_NONE 0
#define BAD_ABI_MAJOR 1
#define BAD_NO_ABI 2
#define BAD_COLLIDE 3
#define BAD_SETUP 4
#define BAD_GM 5
#define BAD_UB 6
#define BAD_WAIT 7
#define BAD_HOST_CRASH 8
#define BAD_DEVICE_CRASH 9
#define BAD_OPTION 10
#ifndef BAD
#define BAD BAD_NONE
#endif

typedef struct bad_args {
    gm_t in[64], out[64], flag[64];
} bad_args;

static volatile int *volatile nowhere;

static void bad_kernel(const void *p) {
    const bad_args *a = p;
    int me = GetRank();
    SetRole("BadCopy");
    local_t ub = AllocUB(BAD == BAD_UB ? 256 * 1024 : 64);
    gm_t src = BAD == BAD_GM ? gm_add(a->in[me], 1 << 20) : a->in[me];
    if (BAD == BAD_WAIT) WaitGM32(a->flag[me], COND_EQ, 1);
    if (BAD == BAD_DEVICE_CRASH) *nowhere = 1;
    DataCopy(ub, src, 64);
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    DataCopy(a->out[me], ub, 64);
}

static const npurr_option bad_options[] = {
    {"bytes", "64", "bytes copied (only 64 works)"},
#if BAD == BAD_OPTION
    {"nodes", "1", "a name npurr's engine options have"},
#endif
    {NULL, NULL, NULL},
};

static void bad_destroy(void *state) { free(state); }

static int bad_setup(npurr_engine *e, const npurr_opts *o, void **state, char *err,
                     size_t errlen) {
    *state = NULL;
    if (BAD == BAD_SETUP) {
        snprintf(err, errlen, "--bytes: this plugin refuses every shape");
        return -1;
    }
    if (BAD == BAD_HOST_CRASH) *nowhere = 1;
    int64_t bytes;
    if (npurr_opt_i64_range(o, "bytes", 64, 64, &bytes, err, errlen)) return -1;
    npurr_topology t;
    npurr_topology_of(e, &t);
    bad_args *a = calloc(1, sizeof *a);
    if (!a) return -1;
    for (int r = 0; r < t.ranks && r < 64; r++) {
        if (npurr_gm_alloc(e, r, 64, "bad.in", &a->in[r], err, errlen) ||
            npurr_gm_alloc(e, r, 64, "bad.out", &a->out[r], err, errlen) ||
            npurr_gm_alloc(e, r, 32, "bad.flag", &a->flag[r], err, errlen)) {
            free(a);
            return -1;
        }
        memset(npurr_gm_host(e, a->in[r], 64), r + 1, 64);
        npurr_name_word(e, a->flag[r], 4, OBJ_FLAG, "bad.flag");
    }
    if (npurr_launch(e, "bad_kernel", bad_kernel, a, 1, CORE_AIV, err, errlen)) {
        free(a);
        return -1;
    }
    *state = a;
    return 0;
}

static int bad_check(npurr_engine *e, void *state, char *msg, size_t msglen) {
    bad_args *a = state;
    npurr_topology t;
    npurr_topology_of(e, &t);
    for (int r = 0; r < t.ranks && r < 64; r++) {
        unsigned char got[64];
        if (npurr_gm_read(e, a->out[r], got, 64)) return 1;
        for (int i = 0; i < 64; i++)
            if (got[i] != (unsigned char)(r + 1)) {
                snprintf(msg, msglen, "rank %d byte %d is %d", r, i, got[i]);
                return 1;
            }
    }
    return 0;
}

static const npurr_kernel bad = {
    .name = BAD == BAD_COLLIDE ? "combine-sender" : "bad-kernel",
    .summary = "a test plugin that goes wrong in one way",
    .options = bad_options,
    .setup = bad_setup,
    .check = bad_check,
    .destroy = bad_destroy,
    .check_splits = 1,
};

#if BAD == BAD_ABI_MAJOR
NPURR_HIDDEN const npurr_host *npurr_host_api;
NPURR_EXPORT const npurr_plugin_abi_info npurr_plugin_abi = {
    {'n', 'p', 'u', 'r', 'r', 'a', 'b', 'i'}, NPURR_ABI_MAJOR + 1, 0, "bad-abi"};
NPURR_EXPORT const npurr_kernel *const *npurr_plugin_kernels(const npurr_host *host);
const npurr_kernel *const *npurr_plugin_kernels(const npurr_host *host) {
    static const npurr_kernel *const list[] = {&bad, NULL};
    npurr_host_api = host;
    return list;
}
#elif BAD == BAD_NO_ABI
NPURR_HIDDEN const npurr_host *npurr_host_api;
NPURR_EXPORT const npurr_kernel *bad_kernels(void);
const npurr_kernel *bad_kernels(void) { return &bad; }
#else
NPURR_PLUGIN("bad-plugin", &bad)
#endif
