/*
 * run_folder.c - how `record` puts a new run folder in place without ever
 * losing one.
 *
 * A run is recorded into a hidden folder next to its target,
 * PARENT/.NAME.recording.PID, and renamed to PARENT/NAME only once its
 * trace and index are finalised. The rename happens under an exclusive
 * flock on PARENT, after checking the target again: so of two records into
 * one folder, the first to finish installs its run and the second finds it
 * there and keeps its own recording in its hidden folder instead of
 * overwriting; a record that fails or is killed never touches an existing
 * run. Replacing an existing run takes --force (checked at start, so a
 * mistaken -o costs nothing), and even then the old run stays until the new
 * one is complete: both are swapped with one renameat2(RENAME_EXCHANGE)
 * where the file system has it, else two renames, and only then is the old
 * one removed. The swap waits for readers deriving into the old run's
 * index (the run folder's lock, recorder/rec_run_lock.c).
 *
 * What kill -9 leaves: the hidden folder, whose trace.zst is readable up to
 * its last complete chunk (`npurr reindex` it, then move it where you
 * want). The next record into the same target names such leftovers.
 */
#include "run_folder.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/recorder.h"

/* PARENT and NAME of a target path (trailing slashes ignored). */
static int split(const char *target, char *parent, size_t plen, char *name, size_t nlen) {
    char t[4096];
    size_t n = strlen(target);
    while (n > 1 && target[n - 1] == '/') n--;
    if (n == 0 || n >= sizeof t) return -1;
    memcpy(t, target, n);
    t[n] = 0;
    char *slash = strrchr(t, '/');
    const char *base = slash ? slash + 1 : t;
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) return -1;
    if ((size_t)snprintf(name, nlen, "%s", base) >= nlen) return -1;
    int w = !slash ? snprintf(parent, plen, ".")
                   : slash == t ? snprintf(parent, plen, "/")
                                : snprintf(parent, plen, "%.*s", (int)(slash - t), t);
    return w < 0 || (size_t)w >= plen ? -1 : 0;
}

static int is_empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *de;
    int empty = 1;
    while (empty && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) empty = 0;
    closedir(d);
    return empty;
}

static int is_run(const char *dir) {
    rec_reader *r;
    char err[256];
    if (rec_reader_open(dir, &r, err, sizeof err)) return 0;
    rec_reader_close(r);
    return 1;
}

typedef enum { T_ABSENT, T_EMPTY, T_RUN, T_OTHER, T_NOT_DIR } target_state;

static target_state state_of(const char *target) {
    struct stat st;
    if (lstat(target, &st) != 0) return T_ABSENT;
    if (!S_ISDIR(st.st_mode)) return T_NOT_DIR;
    if (is_empty_dir(target)) return T_EMPTY;
    return is_run(target) ? T_RUN : T_OTHER;
}

/* Hidden folders a killed record left for this target: named, not touched. */
static void note_leftovers(const char *parent, const char *name) {
    DIR *d = opendir(parent);
    if (!d) return;
    char prefix[300];
    snprintf(prefix, sizeof prefix, ".%s.recording.", name);
    size_t plen = strlen(prefix);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, prefix, plen) != 0) continue;
        char *end = NULL;
        long pid = strtol(de->d_name + plen, &end, 10);
        if (!end || *end || pid <= 0) continue;
        if (kill((pid_t)pid, 0) == 0 || errno == EPERM) continue;   /* still recording */
        fprintf(stderr,
                "npurr record: note: %s/%s is what an interrupted record (kill -9?) left; "
                "`npurr reindex` it to read it, or remove it\n",
                parent, de->d_name);
    }
    closedir(d);
}

/* The run folder that holds dir (dir itself or an ancestor, symlinks and
 * `..` resolved), copied into run; 0 when none does. */
static int enclosing_run(const char *dir, char *run, size_t len) {
    char real[PATH_MAX], near[PATH_MAX];
    snprintf(near, sizeof near, "%s", dir);
    /* -o may name folders still to be made: start at the nearest that exists. */
    while (!realpath(near, real)) {
        char *slash = strrchr(near, '/');
        if (!slash) {
            if (!realpath(".", real)) return 0;
            break;
        }
        if (slash == near) slash[1] = 0; else *slash = 0;
    }
    for (;;) {
        if (is_run(real)) {
            snprintf(run, len, "%s", real);
            return 1;
        }
        char *slash = strrchr(real, '/');
        if (!slash || slash == real) return 0;
        *slash = 0;
    }
}

