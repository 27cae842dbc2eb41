/*
 * ana_parts.h - what the opener's files share (analysis.h's ana_open is
 * their one entry): the derivation of parts in one transaction
 * (ana_parts.c) and the freshness checks with the cache (ana_fresh.c).
 */
#ifndef NPURR_ANA_PARTS_H
#define NPURR_ANA_PARTS_H

#include "analysis/analysis.h"
#include "recorder/recorder.h"

/* Derives exactly parts (ANA_PART_*; the waits part drops the others it is
 * not given, which would be stale) into db, whose trace is run_dir's (db
 * may be a cache copy of run_dir's index elsewhere), in one transaction. */
int ana_derive_parts(sqlite3 *db, const char *run_dir, int parts, char *err, size_t errlen);

/* Steps 1-3 of ana_open: the index matches the trace, the parts flags asks
 * for are fresh or derived (in place or in the cache); src says where. A
 * run folder swapped in by `record --force` during a step is checked again. */
int ana_fresh_ensure(const char *run_dir, int flags, ana_source *src, char *err,
                     size_t errlen);
/* ana_fresh_ensure, then src->db_path opened read-only with the events vtab
 * registered, checked to be still what was found fresh. */
int ana_fresh_open(const char *run_dir, int flags, sqlite3 **db, ana_source *src, char *err,
                   size_t errlen);

#endif
