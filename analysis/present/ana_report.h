/*
 * ana_report.h - the sections of `npurr report`'s HTML page, one file each
 * where they are large; private to analysis/. ana_report.c writes the
 * page and the plots over time; ana_waitfor.c the wait-for graph of a run
 * that hung.
 */
#ifndef NPURR_ANA_REPORT_H
#define NPURR_ANA_REPORT_H

#include "analysis/present/present.h"
#include "analysis/derive/derive.h"
#include "analysis/present/ana_svg.h"

/* At most this many blocked waits are drawn one by one; the rest are in
 * the summary by role above the graph. */
#define ANA_WAITFOR_MAX_ROWS 32

/* The wait-for graph section: every wait that never ended, the word it
 * waits on and the core that last wrote that word or should have (README
 * "Causes" rule 6), with each chain followed to its cycle or dead end.
 * Writes nothing when no wait is blocked. */
int ana_report_waitfor(sqlite3 *db, const ana_run *run, FILE *out, char *err, size_t errlen);

/* The critical-path section (ana_report_critical.c): the end time by
 * resource class, the path over time, its longest segments. Writes nothing
 * when the index has no critical_path table. */
int ana_report_critical(sqlite3 *db, const ana_run *run, FILE *out, char *err, size_t errlen);

#endif
