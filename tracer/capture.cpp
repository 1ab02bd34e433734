#include "capture.hpp"

#include <signal.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iterator>
#include <ranges>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cleanup.hpp"
#include "clock_offset.hpp"
#include "kmsg_reader.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/symbols.hpp"
#include "preload_path.hpp"
#include "procfs.hpp"
#include "scenario.hpp"
#include "stderr_note.hpp"
#include "tracefs_cxx.h"
#include "tracefs_session.hpp"
#include "uprobes.hpp"

namespace nvtrace::tracer {

namespace {

using Clock = std::chrono::steady_clock;

namespace fs = std::filesystem;

// The raw side of the capture (docs/formats.md, "Capture directory"). While the program runs, nothing is
// decoded: a thread moves sub-buffers from per_cpu/cpuN/trace_pipe_raw to raw/<buffer>/cpuN every 5 ms,
// spliced into a pipe per source, then read and written. The kernel (tracing_buffers_splice_read) hands over
// only sub-buffers the writer has left, i.e. full ones, so a fast drain writes no half-empty pages. At the
// end, flush() read()s what is left, partial pages too (zero-padded to page_size), and decode_merged() decodes
// the files with PageDecoder, source by source (buffer, then CPU), the way the offline reader does.
// libtracefs 1.6's tracefs_cpu_write() is not used: its pipe-to-file splice is non-blocking and may move
// fewer bytes than it took from the ring buffer, leaving pages in its private pipe that tracefs_cpu_flush()
// never writes out.
class RawRecorder {
public:
    struct Source {
        std::string buffer;  // "instance" or "top"
        int cpu = -1;
        int fd = -1;   // trace_pipe_raw, O_NONBLOCK
        int out = -1;  // raw/<buffer>/cpuN
        int pipe[2] = {-1, -1};
        bool splice = false;  // else read(): whole pages and partial ones alike
        std::size_t pipe_size = 0;
        std::string error;  // its first I/O error (written by the mover thread while it runs)
        std::size_t page_size = 0;
        std::uint64_t pages = 0;    // decode_merged(): pages in the file
        std::uint64_t records = 0;  // decode_merged(): records decoded from them
        std::uint64_t damaged = 0;  // decode_merged(): pages the decoder refused
        fs::path path;
    };
    RawRecorder() = default;
    RawRecorder(const RawRecorder&) = delete;
    RawRecorder& operator=(const RawRecorder&) = delete;
    ~RawRecorder() { close(); }

    // Opens trace_pipe_raw of every CPU of `inst` (nullptr = top level) and raw/<buffer>/cpuN under `dir`.
    // `page_size`: the sub-buffer size (events/header_page).
    Result<void> open(tracefs_instance* inst, const std::string& buffer, const fs::path& dir, std::size_t page_size) {
        std::error_code ec;
        fs::create_directories(dir / "raw" / buffer, ec);
        if (ec)
            return fail(
                Error::environment(fmt::format("cannot create {}: {}", (dir / "raw" / buffer).string(), ec.message())));
        if (page_size == 0) return fail(Error::environment("events/header_page gives no sub-buffer size"));
        const bool can_splice = page_size == static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        long ncpu = ::sysconf(_SC_NPROCESSORS_CONF);
        std::size_t opened = 0;
        for (int cpu = 0; cpu < ncpu; ++cpu) {
            int fd = tracefs_instance_file_open(inst, fmt::format("per_cpu/cpu{}/trace_pipe_raw", cpu).c_str(),
                                                O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd < 0) continue;  // a CPU without a buffer (not possible on this machine)
            Source src;
            src.buffer = buffer;
            src.cpu = cpu;
            src.fd = fd;
            src.page_size = page_size;
            src.path = dir / "raw" / buffer / fmt::format("cpu{}", cpu);
            src.out = ::open(src.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (src.out < 0) {
                int err = errno;
                ::close(fd);
                return fail(
                    Error::environment(fmt::format("cannot write {}: {}", src.path.string(), std::strerror(err))));
            }
            if (can_splice && ::pipe2(src.pipe, O_CLOEXEC) == 0) {
                src.splice = true;
                // A larger pipe takes more pages per splice (at most one pipe's worth); 1 MiB is fs/pipe-max-size.
                int size = ::fcntl(src.pipe[1], F_SETPIPE_SZ, 1 << 20);
                if (size < 0) size = ::fcntl(src.pipe[1], F_GETPIPE_SZ);
                src.pipe_size = static_cast<std::size_t>(std::max(size, static_cast<int>(page_size)));
            }
            sources_.push_back(std::move(src));
            ++opened;
        }
        page_.resize(std::max(page_.size(), page_size + PageDecoder::kPageSlack));
        if (opened == 0)
            return fail(Error::environment(fmt::format("cannot open per_cpu/cpuN/trace_pipe_raw of the {} buffer: {}",
                                                       buffer, std::strerror(errno))));
        return {};
    }

    // While tracing: starts the thread that, every 5 ms, moves the full pages of every source to its file
    // (splice into the source's pipe, then read/write), until none is left. It does nothing else (no /proc,
    // no kmsg), so the capture loop's other work never delays it.
    void start() {
        copy_.resize(std::size_t{1} << 20);
        mover_ = std::thread([this] {
            // This thread only (Linux: a thread id is a PRIO_PROCESS target; nvtrace runs as root): a reader
            // that does not run for ~16 ms loses events of a busy program at the default buffer size, so it
            // goes before ordinary jobs (docs/run.md). Nothing else's priority changes; failure is harmless.
            (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), -10);
            while (!stop_.load(std::memory_order_relaxed)) {
                for (auto& src : sources_)
                    if (src.splice && src.error.empty())
                        while (std::size_t n = fill_pipe(src))
                            pipe_to_file(src, n);
                timespec tick{0, 5'000'000};
                ::nanosleep(&tick, nullptr);
            }
        });
    }

    // While tracing, from the capture loop: read()s the sources that cannot splice (the thread has the others).
    void drain() {
        for (auto& src : sources_)
            if (src.fd >= 0 && !src.splice) read_pages(src);
    }

    // After tracing stopped: stops the thread, moves the rest of the full pages, then reads what is left
    // (partial pages) with read().
    void flush() {
        stop();
        copy_.resize(std::size_t{1} << 20);
        for (auto& src : sources_) {
            if (src.fd < 0) continue;
            if (src.splice && src.error.empty())
                while (std::size_t n = fill_pipe(src))
                    pipe_to_file(src, n);
            read_pages(src);
        }
    }

    void stop() {
        stop_.store(true, std::memory_order_relaxed);
        if (mover_.joinable()) mover_.join();
    }

    void close() {
        stop();
        for (auto& src : sources_) {
            for (int* fd : {&src.fd, &src.pipe[0], &src.pipe[1]}) {
                if (*fd >= 0) ::close(*fd);
                *fd = -1;
            }
            if (src.out >= 0 && ::close(src.out) != 0) note(src.error, src, "close", errno);
            src.out = -1;
            if (!src.error.empty() && write_error.empty()) write_error = src.error;
        }
    }

    // After close(): every event of the page files, merged by time as `nvtrace report DIR` reads them
    // (decode_page_files_merged, nvtrace/capture_dir.hpp), handed to `sink` one at a time; counts each file's
    // pages and records, and decode_error. false when `sink` refused one.
    bool decode_merged(PageDecoder& dec, const std::function<bool(Event&)>& sink) {
        std::vector<PageFile> files = page_files();
        PageFileProblems problems;
        bool all = decode_page_files_merged(dec, files, sink, problems);
        took(files, problems);
        return all;
    }

    std::vector<Source>& sources() { return sources_; }
    std::string write_error;   // the first read or write error of the drain: pages were lost
    std::string decode_error;  // decode_merged(): the first page file it could not read back

private:
    std::vector<PageFile> page_files() const {
        std::vector<PageFile> files;
        for (const auto& src : sources_)
            files.push_back({src.buffer, src.cpu, src.path.string(), src.page_size, 0, 0});
        return files;
    }
    // The counts and problems of the last decoding (a new decoding replaces them).
    void took(const std::vector<PageFile>& files, PageFileProblems& problems) {
        for (std::size_t i = 0; i < files.size(); ++i) {
            sources_[i].pages = files[i].pages;
            sources_[i].records = files[i].records;
            sources_[i].damaged = files[i].damaged;
        }
        decode_error = std::move(problems.first);
    }

    // Splices the full pages available now from trace_pipe_raw into the source's pipe, until none is left or
    // the pipe is full. Returns the bytes moved. An error (not EAGAIN) stops the splicing of this source.
    std::size_t fill_pipe(Source& src) {
        std::size_t moved = 0;
        for (;;) {
            ssize_t n =
                ::splice(src.fd, nullptr, src.pipe[1], nullptr, src.pipe_size, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                moved += static_cast<std::size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno != EAGAIN)
                src.error = fmt::format("raw/{}/cpu{}: splice from trace_pipe_raw: {}", src.buffer, src.cpu,
                                        std::strerror(errno));
            return moved;  // 0 or EAGAIN: no full page left, or the pipe is full
        }
    }

    void note(std::string& what, const Source& src, const char* step, int err) {
        if (what.empty()) what = fmt::format("raw/{}/cpu{}: {}: {}", src.buffer, src.cpu, step, std::strerror(err));
    }

    bool write_all(Source& src, const unsigned char* p, std::size_t n) {
        while (n > 0) {
            ssize_t w = ::write(src.out, p, n);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                note(src.error, src, "write", w < 0 ? errno : EIO);
                return false;
            }
            p += w;
            n -= static_cast<std::size_t>(w);
        }
        return true;
    }

    // Every page read() returns now (trace_pipe_raw gives one sub-buffer per read, or what the writer has
    // committed so far on the page it is on), zero-padded to page_size so the file stays page-aligned.
    void read_pages(Source& src) {
        for (;;) {
            ssize_t n = ::read(src.fd, page_.data(), src.page_size);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno != EAGAIN) note(src.error, src, "trace_pipe_raw", errno);
            if (n <= 0) return;
            if (static_cast<std::size_t>(n) < src.page_size)
                std::memset(page_.data() + n, 0, src.page_size - static_cast<std::size_t>(n));
            write_all(src, page_.data(), src.page_size);
        }
    }

