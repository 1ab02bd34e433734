// commands.hpp: one function per nvtrace subcommand, dispatched from main.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace nvtrace::cli {

// Adds `run` to the app; the callback runs the capture and sets `exit_code`.
void add_run(CLI::App& app, int& exit_code);

}  // namespace nvtrace::cli
