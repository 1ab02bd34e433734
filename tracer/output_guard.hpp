// output_guard.hpp: refusing an output file that would overwrite an input or a capture (run.md: "a capture is
// never overwritten"), whatever name reaches it: the path itself, a path inside the capture directory, or an
// existing hard or symbolic link to one of the capture's files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace nvtrace::cli {

// Why writing `out` would overwrite part of the capture directory `capture_dir`, or nullopt when it would not:
// `out` lies in `capture_dir` or below it, or `out` exists and is one of its files (std::filesystem::equivalent:
// same device and inode, through any link). `what` names the option in the message ("-o", "--calls-jsonl").
inline std::optional<std::string> overwrites_capture(const std::string& what, const std::string& out,
                                                     const std::string& capture_dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (out.empty() || out == "-" || !fs::is_directory(capture_dir, ec)) return std::nullopt;
    const fs::path dir = fs::weakly_canonical(fs::absolute(capture_dir, ec), ec);
    auto say = [&](const char* how) {
        return fmt::format(
            "{} {} is {} the capture directory {}: nvtrace never overwrites a capture; write it elsewhere", what, out,
            how, capture_dir);
    };
    for (fs::path p = fs::weakly_canonical(fs::absolute(out, ec).parent_path(), ec); !p.empty(); p = p.parent_path()) {
        if (p == dir) return say("inside");
        if (p == p.parent_path()) break;
    }
    if (fs::exists(out, ec))
        for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
            if (it->is_regular_file(ec) && fs::equivalent(out, it->path(), ec)) return say("a link to a file of");
    return std::nullopt;
}

// Why writing `out` would overwrite the input file `in` (the same file through any name), or nullopt.
inline std::optional<std::string> overwrites_input(const std::string& what, const std::string& out,
                                                   const std::string& in) {
    std::error_code ec;
    if (out.empty() || out == "-" || in.empty() || in == "-") return std::nullopt;
    if (std::filesystem::equivalent(out, in, ec))
        return what + " " + out + " is an input file: it would be overwritten";
    return std::nullopt;
}

}  // namespace nvtrace::cli
