/*
 * ana_json.c - the two JSON spellings the Chrome trace export needs: string
 * literals (object names and kernel file names are user text) and
 * timestamps in microseconds, which the format requires.
 *
 * Virtual time is integer picoseconds, so a timestamp is printed as the
 * exact decimal ps / 10^6 with six digits after the point: no rounding
 * through a double, and equal ps give equal text.
 */
#include "analysis/ana_internal.h"

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

void ana_json_us(FILE *out, uint64_t ps) {
    fprintf(out, "%llu.%06llu", (unsigned long long)(ps / 1000000u),
            (unsigned long long)(ps % 1000000u));
}
