// doctor.hpp: what this machine allows nvtrace to do, each finding with what it means for `nvtrace run`.
// Thread-safety: one thread. Creates and removes one temporary instance (nvtrace-<pid>) to probe it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nvtrace::tracer {

struct Finding {
    std::string id;       // "root", "tracefs", "function_graph", "module:nvidia", ...
    std::string status;   // "ok", "warn" (works with limits), "fail" (nvtrace run cannot do this), "info"
    std::string value;    // what was found
    std::string meaning;  // what it means for nvtrace run
};

std::vector<Finding> doctor(const std::vector<std::string>& extra_modules);

nlohmann::json to_json(const std::vector<Finding>& findings);

}  // namespace nvtrace::tracer
