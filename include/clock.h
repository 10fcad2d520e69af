/* SPDX-License-Identifier: MIT */
/*
 * The monotonic clock that user space paces itself by (drain ticks, manifest and session-index
 * save intervals, unwind-hold waits, the status line). Event timestamps never come from here:
 * they are the probes' bpf_ktime_get_boot_ns().
 */
#ifndef ATFTRACE_CLOCK_H
#define ATFTRACE_CLOCK_H

#include <stdint.h>
#include <time.h>

/** clock_mono_ns - CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
