// clock_offset.hpp: how /dev/kmsg timestamps map to the trace clock, found at capture time.
//
// /dev/kmsg records carry the kernel's local_clock() (printk stores local_clock() in ts_nsec; the record
// shows it in microseconds). The trace clocks `local` (trace_clock_local: sched_clock_cpu), `global`
// (trace_clock_global: the same clock made monotonic across CPUs) and `perf` (local_clock) read that same
// clock: offset 0, basis "same_clock". For `mono`, `mono_raw`, `boot` and `tai` (ktime_get_*_fast_ns, i.e.
// CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_TAI) the offset is measured: a probe record
// "nvtrace: trace clock probe" is written to /dev/kmsg between two clock_gettime() reads of that clock, the
// record is read back, and the best of three probes gives the offset and its bound (basis "measured"). That
// leaves up to three such lines in the kernel log. Other clocks (`uptime`, `counter`, `x86-tsc`, ...) or a
// failed probe: no offset, basis "unknown" (kernel-log lines are then attached through printk:console only).
// Convention: trace_ns = kmsg_ns + offset_ns, within +- uncertainty_ns.
// Thread-safety: one thread (it reads /dev/kmsg).
#pragma once

#include <cstdint>
#include <string>

#include "nvtrace/event.hpp"

namespace nvtrace::tracer {

KmsgClockOffset kmsg_clock_offset(const std::string& trace_clock);

// The offset bound from one probe: the clock read before (t0_ns) and after (t1_ns) the write, and the
// record's timestamp in microseconds (local_clock truncated: the write happened in [ts_us, ts_us + 1) us).
// Pure: offset is the middle of [t0 - ts - 999, t1 - ts], uncertainty its half width (rounded up).
KmsgClockOffset offset_from_probe(const std::string& trace_clock, std::uint64_t t0_ns, std::uint64_t t1_ns,
                                  std::uint64_t ts_us);

}  // namespace nvtrace::tracer
