// LibraryCrashGuard (library_crash_guard.hpp).
#include "library_crash_guard.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace nvtrace::import {

namespace {

thread_local bool in_library = false;
char crash_line[1024];  // written before the handler is armed, read by it only
std::size_t crash_line_len = 0;

extern "C" void on_library_crash(int sig) {
    if (!in_library) {
        ::signal(sig, SIG_DFL);  // the faulting instruction runs again and ends the process as it would have
        return;
    }
    [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, crash_line, crash_line_len);
    ::_exit(2);
}

}  // namespace

LibraryCrashGuard::LibraryCrashGuard(const std::string& line) {
    std::string l = line + "\n";
    crash_line_len = std::min(l.size(), sizeof crash_line);
    std::memcpy(crash_line, l.data(), crash_line_len);
    struct sigaction sa {};
    sa.sa_handler = on_library_crash;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &old_segv_);
    ::sigaction(SIGBUS, &sa, &old_bus_);
}

LibraryCrashGuard::~LibraryCrashGuard() {
    ::sigaction(SIGSEGV, &old_segv_, nullptr);
    ::sigaction(SIGBUS, &old_bus_, nullptr);
}

InLibrary::InLibrary() {
    in_library = true;
}
InLibrary::~InLibrary() {
    in_library = false;
}
OutOfLibrary::OutOfLibrary() {
    in_library = false;
}
OutOfLibrary::~OutOfLibrary() {
    in_library = true;
}

}  // namespace nvtrace::import
