// open_input (include/nvtrace/input.hpp): what an input is and its bytes, for every command that reads one.
#include "nvtrace/input.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "temp_copy.hpp"

namespace nvtrace {

namespace fs = std::filesystem;

namespace {

// ---- a mapped file that shrinks while it is read ----
// A regular file is mapped (MAP_PRIVATE), not read. When another program truncates or rewrites it while it is read,
// a page past its new end is gone and touching it raises SIGBUS (mmap(2), "Errors"): the process would die with
// "Bus error" and no word of why. Each mapping is registered here, and a SIGBUS handler (installed once, and only
// where the program has none of its own) that finds the faulting address inside one prints what happened, with
// the byte offset, and exits 2 (an input error, docs/README.md "Exit codes"); a SIGBUS elsewhere gets the default
// action, as without the handler. The handler uses only write(2) and _exit(2) (async-signal-safe, signal-safety(7)).
// At most kMappedSlots mappings are registered at once; one past them keeps the default action.
struct MappedSlot {
    std::atomic<std::uintptr_t> begin{0};  // 0: free
    std::uintptr_t end = 0;
    char message[512] = {};  // "nvtrace: NAME: cannot be read past byte ", then the offset and kFaultTail
    std::size_t length = 0;
};
constexpr std::size_t kMappedSlots = 32;
MappedSlot g_mapped[kMappedSlots];

void write_all(const char* p, std::size_t n) {
    while (n > 0) {
        ssize_t w = ::write(STDERR_FILENO, p, n);
        if (w <= 0) return;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

constexpr std::string_view kFaultTail =
    ": the file shrank while it was read (truncated or rewritten by another program), or its disk failed to give "
    "that page; read a copy that no program writes\n";

void on_sigbus(int sig, siginfo_t* info, void*) {
    auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
    if (info->si_code > 0) {  // raised by the kernel for a memory access, not sent by kill(2)
        for (auto& s : g_mapped) {
            std::uintptr_t b = s.begin.load(std::memory_order_acquire);
            if (b == 0 || addr < b || addr >= s.end) continue;
            write_all(s.message, s.length);
            char num[24];
            char* e = num + sizeof num;
            char* q = e;
            std::uintptr_t off = addr - b;
            do {
                *--q = static_cast<char>('0' + off % 10);
                off /= 10;
            } while (off != 0);
            write_all(q, static_cast<std::size_t>(e - q));
            write_all(kFaultTail.data(), kFaultTail.size());
            ::_exit(2);
        }
    }
    // Not an access to a registered input: the default action, as if there were no handler (a fault repeats
    // when the handler returns; a sent signal is raised again).
    ::signal(sig, SIG_DFL);
    if (info->si_code <= 0) ::raise(sig);
}

void install_sigbus_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction old {};
        if (::sigaction(SIGBUS, nullptr, &old) != 0) return;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) return;  // the program's own
        struct sigaction sa {};
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        ::sigemptyset(&sa.sa_mask);
        ::sigaction(SIGBUS, &sa, nullptr);
    });
}

void register_mapping(const char* data, std::size_t size, const std::string& name) {
    install_sigbus_handler();
    static std::mutex mu;
    std::lock_guard lock(mu);
    for (auto& s : g_mapped) {
        if (s.begin.load(std::memory_order_relaxed) != 0) continue;
        auto text = fmt::format("nvtrace: {}: cannot be read past byte ", name);
        if (text.size() >= sizeof s.message) text = "nvtrace: an input file cannot be read past byte ";
        std::memcpy(s.message, text.data(), text.size());
        s.length = text.size();
        s.end = reinterpret_cast<std::uintptr_t>(data) + size;
        s.begin.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_release);
        return;
    }
}

void unregister_mapping(const char* data) {
    for (auto& s : g_mapped) {
        std::uintptr_t b = reinterpret_cast<std::uintptr_t>(data);
        if (s.begin.load(std::memory_order_acquire) == b) s.begin.store(0, std::memory_order_release);
    }
}

// The trace formats look at this much of the head (detect_format).
constexpr std::size_t kDetectBytes = 256 * 1024;

// The descriptor a name stands for: "-" is 0; /dev/stdin, /dev/fd/N and /proc/self/fd/N name descriptors of this
// process, which open(2) cannot reopen when they are sockets (ENXIO).
std::optional<int> fd_alias(const std::string& path) {
    if (path == "-" || path == "/dev/stdin") return STDIN_FILENO;
    for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
        if (path.compare(0, prefix.size(), prefix) != 0) continue;
        int n = -1;
        const char* b = path.data() + prefix.size();
        const char* e = path.data() + path.size();
        auto [p, ec] = std::from_chars(b, e, n);
        if (ec == std::errc() && p == e && b != e && n >= 0) return n;
    }
    return std::nullopt;
}

