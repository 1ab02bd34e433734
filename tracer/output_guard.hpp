// output_guard.hpp: refusing an output file that would overwrite an input or a capture (run.md: "a capture is
// never overwritten"), whatever name reaches it: the path itself, a path inside the capture directory, or an
// existing hard or symbolic link to one of the capture's files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace nvtrace::cli {

// Where writing `path` lands: symbolic links followed (a dangling one too: open(2) creates its target), then
// made absolute and normal (std::filesystem::weakly_canonical). At most 40 links, as the kernel's ELOOP.
inline std::filesystem::path write_target(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p = fs::absolute(path, ec);
    for (int i = 0; i < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++i) {
        fs::path to = fs::read_symlink(p, ec);
        if (ec) break;
        p = to.is_absolute() ? to : p.parent_path() / to;
    }
    return fs::weakly_canonical(p, ec);
}

// Why writing `out` would overwrite part of the capture directory `capture_dir`, or nullopt when it would not:
// `out` lies in `capture_dir` or below it, directly or through symbolic links (a dangling one included: writing
// would create its target there), or `out` exists and is one of its files (std::filesystem::equivalent: same
// device and inode: a hard link). `what` names the option in the message ("-o", "--calls-jsonl").
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
    const fs::path target = write_target(out);
    for (fs::path p = target.parent_path(); !p.empty(); p = p.parent_path()) {
        if (p == dir) return say(fs::is_symlink(fs::symlink_status(out, ec)) ? "a link into" : "inside");
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

// Whether two outputs are one file: the same place once links are followed (write_target), or the same existing
// file through hard links.
inline bool same_output(const std::string& a, const std::string& b) {
    std::error_code ec;
    return write_target(a) == write_target(b) || std::filesystem::equivalent(a, b, ec);
}

}  // namespace nvtrace::cli
