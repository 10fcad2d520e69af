/* SPDX-License-Identifier: MIT */
/*
 * The monotonic clock that user space paces itself by (drain ticks, manifest and session-index
 * save intervals, unwind-hold waits, the status line). Event timestamps never come from here:
 * they are the probes' bpf_ktime_get_ns(), made CLOCK_BOOTTIME with clock_boot_offset_ns().
 */
#ifndef ATFTRACE_CLOCK_H
#define ATFTRACE_CLOCK_H

#include <stdint.h>
#include <time.h>

/** clock_ns - clock @id in nanoseconds. */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/** clock_mono_ns - CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/**
 * clock_boot_offset_ns - CLOCK_BOOTTIME - CLOCK_MONOTONIC: the time the machine spent suspended
 * since it booted. A boot clock read between two monotonic reads bounds it to their gap (tens of
 * ns); the tightest of a few tries is kept. When that bound holds 0 (never suspended: a suspend
 * lasts far longer than the gap) the offset is exactly 0, else it is the bound's middle.
 */
static inline uint64_t clock_boot_offset_ns(void)
{
	uint64_t lo = 0, hi = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		uint64_t m0 = clock_ns(CLOCK_MONOTONIC), b = clock_ns(CLOCK_BOOTTIME);
		uint64_t m1 = clock_ns(CLOCK_MONOTONIC);

		if (m1 - m0 < hi - lo) {
			lo = b - m1;    /* the offset is in [b - m1, b - m0] */
			hi = b - m0;
		}
	}
	if ((int64_t)lo <= 0)
		return 0;
	return lo + (hi - lo) / 2;
}

#endif
