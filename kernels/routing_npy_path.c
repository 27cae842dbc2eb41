/*
 * routing_npy_path.c - the input-file grammar of kernel options, in one
 * place: a value "npy:PATH" names a NumPy file, and "{rank}" in PATH makes
 * it one file per rank (rank r reads PATH with "{rank}" replaced by r).
 *
 * Every reader of that grammar calls these: the npy routing kind
 * (routing_npy_rows.c), the dispatch plan's row check, and the run session
 * that copies a run's input files into its folder so replay finds them.
 */
#include "routing.h"

#include <stdio.h>
#include <string.h>

const char *routing_npy_file(const char *value) {
    size_t n = strlen(ROUTING_NPY_SCHEME);
    return value && strncmp(value, ROUTING_NPY_SCHEME, n) == 0 ? value + n : NULL;
}

int routing_npy_per_rank(const char *path) { return strstr(path, ROUTING_NPY_RANK) != NULL; }

int routing_npy_rank_path(const char *path, int rank, char *out, size_t outlen) {
    const char *ph = strstr(path, ROUTING_NPY_RANK);
    size_t ph_len = strlen(ROUTING_NPY_RANK);
    int n = ph ? snprintf(out, outlen, "%.*s%d%s", (int)(ph - path), path, rank, ph + ph_len)
               : snprintf(out, outlen, "%s", path);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}