    // Moves `n` bytes (whole pages) from the source's pipe to its file with read() and write() (a splice into
    // a file holds the pipe's lock for the whole write).
    void pipe_to_file(Source& src, std::size_t n) {
        while (n > 0) {
            ssize_t r = ::read(src.pipe[0], copy_.data(), std::min(n, copy_.size()));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                note(src.error, src, "pipe", r < 0 ? errno : EIO);
                return;
            }
            n -= static_cast<std::size_t>(r);
            write_all(src, copy_.data(), static_cast<std::size_t>(r));
        }
    }

    std::vector<Source> sources_;
    std::vector<unsigned char> page_;
    std::vector<unsigned char> copy_;  // pipe_to_file
    std::thread mover_;
    std::atomic<bool> stop_{false};
};

Result<void> write_file(const fs::path& p, const std::string& text) {
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) return fail(Error::environment(fmt::format("cannot write {}: {}", p.string(), std::strerror(errno))));
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = std::fclose(f) == 0 && ok;
    if (!ok) return fail(Error::environment(fmt::format("cannot write {}: {}", p.string(), std::strerror(errno))));
    return {};
}

std::string dump_json(const nlohmann::json& j) {
    return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json stats_json(const std::vector<CpuBufferStats>& stats) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& s : stats)
        a.push_back(
            {{"cpu", s.cpu}, {"buffer", s.buffer}, {"overrun", s.overrun}, {"dropped_events", s.dropped_events}});
    return a;
}

// Event formats (events/header_page, header_event, <system>/<event>/format) for every type seen in the
// pages plus the ones nvtrace enables; names them in `saved` (meta.json "event_formats").
Result<void> save_formats(tracefs_instance* inst, tep_handle* tep, std::set<int> types,
                          const std::vector<std::pair<std::string, std::string>>& always, const fs::path& dir,
                          std::vector<std::string>& saved) {
    std::error_code ec;
    fs::create_directories(dir / "events", ec);
    for (const char* h : {"header_page", "header_event"}) {
        auto text = read_instance_file(nullptr, (std::string("events/") + h).c_str());
        if (!text) return fail(Error::environment(fmt::format("cannot read events/{} from tracefs", h)));
        if (auto r = write_file(dir / "events" / h, *text); !r) return r;
    }
    std::set<std::pair<std::string, std::string>> names(always.begin(), always.end());
    for (int type : types)
        if (tep_event* ev = tep_find_event(tep, type); ev && ev->system && ev->name)
            names.emplace(ev->system, ev->name);
    for (const auto& [sys, name] : names) {
        int size = 0;
        char* text = tracefs_event_file_read(inst, sys.c_str(), name.c_str(), "format", &size);
        if (!text) continue;  // an event of the "always" list this kernel lacks
        std::string t(text, static_cast<std::size_t>(std::max(size, 0)));
        std::free(text);
        fs::create_directories(dir / "events" / sys / name, ec);
        if (auto r = write_file(dir / "events" / sys / name / "format", t); !r) return r;
        saved.push_back(sys + ":" + name);
    }
    return {};
}

// Runs argv (no shell) with stdout and stderr appended to `log`; its exit code, or -1 when it did not run.
int run_logged(const std::vector<std::string>& argv, const std::string& log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    std::vector<char*> a;
    for (const auto& x : argv)
        a.push_back(const_cast<char*>(x.c_str()));
    a.push_back(nullptr);
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool in_path(const std::string& prog) {
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    for (std::size_t pos = 0; pos <= p.size();) {
        std::size_t colon = p.find(':', pos);
        std::string dir = p.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
        if (!dir.empty() && ::access((dir + "/" + prog).c_str(), X_OK) == 0) return true;
        if (colon == std::string::npos) break;
        pos = colon + 1;
    }
    return false;
}

// --trace-dat: DIR/trace.dat (instance buffer) and DIR/trace-top.dat (top-level buffer, function_graph on
// kernels without it in instances) from the saved pages through `trace-cmd restore` (docs/run.md). The
// header (event formats, kallsyms, saved_cmdlines) is made by `trace-cmd restore -c` from this machine's
// tracefs, so this runs right after the capture, on the machine that made it. Returns the files written.
Result<std::vector<std::string>> write_trace_dat(const std::string& out_dir, const CaptureMeta& meta) {
    if (!in_path("trace-cmd"))
        return fail(Error::environment("--trace-dat needs trace-cmd in PATH (Debian package trace-cmd)"));
    namespace fs = std::filesystem;
    const std::string log = (fs::path(out_dir) / "trace-cmd-restore.log").string();
    const std::string head = (fs::path(out_dir) / ".trace-dat-header").string();
    if (int rc = run_logged({"trace-cmd", "restore", "-c", "-o", head}, log); rc != 0)
        return fail(Error::environment(fmt::format("trace-cmd restore -c failed (exit {}): see {}", rc, log)));
    std::vector<std::string> written;
    for (const auto& b : meta.raw.buffers) {
        std::string name = b.name == "instance" ? "trace.dat" : "trace-top.dat";
        std::vector<std::string> argv{"trace-cmd", "restore", "-i", head, "-o", (fs::path(out_dir) / name).string()};
        for (int cpu : b.cpus)
            argv.push_back((fs::path(out_dir) / "raw" / b.name / fmt::format("cpu{}", cpu)).string());
        if (int rc = run_logged(argv, log); rc != 0) {
            fs::remove(head);
            return fail(Error::environment(fmt::format("trace-cmd restore -i failed (exit {}): see {}", rc, log)));
        }
        written.push_back(name);
    }
    std::error_code ec;
    fs::remove(head, ec);
    fs::remove(log, ec);
    return written;
}

std::string top_file(const char* name) {
    std::string out = read_instance_file(nullptr, name).value_or("");
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return out;
}

std::size_t count_filter_lines(tracefs_instance* inst) {
    auto text = read_instance_file(inst, "set_ftrace_filter");
    if (!text) return 0;
    std::istringstream in(*text);
    std::size_t n = 0;
    std::string line;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '#') ++n;
    return n;
}

std::string utc_now() {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// Blocks the termination signals for the whole capture so that they are handled in the drain loop, and
// restores the previous mask on every exit path.
class SignalBlock {
public:
    SignalBlock() {
        sigemptyset(&set_);
        sigaddset(&set_, SIGINT);
        sigaddset(&set_, SIGTERM);
        sigaddset(&set_, SIGHUP);
        sigaddset(&set_, SIGQUIT);  // Ctrl-\ left the instance behind (its default action ends nvtrace at once)
        // A shell starts background jobs with SIGINT ignored, and an ignored signal is discarded rather than
        // queued for sigtimedwait: take SIGINT and SIGTERM back. SIGHUP stays ignored under nohup.
        for (int sig : {SIGINT, SIGTERM}) {
            struct sigaction sa {};
            if (::sigaction(sig, nullptr, &sa) == 0 && sa.sa_handler == SIG_IGN) {
                sa.sa_handler = SIG_DFL;
                ::sigaction(sig, &sa, nullptr);
                restored_.push_back(sig);
            }
        }
        ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
    }
    ~SignalBlock() {
        for (int sig : restored_)
            ::signal(sig, SIG_IGN);
        if (hold_) return;  // the caller unblocks them once the capture is saved (CaptureOptions::hold_signals)
        // Discard what arrived after the loop stopped listening, then unblock.
        timespec zero{0, 0};
        while (::sigtimedwait(&set_, nullptr, &zero) > 0) {
        }
        ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    }
    // Leaves the signals blocked at the end (a successful capture whose caller still has to save it).
    void hold() { hold_ = true; }
    const sigset_t& set() const { return set_; }
    const sigset_t& old() const { return old_; }

private:
    sigset_t set_{}, old_{};
    std::vector<int> restored_;  // signals that were ignored when the capture started
    bool hold_ = false;
};

// A tep holding the ring-buffer header and the formats of `events` ("system:event", or "system:*" for a whole
// system), read from tracing_dir. tracefs_local_events_system loads whole systems and always parses
// /proc/kallsyms (libtracefs 1.6, load_mappings): 0.107 s and 739 formats for ftrace, syscalls and printk here
// (bench/tep_load.c, 3 runs on the machine of docs/performance.md) against 0.2 ms for the six formats nvtrace decodes;
// a run without function tracing never looks a function up. `with_mappings`: kallsyms and printk_formats too, as
// libtracefs loads them (the user's --event records are printed by libtraceevent). An event this kernel lacks is left
// out (its enabling fails later with its own message). nullptr when the header page cannot be read.
tep_handle* load_event_formats(const char* tracing_dir, const std::vector<std::string>& events, bool with_mappings) {
    auto header = read_file(fmt::format("{}/events/header_page", tracing_dir));
    if (!header) return nullptr;
    tep_handle* tep = tep_alloc();
    if (!tep) return nullptr;
    if (tep_parse_header_page(tep, header->data(), static_cast<unsigned long>(header->size()),
                              static_cast<int>(sizeof(long))) != 0) {
        tep_free(tep);
        return nullptr;
    }
    tep_set_long_size(tep, tep_get_header_page_size(tep));
    tep_set_cpus(tep, static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_CONF))));
    std::set<std::pair<std::string, std::string>> loaded;
    auto load = [&](const std::string& sys, const std::string& name) {
        if (!loaded.emplace(sys, name).second) return;
        auto text = read_file(fmt::format("{}/events/{}/{}/format", tracing_dir, sys, name));
        if (text) tep_parse_event(tep, text->data(), text->size(), sys.c_str());
    };
    for (const auto& e : events) {
        auto colon = e.find(':');
        std::string sys = e.substr(0, colon), name = e.substr(colon + 1);
        if (name != "*") {
            load(sys, name);
            continue;
        }
        if (char** names = tracefs_system_events(tracing_dir, sys.c_str())) {
            for (char** n = names; *n; ++n)
                load(sys, *n);
            tracefs_list_free(names);
        }
    }
    if (with_mappings) {
        if (auto ks = read_file("/proc/kallsyms")) tep_parse_kallsyms(tep, ks->c_str());
        if (auto pf = read_file(fmt::format("{}/printk_formats", tracing_dir)))
            tep_parse_printk_formats(tep, pf->c_str());
    }
    return tep;
}

