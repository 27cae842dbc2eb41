/*
 * orphan_files.c - engine_remove_orphans: temporary files a killed npurr
 * left behind, removed by the next npurr that looks in the same folder.
 *
 * A writer that renames a finished temporary file into place (an output
 * of the shared output policy, a derived copy in the user's cache) leaves
 * the temporary file when it is killed with kill -9 in between. Those
 * files are named PREFIX PID "-" XXXXXX TAIL, so a later process can tell
 * one whose writer is gone (kill(pid, 0) says ESRCH) from one being
 * written now, and it touches no other name.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/host/host.h"

void engine_remove_orphans(const char *dir, const char *prefix, const char *const *tails) {
    DIR *d = opendir(dir);
    if (!d) return;
    size_t np = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, np) != 0) continue;
        long pid;
        int at = 0;
        if (sscanf(e->d_name + np, "%ld-%n", &pid, &at) != 1 || pid <= 0 || !at) continue;
        const char *rest = e->d_name + np + at;   /* XXXXXX then the tail */
        if (strlen(rest) < 6) continue;
        int known = 0;
        for (int i = 0; tails[i] && !known; i++) known = strcmp(rest + 6, tails[i]) == 0;
        if (!known || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}
