// LibraryCrashGuard (analyze/import/library_crash_guard.hpp): a fault while the thread is inside a library call is
// one line on stderr and exit 2; a fault in nvtrace's own code (outside InLibrary, or under OutOfLibrary in a
// callback), or after the guard ended, still kills the process with SIGSEGV. Each case runs in a child process.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "library_crash_guard.hpp"

using namespace nvtrace::import;

namespace {

// A write to a page that cannot be written: a real SIGSEGV, which no compiler can turn into anything else.
void fault() {
    void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *static_cast<volatile int*>(page) = 1;
}

struct Ended {
    int status = 0;
    std::string err;
};

Ended in_child(const std::function<void()>& body) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(fds[1], STDERR_FILENO);
        ::close(fds[0]);
        body();
        ::_exit(0);
    }
    ::close(fds[1]);
    Ended e;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        e.err.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    ::waitpid(pid, &e.status, 0);
    return e;
}

}  // namespace

TEST(LibraryCrashGuard, FaultInsideTheLibraryIsOneLineAndExit2) {
    Ended e = in_child([] {
        LibraryCrashGuard guard("nvtrace: x.dat: libtracecmd crashed reading it");
        InLibrary lib;
        fault();
    });
    ASSERT_TRUE(WIFEXITED(e.status)) << "died of signal " << WTERMSIG(e.status);
    EXPECT_EQ(WEXITSTATUS(e.status), 2);
    EXPECT_EQ(e.err, "nvtrace: x.dat: libtracecmd crashed reading it\n");
}

TEST(LibraryCrashGuard, FaultInNvtracesOwnCodeStillKillsTheProcess) {
    Ended callback = in_child([] {
        LibraryCrashGuard guard("library");
        InLibrary lib;
        OutOfLibrary ours;  // a callback of the library: nvtrace's code
        fault();
    });
    ASSERT_TRUE(WIFSIGNALED(callback.status));
    EXPECT_EQ(WTERMSIG(callback.status), SIGSEGV);
    EXPECT_EQ(callback.err, "");

    Ended outside = in_child([] {
        LibraryCrashGuard guard("library");
        fault();  // armed, but not in a library call
    });
    ASSERT_TRUE(WIFSIGNALED(outside.status));
    EXPECT_EQ(WTERMSIG(outside.status), SIGSEGV);

    Ended after = in_child([] {
        { LibraryCrashGuard guard("library"); }
        InLibrary lib;  // the guard is gone: its handler with it
        fault();
    });
    ASSERT_TRUE(WIFSIGNALED(after.status));
    EXPECT_EQ(WTERMSIG(after.status), SIGSEGV);
}
