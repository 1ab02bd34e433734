// ReportStream (include/nvtrace/report_stream.hpp).
#include "nvtrace/report_stream.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
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
        // Never one of 0-2: with standard output closed (`nvtrace report F --json >&-`) the file got descriptor 1
        // and "standard output" was written into it, exit 0 with nothing said.
        if (fd_ <= STDERR_FILENO) {
            int moved = ::fcntl(fd_, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
            ::close(fd_);
            fd_ = moved;
            if (fd_ < 0) return fail(Error::environment(std::strerror(errno)));
        }
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
    void append_raw(std::string_view bytes) {
        buf_ += bytes;
        if (buf_.size() >= (1u << 20) - 4096) flush();
    }

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

    // A write of this section failed elsewhere (its elements' source): reported by error().
    void set_error(const std::string& why) {
        if (error_.empty()) error_ = why;
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

struct ReportStream::Impl {
    EventStream side;
    // report.json itself, its calls written straight into it (detail::streamed_report_head); ioctls, events and
    // markers in files of their own, copied in by write_report_tail.
    SectionFile report_file, ioctl_file, events, markers;
    // Calls that ended before a call with a smaller id wait for it: report.json lists them by id
    // (call_order.front() is id next_call). The first kHeldCalls wait in `held_calls`; past that (a call that
    // never returns holds every later one) their JSON waits in memory, in `spill_mem`, up to
    // Options::waiting_calls_memory bytes (a write to a file and a read back cost more than the formatting), then
    // in `spill`, an unlinked file; 24 bytes a call either way.
    static constexpr std::size_t kHeldCalls = 1 << 16;
    struct Waiting {
        // The JSON's place when length > 0: spill_mem[offset...] below spill_mem.size(), else spill at offset -
        // spill_mem.size().
        std::uint64_t offset = 0;
        std::uint32_t length = 0;
        std::int32_t held = -1;  // index into held_calls
        bool ended() const { return held >= 0 || length > 0; }
    };
    std::deque<Waiting> call_order;
    std::vector<Call> held_calls;
    std::vector<std::int32_t> free_held;
    std::uint64_t next_call = 1;
    SectionFile spill;
    bool spill_open = false;
    std::string spill_mem;  // waiting calls' JSON, before any goes to `spill`
    bool spill_mem_full = false;
    std::string temp_dir, call_text, spill_piece;
    std::uint64_t spill_bytes = 0;
    // The spill file read back in aligned 16 KiB blocks, the last 64 used kept (1 MiB). Calls are spilled as they
    // end and written out by id (as they started): the calls of a subtree are read backwards, those of tasks that
    // ran at once from as many places of the file, so a read-ahead window from the record asked for (1 MiB) is
    // mostly missed (a tasks-shape report of 314 MB read 23.8 GB back that way); 16 KiB blocks read 0.2 GB.
    struct SpillBlock {
        std::uint64_t index = ~std::uint64_t{0};
        std::uint64_t used = 0;  // the access count when last used (the least recently used block goes)
        std::string bytes;       // the block as read: shorter at what was then the end of the file
    };
    static constexpr std::size_t kSpillBlock = 1 << 14, kSpillBlocks = 64;
    std::vector<SpillBlock> spill_blocks;
    std::uint64_t spill_accesses = 0, spill_read_bytes = 0;
    Result<std::string_view> spill_block(std::uint64_t index, std::size_t needed);
    Result<void> write_waiting(Waiting& w);
    std::function<void(const IoctlRecord&)> on_ioctl;
    std::function<void(const Call&)> on_call;
    std::map<std::string, std::uint64_t> event_names;
    std::optional<ReportBuilder> builder;
    Report report;
    // Options::time_order: the events on their way to `builder`, in time order (sorter.hpp, kSortWindow).
    Sorter<Event> sorter;
    // The first late event of each kind (late_event, late_ioctl_or_marker) and how many of the second kind.
    std::string first_late, first_late_paired;
    std::uint64_t late_paired = 0;
    std::uint64_t ioctls = 0;
    std::uint64_t calls = 0;  // after finish()
    Options options;
    bool tail_written = false;

    void take_call(Call&& c);
    void note_late(const Event& ev);
    template <class Fill>
    void sort(const Event& ev, Fill&& fill);
};

ReportStream::ReportStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ReportStream::~ReportStream() = default;

Result<std::unique_ptr<ReportStream>> ReportStream::open(const std::string& temp_dir, EventStream side,
                                                         Options options) {
    auto impl = std::make_unique<Impl>();
    impl->options = options;
    impl->temp_dir = temp_dir;
    impl->side = std::move(side);
    impl->side.events.clear();
    if (options.hold) {
        ReportBuilder::Sinks sinks;
        sinks.call = options.calls;
        impl->builder.emplace(impl->side, std::move(sinks));
        return std::unique_ptr<ReportStream>(new ReportStream(std::move(impl)));
    }
    switch (options.json) {
        case Json::temp_file:
            if (auto r = impl->report_file.open(temp_dir, true); !r) return fail(r.error());
            break;
        case Json::direct:
            if (options.direct_fd < 0) return fail(Error::internal("ReportStream: Json::direct without a descriptor"));
            impl->report_file.adopt(options.direct_fd);
            break;
        case Json::none:
            for (SectionFile* f : {&impl->report_file, &impl->ioctl_file, &impl->events, &impl->markers})
                f->count_only();
            break;
    }
    if (options.json != Json::none) {
        for (SectionFile* f : {&impl->ioctl_file, &impl->events, &impl->markers})
            if (auto r = f->open(temp_dir); !r) return fail(r.error());
        impl->report_file.append_raw(detail::streamed_report_head());
    }
    Impl* s = impl.get();  // the builder's sinks point into the Impl, which never moves
    ReportBuilder::Sinks sinks;
    sinks.ioctl = [s](IoctlRecord&& io) {
        if (s->on_ioctl) s->on_ioctl(io);
        s->ioctl_file.add(io, import::append_ioctl_json);
        ++s->ioctls;
    };
    sinks.call = [s](Call&& c) {
        if (s->on_call) s->on_call(c);
        if (s->options.calls)
            s->options.calls(std::move(c));
        else
            s->take_call(std::move(c));
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

void ReportStream::on_call(std::function<void(const Call&)> f) {
    impl_->on_call = std::move(f);
}

namespace {

// The builder pairs ioctl entries with their exits and places markers (and the preload's per-ioctl markers) by
// time: one of these out of order can change a record, not only where it is listed.
bool placed_by_time(const Event& ev) {
    return std::holds_alternative<IoctlEnter>(ev.body) || std::holds_alternative<IoctlExit>(ev.body) ||
           std::holds_alternative<Marker>(ev.body);
}

}  // namespace

void ReportStream::Impl::take_call(Call&& c) {
    if (c.id != next_call && options.json != Json::none) {
        const std::size_t at = c.id - next_call;
        if (call_order.size() <= at) call_order.resize(at + 1);
        Waiting& w = call_order[at];
        if (held_calls.size() < kHeldCalls || !free_held.empty()) {
            if (free_held.empty()) {
                // Room for all at once: growing by doubling moved every held call at each step.
                if (held_calls.capacity() < kHeldCalls) held_calls.reserve(kHeldCalls);
                w.held = static_cast<std::int32_t>(held_calls.size());
                held_calls.push_back(std::move(c));
            } else {
                w.held = free_held.back();
                free_held.pop_back();
                held_calls[static_cast<std::size_t>(w.held)] = std::move(c);
            }
            return;
        }
        call_text.clear();
        import::append_call_json(call_text, c);
        w.offset = spill_bytes;
        w.length = static_cast<std::uint32_t>(std::max<std::size_t>(call_text.size(), 1));
        spill_bytes += call_text.size();
        const std::size_t bound = options.waiting_calls_memory;
        if (!spill_mem_full && spill_mem.size() + call_text.size() <= bound) {
            // All of it at once: its pages are touched only as they fill, while growing by doubling copied what was
            // there and touched new pages at each step (a fifth of the tasks benchmark's page faults in `--json`).
            if (spill_mem.capacity() < bound) spill_mem.reserve(bound);
            spill_mem += call_text;
            return;
        }
        spill_mem_full = true;  // offsets from here on are in the file
        if (!spill_open) {
            if (auto r = spill.open(temp_dir); !r) {
                report_file.set_error(r.error().message);
                return;
            }
            spill_open = true;
        }
        spill.append_raw(call_text);
        return;
    }
    report_file.add(c, import::append_call_json);
    ++next_call;
    if (!call_order.empty()) call_order.pop_front();
    while (!call_order.empty() && call_order.front().ended()) {
        if (auto r = write_waiting(call_order.front()); !r) report_file.set_error(r.error().message);
        ++next_call;
        call_order.pop_front();
    }
    if (call_order.empty() && !spill_mem_full && !spill_mem.empty()) {  // nothing waits: the memory is free again
        spill_mem.clear();
        spill_bytes = 0;
    }
}

Result<void> ReportStream::Impl::write_waiting(Waiting& w) {
    auto text = [](std::string& b, std::string_view t) { b += t; };
    if (w.held >= 0) {
        report_file.add(held_calls[static_cast<std::size_t>(w.held)], import::append_call_json);
        free_held.push_back(w.held);
        return {};
    }
    if (w.offset < spill_mem.size()) {
        report_file.add(std::string_view(spill_mem).substr(w.offset, w.length), text);
        return {};
    }
    const std::uint64_t at = w.offset - spill_mem.size();  // in the file
    if (at + w.length > spill.bytes()) spill.flush();
    if (!spill.error().empty()) return fail(Error::environment(spill.error()));
    const std::uint64_t first = at / kSpillBlock, last = (at + w.length - 1) / kSpillBlock;
    if (first == last) {
        auto b = spill_block(first, at % kSpillBlock + w.length);
        if (!b) return fail(b.error());
        report_file.add(b->substr(at % kSpillBlock, w.length), text);
        return {};
    }
    spill_piece.clear();  // a record across blocks: put together from them
    for (std::uint64_t i = first; i <= last; ++i) {
        const std::uint64_t from = std::max(at, i * kSpillBlock), to = std::min(at + w.length, (i + 1) * kSpillBlock);
        auto b = spill_block(i, to - i * kSpillBlock);
        if (!b) return fail(b.error());
        spill_piece += b->substr(from - i * kSpillBlock, to - from);
    }
    report_file.add(std::string_view(spill_piece), text);
    return {};
}

Result<std::string_view> ReportStream::Impl::spill_block(std::uint64_t index, std::size_t needed) {
    if (spill_blocks.empty()) spill_blocks.resize(kSpillBlocks);
    ++spill_accesses;
    SpillBlock* slot = &spill_blocks[0];
    for (SpillBlock& b : spill_blocks) {
        if (b.index == index && b.bytes.size() >= needed) {
            b.used = spill_accesses;
            return std::string_view(b.bytes);
        }
        if (b.index == index || (slot->index != index && b.used < slot->used)) slot = &b;
    }
    slot->bytes.resize(kSpillBlock);
    ssize_t n = ::pread(spill.fd(), slot->bytes.data(), kSpillBlock, static_cast<off_t>(index * kSpillBlock));
    if (n < 0 || static_cast<std::size_t>(n) < needed) {
        slot->index = ~std::uint64_t{0};
        return fail(Error::environment(n < 0 ? std::strerror(errno) : "the spilled calls ended early"));
    }
    spill_read_bytes += static_cast<std::uint64_t>(n);
    slot->bytes.resize(static_cast<std::size_t>(n));
    slot->index = index;
    slot->used = spill_accesses;
    return std::string_view(slot->bytes);
}

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
void ReportStream::Impl::sort(const Event& ev, Fill&& fill) {
    const std::optional<std::uint64_t> ts = ev.ts_known ? std::optional(ev.ts_ns) : std::nullopt;
    if (ts && sorter.order().emitted() > 0 && *ts < sorter.order().last_emitted_ns()) note_late(ev);
    sorter.push(ts, fill, [this](Event& e) { builder->add(e); });
}

void ReportStream::add(const Event& ev) {
    if (!impl_->options.time_order)
        impl_->builder->add(ev);
    else
        impl_->sort(ev, [&](Event& slot) { slot = ev; });
}

void ReportStream::add(Event&& ev) {
    if (!impl_->options.time_order)
        impl_->builder->add(ev);
    else  // swapped, not moved: `ev` gets the slot's earlier event, whose buffers the caller's next event reuses
        impl_->sort(ev, [&](Event& slot) { std::swap(slot, ev); });
}

void ReportStream::add(const Event& ev, std::string_view function, const std::string_view* module) {
    impl_->builder->add(ev, function, module);
}

std::uint64_t ReportStream::spill_bytes_read() const {
    return impl_->spill_read_bytes;
}

std::uint64_t ReportStream::calls() const {
    return impl_->builder ? impl_->builder->calls() : impl_->calls;
}

Result<void> ReportStream::finish() {
    Impl& s = *impl_;
    s.sorter.flush([&s](Event& e) { s.builder->add(e); });
    // Added here, after the caller set side().diagnostics from its reader.
    const std::uint64_t late = s.sorter.order().late();
    if (late > s.late_paired)
        count_diagnostic(s.side.diagnostics, Diag::late_event, s.first_late, late - s.late_paired);
    if (s.late_paired)
        count_diagnostic(s.side.diagnostics, Diag::late_ioctl_or_marker, s.first_late_paired, s.late_paired);
    impl_->report = impl_->builder->finish();
    impl_->calls = impl_->builder->calls();
    impl_->builder.reset();
    for (SectionFile* f : {&impl_->report_file, &impl_->ioctl_file, &impl_->events, &impl_->markers}) {
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
bool ReportStream::held() const {
    return impl_->options.hold;
}
std::uint64_t ReportStream::ioctls() const {
    return held() ? impl_->report.ioctls.size() : impl_->ioctls;
}
std::uint64_t ReportStream::markers() const {
    return held() ? impl_->report.markers.size() : impl_->markers.count();
}
std::uint64_t ReportStream::events() const {
    return held() ? impl_->report.events.size() : impl_->events.count();
}
const std::map<std::string, std::uint64_t>& ReportStream::event_names() const {
    if (held() && impl_->event_names.empty())
        for (const auto& e : impl_->report.events)
            ++impl_->event_names[e.name];
    return impl_->event_names;
}

Result<void> ReportStream::complete() {
    if (impl_->options.json == Json::none)
        return fail(Error::internal("ReportStream: opened with Json::none, it has no JSON to write"));
    if (impl_->tail_written) return {};
    SectionFile& f = impl_->report_file;
    detail::StreamedArrays a{
        {-1, 0, impl_->report_file.count()}, impl_->ioctl_file.array(), impl_->events.array(), impl_->markers.array()};
    // The tail goes after the bytes already written (the file offset is at their end).
    if (auto w = detail::write_report_tail(impl_->report, a, f.fd()); !w) return w;
    impl_->tail_written = true;
    return {};
}

Result<void> ReportStream::write_to(const std::string& path) {
    if (held()) {
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0) return fail(Error::environment(std::strerror(errno)));
        auto w = detail::write_report_fd(impl_->report, fd);
        if (::close(fd) != 0 && w) w = fail(Error::environment(std::strerror(errno)));
        return w;
    }
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
    if (held()) return detail::write_report_fd(impl_->report, fd);
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
