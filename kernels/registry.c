/*
 * registry.c - the list of kernels the CLI knows (`-k NAME`).
 *
 * Adding a kernel is its own files plus one line in KERNEL_LIST: the
 * descriptor (kernels.h: name, summary, options, and the setup, check,
 * layout, destroy, progress and estimate hooks) lives next to the kernel and
 * is declared and listed from here. Nothing else names a kernel: the CLI,
 * record, replay, layout and the memory estimate all go through the
 * descriptor; the build and the tests pick up new files by glob.
 */
#include "kernels.h"

#include <string.h>

#define KERNEL_LIST(X)              \
    X(kernel_combine_sender)        \
    X(kernel_combine_sender_inplace) \
    X(kernel_combine_normal) \
    X(kernel_dispatch_layered) \
    X(kernel_dispatch_normal) \
    X(kernel_matmul_reduce_scatter) \
    X(kernel_fullmesh_dispatch_combine)

#define DECLARE(desc) extern const kernel_desc desc;
KERNEL_LIST(DECLARE)
#undef DECLARE

#define ENTRY(desc) &desc,
static const kernel_desc *const all_kernels[] = {KERNEL_LIST(ENTRY) NULL};
#undef ENTRY

const kernel_desc *const *kernels_all(void) { return all_kernels; }

const kernel_desc *kernels_find(const char *name) {
    for (const kernel_desc *const *k = all_kernels; *k; k++)
        if (strcmp((*k)->name, name) == 0) return *k;
    return NULL;
}
