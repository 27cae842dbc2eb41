/*
 * output_path.c - where a command may write: never into a run folder.
 *
 * A run folder is the source of truth of a run (trace.zst, index.db,
 * inputs/): an export written over trace.zst, or a failed export that
 * removes its half-written output, would destroy it. So a command that
 * writes a file checks its output path first: not inside the run folder
 * it reads (after resolving symlinks and `..`), not a hard link to one of
 * the run's files, not a directory. The check is a usage error (exit 2),
 * made before anything is read or derived.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#include "analysis/analysis.h"

static int same_file(const struct stat *a, const char *path) {
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int cli_output_check(const char *run_dir, const char *out, const char *option, char *err,
                     size_t errlen) {
    if (!out || !strcmp(out, "-")) return 0;
    struct stat st;
    int exists = stat(out, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s %s: is a directory; give a file name", option, out);
        return -1;
    }
    char trace[PATH_MAX + 16], index[PATH_MAX + 16];
    snprintf(trace, sizeof trace, "%s/trace.zst", run_dir);
    snprintf(index, sizeof index, "%s/index.db", run_dir);
    if (exists && (same_file(&st, trace) || same_file(&st, index))) {
        snprintf(err, errlen, "%s %s: is one of the run's own files (%s); write it elsewhere",
                 option, out, same_file(&st, trace) ? "trace.zst" : "index.db");
        return -1;
    }
    char run_real[PATH_MAX], dir_real[PATH_MAX], copy[PATH_MAX];
    if (!realpath(run_dir, run_real)) return 0;   /* no run: the command says so */
    snprintf(copy, sizeof copy, "%s", out);
    if (!realpath(dirname(copy), dir_real)) return 0;   /* fopen will name the error */
    size_t n = strlen(run_real);
    if (!strncmp(dir_real, run_real, n) && (dir_real[n] == 0 || dir_real[n] == '/')) {
        snprintf(err, errlen,
                 "%s %s: is inside the run folder %s, which holds only the run itself "
                 "(trace.zst, index.db, inputs/); write it elsewhere",
                 option, out, run_dir);
        return -1;
    }
    return 0;
}

int cli_output_finish(FILE *out, const char *path, int rc, char *err, size_t errlen) {
    int to_stdout = out == stdout;
    char cerr[1024];
    if (ana_output_close(out, path, cerr, sizeof cerr) && rc == 0) {
        snprintf(err, errlen, "%s", cerr);
        rc = -1;
    }
    if (rc && !to_stdout) remove(path);
    return rc ? -1 : 0;
}