int session_run_above(const char *dir, char *run, size_t len) {
    return enclosing_run(dir, run, len);
}

int run_folder_check_target(const char *target, int force, char *err, size_t errlen) {
    char parent[4096], name[256];
    if (split(target, parent, sizeof parent, name, sizeof name)) {
        snprintf(err, errlen, "-o %s: not a usable run folder name", target);
        return -1;
    }
    /* A run folder holds only its run (trace.zst, index.db, inputs/): a
     * run written inside another would be lost by the next --force and
     * looks like a damaged run to every reader. */
    char outer[PATH_MAX];
    if (enclosing_run(parent, outer, sizeof outer)) {
        snprintf(err, errlen, "-o %s: is inside the run folder %s, which holds only its own "
                 "run; choose another -o", target, outer);
        return -1;
    }
    switch (state_of(target)) {
    case T_NOT_DIR:
        snprintf(err, errlen, "-o %s: exists and is not a directory", target);
        return -1;
    case T_OTHER:
        snprintf(err, errlen, "-o %s: is not empty and is not an npurr run (no npurr trace.zst); "
                 "choose another -o", target);
        return -1;
    case T_RUN:
        if (!force) {
            /* A run folder is evidence: name a fresh folder rather than
             * nudge towards --force (the README's command, run twice). */
            char fresh[4200] = "", base[4096];
            snprintf(base, sizeof base, "%s", target);
            for (size_t n = strlen(base); n > 1 && base[n - 1] == '/';) base[--n] = 0;
            for (int i = 2; i < 1000 && !fresh[0]; i++) {
                struct stat st;
                snprintf(fresh, sizeof fresh, "%s-%d", base, i);
                if (lstat(fresh, &st) == 0) fresh[0] = 0;
            }
            snprintf(err, errlen, "-o %s: already holds a run, kept as it is; record into a new "
                     "folder (-o %s), or add --force to replace it (its own files only, once "
                     "the new run is complete)", target, fresh[0] ? fresh : "NEW");
            return -1;
        }
        break;
    default:
        break;
    }
    note_leftovers(parent, name);
    return 0;
}

static int mkdir_p(const char *dir) {
    char p[4096];
    if ((size_t)snprintf(p, sizeof p, "%s", dir) >= sizeof p) return -1;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == 0) {
            char c = *s;
            *s = 0;
            if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
            *s = c;
            if (!c) break;
        }
    }
    return 0;
}

char *run_folder_make_temp(const char *target, char *err, size_t errlen) {
    char parent[4096], name[256];
    if (split(target, parent, sizeof parent, name, sizeof name)) {
        snprintf(err, errlen, "-o %s: not a usable run folder name", target);
        return NULL;
    }
    if (mkdir_p(parent) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", parent, strerror(errno));
        return NULL;
    }
    char *tmp = NULL;
    if (asprintf(&tmp, "%s/.%s.recording.%ld", parent, name, (long)getpid()) < 0) {
        snprintf(err, errlen, "-o %s: out of memory", target);
        return NULL;
    }
    if (mkdir(tmp, 0755) != 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        free(tmp);
        return NULL;
    }
    return tmp;
}

/* What npurr itself puts in a run folder; anything else in one is the
 * user's (notes, plots, a folder of their own) and outlives --force. */
static int npurr_owns(const char *name) {
    static const char *const own[] = {"trace.zst", "index.db", "index.db-journal", "index.db-wal",
                                      "index.db-shm", "inputs", "plugin", NULL};
    for (int i = 0; own[i]; i++)
        if (!strcmp(name, own[i])) return 1;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void run_folder_remove(const char *dir) {
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The replaced run's own files, then its folder if nothing else is left
 * (a user's file that could not be moved keeps it). */
static void remove_npurr_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!npurr_owns(e->d_name)) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        run_folder_remove(path);
    }
    closedir(d);
    rmdir(dir);
}

