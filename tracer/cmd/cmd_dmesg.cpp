// nvtrace dmesg [FILE|-] [--json]   (docs/dmesg.md)
#include <memory>

#include <fmt/format.h>

#include "commands.hpp"
#include "nvtrace/input.hpp"
#include "nvtrace/kernel_log.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {

namespace {

struct DmesgArgs {
    std::string file = "-";
    bool json = false;
};

int do_dmesg(const DmesgArgs& a) {
    // Opened as every input is (nvtrace/input.hpp): standard input, a FIFO or a socket read once; a directory or
    // a device refused (/dev/zero was read for 512 MiB, /dev/kmsg would block for ever).
    auto in = open_input(a.file, OpenOptions{TraceFormat::kernel_log, "", true});
    if (!in) {
        tracer::note("nvtrace dmesg: {}\n", in.error().message);
        return static_cast<int>(in.error().code);
    }
    const std::string& name = in->name;
    std::string_view text = in->bytes();

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
