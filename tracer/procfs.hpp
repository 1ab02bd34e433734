// procfs.hpp: small readers of /proc and /sys files (kernel access: tracer/ only).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvtrace/error.hpp"

namespace nvtrace::tracer {

// Whole file as text; an error names the path and errno text.
Result<std::string> read_file(const std::string& path);

// Kernel release, machine, the loaded versions of `modules` (/sys/module/M/version, srcversion,
// taint), and the NVIDIA driver banner (/proc/driver/nvidia/version) when present.
nlohmann::json environment_info(const std::vector<std::string>& modules);

bool module_loaded(const std::string& module);

}  // namespace nvtrace::tracer
