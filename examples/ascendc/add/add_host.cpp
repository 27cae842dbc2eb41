/*
 * add_host.cpp - the Add operator's host side as an npurr plugin: inputs
 * on every rank, the tiling, the launch on --cores vector cores, and the
 * check of z against x + y computed here. npurr/ascendc_host.h does the
 * engine calls; npurr/plugin.h is the ABI.
 */
#include <cstdlib>

#include "npurr/ascendc_host.h"

#include "add_tiling.h"

extern "C" void add_custom(uint8_t *x, uint8_t *y, uint8_t *z, uint8_t *tiling);

namespace {

struct AddState {
    explicit AddState(npurr_engine *e) : run(e) {}
    npurr::AscendcRun run;
    npurr::Buffer x, y, z;
    uint64_t n = 0;
};

float input(int tensor, int rank, uint64_t i) {
    return (float)((i * 7 + (uint64_t)rank * 13 + (uint64_t)tensor * 101) % 1000) * 0.25f - 100.0f;
}

int add_setup(npurr_engine *e, const npurr_opts *o, void **state, char *err, size_t errlen) {
    *state = nullptr;
    int64_t n, tile, cores;
    if (npurr_opt_i64_range(o, "n", 8, 1 << 24, &n, err, errlen) ||
        npurr_opt_i64_range(o, "tile", 8, 8192, &tile, err, errlen) ||
        npurr_opt_i64_range(o, "cores", 1, 48, &cores, err, errlen))
        return -1;
    if (n % (cores * tile) || tile % 8) {
        std::snprintf(err, errlen, "--n %lld must be a multiple of --cores x --tile (%lld), the "
                      "tile a multiple of 8", (long long)n, (long long)(cores * tile));
        return -1;
    }
    AddState *st = new AddState(e);
    npurr::Host &h = st->run.host;
    st->n = (uint64_t)n;
    st->x = h.alloc("x", (uint64_t)n * 4);
    st->y = h.alloc("y", (uint64_t)n * 4);
    st->z = h.alloc("z", (uint64_t)n * 4);
    AddTiling t{(uint32_t)n, (uint32_t)tile};
    npurr::Buffer tiling = h.tiling(t);
    int failed = !st->x.ok() || !st->y.ok() || !st->z.ok() || !tiling.ok() ||
                 h.fill<float>(st->x, [](int r, uint64_t i) { return input(0, r, i); }) ||
                 h.fill<float>(st->y, [](int r, uint64_t i) { return input(1, r, i); }) ||
                 h.launch(add_custom, (int)cores, {st->x, st->y, st->z, tiling});
    if (failed) {
        std::snprintf(err, errlen, "ascendc-add: %s", h.error());
        delete st;
        return -1;
    }
    npurr_tensor z = {NPURR_DT_F32, 1, {(uint64_t)n}};
    for (int r = 0; r < h.ranks(); r++) npurr_name_tensor(e, st->z.at[r], &z, "z", err, errlen);
    *state = st;
    return 0;
}

int add_check(npurr_engine *e, void *state, char *msg, size_t msglen) {
    AddState *st = static_cast<AddState *>(state);
    std::vector<float> z(st->n);
    for (int r = 0; r < st->run.host.ranks(); r++) {
        if (!npurr_rank_local(e, r)) continue;
        if (npurr_gm_read(e, st->z.at[r], z.data(), st->n * 4)) return 1;
        for (uint64_t i = 0; i < st->n; i++)
            if (z[i] != input(0, r, i) + input(1, r, i)) {
                std::snprintf(msg, msglen, "rank %d: z[%llu] = %g, expected %g", r,
                              (unsigned long long)i, (double)z[i],
                              (double)(input(0, r, i) + input(1, r, i)));
                return 1;
            }
    }
    return 0;
}

void add_destroy(void *state) { delete static_cast<AddState *>(state); }

const npurr_option add_options[] = {
    {"n", "65536", "float elements per rank"},
    {"tile", "2048", "elements a core moves through UB at a time"},
    {"cores", "8", "vector cores per rank"},
    {nullptr, nullptr, nullptr},
};

const npurr_phase add_phases[] = {
    {"add", {"AddCustom", nullptr}, {"AddCustom", nullptr}},
    {nullptr, {nullptr}, {nullptr}},
};

npurr_kernel make_kernel() {
    npurr_kernel k{};
    k.name = "ascendc-add";
    k.summary = "example: the Ascend C Add operator (TPipe/TQue double buffering) on every rank";
    k.options = add_options;
    k.setup = add_setup;
    k.check = add_check;
    k.destroy = add_destroy;
    k.check_splits = 1;
    return k;
}
const npurr_kernel add_kernel = make_kernel();

}  // namespace

NPURR_PLUGIN("ascendc-add-example", &add_kernel)
