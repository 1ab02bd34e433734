// scenario_util.hpp: what every scenario program shares (docs/scenarios.md, "Writing a scenario program").
//
// - Phase markers and results go to the trace through the fd in $NVTRACE_TRACE_MARKER_FD (or the path in
//   $NVTRACE_TRACE_MARKER) that `nvtrace run` hands over; without either they are not written, and the program
//   still runs and prints its TAP output (docs/markers.md).
// - Results: "nvtrace-result: KEY=VALUE", checked by `result KEY = VALUE` lines of the expectations.
// - Output: TAP ("1..N", "ok 1 - ...", "not ok 2 - ..."), on stdout.
// - Exit status: 0 all tests ok, 1 a test failed, kCannotRun (77, the automake/ctest "skip" convention) when the
//   machine does not meet the requirements; then one line "cannot run here: REASON" goes to stderr and to the
//   trace ("nvtrace-cannot-run: REASON"), and `nvtrace run` reports it and exits 3.
// Header only and libc only, so that the DRM scenario links -static for the qemu guest.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace scenario {

inline constexpr int kCannotRun = 77;

class Trace {
public:
    Trace() {
        if (const char* fd = std::getenv("NVTRACE_TRACE_MARKER_FD")) {
            char* end = nullptr;
            long v = std::strtol(fd, &end, 10);
            if (end != fd && *end == '\0' && v >= 0 && ::fcntl(static_cast<int>(v), F_GETFD) != -1)
                fd_ = static_cast<int>(v);
        }
        if (fd_ < 0)
            if (const char* path = std::getenv("NVTRACE_TRACE_MARKER")) fd_ = ::open(path, O_WRONLY | O_CLOEXEC);
    }
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;

    bool enabled() const { return fd_ >= 0; }

    // One marker line; a write to trace_marker is one ftrace:print event.
    void mark(const std::string& text) const {
        if (fd_ < 0) return;
        std::string line = text + "\n";
        ssize_t n = ::write(fd_, line.data(), line.size());
        (void)n;  // a lost marker shows up as an inconclusive check, not as a scenario failure
    }
    void phase(const std::string& name) const { mark("nvtrace-phase: " + name); }
    void phase_end() const { mark("nvtrace-phase-end"); }
    void result(const std::string& key, const std::string& value) const {
        mark("nvtrace-result: " + key + "=" + value);
    }

private:
    int fd_ = -1;
};

// TAP on stdout, line buffered so that it interleaves sensibly with nvtrace's own output.
class Tap {
public:
    explicit Tap(int planned) {
        std::setvbuf(stdout, nullptr, _IOLBF, 0);
        std::printf("1..%d\n", planned);
    }
    bool check(bool ok, const std::string& what, const std::string& diag = "") {
        ++n_;
        if (!ok) ++failed_;
        std::printf("%sok %d - %s\n", ok ? "" : "not ", n_, what.c_str());
        if (!ok && !diag.empty()) std::printf("# %s\n", diag.c_str());
        return ok;
    }
    void note(const std::string& text) { std::printf("# %s\n", text.c_str()); }
    int exit_status() const { return failed_ ? 1 : 0; }

private:
    int n_ = 0;
    int failed_ = 0;
};

// "EINVAL" for 22, "ok" for 0.
inline std::string errno_name(int e) {
    if (e == 0) return "ok";
    const char* n = strerrorname_np(e);
    return n ? n : std::to_string(e);
}

[[noreturn]] inline void cannot_run(const Trace& trace, const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "cannot run here: %s\n", buf);
    trace.mark(std::string("nvtrace-cannot-run: ") + buf);
    std::exit(kCannotRun);
}

}  // namespace scenario
