/*
 * hccl.c - HCCL groups as Ascend C kernels see them: GetHcclContext<id>()
 * and an Hccl object's GetWindowsInAddr / GetWindowsOutAddr / window size.
 *
 * On the chip a group's context is a struct in GM that the HCCL library
 * fills, and the windows are memory every rank of the group maps. Here the
 * host declares a group (engine_hccl_group, through the plugin ABI's
 * hccl_group): a symmetric context allocation whose bytes it fills as the
 * kernel expects to read them, and symmetric in and out windows, which
 * are npurr's symmetric heap. Device code asks for them as host pointers
 * (the front end's GM addresses; host_addr.c).
 */
#include "internal.h"

int engine_hccl_group(engine *e, int id, const engine_hccl *g, char *err, size_t errlen) {
    if (id < 0 || id >= ENGINE_HCCL_GROUPS) {
        snprintf(err, errlen, "HCCL group %d: groups are 0..%d", id, ENGINE_HCCL_GROUPS - 1);
        return ENGINE_ERR;
    }
    const gm_t addrs[3] = {g->context, g->win_in, g->win_out};
    for (int i = 0; i < 3; i++)
        if (!eng_gm_find(e, addrs[i])) {
            snprintf(err, errlen, "HCCL group %d: its %s is in no GM allocation", id,
                     i == 0 ? "context" : i == 1 ? "in window" : "out window");
            return ENGINE_ERR;
        }
    e->hccl[id] = *g;
    e->hccl[id].declared = 1;
    return ENGINE_OK;
}

static const engine_hccl *group(core *c, int id, dev_site s) {
    if (id < 0 || id >= ENGINE_HCCL_GROUPS || !c->e->hccl[id].declared)
        eng_fault(c, s, "HCCL group %d was not declared by the kernel's host side "
                  "(npurr_host.hccl_group)", id);
    return &c->e->hccl[id];
}

void *dev_hccl_context(int id, dev_site s) {
    core *c = eng_current("GetHcclContext");
    return dev_gm_to_host(gm_on_rank(group(c, id, s)->context, c->rank), s);
}

void *dev_hccl_window(int id, int rank, int out, dev_site s) {
    core *c = eng_current("Hccl::GetWindowsInAddr");
    const engine_hccl *g = group(c, id, s);
    if (rank < 0 || rank >= c->e->n_ranks)
        eng_fault(c, s, "Hccl: rank %d is not a rank of the run (0..%d)", rank, c->e->n_ranks - 1);
    return dev_gm_to_host(gm_on_rank(out ? g->win_out : g->win_in, rank), s);
}

uint64_t dev_hccl_window_size(int id, dev_site s) {
    core *c = eng_current("Hccl");
    return group(c, id, s)->win_size;
}

int dev_hccl_declared(int id) {
    core *c = eng_current("Hccl");
    return id >= 0 && id < ENGINE_HCCL_GROUPS && c->e->hccl[id].declared;
}
