/*
 * base/clock.h - the server's clocks.
 *
 * ifd_now_ns() is CLOCK_MONOTONIC in nanoseconds: the clock of every
 * TRITONBACKEND_* / TRITONSERVER_* timestamp and of the statistics' durations
 * (libuv's uv_hrtime() reads the same clock). ifd_now_ms_coarse() is
 * CLOCK_MONOTONIC_COARSE in milliseconds, for windows that tolerate a tick's
 * error (the summary metrics' slots) and are read on every request.
 */
#ifndef IFD_BASE_CLOCK_H
#define IFD_BASE_CLOCK_H

#include <stdint.h>

/** Monotonic clock in ns. Any thread. */
uint64_t ifd_now_ns(void);

/** Coarse monotonic clock in ms (one scheduler tick of resolution). */
uint64_t ifd_now_ms_coarse(void);

#endif