// The syscalls that give, copy or end fds with the fd number in their record (the argument or the return value):
// FdCall in nvtrace/ioctl.hpp. pipe, pipe2 and socketpair are not among them: they write their two fds into user
// memory, which the tracepoint does not record; the lifetimes account for such fds filling free numbers.
// io_uring_setup and io_uring_enter mark a process whose ring can open and close fds with no syscall: its fds are of
// unknown lifetime from then on (build_fd_lifetimes).
constexpr std::string_view kFdSyscalls =
    "open openat openat2 creat open_by_handle_at close close_range dup dup2 dup3 fcntl socket accept accept4 eventfd "
    "eventfd2 memfd_create memfd_secret signalfd signalfd4 timerfd_create epoll_create epoll_create1 inotify_init "
    "inotify_init1 fanotify_init userfaultfd perf_event_open io_uring_setup io_uring_enter pidfd_open pidfd_getfd "
    "fsopen fsmount fspick open_tree execve execveat";

// What fd_paths.json is made of in the saved pages, gathered while write_capture decodes them (one pass): the records
// of the fd syscalls (handed over by PageDecoder::observe: nvtrace decodes no Event from them) and of the poll
// brackets (trace_marker_raw of nvtrace's own pid), the preload's enter markers (its readlink at each ioctl) and
// whether events were lost. The fields of a record are read with tep_read_number_field (libtraceevent's printed
// text of a field follows the print fmt: "id=000a", "fd=00000004", without the "0x" outside the conversion).
class FdRecords {
public:
    struct Rec {
        std::uint64_t ts = 0;
        std::size_t source = 0, seq = 0;  // the page file, and the order read: equal times keep it (fd_lifetimes)
        int pid = -1;
        int kind = 0;  // 0 raw_data, 1 sys_enter, 2 sys_exit
        std::string name;
        std::map<std::string, std::uint64_t> fields;
    };

    // The types observed: sys_enter_NAME and sys_exit_NAME of each of `fd_events`, and ftrace:raw_data.
    FdRecords(tep_handle* tep, const std::vector<std::string>& fd_events) : tep_(tep) {
        auto add = [&](const char* system, const std::string& event, int kind, const std::string& name) {
            if (tep_event* e = tep_find_event_by_name(tep, system, event.c_str()); e && e->id >= 0) {
                types_.push_back(e->id);
                kinds_.emplace(e->id, std::pair<int, std::string>(kind, name));
            }
        };
        add("ftrace", "raw_data", 0, "");
        for (const std::string& name : fd_events) {
            add("syscalls", "sys_enter_" + name, 1, name);
            add("syscalls", "sys_exit_" + name, 2, name);
        }
    }
    const std::vector<int>& types() const { return types_; }

    // A record of one of types() (PageDecoder::RecordObserver).
    void add(std::size_t source, const tep_record& record) {
        tep_record rec = record;  // libtraceevent's readers take a non-const record but only read it
        if (rec.size < 8) return;
        tep_event* e = tep_find_event(tep_, tep_data_type(tep_, &rec));
        auto kind = e ? kinds_.find(e->id) : kinds_.end();
        if (kind == kinds_.end()) return;
        Rec r;
        r.kind = kind->second.first;
        r.name = kind->second.second;
        r.ts = rec.ts;
        r.source = source;
        r.seq = recs.size();
        r.pid = tep_data_pid(tep_, &rec);
        if (r.kind == 0 && r.pid != self_) return;
        for (tep_format_field* fl = e->format.fields; fl; fl = fl->next) {
            unsigned long long v = 0;
            if ((fl->flags & TEP_FIELD_IS_ARRAY) || fl->offset + fl->size > rec.size) continue;
            if (tep_read_number_field(fl, rec.data, &v) == 0) {
                // Signed fields (ret) are sign-extended from their size.
                if ((fl->flags & TEP_FIELD_IS_SIGNED) && fl->size < 8 && fl->size > 0 && (v >> (fl->size * 8 - 1)) & 1)
                    v |= ~0ull << (fl->size * 8);
                r.fields[fl->name] = v;
            }
        }
        recs.push_back(std::move(r));
    }

    // Every decoded event (the sink of the decoding): lost-event marks and the preload's enter markers.
    void event(const Event& ev) {
        if (std::holds_alternative<LostEvents>(ev.body)) changes_may_be_missing = true;
        if (const auto* mk = std::get_if<Marker>(&ev.body))
            if (auto m = parse_preload_marker(mk->text); m && m->half == PreloadMarker::Half::enter && m->dev)
                preload.push_back({ev.pid, m->fd, ev.ts_ns, ev.ts_ns, *m->dev, "preload"});
    }

    std::vector<Rec> recs;
    std::vector<FdSample> preload;
    bool changes_may_be_missing = false;

private:
    tep_handle* tep_;
    const int self_ = static_cast<int>(::getpid());
    std::vector<int> types_;
    std::map<int, std::pair<int, std::string>> kinds_;  // type id -> (kind, syscall name)
};

// The comm of each task that task:task_newtask (the comm a task is forked with: its parent's) and task:task_rename
// (exec, prctl(PR_SET_NAME), a write to /proc/PID/comm) recorded, gathered like FdRecords while write_capture decodes
// the pages. ftrace's saved_cmdlines keeps a comm only for a task that was switched out while its CPU had a record
// waiting to be saved (kernel/trace/trace.c, tracing_record_taskinfo_sched_switch), in a table of 128 slots by default
// that every instance and every task of the machine shares: a short-lived thread of the program is often not there.
class TaskComms {
public:
    explicit TaskComms(tep_handle* tep) : tep_(tep) {
        for (auto [event, field] : {std::pair{"task_newtask", "comm"}, std::pair{"task_rename", "newcomm"}})
            if (tep_event* e = tep_find_event_by_name(tep, "task", event); e && e->id >= 0)
                if (tep_format_field* f = tep_find_field(e, field)) {
                    types_.push_back(e->id);
                    fields_[e->id] = {tep_find_field(e, "pid"), f};
                }
    }
    const std::vector<int>& types() const { return types_; }

    // A record of one of types() (PageDecoder::RecordObserver); others are ignored.
    void add(const tep_record& record) {
        tep_record rec = record;  // libtraceevent's readers take a non-const record but only read it
        if (rec.size < 8) return;
        auto it = fields_.find(tep_data_type(tep_, &rec));
        if (it == fields_.end()) return;
        auto [pid_field, comm_field] = it->second;
        if (comm_field->offset + comm_field->size > rec.size) return;
        int pid = tep_data_pid(tep_, &rec);  // task_rename of kernels without its pid field: the task renamed itself
        unsigned long long v = 0;
        if (pid_field && pid_field->offset + pid_field->size <= rec.size &&
            tep_read_number_field(pid_field, rec.data, &v) == 0)
            pid = static_cast<int>(static_cast<std::int32_t>(v));
        const char* text = static_cast<const char*>(rec.data) + comm_field->offset;
        std::string comm(text, ::strnlen(text, static_cast<std::size_t>(comm_field->size)));
        if (pid > 0 && !comm.empty()) seen_.push_back({rec.ts, seen_.size(), pid, std::move(comm)});
    }

    // pid -> the last comm the task had in the run (by time; equal times in the order read).
    std::map<int, std::string> last() {
        std::sort(seen_.begin(), seen_.end(),
                  [](const Seen& a, const Seen& b) { return std::tie(a.ts, a.seq) < std::tie(b.ts, b.seq); });
        std::map<int, std::string> out;
        for (Seen& s : seen_)
            out[s.pid] = std::move(s.comm);
        return out;
    }

private:
    struct Seen {
        unsigned long long ts = 0;
        std::size_t seq = 0;
        int pid = -1;
        std::string comm;
    };
    tep_handle* tep_;
    std::vector<int> types_;
    std::map<int, std::pair<tep_format_field*, tep_format_field*>> fields_;  // type id -> (pid, comm field)
    std::vector<Seen> seen_;
};

