// ReportStream (include/nvtrace/report_stream.hpp).
#include "nvtrace/report_stream.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <variant>

#include <fmt/format.h>

#include "import/json_write.hpp"
#include "nvtrace/report_builder.hpp"
#include "report_write.hpp"
#include "sorter.hpp"

namespace nvtrace {

namespace {

// One array's elements in an unlinked temporary file, written through a 1 MiB buffer.
class SectionFile {
public:
    SectionFile() = default;
    SectionFile(const SectionFile&) = delete;
    SectionFile& operator=(const SectionFile&) = delete;
    ~SectionFile() {
        if (!name_.empty()) ::unlink(name_.c_str());
        if (fd_ >= 0 && owned_) ::close(fd_);
    }

    // An unlinked file in `dir` (O_TMPFILE). Where the file system has none, a named one: removed at once, or with
    // `keep_name` kept (name()) until linked or the SectionFile ends.
    Result<void> open(const std::string& dir, bool keep_name = false) {
        fd_ = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
        if (fd_ < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
            std::string name = dir + "/.nvtrace-report-XXXXXX";
            fd_ = ::mkostemp(name.data(), O_CLOEXEC);
            if (fd_ >= 0 && keep_name)
                name_ = name;
            else if (fd_ >= 0)
                ::unlink(name.c_str());
        }
        if (fd_ < 0)
            return fail(
                Error::environment(fmt::format("cannot create a temporary file in {}: {}", dir, std::strerror(errno))));
        buf_.reserve(1 << 20);
        return {};
    }

    // Gives the file the name `path` when nothing has that name: a link of the unlinked file, or of the named one
    // (same file system as the directory given to open()). false, and nothing changed, when `path` exists (or
    // appears meanwhile): a file, a device, a link the caller must write into instead, as open(2) would.
    Result<bool> link_as(const std::string& path) {
        flush();
        if (!error_.empty()) return fail(Error::environment(error_));
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0) return false;
        if (errno != ENOENT) return fail(Error::environment(std::strerror(errno)));
        int r = name_.empty() ? ::linkat(AT_FDCWD, fmt::format("/proc/self/fd/{}", fd_).c_str(), AT_FDCWD, path.c_str(),
                                         AT_SYMLINK_FOLLOW)
                              : ::link(name_.c_str(), path.c_str());
        if (r != 0) {
            if (errno == EEXIST) return false;
            return fail(Error::environment(std::strerror(errno)));
        }
        if (!name_.empty()) {
            ::unlink(name_.c_str());
            name_.clear();
        }
        return true;
    }

    // Writes into `fd` (not owned) instead of a file of its own.
    void adopt(int fd) {
        fd_ = fd;
        owned_ = false;
        buf_.reserve(1 << 20);
    }
    // Only counts (Json::none): add() formats nothing.
    void count_only() { counting_ = true; }

    // Raw bytes (no separator, not counted as an element).
    void append_raw(std::string_view bytes) { buf_ += bytes; }

    template <class T, class Append>
    void add(const T& item, Append append) {
        if (counting_) {
            ++count_;
            return;
        }
        import::append_element_separator(buf_, count_ == 0);
        append(buf_, item);
        ++count_;
        if (buf_.size() >= (1u << 20) - 4096) flush();
    }

    void flush() {
        if (fd_ >= 0 && error_.empty()) bytes_ += detail::write_all(fd_, buf_.data(), buf_.size(), error_);
        buf_.clear();
    }

    detail::StreamedArray array() const { return {fd_, bytes_, count_}; }
    int fd() const { return fd_; }
    std::uint64_t bytes() const { return bytes_; }
    std::uint64_t count() const { return count_; }
    const std::string& error() const { return error_; }

private:
    int fd_ = -1;
    bool owned_ = true;
    bool counting_ = false;
    std::string name_;  // a named temporary file, removed unless linked
    std::string buf_;
    std::uint64_t bytes_ = 0, count_ = 0;
    std::string error_;
};

}  // namespace

// An event waiting in the sorter, with the open call of a ConsoleLine.
struct Pending {
    Event ev;
    std::optional<std::uint64_t> open_call;
};