// A named AF_UNIX stream socket, connected to: what the peer sends until it closes is the input.
int connect_socket(const std::string& path) {
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        int err = errno;
        ::close(fd);
        errno = err;
        return -1;
    }
    ::shutdown(fd, SHUT_WR);  // nothing is sent: the peer may wait for the end of the request
    return fd;
}

Result<std::string> read_whole(int fd, const std::string& name) {
    std::string all;
    std::array<char, 1 << 16> buf{};
    for (;;) {
        ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(Error::usage(fmt::format("{}: cannot read: {}", name, std::strerror(errno))));
        if (n == 0) break;
        all.append(buf.data(), static_cast<std::size_t>(n));
    }
    return all;
}

bool starts_with_brace(std::string_view bytes) {
    // A UTF-8 byte order mark (EF BB BF), which Windows editors write: RFC 8259 section 8.1 lets a parser ignore
    // it, and nlohmann's lexer does.
    if (bytes.substr(0, 3) == "\xef\xbb\xbf") bytes.remove_prefix(3);
    std::size_t first = bytes.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && bytes[first] == '{';
}

// A directory: a capture directory, or why it is not one (input.hpp lists the messages).
Result<InputKind> capture_dir_kind(const std::string& dir, bool& has_report_json) {
    std::error_code ec;
    const fs::path meta = fs::path(dir) / "meta.json";
    has_report_json = fs::is_regular_file(fs::path(dir) / "report.json", ec);
    bool has_meta = fs::exists(meta, ec);
    if (ec) return fail(Error::usage(fmt::format("{}: cannot open: {}", meta.string(), ec.message())));
    if (!has_meta) {
        if (fs::exists(fs::path(dir) / "raw", ec))
            return fail(
                Error::usage(fmt::format("{}: no meta.json: an unfinished capture (nvtrace was killed before "
                                         "writing it?); its raw pages cannot be decoded without it",
                                         dir)));
        // A report.json alone is a saved report that was copied into a folder: what check, diff and export read.
        if (has_report_json) return InputKind::capture_dir_saved;
        return fail(
            Error::usage(fmt::format("{}: not a capture directory (no meta.json; `nvtrace run` writes one)", dir)));
    }
    std::ifstream in(meta, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", meta.string(), std::strerror(errno))));
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return fail(Error::usage(fmt::format("{}: not valid JSON (damaged or unfinished capture)", meta.string())));
    // capture_dir.hpp kCaptureFormat: "capture_format" marks the raw layout.
    return j.contains("capture_format") ? InputKind::capture_dir : InputKind::capture_dir_saved;
}

}  // namespace

std::string_view input_kind_name(InputKind k) {
    switch (k) {
        case InputKind::capture_dir:
            return "capture directory";
        case InputKind::capture_dir_saved:
            return "capture directory without raw data";
        case InputKind::saved_report:
            return "saved report";
        case InputKind::trace_dat:
            return "trace-dat";
        case InputKind::text:
            return "text";
    }
    return "?";
}

Input::Input(Input&& o) noexcept {
    *this = std::move(o);
}

Input& Input::operator=(Input&& o) noexcept {
    if (this == &o) return *this;
    release();
    path = std::move(o.path);
    name = std::move(o.name);
    kind = o.kind;
    format = o.format;
    read_once = o.read_once;
    forced = o.forced;
    has_report_json = o.has_report_json;
    mapped_ = o.mapped_;
    reopenable_ = o.reopenable_;
    size_ = o.size_;
    memory_ = std::move(o.memory_);
    // A short std::string keeps its bytes inside the object: point into this one's copy.
    data_ = mapped_ ? o.data_ : (o.data_ ? memory_.data() : nullptr);
    o.data_ = nullptr;
    o.size_ = 0;
    o.mapped_ = false;
    return *this;
}

Input::~Input() {
    release();
}

void Input::release() {
    if (mapped_ && data_) {
        unregister_mapping(data_);
        ::munmap(const_cast<char*>(data_), size_);
    }
    data_ = nullptr;
    size_ = 0;
    mapped_ = false;
}

bool is_read_once(const std::string& path) {
    struct stat st {};
    if (path == "-") return true;
    return ::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode));
}

