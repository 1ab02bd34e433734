// commands.hpp: the table of nvtrace subcommands. Each tracer/cmd/cmd_<name>.cpp is thin (parse options with
// CLI11, call the libraries, print) and registers itself with NVTRACE_COMMAND; main.cpp adds them in order.
#pragma once

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace nvtrace::cli {

// Adds one subcommand to `app`. Its callback stores the command's exit code in `exit_code`.
using AddCommand = void (*)(CLI::App& app, int& exit_code);

// (order in --help, adder). Orders: run 10, report 20, tree 25, check 30, diff 40, fleet 45, export 50, dmesg 60,
// decode 70, doctor 80, cleanup 90, scenarios 100.
std::vector<std::pair<int, AddCommand>>& command_table();

// A number greater than 0, with a message that says so (CLI::PositiveNumber prints its whole double range).
inline const CLI::Validator positive_number(
    [](std::string& value) -> std::string {
        try {
            std::size_t used = 0;
            double v = std::stod(value, &used);
            if (used == value.size() && v > 0) return {};
        } catch (const std::exception&) {
        }
        return "expected a number greater than 0, got '" + value + "'";
    },
    "NUMBER>0");

// A whole number >= 0, with a message that says so (CLI::NonNegativeNumber prints its whole double range).
inline const CLI::Validator non_negative_integer(
    [](std::string& value) -> std::string {
        bool digits = !value.empty();
        for (char c : value)
            digits = digits && c >= '0' && c <= '9';
        if (digits) return {};
        return "expected a whole number >= 0, got '" + value + "'";
    },
    "");

struct CommandRegistrar {
    CommandRegistrar(int order, AddCommand add) { command_table().emplace_back(order, add); }
};

}  // namespace nvtrace::cli

#define NVTRACE_COMMAND(order, fn) static const ::nvtrace::cli::CommandRegistrar nvtrace_command_##fn(order, fn)
