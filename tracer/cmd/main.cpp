// nvtrace: investigate what a kernel driver does for a program (docs/README.md).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "stderr_note.hpp"

namespace nvtrace::cli {
std::vector<std::pair<int, AddCommand>>& command_table() {
    static std::vector<std::pair<int, AddCommand>> table;
    return table;
}
}  // namespace nvtrace::cli

namespace {

// A standard descriptor nvtrace was started without (`nvtrace run ... >&-`) is held by an O_PATH placeholder, so
// that no file nvtrace opens takes its number: the trace_marker descriptor handed to the program would have
// become its standard output, a report's temporary file nvtrace's. I/O on an O_PATH descriptor fails with EBADF as
// on the closed one (`report --json >&-` still exits 3), and it is close-on-exec: the program starts without it, as
// the shell asked. The same guard as OpenSSH's sanitise_stdfd and sudo's, with the number left unusable.
void hold_closed_standard_fds() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int held = ::open("/", O_PATH | O_CLOEXEC);  // the lowest free number: `fd` itself
        if (held >= 0 && held != fd) ::close(held);
    }
}

}  // namespace

int main(int argc, char** argv) {
    hold_closed_standard_fds();
    CLI::App app{"nvtrace: capture and explain what a kernel driver does for a program"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("nvtrace 0.1.0"));
    app.footer(
        "Exit codes: 0 ok, 1 expectation failed, 2 usage or input error, 3 this machine cannot do it, 4 internal "
        "error.\n"
        "Docs: docs/ in the source tree, one page per command.");
    int exit_code = 0;
    auto& table = nvtrace::cli::command_table();
    std::sort(table.begin(), table.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [order, add] : table)
        add(app, exit_code);
    // "nvtrace" and the subcommand parsed, as every error message begins.
    auto command_path = [&app] {
        std::string where = "nvtrace";
        for (const CLI::App* sub : app.get_subcommands())
            where += " " + sub->get_name();
        return where;
    };
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        // "nvtrace CMD: message" like every other error, and where to look.
        std::string where = command_path();
        if (where == "nvtrace" && argc > 1) {  // CLI11 says only "A subcommand is required"
            std::string names;
            for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
                names += (names.empty() ? "" : ", ") + sub->get_name();
            nvtrace::tracer::note("nvtrace: '{}' is not {} (the commands: {})\nRun 'nvtrace --help' for the options.\n",
                                  argv[1], argv[1][0] == '-' ? "an option of nvtrace before a command" : "a command",
                                  names);
            return 2;
        }
        nvtrace::tracer::note("{}: {}\nRun '{} --help' for the options.\n", where, e.what(), where);
        return 2;
    } catch (const std::exception& e) {
        nvtrace::tracer::note("nvtrace: internal error: {}\n", e.what());
        return 4;
    }
    // Output that did not reach stdout (a full disk, a closed pipe, /dev/full) is an error, not a success.
    std::cout.flush();
    bool lost = !std::cout.good();
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) lost = true;
    // "nvtrace CMD: ..." like every error; once: a command that saw the failure itself said so and exits 3.
    if (lost) {
        int err = errno ? errno : EIO;
        if (exit_code != 3)
            nvtrace::tracer::note("{}: cannot write to standard output: {}\n", command_path(), std::strerror(err));
        return exit_code == 0 ? 3 : exit_code;
    }
    return exit_code;
}