Result<Input> open_input(const std::string& path, const OpenOptions& o) {
    const std::optional<TraceFormat>& forced = o.forced;
    const std::string& spool_dir = o.spool_dir;
    Input in;
    in.path = path;
    in.name = path == "-" ? std::string("<stdin>") : path;
    in.forced = forced.has_value();
    std::optional<int> alias = fd_alias(path);

    struct stat st {};
    if (!alias || path != "-") {
        if (::stat(path.c_str(), &st) != 0 && !alias)
            return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    }
    const bool kernel_log = forced && *forced == TraceFormat::kernel_log;
    if (!alias && S_ISDIR(st.st_mode) && kernel_log)
        return fail(Error::usage(fmt::format("{}: is a directory (expected a kernel log file, or - for stdin)", path)));
    if (!alias && S_ISDIR(st.st_mode)) {
        auto k = capture_dir_kind(path, in.has_report_json);
        if (!k) return fail(k.error());
        in.kind = *k;
        return in;
    }

    int fd = -1;
    if (!alias && S_ISSOCK(st.st_mode)) {
        fd = connect_socket(path);
        if (fd < 0)
            return fail(Error::usage(fmt::format("{}: a socket: cannot connect: {}", path, std::strerror(errno))));
    } else if (path == "-") {
        fd = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
    } else {
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        // A socket this process holds (/dev/stdin of `nvtrace report /dev/stdin < socket`) cannot be opened by
        // name: the descriptor itself is read.
        if (fd < 0 && errno == ENXIO && alias) fd = ::fcntl(*alias, F_DUPFD_CLOEXEC, 0);
    }
    if (fd < 0) return fail(Error::usage(fmt::format("{}: cannot open: {}", path, std::strerror(errno))));
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return fail(Error::usage(fmt::format("{}: cannot stat: {}", path, std::strerror(err))));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        return fail(Error::usage(fmt::format("{}: a directory, not a trace file", path)));
    }
    if ((S_ISCHR(st.st_mode) && !alias) || S_ISBLK(st.st_mode)) {
        // /dev/zero would be read until memory runs out, /dev/kmsg would block for ever. A terminal on standard
        // input is read (a user typing or pasting a trace).
        ::close(fd);
        return fail(Error::usage(
            kernel_log ? fmt::format("{}: a device, not a kernel log file (save it first: `dmesg > log`, or give - "
                                     "for stdin)",
                                     in.name)
                       : fmt::format("{}: a device, not a trace file (give a file, a pipe or - for stdin)", in.name)));
    }
    const bool regular = S_ISREG(st.st_mode);
    in.read_once = !regular;
    in.reopenable_ = regular && !alias;
    if (regular && st.st_size > 0) {
        auto size = static_cast<std::size_t>(st.st_size);
        // Mapped, not read: the readers walk it line by line and keep only what they parse.
        void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            return fail(Error::usage(fmt::format("{}: cannot map: {}", path, std::strerror(err))));
        }
        ::madvise(map, size, MADV_SEQUENTIAL);
        in.data_ = static_cast<const char*>(map);
        in.size_ = size;
        in.mapped_ = true;
        register_mapping(in.data_, in.size_, in.name);
        ::close(fd);  // the mapping stays
    } else if (!spool_dir.empty()) {
        // Read once into an unlinked file: disk, not memory (a pipe of gigabytes streamed with --calls-jsonl).
        auto copy = import::temp_copy(fd, spool_dir, in.name);
        ::close(fd);
        if (!copy) return fail(copy.error());
        struct stat cs {};
        if (::fstat(*copy, &cs) == 0 && cs.st_size > 0) {
            void* map = ::mmap(nullptr, static_cast<std::size_t>(cs.st_size), PROT_READ, MAP_PRIVATE, *copy, 0);
            int err = errno;
            ::close(*copy);  // unlinked: the mapping keeps it until the Input goes
            if (map == MAP_FAILED)
                return fail(
                    Error::environment(fmt::format("{}: cannot map its copy: {}", in.name, std::strerror(err))));
            in.data_ = static_cast<const char*>(map);
            in.size_ = static_cast<std::size_t>(cs.st_size);
            in.mapped_ = true;
        } else {
            ::close(*copy);
        }
    } else {
        // Standard input, a FIFO, a socket, a terminal, and files that say they are empty but are not (tracefs
        // `trace`, procfs): read whole, once.
        auto whole = read_whole(fd, in.name);
        ::close(fd);
        if (!whole) return fail(whole.error());
        in.memory_ = std::move(*whole);
        in.data_ = in.memory_.data();
        in.size_ = in.memory_.size();
    }
    if (in.size_ == 0 && !o.allow_empty)
        return fail(Error::usage(fmt::format("{}: {}", in.name, regular ? "empty file" : "empty input")));

    std::string_view bytes = in.bytes();
    if (forced) {
        in.format = forced;
        in.kind = *forced == TraceFormat::trace_dat ? InputKind::trace_dat : InputKind::text;
        return in;
    }
    if (starts_with_brace(bytes.substr(0, kDetectBytes))) {
        in.kind = InputKind::saved_report;
        return in;
    }
    in.format = detect_format(bytes.substr(0, kDetectBytes));
    in.kind = in.format == TraceFormat::trace_dat ? InputKind::trace_dat : InputKind::text;
    return in;
}

}  // namespace nvtrace
