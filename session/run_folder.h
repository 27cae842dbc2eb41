/*
 * run_folder.h - recording into a hidden folder next to the target and
 * renaming it into place under a lock (see run_folder.c). Internal to the
 * session library.
 */
#ifndef NPURR_RUN_FOLDER_H
#define NPURR_RUN_FOLDER_H

#include <stddef.h>

/* Before anything is built: -o TARGET must be absent, an empty directory,
 * or (with force) an npurr run. -1 with err otherwise (a usage error).
 * Also names hidden folders a killed record left for TARGET. */
int run_folder_check_target(const char *target, int force, char *err, size_t errlen);
/* Creates PARENT/.NAME.recording.PID (and PARENT). Returns its path
 * (malloc'd, the caller frees it), or NULL with err. */
char *run_folder_make_temp(const char *target, char *err, size_t errlen);
/* Renames tmp to target under a flock on PARENT: onto nothing or an empty
 * directory, or swapped with an existing run when force. Otherwise (the
 * target changed while recording) leaves both and says where the new run
 * is. 0 or -1 with err. */
int run_folder_install(const char *tmp, const char *target, int force, char *err, size_t errlen);
/* rm -rf dir (not following symlinks). */
void run_folder_remove(const char *dir);

#endif
