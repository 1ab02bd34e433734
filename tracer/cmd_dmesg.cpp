// nvtrace dmesg [FILE|-] [--json]   (docs/dmesg.md)
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "commands.hpp"
#include "nvtrace/kernel_log.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct DmesgArgs {
    std::string file = "-";
    bool json = false;
};

int do_dmesg(const DmesgArgs& a) {
    std::string text;
    std::string name = a.file == "-" ? "<stdin>" : a.file;
    if (a.file == "-") {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        if (std::cin.bad()) {
            tracer::note("nvtrace dmesg: {}: cannot read standard input\n", name);
            return static_cast<int>(ExitCode::usage);
        }
    } else {
        if (std::error_code ec; std::filesystem::is_directory(a.file, ec)) {
            tracer::note("nvtrace dmesg: {}: is a directory (expected a kernel log file, or - for stdin)\n", name);
            return static_cast<int>(ExitCode::usage);
        }
        // /dev/zero was read for 512 MiB, /dev/kmsg would block for ever (a second fresh user); report refuses
        // devices the same way. A pipe (/dev/stdin, a FIFO) is read.
        if (struct stat st{}; ::stat(a.file.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
            fmt::print(stderr,
                       "nvtrace dmesg: {}: a device, not a kernel log file (save it first: `dmesg > log`, or give "
                       "- for stdin)\n",
                       name);
            return static_cast<int>(ExitCode::usage);
        }
        std::ifstream in(a.file, std::ios::binary);
        if (!in) {
            tracer::note("nvtrace dmesg: {}: cannot read ({})\n", name, std::strerror(errno));
            return static_cast<int>(ExitCode::usage);
        }
        std::ostringstream ss;
        ss << in.rdbuf();
        if (in.bad()) {
            tracer::note("nvtrace dmesg: {}: cannot read\n", name);
            return static_cast<int>(ExitCode::usage);
        }
        text = std::move(ss).str();
    }

    KernelLogParse p = read_kernel_log(text, name);
    if (a.json) {
        fmt::print("{}\n", kernel_log_json(p));
    } else {
        for (const auto& m : p.messages)
            fmt::print("{}\n", format_kernel_log_message(m));
        for (const auto& d : p.diagnostics)
            tracer::note("nvtrace dmesg: {} {} x{} (first: {})\n", d.severity, d.name, d.count, d.first_example);
    }
    if (p.messages.empty()) {
        std::string why = "no lines";
        for (const auto& d : p.diagnostics)
            if (d.name == "non_log_line" || d.name == "malformed_kmsg_record") why = d.first_example;
        tracer::note("nvtrace dmesg: {}: nothing in it is a kernel log line: {}\n", name, why);
        return static_cast<int>(ExitCode::usage);
    }
    return 0;
}

void add_dmesg(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<DmesgArgs>();
    auto* cmd = app.add_subcommand(
        "dmesg",
        "Parse a kernel log (dmesg, dmesg -T, journalctl -k, syslog, /dev/kmsg records) into classified messages");
    cmd->add_option("file", args->file, "Kernel log file, or - for standard input (default)");
    cmd->add_flag("--json", args->json, "Print nvtrace.kernel_log/1 JSON instead of one line per message");
    cmd->footer(
        "Exit codes: 0 kernel-log messages found, 2 unreadable input or not a single kernel-log line in it.\n"
        "Docs: docs/dmesg.md");
    cmd->callback([args, &exit_code] { exit_code = do_dmesg(*args); });
}

}  // namespace

NVTRACE_COMMAND(60, add_dmesg);

}  // namespace nvtrace::cli