// fd_paths.json (docs/formats.md): the fd lifetimes (build_fd_lifetimes) from the fd syscalls, the poll brackets and
// the preload's enter markers (`fd`, gathered while the pages were decoded; `pages_missing`: a page file that could
// not be read or a page the decoder refused). Without fd events or timed polls (`fd` null), the polls' paths alone
// (format 1: an fd seen naming several files is named nowhere).
nlohmann::json fd_lifetimes(FdRecords* fd, const std::vector<std::string>& fd_events, const FdPollLog& polls,
                            bool pages_missing, bool loss) {
    if (!fd) {
        std::map<int, std::vector<int>> threads;
        for (const auto& [tid, pid] : polls.process_of)
            threads[pid].push_back(tid);
        nlohmann::json fds = nlohmann::json::array();
        for (const auto& run : polls.runs)
            for (int tid : threads[run.pid])
                fds.push_back({tid, run.fd, run.path});
        return fds;
    }
    FdLifetimeInput in;
    in.process_of = polls.process_of;
    in.changes_may_be_missing = loss || pages_missing || fd->changes_may_be_missing;
    in.samples = std::move(fd->preload);
    std::vector<FdRecords::Rec>& recs = fd->recs;
    // In time order; equal times in the order of the page files, then as read (a stable sort of the files' records
    // laid end to end).
    std::sort(recs.begin(), recs.end(), [](const FdRecords::Rec& a, const FdRecords::Rec& b) {
        return std::tie(a.ts, a.source, a.seq) < std::tie(b.ts, b.source, b.seq);
    });
    std::vector<std::uint64_t> poll_begin(polls.polls, 0), poll_end(polls.polls, 0);
    std::vector<std::uint8_t> poll_seen(polls.polls, 0);  // bit 0: begin, bit 1: end
    std::unordered_map<int, FdCall> entered;              // thread id -> its fd syscall in progress
    for (FdRecords::Rec& r : recs) {
        if (r.kind == 0) {
            auto id = r.fields.find("id");
            if (id == r.fields.end() || id->second / 2 >= polls.polls) continue;
            const std::size_t n = id->second / 2;
            (id->second % 2 ? poll_end : poll_begin)[n] = r.ts;
            poll_seen[n] |= static_cast<std::uint8_t>(id->second % 2 ? 2 : 1);
        } else if (r.kind == 1) {
            entered[r.pid] = FdCall{r.pid, r.name, r.ts, r.ts, std::move(r.fields), 0};
        } else {
            auto it = entered.find(r.pid);
            if (it == entered.end() || it->second.name != r.name) continue;
            FdCall c = std::move(it->second);
            entered.erase(it);
            if (auto ret = r.fields.find("ret"); ret != r.fields.end()) {
                c.exit_ns = r.ts;
                c.ret = static_cast<std::int64_t>(ret->second);
                in.calls.push_back(std::move(c));
            }
        }
    }
    // A call whose exit is not in the data (the run ended inside it, or events were lost) may have changed its fd.
    for (auto& [tid, c] : entered) {
        (void)tid;
        in.changes_may_be_missing = true;
    }
    nlohmann::json samples = nlohmann::json::array();
    for (const auto& run : polls.runs) {
        samples.push_back({run.pid, run.fd, run.path, run.first_poll, run.last_poll});
        for (std::uint32_t k = run.first_poll; k <= run.last_poll; ++k)
            if (poll_seen[k] == 3)
                in.samples.push_back({run.pid, run.fd, poll_begin[k], poll_end[k], run.path, "poll"});
    }
    nlohmann::json lifetimes = nlohmann::json::array();
    auto opt_ns = [](const std::optional<std::uint64_t>& v) {
        return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    for (const FdLifetime& l : build_fd_lifetimes(in))
        lifetimes.push_back({{"pid", l.pid},
                             {"fd", l.fd},
                             {"from_ns", opt_ns(l.from_ns)},
                             {"until_ns", opt_ns(l.until_ns)},
                             {"opened_by", l.opened_by},
                             {"path", l.path ? nlohmann::json(*l.path) : nlohmann::json(nullptr)},
                             {"path_from", l.path_from},
                             {"unknown", l.unknown}});
    nlohmann::json times = nlohmann::json::array();
    for (std::size_t k = 0; k < poll_begin.size(); ++k)
        times.push_back(poll_seen[k] == 3 ? nlohmann::json::array({poll_begin[k], poll_end[k]})
                                          : nlohmann::json(nullptr));
    return {{"format", 2},
            {"fd_events", fd_events},
            {"changes_may_be_missing", in.changes_may_be_missing},
            {"lifetimes", lifetimes},
            {"polls", times},
            {"samples", samples}};
}

}  // namespace

void take_held_signal(CaptureResult& cap) {
    if (!cap.signals_held) return;
    timespec zero{0, 0};
    if (int sig = ::sigtimedwait(&*cap.signals_held, nullptr, &zero); sig > 0 && !cap.interrupted_by)
        cap.interrupted_by = sig;
    while (::sigtimedwait(&*cap.signals_held, nullptr, &zero) > 0) {
    }
    ::pthread_sigmask(SIG_SETMASK, &cap.signal_mask_before, nullptr);
    cap.signals_held.reset();
}

Result<void> require_root() {
    if (::geteuid() != 0)
        return fail(Error::environment("needs root: tracefs is writable by root only (run it with sudo)"));
    return {};
}

Check scenario_program_check(std::optional<int> exit_code, std::optional<int> signal) {
    Check prog{"program-exit", "pass", "", "the scenario program's own tests (TAP on its stdout)"};
    if (exit_code && *exit_code == 0) {
        prog.evidence = "exit 0";
    } else {
        prog.result = "fail";
        prog.evidence = exit_code ? fmt::format("exit {}", *exit_code)
                        : signal  ? fmt::format("killed by signal {}", *signal)
                                  : "exit status unknown";
        prog.why += ": a test failed (see the \"not ok\" lines above)";
    }
    return prog;
}

bool wants_function_graph(const CaptureMeta& m) {
    return !m.modules.empty() || !m.filters.empty() || !m.graph_functions.empty();
}

namespace {

// The uprobes of the plan (docs/api.md): every --uprobe, then the CUDA tables (automatic: only when the program's
// DT_NEEDED closure holds libcudart or libcuda). Their events are decoded as OtherEvent ("<group>:*" kept) and
// their formats saved with the capture.
Result<void> plan_probes(const CaptureOptions& opts, const KernelOffer& offer, CapturePlan& p) {
    using Api = CaptureOptions::Api;
    std::vector<UprobeSpec> specs;
    for (const auto& text : opts.uprobes) {
        auto spec = parse_uprobe_spec(text);
        if (!spec) return fail(spec.error());
        specs.push_back(std::move(*spec));
    }
    const bool asked = !specs.empty() || opts.api == Api::cuda;
    if (!asked && opts.api == Api::none) return {};
    if (offer.has_uprobes) {  // a library mapped after the start gets its probes then (arm_late_uprobes)
        p.uprobe_group = offer.uprobe_group;
        p.late.cuda = opts.api != Api::none;
        p.late.specs = specs;
    }
    const std::string& name = p.meta.command[0];
    auto program = find_program(name, offer.path_env);
    if (!program) {
        if (!asked) return {};  // the spawn says that it is not found
        return fail(Error::usage(fmt::format("{}: not found (PATH): its libraries cannot be looked up for {}", name,
                                             specs.empty() ? "--api cuda" : "--uprobe")));
    }
    ProbePlan& plan = p.probes;
    for (const auto& spec : specs)
        if (auto r = plan_uprobe_spec(plan, spec, *program, offer.library_search, p.probe_notes); !r)
            return fail(r.error());
    if (opts.api != Api::none) {
        auto n = plan_cuda_program(plan, *program, offer.library_search, opts.api == Api::cuda, p.probe_notes);
        if (!n && opts.api == Api::cuda) return fail(Error{n.error().code, "--api cuda: " + n.error().message});
        if (n && *n == 0 && opts.api == Api::cuda)
            return fail(Error::environment(fmt::format(
                "--api cuda: {} loads no libcudart or libcuda nvtrace can find (DT_NEEDED, libcudart.so.13 and "
                "libcuda.so.1 where a dlopen finds them)",
                *program)));
        // Automatic: a program nvtrace cannot read as ELF (a script) or without CUDA is traced without the tables.
    }
    for (const auto& line : plan.skipped)
        p.probe_notes.push_back("left out: " + line);
    if (plan.functions.empty()) return {};
    if (!offer.has_uprobes) {
        if (asked)
            return fail(Error::environment(
                "this kernel has no uprobe events (tracefs uprobe_events is missing: CONFIG_UPROBE_EVENTS is off)"));
        p.probe_notes.push_back(
            "the program uses CUDA but this kernel has no uprobe events (CONFIG_UPROBE_EVENTS): API calls are not "
            "traced");
        plan.functions.clear();
        return {};
    }
    p.uprobe_group = offer.uprobe_group;
    for (const auto& f : plan.functions) {
        p.meta.uprobes.push_back({p.uprobe_group,
                                  f.entry.event,
                                  f.exit.event,
                                  f.library,
                                  f.function,
                                  f.entry.offset,
                                  std::string(api_name(f)),
                                  {},
                                  {},
                                  {}});
        p.formats.push_back(p.uprobe_group + ":" + f.entry.event);
        p.formats.push_back(p.uprobe_group + ":" + f.exit.event);
    }
    p.meta.kept_events.push_back(p.uprobe_group + ":*");
    return {};
}

}  // namespace

