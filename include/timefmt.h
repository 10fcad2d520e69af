/* SPDX-License-Identifier: MIT */
/*
 * The one syntax for times and durations on the command line, and their display.
 *
 *   TIME := TERM [ TERM ... ]    TERM := DIGITS [ "." DIGITS ] [ UNIT ]
 *   UNIT := ns | us | µs | ms | s | m | h   (each TERM in a smaller unit than the one before)
 *
 * e.g. 1500, 1500ns, 20us, 20µs, 1.5ms, 2s, 1m, 1m30s. Every option that takes a time or a duration parses
 * it with timefmt_parse(); a bare number is in the option's own unit (nanoseconds for --from,
 * --to and --min-duration, seconds for record's --duration and --detail-for, as they always were).
 */
#ifndef ATFTRACE_TIMEFMT_H
#define ATFTRACE_TIMEFMT_H

#include <stddef.h>
#include <stdint.h>

#define TIMEFMT_NS  1ull
#define TIMEFMT_S   1000000000ull

/**
 * timefmt_parse - parse @s into nanoseconds; a number without a unit counts in @bare_unit_ns.
 * Digits past the nanosecond are dropped. Returns 0, -EINVAL when @s is not a time, or -ERANGE
 * when it does not fit in 64 bits of nanoseconds (about 584 years).
 */
int timefmt_parse(const char *s, uint64_t bare_unit_ns, uint64_t *ns);

/** timefmt_strerror - one phrase for an error from timefmt_parse, for "--opt VALUE: <phrase>". */
const char *timefmt_strerror(int err);

/**
 * timefmt_format - @ns as "%.3f <unit>" with the largest unit of ns, us, ms, s that keeps the
 * value at least 1 (e.g. "999 ns", "1.234 us", "12.000 ms", "3.500 s"), exact in integers.
 * Returns @buf.
 */
char *timefmt_format(char *buf, size_t len, uint64_t ns);

#define TIMEFMT_LEN 32  /* enough for any uint64_t */

#endif