/* Moves the user's files of the replaced run old into the new run at
 * target, and says which (stderr). A name the new run also has stays in
 * old and is named, never overwritten. */
static void keep_user_files(const char *old, const char *target) {
    DIR *d = opendir(old);
    if (!d) return;
    char kept[1024] = "", left[1024] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || npurr_owns(e->d_name)) continue;
        char from[PATH_MAX], to[PATH_MAX];
        snprintf(from, sizeof from, "%s/%s", old, e->d_name);
        snprintf(to, sizeof to, "%s/%s", target, e->d_name);
        struct stat st;
        int moved = lstat(to, &st) != 0 && rename(from, to) == 0;
        char *list = moved ? kept : left;
        size_t n = strlen(list);
        snprintf(list + n, sizeof kept - n, "%s%s", n ? ", " : "", e->d_name);
    }
    closedir(d);
    if (kept[0]) fprintf(stderr, "npurr: %s: kept your files of the replaced run: %s\n", target, kept);
    if (left[0])
        fprintf(stderr, "npurr: %s: could not move %s from the replaced run; they are in %s\n",
                target, left, old);
}

/* Swaps the complete run tmp in for the run at target (PARENT/NAME), moves
 * the user's own files of the old one over, then removes the rest of the
 * old one (npurr's files); on failure both stay and err says where. */
static int swap_in(const char *tmp, const char *target, const char *parent, const char *name,
                   char *err, size_t errlen) {
    int rc = 0;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE) == 0) {
        keep_user_files(tmp, target);   /* tmp is now the old run */
        remove_npurr_files(tmp);
    } else {
        char old[4400];
        snprintf(old, sizeof old, "%s/.%s.replaced.%ld", parent, name, (long)getpid());
        if (rename(target, old) != 0) {
            snprintf(err, errlen, "cannot move the old run %s aside: %s; the new run is "
                     "complete in %s", target, strerror(errno), tmp);
            rc = -1;
        } else if (rename(tmp, target) != 0) {
            snprintf(err, errlen, "cannot rename %s to %s: %s; the old run is in %s", tmp,
                     target, strerror(errno), old);
            rename(old, target);
            rc = -1;
        } else {
            keep_user_files(old, target);
            remove_npurr_files(old);
        }
    }
    return rc;
}

int run_folder_install(const char *tmp, const char *target, int force, char *err, size_t errlen) {
    char parent[4096], name[256];
    if (split(target, parent, sizeof parent, name, sizeof name)) {
        snprintf(err, errlen, "-o %s: not a usable run folder name", target);
        return -1;
    }
    int lock = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
        snprintf(err, errlen, "cannot lock %s: %s; the run is complete in %s", parent,
                 strerror(errno), tmp);
        if (lock >= 0) close(lock);
        return -1;
    }
    int rc = 0;
    target_state s = state_of(target);
    if (s == T_ABSENT || s == T_EMPTY) {
        /* rename(2) replaces an empty directory atomically. */
        if (rename(tmp, target) != 0) {
            snprintf(err, errlen, "cannot rename %s to %s: %s; the run is complete in %s", tmp,
                     target, strerror(errno), tmp);
            rc = -1;
        }
    } else if (s == T_RUN && force) {
        /* Not while a reader derives into the old run's index.db: its
         * journal would land in the new folder (rec_run_lock.c). */
        int run_lock = rec_run_lock(target, 1, err, errlen);
        if (run_lock < 0) {
            flock(lock, LOCK_UN);
            close(lock);
            size_t n = strlen(err);
            snprintf(err + n, errlen - n, "; the new run is complete in %s", tmp);
            return -1;
        }
        rc = swap_in(tmp, target, parent, name, err, errlen);
        rec_run_unlock(run_lock);
    } else {
        snprintf(err, errlen,
                 "%s %s while this record ran (another record into the same -o?), so it is "
                 "left as it is; this run is complete in %s",
                 target, s == T_RUN ? "now holds a run recorded" : "was filled with other files",
                 tmp);
        rc = -1;
    }
    flock(lock, LOCK_UN);
    close(lock);
    return rc;
}

int session_check_output(const char *out_dir, int force, char *err, size_t errlen) {
    return run_folder_check_target(out_dir, force, err, errlen);
}
