// library_crash_guard.hpp: a crash inside libtracecmd or libtraceevent on a damaged input file becomes one line on
// stderr and exit 2 (a bad input), not a SIGSEGV (the trace.dat reader, trace_dat.cpp).
//
// libtracecmd 1.3.1 and libtraceevent 1.7.1 crash on some damaged trace.dat files (a few bytes changed
// of 120 files: 2 crashed nvtrace and `trace-cmd report` alike): tracecmd_buffer_instance_handle's error path closes
// a half-made copy of the top handle (SIGSEGV in tracecmd_close), and kbuffer_load_subbuffer reads a damaged page
// header out of bounds. While the reading thread is inside those libraries (InLibrary), such a crash prints the
// guard's line and ends the process with exit 2 (ExitCode::usage); a crash anywhere else (nvtrace's own code, its
// callbacks under OutOfLibrary, another thread) keeps the default action (the process dies of the signal).
//
// Thread-safety: one guard at a time in the process (SIGSEGV and SIGBUS handlers are the process's; the previous
// actions are given back when the guard ends); the in-library flag is per thread.
#pragma once

#include <string>

#include <signal.h>

namespace nvtrace::import {

class LibraryCrashGuard {
public:
    // `line`: what to print on such a crash (a newline is added).
    explicit LibraryCrashGuard(const std::string& line);
    ~LibraryCrashGuard();
    LibraryCrashGuard(const LibraryCrashGuard&) = delete;
    LibraryCrashGuard& operator=(const LibraryCrashGuard&) = delete;

private:
    struct sigaction old_segv_ {
    }, old_bus_{};
};

// This thread is in a library call (on construction) until the end of the scope.
struct InLibrary {
    InLibrary();
    ~InLibrary();
};
// Inside a library's callback: nvtrace's code runs again until the end of the scope.
struct OutOfLibrary {
    OutOfLibrary();
    ~OutOfLibrary();
};

}  // namespace nvtrace::import
