/*
 * critical.h - the critical-path room of the analysis: the walk from the
 * event that ended a run back to time 0 (ana_crit_walk.c over the events
 * ana_crit_load.c holds), written as the critical_path table
 * (ana_critical.c), and what each of its classes is (ana_crit_classes.c).
 * ana_crit.h is the room's own; the presentation room reads the table, the
 * CLI's whatif reads the classes through analysis/analysis.h.
 */
#ifndef NPURR_ANA_CRITICAL_H
#define NPURR_ANA_CRITICAL_H

#include <stddef.h>
#include <sqlite3.h>

/* The critical-path part into db (run_dir's trace), after the waits part:
 * loads the events, walks them and writes critical_path. Inside the
 * caller's transaction. */
int ana_critical_derive(sqlite3 *db, const char *run_dir, char *err, size_t errlen);

/* What makes a class of the path twice as fast: hw keys and the factor
 * each is multiplied by (2 for a bandwidth, 0.5 for a latency or a cost),
 * ended by a NULL key. NULL for the classes that are no resource (jitter,
 * launch, blocked, idle) or unknown (ana_crit_classes.c). */
typedef struct ana_whatif_knob {
    const char *key;
    double factor;
} ana_whatif_knob;
/* The knobs of class cls (static, ended by a NULL key); NULL as above. */
const ana_whatif_knob *ana_crit_class_knobs(const char *cls);
/* One line saying what the class is ("HBM bandwidth of a rank"), "" if unknown. */
const char *ana_crit_class_what(const char *cls);

#endif
