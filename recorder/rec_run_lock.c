/*
 * rec_run_lock.c - the run folder's lock: a derive and a swap never overlap.
 *
 * A derive writes RUN/index.db in a transaction whose rollback journal
 * SQLite creates by name, RUN/index.db-journal. If `record --force` (or
 * `reindex`) put another run or index in place during the derive, that
 * journal would land beside the new index, and a kill before the commit
 * would leave it there as a hot journal: the next reader would "roll back"
 * the old run's pages into the new run's index. So the folder itself is
 * flock'ed: a derive holds it shared, a swap takes it exclusive, each
 * waits for the other (saying so), and a derive re-checks, once it holds
 * the lock, that the folder it locked is still the one at RUN (a swap
 * while it waited replaced it: it locks the new one instead).
 * flock on a directory descriptor: Linux's, like renameat2 in
 * session/run_folder.c; the lock goes with the folder's inode, so a run
 * renamed away keeps its readers' locks until they close.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recorder/rec_internal.h"

/* 1 when fd is the folder at run_dir now. */
static int still_there(int fd, const char *run_dir) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(run_dir, &b) == 0 && a.st_ino == b.st_ino &&
           a.st_dev == b.st_dev;
}

int rec_run_lock(const char *run_dir, int exclusive, char *err, size_t errlen) {
    int op = exclusive ? LOCK_EX : LOCK_SH;
    for (int said = 0;;) {
        int fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            snprintf(err, errlen, "cannot open run folder %s: %s", run_dir, strerror(errno));
            return -1;
        }
        if (flock(fd, op | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) {
                snprintf(err, errlen, "cannot lock run folder %s: %s", run_dir, strerror(errno));
                close(fd);
                return -1;
            }
            if (!said++)
                fprintf(stderr, "npurr: %s: waiting for %s\n", run_dir,
                        exclusive ? "its readers to finish deriving its analysis tables"
                                  : "the record or reindex replacing it");
            while (flock(fd, op) != 0) {
                if (errno != EINTR) {
                    snprintf(err, errlen, "cannot lock run folder %s: %s", run_dir,
                             strerror(errno));
                    close(fd);
                    return -1;
                }
            }
        }
        if (still_there(fd, run_dir)) return fd;
        close(fd);   /* swapped while we waited: lock the folder now at run_dir */
    }
}

void rec_run_unlock(int fd) {
    if (fd >= 0) close(fd);   /* closing the last descriptor drops the flock */
}
