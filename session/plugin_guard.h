/*
 * plugin_guard.h - a crash in a plugin's code reported with its name and
 * site, and the run being recorded removed (plugin_guard.c). Internal to the
 * session library. One guard per process: arm it when a plugin kernel's
 * hooks or device code may run, disarm it once they no longer can.
 */
#ifndef NPURR_PLUGIN_GUARD_H
#define NPURR_PLUGIN_GUARD_H

#include "engine/engine.h"
#include "kernels/kernels.h"

/* Catches crashing signals while plugin p's kernel `kernel` runs on e (e
 * may be NULL before it exists); nothing when p is NULL (a built-in). */
void plugin_guard_arm(const kernel_plugin *p, const char *kernel, engine *e);
/* Which of the kernel's hooks runs now ("setup", "check", "destroy"; a
 * crash while a core runs its kernel is named as device code), on e. */
void plugin_guard_phase(const char *hook, engine *e);
/* The hidden folder the run is recorded into, removed by a crash (NULL or
 * "": none, as once the run is installed). */
void plugin_guard_run_dir(const char *temp_dir);
/* Restores the signals' handlers as they were. */
void plugin_guard_disarm(void);

#endif