Result<CapturePlan> plan_capture(const CaptureOptions& opts, const KernelOffer& offer) {
    const CaptureMeta& m = opts.meta;
    if (m.command.empty()) return fail(Error::usage("no command given: nvtrace run [options] -- CMD [ARGS]"));
    CapturePlan p;
    p.meta = m;
    p.meta.capture_format = kCaptureDirFormat;
    p.meta.tracing_dir = offer.tracing_dir;
    p.meta.instance = offer.instance;
    p.fgraph = wants_function_graph(m);
    if (!p.fgraph && (!m.notrace.empty() || m.max_depth))
        return fail(
            Error::usage("--notrace and --max-depth need function_graph: add --module, --filter or --graph-function"));
    // Where function_graph can run: the instance (>= ~6.11) or the top level under a journal.
    p.top_level = p.fgraph && !offer.fgraph_in_instance;
    std::istringstream tracers(offer.top_tracers);
    if (p.top_level && std::find(std::istream_iterator<std::string>(tracers), {}, "function_graph") ==
                           std::istream_iterator<std::string>())
        return fail(Error::environment(fmt::format(
            "the function_graph tracer is not available in this kernel (available_tracers: {})", offer.top_tracers)));
    p.meta.tracer_mode = !p.fgraph     ? "events"
                         : p.top_level ? "function_graph (top level)"
                                       : "function_graph (instance)";

    // Dry run: how many functions each filter matches, before anything is changed.
    for (const auto& name : m.modules) {
        std::string mod = name;
        std::replace(mod.begin(), mod.end(), '-', '_');  // module names use '_' in :mod: (nvidia_uvm)
        const bool loaded = offer.module_loaded(mod);
        if (!loaded && !opts.future)
            return fail(Error::environment(fmt::format(
                "module {} is not loaded (load it first: modprobe {}, or arm the filter with --future)", name, name)));
        std::size_t n = loaded ? offer.count_matches(nullptr, mod.c_str()) : 0;
        if (n == 0 && loaded)
            return fail(Error::environment(
                fmt::format("module {} has no traceable function (available_filter_functions)", mod)));
        p.meta.filter_counts["module:" + mod] = n;
        p.filter.push_back({mod, true, !loaded});
    }
    for (const auto& f : m.filters)
        p.filter.push_back({f, false, false});
    struct Globs {
        const char* option;
        const std::vector<std::string>& globs;
        bool must_match;
    };
    for (const auto& [option, globs, must_match] :
         {Globs{"filter", m.filters, true}, Globs{"notrace", m.notrace, false},
          Globs{"graph-function", m.graph_functions, true}})
        for (const auto& g : globs) {
            std::size_t n = offer.count_matches(g.c_str(), nullptr);
            if (n == 0 && must_match)
                return fail(Error::usage(fmt::format("--{} '{}' matches no traceable function", option, g)));
            p.meta.filter_counts[fmt::format("{}:{}", option, g)] = n;
        }

    // Event formats: the ftrace system (function_graph, print, stacks), the two ioctl events, the fd syscalls this
    // kernel has both halves of, and the user's (load_event_formats).
    p.formats = {"ftrace:*", "syscalls:sys_enter_ioctl", "syscalls:sys_exit_ioctl"};
    for (auto word : std::views::split(kFdSyscalls, ' ')) {
        std::string name(word.begin(), word.end());
        if (!opts.fd_events || !offer.has_event("syscalls", "sys_enter_" + name) ||
            !offer.has_event("syscalls", "sys_exit_" + name))
            continue;
        p.formats.push_back("syscalls:sys_enter_" + name);
        p.formats.push_back("syscalls:sys_exit_" + name);
        p.fd_syscalls.push_back(std::move(name));
    }
    // The comm of every task the events name (comms.json, TaskComms): task_newtask gives a task's comm when it is
    // forked, task_rename each change (exec, prctl(PR_SET_NAME), a write to /proc/PID/comm);
    // include/trace/events/task.h.
    for (const char* name : {"task_newtask", "task_rename"})
        if (offer.has_event("task", name)) {
            p.formats.push_back(fmt::format("task:{}", name));
            p.task_events.emplace_back(name);
        }
    p.formats.insert(p.formats.end(), m.events.begin(), m.events.end());
    p.meta.kept_events = m.events;
    // printk:console is not enabled by default: on Debian's 6.1 kernel a printk from an idle CPU while the
    // event was on (and function_graph at the top level) hit a WARN in include/trace/events/printk.h and
    // panicked the qemu test guest. The kernel log comes from /dev/kmsg; `--event printk:console` opts in.
    p.meta.printk_console = std::find(m.events.begin(), m.events.end(), "printk:console") != m.events.end();
    if ((p.xid_event = offer.has_event("nvidia", "nvidia_dev_xid"))) {
        p.formats.emplace_back("nvidia:nvidia_dev_xid");
        p.meta.kept_events.emplace_back("nvidia:nvidia_dev_xid");
    }
    if (auto r = plan_probes(opts, offer, p); !r) return fail(r.error());
    return p;
}

namespace {

struct Fd {  // closed on every exit path
    int fd = -1;
    Fd() = default;
    Fd(const Fd&) = delete;
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

// The capture's kernel state and processes once applied. Each member undoes its part when destroyed, in reverse
// order: the recorder's files closed, the program killed and reaped if still there, no longer a subreaper, the tep
// freed, the journal restored, the instance removed, the signals restored.
struct Session {
    // From the start on, a SIGINT/SIGTERM/SIGHUP/SIGQUIT waits for the drain loop (or is dropped if setup fails), so
    // that no signal can stop nvtrace between creating the instance and restoring the state.
    SignalBlock signals;
    // The probes (uprobe_events is global): removed after the instance, whose removal disables them (an enabled
    // probe cannot be removed; a probe the instance no longer lists is removed in about 0.1 ms instead of 20 ms).
    std::optional<UprobeSet> uprobes;
    std::string uprobe_group;
    std::optional<LateUprobes> late;  // libraries mapped after the start (uprobe_late.hpp)
    std::optional<Instance> inst;
    TopLevelJournal journal;
    tracefs_instance* fgraph = nullptr;  // the instance that carries function_graph, nullptr = top level
    std::unique_ptr<tep_handle, void (*)(tep_handle*)> tep{nullptr, tep_free};
    Fd marker;  // the instance's trace_marker, until the program has its copy
    struct Subreaper {
        bool on = false;
        ~Subreaper() {
            if (on) stop_being_subreaper();
        }
    } subreaper;
    std::optional<GatedChild> child;
    KmsgReader kmsg;
    std::optional<PageDecoder> pages;
    RawRecorder raw;
    // Each fd poll between two trace_marker_raw records (ids 2N, 2N + 1) of nvtrace's own pid: its interval on the
    // trace clock (fd_lifetimes). Without the file, polls have no time and fds are named from the polls alone.
    Fd poll_marker;
    bool timed_polls = false;
    FdPollLog fd_polls;
    std::vector<CpuBufferStats> stats_before, stats_after;
    bool top_level = false;  // function_graph at the top level

