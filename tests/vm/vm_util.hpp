// Helpers shared by the qemu-guest tests (tests/vm/test_vm_*.cpp): boot the guest once through tests/vm/vm.sh,
// read what the guest script handed back, skip or fail when the VM cannot run here.
//
// Each test binary boots once: it defines `const VmResult& vm()` (declared below), usually as a function-local
// static initialised by run_harness() with its own modules, binaries and guest script. Everything else here reads
// that one result. Not thread-safe (gtest runs the cases of one binary on one thread).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

namespace nvtrace::vm_test {

namespace fs = std::filesystem;

// vm.sh exits with this status when the VM cannot run on this host (no qemu, no guest kernel, ...).
constexpr int harness_cannot_run = 77;

struct VmResult {
    int harness_status = -1;  // vm.sh exit status; -1 when it did not run
    std::string harness_stderr;
    std::string setup_error;  // why vm.sh was not run
    fs::path out_dir;         // vm.sh --out: console.log, harness.stderr, files/ (what the guest handed back)
};

// Defined once per test binary: the one boot every test case of that binary shares.
const VmResult& vm();

inline std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// `word` as one single-quoted sh word.
inline std::string shell_quote(const std::string& word) {
    std::string quoted = "'";
    for (const char c : word) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return quoted + "'";
}

// Runs `<harness> --out <out_dir> <harness_args> 2><out_dir>/harness.stderr` once every binary in `static_bins`
// exists. `harness_args` is already shell-quoted. The harness's stderr (kernel, boot time, files) is copied to
// this process's stderr so that it lands in the test log.
inline VmResult run_harness(const std::string& harness, const fs::path& out_dir,
                            std::initializer_list<const char*> static_bins, const std::string& harness_args) {
    VmResult result;
    result.out_dir = out_dir;
    for (const char* bin : static_bins) {
        if (!fs::exists(bin)) {
            result.setup_error = fmt::format(
                "static binary {} is missing: run this test through ctest (its fixture vm_static_build builds it), "
                "or build it with -DNVTRACE_STATIC=ON -DCMAKE_RUNTIME_OUTPUT_DIRECTORY=<build>/static/bin",
                bin);
            return result;
        }
    }
    std::error_code ec;
    fs::create_directories(result.out_dir, ec);
    const fs::path stderr_path = result.out_dir / "harness.stderr";
    const std::string command =
        fmt::format("{} --out {} {} 2>{}", shell_quote(harness), shell_quote(result.out_dir.string()), harness_args,
                    shell_quote(stderr_path.string()));
    const int status = std::system(command.c_str());
    result.harness_stderr = read_text(stderr_path);
    if (status == -1 || !WIFEXITED(status)) {
        result.setup_error = fmt::format("could not run {} (system() status {})", command, status);
        return result;
    }
    result.harness_status = WEXITSTATUS(status);
    std::cerr << result.harness_stderr;
    return result;
}

inline bool on_ci() {
    const char* ci = std::getenv("CI");
    return ci != nullptr && std::string(ci) == "true";
}

// The content of a file the guest handed back (vm.sh's files/ folder), or nullopt when it did not.
inline std::optional<std::string> handed_back(const std::string& name) {
    const fs::path path = vm().out_dir / "files" / name;
    if (!fs::exists(path)) return std::nullopt;
    return read_text(path);
}

inline std::string console_hint() {
    return fmt::format("guest console: {}", (vm().out_dir / "console.log").string());
}

// A handed-back file of "name status" pairs (one a line, as the guest scripts write them); empty when missing.
inline std::map<std::string, int> handed_back_statuses(const std::string& name) {
    std::map<std::string, int> out;
    std::istringstream in(handed_back(name).value_or(""));
    std::string key;
    int status = 0;
    while (in >> key >> status)
        out[key] = status;
    return out;
}

// A handed-back JSON file; adds a (non-fatal) failure and returns null when it is missing or does not parse.
inline nlohmann::json handed_back_json(const std::string& name) {
    const auto text = handed_back(name);
    if (!text) {
        ADD_FAILURE() << "the guest handed back no " << name << "; " << console_hint();
        return nlohmann::json{};
    }
    try {
        return nlohmann::json::parse(*text);
    } catch (const nlohmann::json::exception& e) {
        ADD_FAILURE() << name << " does not parse: " << e.what();
        return nlohmann::json{};
    }
}

// For a fixture's SetUp: fails when the harness could not be started, skips when the VM cannot run here, except
// with CI=true, where a skip would hide a broken CI image and so fails. gtest runs no test body after either.
inline void require_vm() {
    const VmResult& run = vm();
    if (!run.setup_error.empty()) FAIL() << run.setup_error;
    if (run.harness_status == harness_cannot_run) {
        if (on_ci())
            FAIL() << "the VM cannot run on this CI machine (a skip on CI is a failure):\n" << run.harness_stderr;
        GTEST_SKIP() << "the VM cannot run here:\n" << run.harness_stderr;
    }
}

}  // namespace nvtrace::vm_test