struct ReportStream::Impl {
    EventStream side;
    // report.json itself, its ioctls written straight into it (detail::streamed_report_head); events and markers
    // in files of their own, copied in by write_report_tail.
    SectionFile report_file, events, markers;
    std::function<void(const IoctlRecord&)> on_ioctl;
    std::map<std::string, std::uint64_t> event_names;
    std::optional<ReportBuilder> builder;
    Report report;
    // Options::time_order: the events on their way to `builder`, in time order (sorter.hpp, kSortWindow).
    Sorter<Pending> sorter;
    // The first late event of each kind (late_event, late_ioctl_or_marker) and how many of the second kind.
    std::string first_late, first_late_paired;
    std::uint64_t late_paired = 0;
    std::uint64_t ioctls = 0;
    Options options;
    bool tail_written = false;

    void note_late(const Event& ev);
    template <class Fill>
    void sort(const Event& ev, std::optional<std::uint64_t> open_call, Fill&& fill);
};

ReportStream::ReportStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReportStream::~ReportStream() = default;

Result<std::unique_ptr<ReportStream>> ReportStream::open(const std::string& temp_dir, EventStream side,
                                                         Options options) {
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->side = std::move(side);
    impl->side.events.clear();
    switch (options.json) {
        case Json::temp_file:
            if (auto r = impl->report_file.open(temp_dir, true); !r) return fail(r.error());
            break;
        case Json::direct:
            if (options.direct_fd < 0) return fail(Error::internal("ReportStream: Json::direct without a descriptor"));
            impl->report_file.adopt(options.direct_fd);
            break;
        case Json::none:
            for (SectionFile* f : {&impl->report_file, &impl->events, &impl->markers})
                f->count_only();
            break;
    }
    if (options.json != Json::none) {
        for (SectionFile* f : {&impl->events, &impl->markers})
            if (auto r = f->open(temp_dir); !r) return fail(r.error());
        impl->report_file.append_raw(detail::streamed_report_head());
    }
    Impl* s = impl.get();  // the builder's sinks point into the Impl, which never moves
    ReportBuilder::Sinks sinks;
    sinks.ioctl = [s](IoctlRecord&& io) {
        if (s->on_ioctl) s->on_ioctl(io);
        s->report_file.add(io, import::append_ioctl_json);
        ++s->ioctls;
    };
    sinks.event = [s](EventRecord&& e) {
        ++s->event_names[e.name];
        s->events.add(e, import::append_event_json);
    };
    sinks.marker = [s](MarkerEntry&& m) { s->markers.add(m, import::append_marker_json); };
    impl->builder.emplace(impl->side, std::move(sinks));
    return std::unique_ptr<ReportStream>(new ReportStream(std::move(impl)));
}

EventStream& ReportStream::side() {
    return impl_->side;
}

void ReportStream::on_ioctl(std::function<void(const IoctlRecord&)> f) {
    impl_->on_ioctl = std::move(f);
}

namespace {

bool is_function_graph(const Event& ev) {
    return std::holds_alternative<FuncEntry>(ev.body) || std::holds_alternative<FuncExit>(ev.body);
}

// The builder pairs ioctl entries with their exits and places markers (and the preload's per-ioctl markers) by
// time: one of these out of order can change a record, not only where it is listed.
bool placed_by_time(const Event& ev) {
    return std::holds_alternative<IoctlEnter>(ev.body) || std::holds_alternative<IoctlExit>(ev.body) ||
           std::holds_alternative<Marker>(ev.body);
}

}  // namespace

void ReportStream::Impl::note_late(const Event& ev) {
    const std::uint64_t behind = sorter.order().last_emitted_ns() - ev.ts_ns;
    const SortWindow w = sorter.order().window();
    auto example = [&] {
        return fmt::format("cpu {} ts {} ns: {} ns older than an event already passed on (window: {} events, {} ns)",
                           ev.cpu, ev.ts_ns, behind, w.max_events, w.span_ns);
    };
    if (placed_by_time(ev)) {
        if (late_paired++ == 0) first_late_paired = example();
    } else if (first_late.empty()) {
        first_late = example();
    }
}

template <class Fill>
void ReportStream::Impl::sort(const Event& ev, std::optional<std::uint64_t> open_call, Fill&& fill) {
    const std::optional<std::uint64_t> ts = ev.ts_known ? std::optional(ev.ts_ns) : std::nullopt;
    if (ts && sorter.order().emitted() > 0 && *ts < sorter.order().last_emitted_ns()) note_late(ev);
    sorter.push(
        ts,
        [&](Pending& p) {
            fill(p.ev);
            p.open_call = open_call;
        },
        [this](Pending& p) { builder->add(p.ev, p.open_call); });
}