    std::vector<CpuBufferStats> read_stats() const {  // the instance's counters, and the top level's when it traces
        auto stats = read_buffer_stats(inst->get(), "instance");
        if (top_level) {
            auto top = read_buffer_stats(nullptr, "top");
            stats.insert(stats.end(), top.begin(), top.end());
        }
        return stats;
    }
};

KernelOffer read_offer(const char* tracing_dir, const Instance& inst) {
    KernelOffer o;
    o.tracing_dir = tracing_dir;
    o.instance = inst.name();
    o.fgraph_in_instance =
        read_instance_file(inst.get(), "available_tracers").value_or("").find("function_graph") != std::string::npos;
    o.top_tracers = top_file("available_tracers");
    o.has_event = [dir = std::string(tracing_dir)](const std::string& system, const std::string& event) {
        return ::access(fmt::format("{}/events/{}/{}", dir, system, event).c_str(), F_OK) == 0;
    };
    o.module_loaded = module_loaded;
    o.count_matches = count_matches;
    o.has_uprobes = uprobes_supported().has_value();
    o.uprobe_group = uprobe_group(static_cast<int>(::getpid()));
    if (const char* ld = std::getenv("LD_LIBRARY_PATH")) o.library_search.ld_library_path = ld;
    if (const char* path = std::getenv("PATH")) o.path_env = path;
    // A cache nvtrace cannot read leaves the search to LD_LIBRARY_PATH and the default directories.
    o.library_search.cache = read_ld_cache().value_or(std::vector<LdCacheEntry>{});
    return o;
}

// Turns one event of `inst` on or off through its own file, events/SYSTEM/EVENT/enable; 0, or -1 when it cannot be
// written (no such event). tracefs_event_enable and tracefs_event_disable (libtracefs 1.6) take SYSTEM and EVENT as
// regular expressions and match them against every system and event directory of the instance, a stat() of each:
// about 900 per call on this machine's kernel, and 71,000 (0.4 CPU-s) for the fd syscalls of a run's start.
int set_event(tracefs_instance* inst, const std::string& system, const std::string& event, bool on) {
    const std::string file = fmt::format("events/{}/{}/enable", system, event);
    return tracefs_instance_file_write(inst, file.c_str(), on ? "1" : "0") < 0 ? -1 : 0;
}

// RESET on a list's first call, CONTINUE on all but its last: the last call commits the list.
unsigned list_flags(std::size_t i, std::size_t n) {
    return (i == 0 ? unsigned{TRACEFS_FL_RESET} : 0u) | (i + 1 < n ? unsigned{TRACEFS_FL_CONTINUE} : 0u);
}

// The plan made so: the instance's buffer size, clock and events; function_graph in the instance or at the top level
// under the journal; the program spawned at its gate and tracing scoped to its pid; kmsg and the page files opened.
Result<void> apply(const CapturePlan& p, const CaptureOptions& opts, Session& s, CaptureMeta& meta) {
    tracefs_instance* inst = s.inst->get();
    if (meta.buffer_size_kb &&
        tracefs_instance_set_buffer_size(inst, static_cast<std::size_t>(*meta.buffer_size_kb), -1) < 0) {
        int err = errno;
        std::string why = kernel_error(inst);
        return fail(Error::environment(fmt::format("cannot set buffer_size_kb to {}: {}", *meta.buffer_size_kb,
                                                   why.empty() ? std::strerror(err) : why)));
    }
    // One clock for both buffers: a new instance starts with `local`, while the top level may use another
    // (the kernel makes `global` the default where the TSC is unstable, e.g. under qemu TCG), and the
    // function_graph calls at the top level would not line up with the instance's markers and ioctls.
    std::string clocks = top_file("trace_clock");
    auto lb = clocks.find('['), rb = clocks.find(']');
    meta.clock = (lb != std::string::npos && rb > lb) ? clocks.substr(lb + 1, rb - lb - 1) : "local";
    if (tracefs_instance_file_write(inst, "trace_clock", meta.clock.c_str()) < 0) meta.clock = "local";
    meta.kmsg_clock = kmsg_clock_offset(meta.clock);  // before KmsgReader::start: no probe record in the report

    s.top_level = p.top_level;
    s.fgraph = p.fgraph && !p.top_level ? inst : nullptr;
    if (p.top_level) {
        auto owner = journal_owner();
        if (!owner) return fail(owner.error());
        if (*owner && !opts.force)
            return fail(Error::environment(
                (*owner)->alive
                    ? fmt::format("another nvtrace run (pid {}) holds the top-level tracing state", (*owner)->pid)
                    : fmt::format("a run (pid {}) was killed before it restored the top-level tracing state: run "
                                  "`nvtrace cleanup` first",
                                  (*owner)->pid)));
        std::string cur = top_file("current_tracer");
        if (cur != "nop" && !opts.force)
            return fail(Error::environment(fmt::format(
                "another tracer ('{}') is active at the top level; nvtrace will not take it over (--force does)",
                cur)));
        for (const char* f : {"tracing_on", "current_tracer", "set_ftrace_pid", "options/function-fork",
                              "set_ftrace_filter", "set_ftrace_notrace", "set_graph_function", "max_graph_depth"})
            if (auto r = s.journal.remember(f); !r) return fail(r.error());
    }

    // The uprobes, created before the formats are read (their events exist from then on) and journaled as they are.
    if (!p.probes.functions.empty()) {
        auto t0 = Clock::now();
        s.uprobes.emplace(p.uprobe_group);
        for (const auto& d : p.probes.defs())
            if (auto r = s.uprobes->add(d); !r) return fail(r.error());
        if (opts.progress)
            note("nvtrace: {} uprobes armed in {} ms (group {})\n", s.uprobes->probes().size(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(), p.uprobe_group);
    }
    if (opts.progress)
        for (const auto& n : p.probe_notes)
            note("nvtrace: uprobes: {}\n", n);
    s.uprobe_group = p.uprobe_group;
    if (p.late.cuda || !p.late.specs.empty()) s.late.emplace(p.late, p.probes);

    // Events in the private instance.
    s.tep.reset(load_event_formats(meta.tracing_dir.c_str(), p.formats, !meta.events.empty()));
    if (!s.tep) return fail(Error::environment("cannot read the event formats from tracefs"));
    if (set_event(inst, "syscalls", "sys_enter_ioctl", true) < 0 ||
        set_event(inst, "syscalls", "sys_exit_ioctl", true) < 0)
        return fail(
            Error::environment("cannot enable syscalls:sys_enter_ioctl/sys_exit_ioctl (no syscall tracepoints?)"));
    if (p.xid_event) set_event(inst, "nvidia", "nvidia_dev_xid", true);
    for (const std::string& name : p.task_events)
        set_event(inst, "task", name, true);  // without them comms come from saved_cmdlines alone
    if (s.uprobes)
        if (auto r = s.uprobes->enable(inst); !r) return fail(r.error());
    // The fd changes (fd_lifetime_events), where this kernel has both halves: an ioctl is named only from a sample
    // taken in the same lifetime of its fd (FdLifetime in nvtrace/event.hpp).
    for (const std::string& name : p.fd_syscalls)
        if (set_event(inst, "syscalls", "sys_enter_" + name, true) == 0 &&
            set_event(inst, "syscalls", "sys_exit_" + name, true) == 0)
            meta.fd_events.push_back(name);
        else
            set_event(inst, "syscalls", "sys_enter_" + name, false);
    for (const auto& e : meta.events) {
        auto colon = e.find(':');
        if (tracefs_event_enable(inst, e.substr(0, colon).c_str(), e.substr(colon + 1).c_str()) < 0)
            return fail(Error::usage(fmt::format("--event {}: no such event in this kernel", e)));
    }
    tracefs_option_enable(inst, TRACEFS_OPTION_EVENT_FORK);

    auto write_fgraph_file = [&](const char* file, const std::string& value) -> Result<void> {
        if (!s.fgraph) return s.journal.write(file, value);
        if (tracefs_instance_file_write(s.fgraph, file, value.c_str()) < 0)
            return fail(Error::environment(fmt::format("cannot write {}: {}", file, kernel_error(s.fgraph))));
        return {};
    };
    if (p.fgraph) {
        for (std::size_t i = 0; i < p.filter.size(); ++i) {
            const auto& f = p.filter[i];
            unsigned flags = list_flags(i, p.filter.size()) | (f.future ? unsigned{TRACEFS_FL_FUTURE} : 0u);
            if ((f.module ? tracefs_function_filter(s.fgraph, nullptr, f.text.c_str(), flags)
                          : tracefs_function_filter(s.fgraph, f.text.c_str(), nullptr, flags)) < 0)
                return fail(Error::environment(fmt::format("cannot set the function filter {}{}: {} {}",
                                                           f.module ? ":mod:" : "", f.text, std::strerror(errno),
                                                           kernel_error(s.fgraph))));
        }
        for (std::size_t i = 0; i < meta.notrace.size(); ++i)
            if (tracefs_function_notrace(s.fgraph, meta.notrace[i].c_str(), nullptr,
                                         list_flags(i, meta.notrace.size())) < 0)
                return fail(Error::environment(
                    fmt::format("cannot set --notrace {}: {}", meta.notrace[i], kernel_error(s.fgraph))));
        if (!meta.graph_functions.empty())
            if (auto r =
                    write_fgraph_file("set_graph_function", fmt::format("{}\n", fmt::join(meta.graph_functions, "\n")));
                !r)
                return fail(r.error());
        if (meta.max_depth)
            if (auto r = write_fgraph_file("max_graph_depth", std::to_string(*meta.max_depth)); !r)
                return fail(r.error());
        meta.filter_functions = count_filter_lines(s.fgraph);
        if (*meta.filter_functions == 0 && !opts.future)
            return fail(Error::environment("the filters matched no traceable function"));
    }

    // The program gets the instance's trace_marker as an inherited fd, so that it can write phase markers
    // even when it runs as the invoking user (trace_marker is root-only).
    std::string marker_path = s.inst->dir() + "/trace_marker";
    s.marker.fd = ::open(marker_path.c_str(), O_WRONLY);
    std::vector<std::pair<std::string, std::string>> env{{"NVTRACE_TRACE_MARKER", marker_path}};
    if (s.marker.fd >= 0) env.emplace_back("NVTRACE_TRACE_MARKER_FD", std::to_string(s.marker.fd));
    // User-space ioctl decoding (docs/preload.md): the library writes its markers to the same fd.
    if (opts.preload && s.marker.fd >= 0) {
        if (auto lib = find_preload_library()) {
            std::string ld = *lib;
            if (const char* old = std::getenv("LD_PRELOAD"); old && *old) ld += std::string(" ") + old;
            env.emplace_back("LD_PRELOAD", ld);
            meta.preload = *lib;
        } else if (opts.progress) {
            note("nvtrace: libnvtrace_preload.so not found: ioctls are not decoded in user space\n");
        }
    }
    std::optional<GatedChild::Identity> run_as = opts.as_root ? std::nullopt : GatedChild::sudo_invoker();
    meta.run_as_uid = run_as ? run_as->uid : 0u;
    // The program is a process tree: its orphans come back to nvtrace, which ends them before the instance
    // goes (runner.hpp, docs/run.md "Processes").
    if (auto r = become_subreaper(); !r) return fail(r.error());
    s.subreaper.on = true;
    auto child = GatedChild::spawn(meta.command, env, s.signals.old(), run_as);
    if (!child) return fail(child.error());
    s.child.emplace(std::move(*child));
    s.marker.reset();  // the child has its copy; the instance cannot be removed while we hold one
    meta.pid = s.child->pid();
    if (meta.tty)
        if (auto r = s.child->take_terminal(STDIN_FILENO); !r) return fail(r.error());
    const std::string pid_s = std::to_string(s.child->pid());
    if (tracefs_instance_file_write(inst, "set_event_pid", pid_s.c_str()) < 0)
        return fail(Error::environment("cannot write set_event_pid: " + kernel_error(inst)));
    if (p.fgraph) {
        if (auto r = write_fgraph_file("set_ftrace_pid", pid_s); !r) return fail(r.error());
        if (s.fgraph) {
            tracefs_option_enable(s.fgraph, TRACEFS_OPTION_FUNCTION_FORK);
            if (tracefs_tracer_set(s.fgraph, TRACEFS_TRACER_FUNCTION_GRAPH) < 0)
                return fail(Error::environment("cannot set function_graph in the instance: " + kernel_error(s.fgraph)));
        } else {
            for (const auto& [file, value] :
                 {std::pair{"options/function-fork", "1"}, std::pair{"current_tracer", "function_graph"},
                  std::pair{"tracing_on", "1"}})
                if (auto r = s.journal.write(file, value); !r) return fail(r.error());
        }
        if (opts.progress) {
            std::vector<std::string> counts;
            for (const auto& [filter, n] : meta.filter_counts)
                counts.push_back(fmt::format("{} = {}", filter, n));
            note("nvtrace: function_graph, {} functions filtered ({}), {}\n", *meta.filter_functions,
                 fmt::join(counts, ", "), meta.tracer_mode);
        }
    }

    s.stats_before = s.read_stats();
    if (auto r = s.kmsg.start(); !r) return fail(r.error());
    // The sub-buffer layout (long size, endianness, page size) for kbuffer, from the top-level header_page
    // as libtracefs itself does in tracefs_cpu_open.
    auto hp = read_instance_file(nullptr, "events/header_page");
    if (!hp || tep_parse_header_page(s.tep.get(), hp->data(), static_cast<unsigned long>(hp->size()),
                                     static_cast<int>(sizeof(long))) < 0)
        return fail(Error::environment("cannot read or parse events/header_page"));
    s.pages.emplace(s.tep.get(), meta.kept_events);
    const auto page_size = static_cast<std::size_t>(std::max(0, tep_get_sub_buffer_size(s.tep.get())));
    if (auto r = s.raw.open(inst, "instance", opts.out_dir, page_size); !r) return fail(r.error());
    if (p.top_level)
        if (auto r = s.raw.open(nullptr, "top", opts.out_dir, page_size); !r) return fail(r.error());
    if (!meta.fd_events.empty())
        s.poll_marker.fd = tracefs_instance_file_open(inst, "trace_marker_raw", O_WRONLY | O_CLOEXEC);
    s.timed_polls = s.poll_marker.fd >= 0;
    return {};
}

// The libraries the program's tree mapped since the last tick that get probes (uprobe_late.hpp): created in the
// run's group (journaled, removed like the others), their formats parsed for the decoding, enabled in the instance,
// marked on the trace clock ("nvtrace-uprobes-armed-late file=PATH", read back by write_capture) and recorded in
// meta.uprobes with when they were armed. Calls the program made before are not seen: the report says so.
void arm_late_uprobes(const CaptureOptions& opts, Session& s, CaptureMeta& meta, const std::vector<int>& pids,
                      Clock::time_point released) {
    if (!s.late || !s.late->active()) return;
    for (const LateLibrary& lib : s.late->scan(pids)) {
        if (opts.progress)
            for (const auto& n : lib.notes)
                note("nvtrace: uprobes: {}\n", n);
        if (lib.functions.empty()) continue;
        const auto t0 = Clock::now();
        if (!s.uprobes) s.uprobes.emplace(s.uprobe_group);
        const std::size_t first = s.uprobes->probes().size();
        std::vector<const PlannedFunction*> added;
        for (const PlannedFunction& f : lib.functions) {
            auto r = s.uprobes->add(f.entry);
            if (r) r = s.uprobes->add(f.exit);
            if (!r) {  // what was added stays armed and is removed with the rest
                note("nvtrace: uprobes on {} left out from {} on: {}\n", lib.path, f.function, r.error().message);
                break;
            }
            added.push_back(&f);
        }
        for (const PlannedFunction* f : added)
            for (const UprobeDef* d : {&f->entry, &f->exit})
                if (auto text =
                        read_file(fmt::format("{}/events/{}/{}/format", meta.tracing_dir, s.uprobe_group, d->event)))
                    tep_parse_event(s.tep.get(), text->data(), text->size(), s.uprobe_group.c_str());
        if (auto r = s.uprobes->enable(s.inst->get(), first); !r)
            note("nvtrace: uprobes on {}: {}\n", lib.path, r.error().message);
        tracefs_printf(s.inst->get(), "nvtrace-uprobes-armed-late file=%s\n", lib.path.c_str());
        const auto armed_after = static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - released).count());
        for (const PlannedFunction* f : added) {
            CaptureUprobe u{s.uprobe_group,
                            f->entry.event,
                            f->exit.event,
                            f->library,
                            f->function,
                            f->entry.offset,
                            std::string(api_name(*f)),
                            lib.pid,
                            armed_after,
                            {}};
            meta.uprobes.push_back(std::move(u));
        }
        // Their records are kept as OtherEvents like the start's probes (a PageDecoder reads the list when made).
        const std::string kept = s.uprobe_group + ":*";
        if (std::find(meta.kept_events.begin(), meta.kept_events.end(), kept) == meta.kept_events.end()) {
            meta.kept_events.push_back(kept);
            s.pages.emplace(s.tep.get(), meta.kept_events);
        }
        if (opts.progress)
            note(
                "nvtrace: {} uprobes armed late in {} ms on {} (mapped by pid {}): calls it made before are not "
                "traced\n",
                2 * added.size(), std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count(),
                lib.path, lib.pid);
    }
}

// The program released and run to its end (and what it left running ended), the pages drained, its open files
// polled and kmsg read meanwhile; then tracing stops, the rest of the pages is read and the top level restored.
Result<void> run_and_drain(const CaptureOptions& opts, Session& s, CaptureResult& res) {
    CaptureMeta& meta = res.meta;
    GatedChild& child = *s.child;
    tracefs_instance* inst = s.inst->get();
    const bool drain = meta.raw.drained_while_running;
    ProcessTree tree(child.pid());  // whose open files are followed: the program's tree, not nvtrace itself
    std::vector<int> members;       // the tree at the last poll (whose mappings arm_late_uprobes reads)
    auto poll_fds = [&] {
        auto mark = [&](std::uint32_t id) {
            if (s.poll_marker.fd < 0) return;
            struct {
                std::uint32_t id;
                char tag[8];
            } rec{id, {'n', 'v', 'f', 'd', 'p', 'o', 'l', 'l'}};
            ssize_t w = ::write(s.poll_marker.fd, &rec, sizeof rec);
            (void)w;
        };
        const std::uint32_t n = s.fd_polls.polls;
        mark(2 * n);
        members = tree.refresh();
        poll_fd_paths(members, s.fd_polls);
        mark(2 * n + 1);
    };

    if (drain) s.raw.start();
    tracefs_trace_on(inst);
    tracefs_printf(inst, "nvtrace-start pid=%d\n", child.pid());
    auto t0 = Clock::now();
    if (auto r = child.release(); !r)
        return fail(Error::usage(fmt::format("{}: {}", meta.command[0], r.error().message)));

    std::optional<ExitStatus> status;
    std::optional<Clock::time_point> kill_deadline;
    while (!status) {
        timespec tick{0, 10'000'000};  // 10 ms: fd paths, kmsg, the program's exit
        int sig = ::sigtimedwait(&s.signals.set(), nullptr, &tick);
        if (sig > 0 && !res.interrupted_by) {
            res.interrupted_by = sig;
            child.kill_group(sig);
            kill_deadline = Clock::now() + std::chrono::seconds(2);
        }
        if (opts.timeout_s && !kill_deadline && Clock::now() - t0 > std::chrono::duration<double>(*opts.timeout_s)) {
            meta.timed_out = true;
            child.kill_group(SIGTERM);
            kill_deadline = Clock::now() + std::chrono::seconds(2);
        }
        if (kill_deadline && Clock::now() > *kill_deadline) child.kill_group(SIGKILL);
        if (drain) s.raw.drain();
        poll_fds();
        arm_late_uprobes(opts, s, meta, members, t0);
        s.kmsg.poll();
        status = child.poll_exit();
        if (auto stop = child.take_stop()) {
            if ((*stop == SIGTTIN || *stop == SIGTTOU) && !meta.stopped_on_terminal) {
                // Not the terminal's foreground group (it leads its own: runner.hpp), it would wait forever. Said
                // even with -q: nothing else would explain a run that ends this way.
                if (*stop == SIGTTIN)
                    note(
                        "nvtrace: program stopped: it reads the terminal; run it with input redirected (< /dev/null) "
                        "or with --tty\n");
                else
                    note(
                        "nvtrace: program stopped: it writes to the terminal or changes its settings (SIGTTOU); run "
                        "it with output redirected or with --tty\n");
                meta.stopped_on_terminal = *stop == SIGTTIN ? "SIGTTIN" : "SIGTTOU";
                child.kill_group(SIGTERM);
                child.kill_group(SIGCONT);  // a stopped process acts on SIGTERM once continued
                if (!kill_deadline) kill_deadline = Clock::now() + std::chrono::seconds(2);
            } else if (*stop != SIGTTIN && *stop != SIGTTOU) {
                note("nvtrace: program stopped by {} (pid {}); nvtrace waits for it: kill -CONT {} continues it\n",
                     sigabbrev_np(*stop) ? fmt::format("SIG{}", sigabbrev_np(*stop)) : std::to_string(*stop),
                     child.pid(), child.pid());
            }
        }
    }
    child.give_back_terminal();
    s.poll_marker.reset();  // an open file of the instance keeps it from being removed
    // A signal that arrived while the last iteration ran (the program ended meanwhile) still counts.
    if (!res.interrupted_by) {
        timespec zero{0, 0};
        if (int sig = ::sigtimedwait(&s.signals.set(), nullptr, &zero); sig > 0) res.interrupted_by = sig;
    }
    // What is left of the program's tree (background jobs, daemons it started) ends with it: SIGTERM, SIGKILL
    // after 2 s. They hold the instance's trace_marker (inherited), which would keep it from being removed.
    auto ended = end_descendants(child.pgid(), std::chrono::seconds(2), [&] {
        if (drain) s.raw.drain();
    });
    using Ended = std::tuple<std::vector<EndedProcess>*, const std::vector<ProcessInfo>*, const char*>;
    for (const auto& [to, ps, how] : {Ended{&meta.descendants_ended, &ended.terminated, "SIGTERM"},
                                      Ended{&meta.descendants_ended, &ended.killed, "SIGKILL"},
                                      Ended{&meta.descendants_left, &ended.survivors, "none"}})
        for (const auto& proc : *ps)
            to->push_back({proc.pid, proc.comm, how});
    if (opts.progress && !meta.descendants_ended.empty()) {
        std::vector<std::string> names;
        for (const auto& proc : meta.descendants_ended)
            names.push_back(fmt::format("{} ({}, {})", proc.pid, proc.comm, proc.signal));
        note("nvtrace: ended what the program left running: {}\n", fmt::join(names, ", "));
    }
    auto t1 = Clock::now();
    tracefs_printf(inst, "nvtrace-end pid=%d\n", child.pid());
    meta.duration_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    meta.exit_code = status->exit_code;
    meta.signal = status->signal;
    // Said now, not after the report is built: decoding a large capture takes a while.
    if (opts.progress)
        note("nvtrace: program ended ({}{}); writing {}/report.json\n",
             status->exit_code ? fmt::format("exit {}", *status->exit_code)
             : status->signal  ? fmt::format("signal {}", *status->signal)
                               : "status unknown",
             meta.timed_out ? ", timed out" : "", opts.out_dir);

    // Counters first, then the final drain (ci-environment.md section 2).
    s.stats_after = s.read_stats();
    tracefs_trace_off(inst);
    if (s.top_level) (void)s.journal.write("tracing_on", "0");  // journaled: restored just below
    s.raw.flush();
    s.raw.close();
    s.kmsg.poll();
    res.restore_failures = s.journal.restore();
    return {};
}

// The capture directory besides the pages (docs/formats.md "Capture directory"), from a decoding of the saved pages:
// kallsyms (the subset the recorded addresses resolve to), events/ (the formats), comms.json (of the pids in the
// events), fd_paths.json, buffer_stats.json, kmsg; then the instance removed, trace.dat, and meta.json last.
Result<void> write_capture(const CaptureOptions& opts, Session& s, CaptureMeta& meta) {
    tep_handle* tep = s.tep.get();
    const fs::path out_dir(opts.out_dir);
    const bool fd_loss = !s.raw.write_error.empty() ||
                         std::any_of(s.stats_after.begin(), s.stats_after.end(), [&](const CpuBufferStats& a) {
                             for (const auto& b : s.stats_before)
                                 if (b.cpu == a.cpu && b.buffer == a.buffer)
                                     return a.overrun > b.overrun || a.dropped_events > b.dropped_events;
                             return a.overrun > 0 || a.dropped_events > 0;
                         });
    // Comms of the pids in the events (docs/formats.md comms.json): the last one task_newtask / task_rename recorded
    // (TaskComms), else saved_cmdlines, else the program's name for its own pid, else "" (not known; never ftrace's
    // "<...>" placeholder for a pid saved_cmdlines lacks).
    tracefs_load_cmdlines(meta.tracing_dir.c_str(), tep);
    const std::string child_comm = meta.command[0].substr(meta.command[0].find_last_of('/') + 1).substr(0, 15);
    std::map<int, std::string> comm_of;
    std::optional<SymbolTable> syms;
    if (wants_function_graph(meta)) {
        auto ks = read_file("/proc/kallsyms");
        if (!ks) return fail(ks.error());
        syms = SymbolTable::from_kallsyms(*ks);
    }
    std::map<std::uint64_t, const Symbol*> used;  // the symbol each recorded address resolved to
    std::uint64_t unresolved = 0;                 // function events whose address no symbol covers
    // The fd syscalls' records come with this one decoding of the pages (fd_lifetimes): without fd events or timed
    // polls, fd_paths.json holds the polls alone.
    std::optional<FdRecords> fd_records;
    std::vector<int> observed;
    if (!meta.fd_events.empty() && s.timed_polls) {
        fd_records.emplace(tep, meta.fd_events);
        observed = fd_records->types();
    }
    TaskComms task_comms(tep);
    observed.insert(observed.end(), task_comms.types().begin(), task_comms.types().end());
    if (!observed.empty())
        s.pages->observe(observed, [&](std::size_t source, const tep_record& rec) {
            if (fd_records) fd_records->add(source, rec);
            task_comms.add(rec);
        });
    // This pass reads markers, lost-event marks and function addresses from the events, and of every other record
    // its pid (PageDecoder::pids): the report decodes the ioctls from the same pages.
    s.pages->set_appends(PageDecoder::Appends::kMarkersAndFunctions);
    s.raw.decode_merged(*s.pages, [&](Event& ev) {
        if (fd_records) fd_records->event(ev);
        if (ev.pid > 0) comm_of.try_emplace(ev.pid);
        if (const auto* m = std::get_if<Marker>(&ev.body); m && !s.uprobe_group.empty()) {
            constexpr std::string_view kArmed = "nvtrace-uprobes-armed-late file=";
            std::string_view t = m->text;
            if (t.substr(0, kArmed.size()) == kArmed) {
                t.remove_prefix(kArmed.size());
                while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
                    t.remove_suffix(1);
                for (CaptureUprobe& u : meta.uprobes)
                    if (u.late_pid && !u.armed_ns && u.library == t) u.armed_ns = ev.ts_ns;
            }
        }
        const auto* e = std::get_if<FuncEntry>(&ev.body);
        const auto* x = std::get_if<FuncExit>(&ev.body);
        if (!syms || (!e && !x)) return true;
        if (const Symbol* sym = syms->has_addresses() ? syms->lookup(e ? e->func_addr : x->func_addr) : nullptr)
            used.emplace(sym->addr, sym);
        else
            ++unresolved;
        return true;
    });
    s.pages->observe({}, {});
    for (int pid : s.pages->pids())
        if (pid > 0) comm_of.try_emplace(pid);
    {
        std::map<int, std::string> named = task_comms.last();
        for (auto& [pid, comm] : comm_of) {
            if (auto it = named.find(pid); it != named.end()) {
                comm = it->second;
            } else if (const char* c = tep_data_comm_from_pid(tep, pid); c && std::strcmp(c, "<...>") != 0) {
                comm = c;
            } else if (pid == *meta.pid) {
                comm = child_comm;
            }
        }
    }
    bool pages_missing = false;  // a page file that could not be read, or a page refused: an fd change may be missing
    for (const auto& src : s.raw.sources())
        pages_missing = pages_missing || src.damaged > 0 || ::access(src.path.c_str(), R_OK) != 0;
    nlohmann::json fd_paths =
        fd_lifetimes(fd_records ? &*fd_records : nullptr, meta.fd_events, s.fd_polls, pages_missing, fd_loss);
    meta.undecodable_records = s.pages->undecodable();
    CaptureRaw& r = meta.raw;
    r.long_size = sizeof(long);
    r.endianness = tep_is_file_bigendian(tep) ? "big" : "little";
    r.page_size = tep_get_sub_buffer_size(tep);
    for (const auto& src : s.raw.sources()) {
        if (r.buffers.empty() || r.buffers.back().name != src.buffer)
            r.buffers.push_back({src.buffer, src.page_size, {}, 0, 0});
        r.buffers.back().cpus.push_back(src.cpu);
        *r.buffers.back().pages += src.pages;
        *r.buffers.back().records += src.records;
    }
    if (!s.raw.write_error.empty()) r.write_error = s.raw.write_error;
    if (!s.raw.decode_error.empty()) r.decode_error = s.raw.decode_error;
    if (!s.raw.write_error.empty() && opts.progress)
        note("nvtrace: the raw data could not be written ({}): `nvtrace report DIR` cannot redo this capture\n",
             s.raw.write_error);
    meta.buffer_stats = buffer_stats_delta(s.stats_before, s.stats_after);
    std::string kmsg_text;
    for (const auto& k : s.kmsg.records()) {
        meta.kmsg_records.push_back(k.text);
        kmsg_text += k.text + "\n";
    }
    meta.kmsg_overwritten = s.kmsg.overwritten();
    if (syms) {
        meta.unresolved_functions = unresolved;
        // A lookup in the subset finds the same symbol: it is the nearest one at or below the address in both.
        std::string text;
        for (const auto& [addr, sym] : used)
            text += sym->module ? fmt::format("{:016x} t {}\t[{}]\n", addr, sym->name, *sym->module)
                                : fmt::format("{:016x} t {}\n", addr, sym->name);
        if (auto w = write_file(out_dir / "kallsyms", text); !w) return w;
    }
    std::vector<std::pair<std::string, std::string>> always{
        {"syscalls", "sys_enter_ioctl"}, {"syscalls", "sys_exit_ioctl"}, {"ftrace", "print"}};
    for (const auto& u : meta.uprobes) {  // every probe's, fired or not: the report names each armed function
        always.emplace_back(u.group, u.event);
        always.emplace_back(u.group, u.return_event);
    }
    if (auto w = save_formats(s.inst->get(), tep, s.pages->types_seen(), always, out_dir, meta.event_formats); !w)
        return w;
    nlohmann::json comms = nlohmann::json::object();
    for (const auto& [pid, comm] : comm_of)
        comms[std::to_string(pid)] = comm;
    nlohmann::json stats{{"before", stats_json(s.stats_before)}, {"after", stats_json(s.stats_after)}};
    using File = std::pair<const char*, std::string>;
    for (const auto& [file, text] : {File{"comms.json", dump_json(comms)}, File{"fd_paths.json", dump_json(fd_paths)},
                                     File{"buffer_stats.json", dump_json(stats)}, File{"kmsg", kmsg_text}})
        if (auto w = write_file(out_dir / file, text); !w) return w;
    // Removed here rather than by the destructor, so that a failure reaches the caller (and the exit code). Its
    // removal disables the uprobes (the kernel waits for its uprobe users once per probe: docs/api.md "Cost").
    if (opts.progress && s.uprobes && s.uprobes->probes().size() >= 20)
        note("nvtrace: disabling {} uprobes\n", s.uprobes->probes().size());
    if (auto removed = s.inst->remove(); !removed) meta.instance_left = removed.error().message;
    if (opts.trace_dat) {
        if (auto td = write_trace_dat(opts.out_dir, meta); !td)
            note("nvtrace run: no trace.dat: {}\n", td.error().message);
        else
            meta.trace_dat = *td;
    }
    // The report's source and environment (docs/report.md): the caller's keys and the capture's. The NVIDIA modules
    // are always described: the checker decides version alternatives from them.
    ReportSource& source = meta.report_source;
    source.kind = "live", source.command = meta.command, source.pid = meta.pid, source.tracer_mode = meta.tracer_mode;
    source.modules = meta.modules, source.filters = meta.filters;
    std::vector<std::string> env_modules = meta.modules;
    for (const char* m : {"nvidia", "nvidia_uvm"})
        if (std::find(env_modules.begin(), env_modules.end(), m) == env_modules.end() &&
            module_state(m) != ModuleState::absent)
            env_modules.emplace_back(m);
    add_environment_info(meta.environment, env_modules);
    // The expectations checked, so that the directory holds what `nvtrace report DIR` checks again.
    if (meta.expectations_copy) {
        std::error_code ec;
        fs::create_directories((out_dir / *meta.expectations_copy).parent_path(), ec);
        if (auto w = write_file(out_dir / *meta.expectations_copy, opts.expectations_text); !w) return w;
    }
    // meta.json last: with it the directory can be re-analysed (`nvtrace report DIR`).
    return write_file(out_dir / "meta.json", dump_capture_meta(meta));
}

}  // namespace

