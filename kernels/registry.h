/*
 * registry.h - the kernel list's one internal call, for plugin_load.c:
 * adding a checked plugin's kernels after the built-in ones. Internal to the
 * kernels library (kernels.h is its public header).
 */
#ifndef NPURR_KERNELS_REGISTRY_H
#define NPURR_KERNELS_REGISTRY_H

#include <stddef.h>

#include "kernels.h"

/* Appends list's kernels (NULL-terminated; their names already checked
 * against the list) to kernels_all(). 0, or -1 with err out of memory. */
int kernels_register(const kernel_desc *const *list, char *err, size_t errlen);

#endif
