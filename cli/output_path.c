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
 *
 * And what a writer may remove: only a file npurr itself created. A
 * failed export once removed its output path whatever it was, /dev/full
 * included; now outputs go through cli_output_open/cli_output_finish, the
 * one policy for every file a command writes.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#include "analysis/analysis.h"

static int same_file(const struct stat *a, const char *path) {
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int cli_output_dir_check(const char *dir, const char *option, char *err, size_t errlen) {
    char run[PATH_MAX];
    if (session_run_above(dir, run, sizeof run)) {
        snprintf(err, errlen,
                 "%s %s: is inside the run folder %s, which holds only the run itself "
                 "(trace.zst, index.db, inputs/); write it elsewhere",
                 option, dir, run);
        return -1;
    }
    return 0;
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
    char folder[PATH_MAX], run[PATH_MAX];   /* inside any run folder, this one or another */
    snprintf(folder, sizeof folder, "%s", out);
    if (session_run_above(dirname(folder), run, sizeof run)) {
        snprintf(err, errlen,
                 "%s %s: is inside the run folder %s, which holds only the run itself "
                 "(trace.zst, index.db, inputs/); write it elsewhere",
                 option, out, run);
        return -1;
    }
    if (!run_dir) return 0;
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

/* An output that exists and is not a regular file (a device such as
 * /dev/full or /dev/stdout, a FIFO, a socket) is written in place and is
 * never removed; anything else (a new name, a regular file, a symlink to
 * one) is written to a temporary file npurr creates beside the target and
 * renamed over it only when complete, so a failure leaves the old file as
 * it was and removes only what npurr made. */
FILE *cli_output_open(cli_output *o, const char *path, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->path = path;
    if (!strcmp(path, "-")) return o->f = stdout;
    struct stat st, lst;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        o->f = ana_output_open(path, err, errlen);
        return o->f;
    }
    const char *target = path;
    char real[PATH_MAX];
    if (!exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        snprintf(err, errlen, "%s: is a symlink to nothing; give a file name", path);
        return NULL;
    }
    if (exists && lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        if (!realpath(path, real)) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            return NULL;
        }
        target = real;   /* the link stays; the file it names is replaced */
    }
    snprintf(o->target, sizeof o->target, "%s", target);
    char copy[PATH_MAX], copy2[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", target);
    snprintf(copy2, sizeof copy2, "%s", target);
    const char *dir = dirname(copy), *base = basename(copy2);
    /* The target's name ends the temporary one, so ".gz" still selects gzip;
     * the writer's pid is in it, so a later write can tell one left by a
     * killed writer from one being written now. */
    char tail[PATH_MAX];   /* a killed writer's .npurr-PID-XXXXXX-base goes */
    snprintf(tail, sizeof tail, "-%s", base);
    const char *const tails[] = {tail, NULL};
    engine_remove_orphans(dir, ".npurr-", tails);
    int n = snprintf(o->tmp, sizeof o->tmp, "%s/.npurr-%ld-XXXXXX-%s", dir, (long)getpid(), base);
    if (n < 0 || (size_t)n >= sizeof o->tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return NULL;
    }
    int fd = mkstemps(o->tmp, (int)strlen(base) + 1);
    if (fd < 0 && exists && (errno == EACCES || errno == EROFS || errno == EPERM)) {
        /* A file the user may write in a folder they may not: written in
         * place, and, not being npurr's, never removed. */
        o->tmp[0] = 0;
        o->f = ana_output_open(path, err, errlen);
        return o->f;
    }
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a file in %s: %s", path, dir, strerror(errno));
        o->tmp[0] = 0;
        return NULL;
    }
    close(fd);
    mode_t mask = umask(0);
    umask(mask);
    o->mode = exists ? (st.st_mode & 07777) : (0666 & ~mask);
    o->f = ana_output_open(o->tmp, err, errlen);
    if (!o->f) {
        unlink(o->tmp);
        o->tmp[0] = 0;
    }
    return o->f;
}

int cli_output_finish(cli_output *o, int rc, char *err, size_t errlen) {
    char cerr[1024];
    if (rc && o->f && ferror(o->f)) {
        /* the writer failed on the output itself: name it */
        snprintf(cerr, sizeof cerr, "%s", err);
        snprintf(err, errlen, "%s: %s", o->path, cerr);
    }
    if (ana_output_close(o->f, o->path, cerr, sizeof cerr) && rc == 0) {
        snprintf(err, errlen, "%s", cerr);
        rc = -1;
    }
    o->f = NULL;
    if (!o->tmp[0]) return rc ? -1 : 0;   /* stdout or a device: never removed */
    if (!rc && (chmod(o->tmp, o->mode) != 0 || rename(o->tmp, o->target) != 0)) {
        snprintf(err, errlen, "%s: cannot put the output in place: %s", o->path, strerror(errno));
        rc = -1;
    }
    if (rc) unlink(o->tmp);   /* the temporary file npurr created, nothing else */
    o->tmp[0] = 0;
    return rc ? -1 : 0;
}
