// cuda_util.hpp: what the CUDA scenarios share (docs/scenarios.md). Every CUDA Runtime call of a scenario is
// bracketed by a phase marker named after it, and its cudaError_t is recorded as "nvtrace-result: PHASE=NAME".
#pragma once

#include <cuda_runtime_api.h>
#include <sys/stat.h>

#include <string>

#include "scenario_util.hpp"

namespace scenario {

// Requirements every CUDA scenario has: a driver (libcuda.so.1 and the kernel module) and a GPU. Without a driver
// the runtime fails every call with cudaErrorInsufficientDriver (35) and never opens /dev/nvidia*
// (ci-environment.md section 7): that is "cannot run here", not a failure.
inline void require_cuda(const Trace& trace) {
    struct stat st {};
    if (::stat("/dev/nvidiactl", &st) != 0 && ::stat("/proc/driver/nvidia/version", &st) != 0)
        cannot_run(trace, "no NVIDIA driver: /dev/nvidiactl and /proc/driver/nvidia/version are missing");
    int driver = 0;
    cudaDriverGetVersion(&driver);
    if (driver == 0) cannot_run(trace, "no CUDA driver (libcuda.so.1): cudaDriverGetVersion gives 0");
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
        cannot_run(trace, "no usable GPU: cudaGetDeviceCount gives %s, %d device(s)", cudaGetErrorName(e), n);
}

// One CUDA Runtime call in its own phase; returns its error and records it.
template <class F>
cudaError_t step(const Trace& trace, const std::string& phase, F&& call) {
    trace.phase(phase);
    cudaError_t e = call();
    trace.result(phase, cudaGetErrorName(e));
    trace.phase_end();
    return e;
}

inline std::string name(cudaError_t e) {
    return cudaGetErrorName(e);
}

}  // namespace scenario