Result<CaptureResult> capture(const CaptureOptions& opts) {
    if (auto root = require_root(); !root) return fail(root.error());
    const char* tracing_dir = nullptr;
    if (tracefs_tracing_dir_is_mounted(false, &tracing_dir) != 1)
        return fail(Error::environment("tracefs is not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)"));
    if (opts.out_dir.empty()) return fail(Error::internal("capture: no capture directory"));
    Session s;
    auto inst = Instance::create();
    if (!inst) return fail(inst.error());
    s.inst.emplace(std::move(*inst));
    auto plan = plan_capture(opts, read_offer(tracing_dir, *s.inst));
    if (!plan) return fail(plan.error());
    CaptureResult res;
    res.meta = std::move(plan->meta);
    res.meta.started_utc = utc_now();
    if (auto r = apply(*plan, opts, s, res.meta); !r) return fail(r.error());
    if (auto r = run_and_drain(opts, s, res); !r) return fail(r.error());
    // The signal that stopped nvtrace while the program ran (passed on to the program's process group); one held
    // while the report is written comes after meta.json and changes nothing in the capture (exit 128 + N says it).
    res.meta.interrupted_by = res.interrupted_by;
    if (auto r = write_capture(opts, s, res.meta); !r) return fail(r.error());
    if (opts.hold_signals) {
        // A signal during the decoding and the report is not lost: the caller saves the capture, then exits with it.
        timespec zero{0, 0};
        if (int sig = ::sigtimedwait(&s.signals.set(), nullptr, &zero); sig > 0 && !res.interrupted_by)
            res.interrupted_by = sig;
        res.signals_held = s.signals.set();
        res.signal_mask_before = s.signals.old();
        s.signals.hold();
    }
    return res;
}

}  // namespace nvtrace::tracer
