/*
 * ana_json.c - the two JSON spellings the Chrome trace export needs: string
 * literals (object names and kernel file names are user text) and
 * timestamps in microseconds, which the format requires.
 *
 * Timestamps are whole nanoseconds (ana_timeline.h says why), printed as
 * the exact decimal ns / 1000 with three digits after the point: Perfetto
 * reads the number back as exactly those nanoseconds, and equal ns give
 * equal text.
 */
#include "analysis/derive/derive.h"
#include "analysis/present/ana_print.h"

void ana_json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20) fprintf(out, "\\u%04x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

void ana_json_ns(FILE *out, uint64_t ns) {
    fprintf(out, "%llu.%03llu", (unsigned long long)(ns / 1000u),
            (unsigned long long)(ns % 1000u));
}
