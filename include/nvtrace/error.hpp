// nvtrace/error.hpp: the error value every fallible nvtrace function returns.
//
// Recoverable errors travel as values (tl::expected<T, Error>); only main() turns them into a message
// and an exit code. Thread-safety: plain value types.
#pragma once

#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace nvtrace {

// Exit codes of the nvtrace command (docs/exit-codes.md).
enum class ExitCode : int {
    ok = 0,
    expectation_failed = 1,  // a check failed (or, for `run`, the capture is incomplete with --strict)
    usage = 2,               // bad options or unreadable input
    environment = 3,         // this machine cannot do it: not root, no tracefs, tracer or module missing
    internal = 4,            // a bug in nvtrace
};

struct Error {
    ExitCode code = ExitCode::usage;
    std::string message;  // one line, says what failed and, where known, why (kernel's reason, errno text)

    static Error usage(std::string m) { return {ExitCode::usage, std::move(m)}; }
    static Error environment(std::string m) { return {ExitCode::environment, std::move(m)}; }
    static Error internal(std::string m) { return {ExitCode::internal, std::move(m)}; }
};

template <class T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(Error e) {
    return tl::unexpected<Error>(std::move(e));
}

}  // namespace nvtrace