bool ReportStream::add(const Event& ev, std::optional<std::uint64_t> open_call) {
    if (is_function_graph(ev)) return false;
    if (!impl_->options.time_order) {
        impl_->builder->add(ev, open_call);
        return true;
    }
    impl_->sort(ev, open_call, [&](Event& slot) { slot = ev; });
    return true;
}

bool ReportStream::add(Event&& ev, std::optional<std::uint64_t> open_call) {
    if (is_function_graph(ev)) return false;
    if (!impl_->options.time_order) {
        impl_->builder->add(ev, open_call);
        return true;
    }
    // Swapped, not moved: `ev` gets the slot's earlier event, whose buffers the caller's next event reuses.
    impl_->sort(ev, open_call, [&](Event& slot) { std::swap(slot, ev); });
    return true;
}

Result<void> ReportStream::finish(CallGraph&& calls) {
    Impl& s = *impl_;
    s.sorter.flush([&s](Pending& p) { s.builder->add(p.ev, p.open_call); });
    // Added here, after the caller set side().diagnostics from its reader.
    const std::uint64_t late = s.sorter.order().late();
    if (late > s.late_paired)
        count_diagnostic(s.side.diagnostics, Diag::late_event, s.first_late, late - s.late_paired);
    if (s.late_paired)
        count_diagnostic(s.side.diagnostics, Diag::late_ioctl_or_marker, s.first_late_paired, s.late_paired);
    impl_->report = impl_->builder->finish(std::move(calls));
    impl_->builder.reset();
    for (SectionFile* f : {&impl_->report_file, &impl_->events, &impl_->markers}) {
        f->flush();
        if (!f->error().empty())
            return fail(Error::environment((f == &impl_->report_file && impl_->options.json == Json::direct
                                                ? "cannot write the report: "
                                                : "cannot write the report's "
                                                  "temporary file: ") +
                                           f->error()));
    }
    return {};
}

Report& ReportStream::report() {
    return impl_->report;
}
std::uint64_t ReportStream::ioctls() const {
    return impl_->ioctls;
}
std::uint64_t ReportStream::markers() const {
    return impl_->markers.count();
}
std::uint64_t ReportStream::events() const {
    return impl_->events.count();
}
const std::map<std::string, std::uint64_t>& ReportStream::event_names() const {
    return impl_->event_names;
}

Result<void> ReportStream::complete() {
    if (impl_->options.json == Json::none)
        return fail(Error::internal("ReportStream: opened with Json::none, it has no JSON to write"));
    if (impl_->tail_written) return {};
    SectionFile& f = impl_->report_file;
    detail::StreamedArrays a{{-1, 0, impl_->ioctls}, impl_->events.array(), impl_->markers.array()};
    // The tail goes after the bytes already written (the file offset is at their end).
    if (auto w = detail::write_report_tail(impl_->report, a, f.fd()); !w) return w;
    impl_->tail_written = true;
    return {};
}

Result<void> ReportStream::write_to(const std::string& path) {
    if (impl_->options.json != Json::temp_file)
        return fail(Error::internal("ReportStream: write_to() needs Json::temp_file"));
    if (auto c = complete(); !c) return c;
    auto linked = impl_->report_file.link_as(path);
    if (!linked) return fail(linked.error());
    if (*linked) return {};
    // `path` exists: written into like any output file (the same inode, a device stays a device, a symbolic link
    // is followed), never replaced.
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return fail(Error::environment(std::strerror(errno)));
    auto w = write(fd);
    if (::close(fd) != 0 && w) w = fail(Error::environment(std::strerror(errno)));
    return w;
}

Result<void> ReportStream::write(int fd) {
    if (impl_->options.json == Json::direct) {
        if (fd != impl_->options.direct_fd)
            return fail(Error::internal("ReportStream: Json::direct writes only to its own descriptor"));
        return complete();
    }
    if (auto c = complete(); !c) return c;
    off_t size = ::lseek(impl_->report_file.fd(), 0, SEEK_END);
    if (size < 0) return fail(Error::environment(std::strerror(errno)));
    return detail::copy_fd(impl_->report_file.fd(), static_cast<std::uint64_t>(size), fd);
}

}  // namespace nvtrace
