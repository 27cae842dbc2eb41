/*
 * registry.c - the kernels the CLI knows (`-k NAME`): the built-in table,
 * and the kernels of the plugins loaded into this process after it.
 *
 * Adding a built-in kernel is its own files plus one line in KERNEL_LIST:
 * the descriptor (npurr/plugin.h's npurr_kernel: name, summary, options,
 * and the setup, check, layout, destroy, progress and estimate hooks) lives
 * next to the kernel and is declared and listed from here. A plugin's
 * kernels join the list when plugin_load.c has checked them
 * (kernels_register). Nothing else names a kernel: the CLI, record, replay,
 * layout and the memory estimate all go through the descriptor; the build
 * and the tests pick up new files by glob.
 */
#include "kernels.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

#define KERNEL_LIST(X)              \
    X(kernel_combine_sender)        \
    X(kernel_combine_sender_inplace) \
    X(kernel_combine_normal) \
    X(kernel_combine_normal_layered) \
    X(kernel_dispatch_layered) \
    X(kernel_dispatch_normal) \
    X(kernel_matmul_reduce_scatter) \
    X(kernel_fullmesh_dispatch_combine) \
    X(kernel_ll_single_dispatch_combine) \
    X(kernel_ll_layered_dispatch_combine)

#define DECLARE(desc) extern const kernel_desc desc;
KERNEL_LIST(DECLARE)
#undef DECLARE

#define ENTRY(desc) &desc,
static const kernel_desc *const builtin_kernels[] = {KERNEL_LIST(ENTRY) NULL};
#undef ENTRY

/* Every kernel: the built-in ones, then the plugins' (NULL-terminated);
 * NULL until a plugin is loaded, when the built-in table is all there is. */
static const kernel_desc **all_kernels;
static size_t n_all, cap_all;

const kernel_desc *const *kernels_builtin(void) { return builtin_kernels; }

const kernel_desc *const *kernels_all(void) {
    return all_kernels ? (const kernel_desc *const *)all_kernels : builtin_kernels;
}

const kernel_desc *kernels_find(const char *name) {
    for (const kernel_desc *const *k = kernels_all(); *k; k++)
        if (strcmp((*k)->name, name) == 0) return *k;
    return NULL;
}

int kernels_register(const kernel_desc *const *list, char *err, size_t errlen) {
    size_t add = 0;
    while (list[add]) add++;
    if (!all_kernels) {
        size_t n = sizeof builtin_kernels / sizeof builtin_kernels[0] - 1;
        all_kernels = malloc((n + 1) * sizeof *all_kernels);
        if (!all_kernels) goto oom;
        memcpy(all_kernels, builtin_kernels, (n + 1) * sizeof *all_kernels);
        n_all = n;
        cap_all = n + 1;
    }
    if (n_all + add + 1 > cap_all) {
        size_t cap = (n_all + add + 1) * 2;
        const kernel_desc **grown = realloc(all_kernels, cap * sizeof *grown);
        if (!grown) goto oom;
        all_kernels = grown;
        cap_all = cap;
    }
    memcpy(all_kernels + n_all, list, add * sizeof *list);
    n_all += add;
    all_kernels[n_all] = NULL;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}
