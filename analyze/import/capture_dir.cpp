// Capture directories of `nvtrace run` (include/nvtrace/capture_dir.hpp, docs/formats.md): ring-buffer
// pages decoded with libtraceevent's kbuffer, formats parsed with libtraceevent alone (no tracefs here).
#include "nvtrace/capture_dir.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <queue>
#include <sstream>

#include <event-parse.h>
#include <fmt/format.h>
extern "C" {  // kbuffer.h (libtraceevent 1.7) has no extern "C" guard of its own
#include <kbuffer.h>
}

#include "../json_values.hpp"
#include "../raw_event_decoder.hpp"
#include "nvtrace/symbols.hpp"

namespace nvtrace {

namespace {

// kernel/trace/ring_buffer.c: the commit word of a sub-buffer header.
constexpr std::uint64_t kMissedEvents = 1ull << 31;  // RB_MISSED_EVENTS: events were lost before this page
constexpr std::uint64_t kMissedStored = 1ull << 30;  // RB_MISSED_STORED: their count follows the data
constexpr std::uint64_t kCommitMask = (1ull << 27) - 1;

std::uint64_t read_word(const unsigned char* p, int size, bool big_endian) {
    std::uint64_t v = 0;
    for (int i = 0; i < size; ++i) {
        int shift = big_endian ? 8 * (size - 1 - i) : 8 * i;
        v |= static_cast<std::uint64_t>(p[i]) << shift;
    }
    return v;
}

}  // namespace

PageDecoder::PageDecoder(tep_handle* tep, std::vector<std::string> other_events)
    : tep_(tep), decoder_(std::make_unique<RawEventDecoder>(tep, std::move(other_events))), seen_(65536, 0) {
    long_size_ = tep_get_long_size(tep) == 4 ? 4 : 8;
    big_endian_ = tep_is_file_bigendian(tep);
    kbuf_ = kbuffer_alloc(long_size_ == 4 ? KBUFFER_LSIZE_4 : KBUFFER_LSIZE_8,
                          big_endian_ ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
}

PageDecoder::~PageDecoder() {
    if (kbuf_) kbuffer_free(kbuf_);
}

std::uint64_t PageDecoder::undecodable() const {
    return decoder_->undecodable();
}

void PageDecoder::observe(const std::vector<int>& types, RecordObserver records) {
    observed_.clear();
    observer_ = std::move(records);
    if (!observer_) return;
    for (int t : types)
        if (t >= 0 && t < 65536) {
            if (observed_.empty()) observed_.assign(65536, 0);
            observed_[static_cast<std::size_t>(t)] = 1;
        }
}

std::set<int> PageDecoder::types_seen() const {
    std::set<int> s;
    for (std::size_t i = 0; i < seen_.size(); ++i)
        if (seen_[i]) s.insert(static_cast<int>(i));
    return s;
}

Result<void> PageDecoder::decode(const unsigned char* page, std::size_t size, int cpu, std::vector<Event>& out) {
    if (!kbuf_) return fail(Error::internal("kbuffer_alloc failed"));
    const std::size_t header = 8 + static_cast<std::size_t>(long_size_);
    if (size < header)
        return fail(Error::usage(fmt::format("offset 0: a page of {} bytes is shorter than its header", size)));
    std::uint64_t commit = read_word(page + 8, long_size_, big_endian_);
    std::size_t len = static_cast<std::size_t>(commit & kCommitMask);
    if (len > size - header)
        return fail(Error::usage(
            fmt::format("offset 8: commit length {} runs past the page end ({} bytes of data)", len, size - header)));
    if ((commit & kMissedEvents) && (commit & kMissedStored) &&
        len + static_cast<std::size_t>(long_size_) > size - header)
        return fail(
            Error::usage(fmt::format("offset {}: the missed-event count runs past the page end", header + len)));
    if (len == 0) return {};
    // libtraceevent's kbuffer loops forever on some corrupt headers (fuzz_capture_page found three). Walk the event
    // headers first, the way kbuffer (libtraceevent 1.7, kbuffer-parse.c) moves from one to the next, and refuse
    // the page at the first one that does not fit: nothing of it is decoded. The types (kernel
    // include/linux/ring_buffer.h, enum ring_buffer_type): type_len 1..28 = 4 * type_len data bytes; 0 = a length
    // word (>= 4, counting itself) then data; 29 = padding; 30 = time extend and 31 = absolute time stamp, 8 bytes
    // each. kbuffer moves past a padding event by its length word whatever its time delta (a "null" padding with
    // delta 0 has no length of its own: the word after it is whatever the page holds there), as an int: a length
    // that takes it back to or before the padding made it loop (the third hang). Such a page is refused; a
    // padding whose length reaches the end of the data ends the walk, as it ends kbuffer's.
    for (std::size_t p = 0; p < len;) {
        if (len - p < 4) return fail(Error::usage(fmt::format("offset {}: a truncated event header", header + p)));
        auto word = static_cast<std::uint32_t>(read_word(page + header + p, 4, big_endian_));
        unsigned type_len = big_endian_ ? word >> 27 : word & 0x1f;
        std::size_t step = 0;
        if (type_len == 29) {
            // The length word may lie past the data (a null padding at the very end): it is still in the page or
            // its slack (kPageSlack), where kbuffer reads it too.
            auto a0 = static_cast<std::uint32_t>(read_word(page + header + p + 4, 4, big_endian_));
            const std::uint32_t next = static_cast<std::uint32_t>(p + 4) + a0;  // kbuffer's unsigned arithmetic
            if (next >= len) break;                                             // kbuffer stops here too
            if (next <= p)
                return fail(
                    Error::usage(fmt::format("offset {}: a padding length of {} bytes points back into the page",
                                             header + p + 4, static_cast<std::int32_t>(a0))));
            step = next - p;
        } else if (type_len == 30 || type_len == 31) {
            step = 8;
        } else if (type_len == 0) {
            if (len - p < 8) return fail(Error::usage(fmt::format("offset {}: a truncated event length", header + p)));
            auto a0 = static_cast<std::size_t>(read_word(page + header + p + 4, 4, big_endian_));
            if (a0 < 4)
                return fail(Error::usage(fmt::format("offset {}: an event length of {} bytes", header + p + 4, a0)));
            step = 4 + ((a0 + 3) & ~std::size_t{3});
        } else {
            step = 4 + 4 * std::size_t{type_len};
        }
        if (step > len - p)
            return fail(Error::usage(
                fmt::format("offset {}: an event runs past the page's data ({} bytes)", header + p, header + len)));
        p += step;
    }
    if (kbuffer_load_subbuffer(kbuf_, const_cast<unsigned char*>(page)) < 0)
        return fail(Error::usage("offset 0: kbuffer cannot load this page"));

    unsigned long long ts = 0;
    bool first = true;
    int prev_off = -1;
    pending_.clear();
    for (void* ptr = kbuffer_read_event(kbuf_, &ts); ptr; ptr = kbuffer_next_event(kbuf_, &ts)) {
        int off = kbuffer_curr_offset(kbuf_);
        auto data_off = static_cast<std::size_t>(static_cast<const unsigned char*>(ptr) - page);
        int esize = kbuffer_event_size(kbuf_);
        if (off <= prev_off || esize < 0 || data_off < header ||
            data_off + static_cast<std::size_t>(esize) > header + len)
            return fail(Error::usage(fmt::format("offset {}: an event runs past the page's data ({} bytes)",
                                                 std::max(off, 0), header + len)));
        prev_off = off;
        tep_record rec;
        std::memset(&rec, 0, sizeof rec);
        rec.ts = ts;
        rec.size = esize;
        rec.record_size = kbuffer_curr_size(kbuf_);
        rec.missed_events = first ? kbuffer_missed_events(kbuf_) : 0;
        rec.cpu = cpu;
        rec.data = ptr;
        rec.ref_count = 1;
        first = false;
        ++records_;
        if (esize >= 2) {
            const std::size_t type = static_cast<std::size_t>(tep_data_type(tep_, &rec)) & 0xffff;
            seen_[type] = 1;
            if (!observed_.empty() && observed_[type]) pending_.push_back({rec.ts, ptr, esize, rec.record_size, cpu});
        }
        if (rec.missed_events != 0) {
            Event lost;
            lost.ts_ns = rec.ts;
            lost.cpu = cpu;
            LostEvents l;
            if (rec.missed_events > 0) l.count = static_cast<std::uint64_t>(rec.missed_events);
            lost.body = l;
            out.push_back(std::move(lost));
        }
        if (appends_ == Appends::kEvery) {
            decoder_->decode_append(&rec, out);
        } else if (const RawEventDecoder::Fields* f = decoder_->check(&rec)) {
            using K = RawEventDecoder::Kind;
            if (f->kind == K::ioctl_enter || f->kind == K::ioctl_exit || f->kind == K::other) {
                const int pid = decoder_->plain(*f) ? decoder_->pid(rec) : tep_data_pid(tep_, &rec);
                if (pid != last_pid_) pids_.insert(last_pid_ = pid);
            } else {
                decoder_->fill(rec, *f, out.emplace_back());
            }
        }
    }
    for (const Pending& p : pending_) {
        tep_record rec;
        std::memset(&rec, 0, sizeof rec);
        rec.ts = p.ts;
        rec.size = p.size;
        rec.record_size = p.record_size;
        rec.cpu = p.cpu;
        rec.data = p.data;
        rec.ref_count = 1;
        observer_(source_, rec);
    }
    pending_.clear();
    return {};
}

namespace {

bool by_time(const Event& a, const Event& b) {
    return a.ts_ns < b.ts_ns;
}

}  // namespace

std::string damaged_page_example(std::string_view buffer, int cpu, std::uint64_t page_offset,
                                 std::string_view message) {
    return fmt::format("raw/{}/cpu{}: page at offset {}, {}; the events of this page are lost", buffer, cpu,
                       page_offset, message);
}

namespace {

// Reads one page file a page at a time.
class PageReader {
public:
    PageReader(PageFile& file, PageFileProblems& problems) : file_(file), problems_(problems) {
        f_ = std::fopen(file.path.c_str(), "rb");
        if (!f_) {
            note(fmt::format("raw/{}/cpu{}: open: {}", file.buffer, file.cpu, std::strerror(errno)));
            return;
        }
        std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
        page_.resize(file.page_size + PageDecoder::kPageSlack);
    }
    ~PageReader() {
        if (f_) std::fclose(f_);
    }
    PageReader(const PageReader&) = delete;
    PageReader& operator=(const PageReader&) = delete;

    // Appends the next page's events to `out` (none for a damaged page: its diagnostic is counted). false at
    // the end of the file.
    bool next(PageDecoder& dec, std::vector<Event>& out) {
        if (!f_) return false;
        std::size_t got = std::fread(page_.data(), 1, file_.page_size, f_);
        if (got < file_.page_size) {
            if (std::ferror(f_))
                note(fmt::format("raw/{}/cpu{}: read error at offset {}", file_.buffer, file_.cpu,
                                 file_.pages * file_.page_size));
            else if (got > 0)
                note(fmt::format("raw/{}/cpu{}: {} bytes after the last whole page", file_.buffer, file_.cpu, got));
            std::fclose(f_);
            f_ = nullptr;
            return false;
        }
        const std::uint64_t before = dec.records();
        if (auto r = dec.decode(page_.data(), file_.page_size, file_.cpu, out); !r) {
            if (problems_.first.empty())
                problems_.first =
                    fmt::format("raw/{}/cpu{} page {}: {}", file_.buffer, file_.cpu, file_.pages, r.error().message);
            // A page the decoder refuses is data lost (a live capture on 6.18 wrote two pages whose data ended
            // in zeroes), reported as such; the other pages are still read: refusing the capture would lose them.
            ++file_.damaged;
            count_diagnostic(
                problems_.diagnostics, Diag::damaged_page,
                damaged_page_example(file_.buffer, file_.cpu, file_.pages * file_.page_size, r.error().message));
        }
        file_.records += dec.records() - before;
        ++file_.pages;
        return true;
    }

private:
    void note(std::string what) {
        if (problems_.first.empty()) {
            problems_.first = std::move(what);
            problems_.io = true;
        }
    }
    PageFile& file_;
    PageFileProblems& problems_;
    std::FILE* f_ = nullptr;
    std::vector<unsigned char> page_;
};

}  // namespace

std::vector<Event> decode_page_files(PageDecoder& dec, std::vector<PageFile>& files, PageFileProblems& problems,
                                     std::uint64_t expected_events) {
    std::vector<Event> all;
    std::vector<std::size_t> starts;
    {
        // A reservation is address space only until used, but one far above the need can be refused (the kernel's
        // overcommit heuristic): the count the capture wrote when known, else 1 event per 24 bytes of pages (the
        // smallest records nvtrace keeps, a funcgraph_entry or an ioctl exit, take 24 bytes and more).
        std::uint64_t bytes = 0;
        for (const auto& f : files) {
            std::error_code ec;
            auto n = std::filesystem::file_size(f.path, ec);
            if (!ec) bytes += n;
        }
        std::uint64_t want = bytes / 24 + 1;
        if (expected_events > 0) want = std::min(want, expected_events);
        all.reserve(static_cast<std::size_t>(want));
    }
    for (auto& f : files) {
        starts.push_back(all.size());
        dec.set_source(starts.size() - 1);
        PageReader reader(f, problems);
        while (reader.next(dec, all)) {
        }
    }
    merge_segments(all, std::move(starts));
    return all;
}

bool decode_page_files_merged(PageDecoder& dec, std::vector<PageFile>& files, const std::function<bool(Event&)>& sink,
                              PageFileProblems& problems) {
    struct Cursor {
        std::unique_ptr<PageReader> reader;
        std::vector<Event> events;  // the current page's
        std::size_t next = 0;
    };
    std::vector<Cursor> cursors(files.size());
    // The next page with events of `c`, if any: false at the end of its file.
    auto refill = [&](Cursor& c) {
        while (c.next >= c.events.size()) {
            c.events.clear();
            c.next = 0;
            dec.set_source(static_cast<std::size_t>(&c - cursors.data()));
            if (!c.reader->next(dec, c.events)) return false;
        }
        return true;
    };
    // Smallest (time, file index) first: the order of a stable merge of the files.
    using Head = std::pair<std::uint64_t, std::size_t>;
    std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
    for (std::size_t i = 0; i < files.size(); ++i) {
        cursors[i].reader = std::make_unique<PageReader>(files[i], problems);
        if (refill(cursors[i])) heads.emplace(cursors[i].events[0].ts_ns, i);
    }
    while (!heads.empty()) {
        const std::size_t i = heads.top().second;
        heads.pop();
        Cursor& c = cursors[i];
        // A run of file i's events: while its next event still comes before every other head (ties: the lower
        // file first), it goes without a trip through the heap (one CPU's events mostly follow each other).
        for (;;) {
            if (!sink(c.events[c.next])) return false;
            ++c.next;
            if (!refill(c)) break;
            const std::uint64_t t = c.events[c.next].ts_ns;
            if (!heads.empty() && (heads.top().first < t || (heads.top().first == t && heads.top().second < i))) {
                heads.emplace(t, i);
                break;
            }
        }
    }
    return true;
}

void merge_segments(std::vector<Event>& events, std::vector<std::size_t> starts) {
    std::vector<std::size_t> bounds{0};  // segment boundaries: 0, the starts, events.size(); none empty
    for (std::size_t b : starts)
        if (std::min(b, events.size()) > bounds.back()) bounds.push_back(std::min(b, events.size()));
    if (bounds.back() != events.size()) bounds.push_back(events.size());
    auto at = [&](std::size_t i) { return events.begin() + static_cast<std::ptrdiff_t>(i); };
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i)
        if (!std::is_sorted(at(bounds[i]), at(bounds[i + 1]), by_time)) {
            std::stable_sort(events.begin(), events.end(), by_time);
            return;
        }
    // Adjacent segments merged pairwise, log2(segments) rounds: std::inplace_merge is stable (the earlier
    // segment first on equal times), so the result is the stable sort's order. Its buffer holds the
    // shorter of the two halves, not a copy of every event.
    while (bounds.size() > 2) {
        std::vector<std::size_t> next{0};
        for (std::size_t i = 0; i + 1 < bounds.size(); i += 2) {
            if (i + 2 < bounds.size()) {
                auto first = at(bounds[i]), mid = at(bounds[i + 1]), last = at(bounds[i + 2]);
                if (by_time(*mid, *(mid - 1))) std::inplace_merge(first, mid, last, by_time);
                next.push_back(bounds[i + 2]);
            } else {
                next.push_back(bounds[i + 1]);
            }
        }
        bounds.swap(next);
    }
}

std::vector<CpuBufferStats> buffer_stats_delta(const std::vector<CpuBufferStats>& before,
                                               const std::vector<CpuBufferStats>& after) {
    std::vector<CpuBufferStats> out;
    for (const auto& a : after) {
        CpuBufferStats d = a;
        for (const auto& b : before)
            if (b.cpu == a.cpu && b.buffer == a.buffer) {
                d.overrun = a.overrun >= b.overrun ? a.overrun - b.overrun : 0;
                d.dropped_events = a.dropped_events >= b.dropped_events ? a.dropped_events - b.dropped_events : 0;
            }
        out.push_back(d);
    }
    return out;
}

namespace {

namespace fs = std::filesystem;

Result<std::string> slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", p.string(), std::strerror(errno))));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return fail(Error::usage(fmt::format("{}: read error", p.string())));
    return ss.str();
}

Result<nlohmann::json> slurp_json(const fs::path& p) {
    auto text = slurp(p);
    if (!text) return fail(text.error());
    nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_discarded()) return fail(Error::usage(fmt::format("{}: not valid JSON", p.string())));
    return j;
}

Error bad(const fs::path& p, const std::string& what) {
    return Error::usage(fmt::format("{}: {}", p.string(), what));
}

// Reads a non-negative integer member; the error names the file and the key.
Result<std::uint64_t> json_uint(const nlohmann::json& j, const char* key, const fs::path& file) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number_unsigned())
        return fail(bad(file, fmt::format("expected a non-negative integer \"{}\"", key)));
    return j[key].get<std::uint64_t>();
}

Result<std::vector<CpuBufferStats>> read_stats_list(const nlohmann::json& j, const fs::path& file) {
    if (!j.is_array()) return fail(bad(file, "expected arrays \"before\" and \"after\""));
    std::vector<CpuBufferStats> out;
    for (const auto& e : j) {
        if (!e.is_object() || !e.contains("cpu") || !e["cpu"].is_number_integer() || !e.contains("buffer") ||
            !e["buffer"].is_string())
            return fail(bad(file, "each entry needs \"cpu\", \"buffer\", \"overrun\", \"dropped_events\""));
        CpuBufferStats s;
        s.cpu = e["cpu"].get<int>();
        s.buffer = e["buffer"].get<std::string>();
        auto o = json_uint(e, "overrun", file);
        if (!o) return fail(o.error());
        auto d = json_uint(e, "dropped_events", file);
        if (!d) return fail(d.error());
        s.overrun = *o;
        s.dropped_events = *d;
        out.push_back(s);
    }
    return out;
}

struct TepDeleter {
    void operator()(tep_handle* t) const { tep_free(t); }
};

// kmsg: records as /dev/kmsg returned them, each ending in '\n'; a record's continuation lines
// (" KEY=value") start with a space (Documentation/ABI/testing/dev-kmsg).
std::vector<KmsgRecordText> split_kmsg(const std::string& text) {
    std::vector<KmsgRecordText> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = pos;
        for (;;) {
            std::size_t nl = text.find('\n', end);
            if (nl == std::string::npos) {
                end = text.size();
                break;
            }
            end = nl + 1;
            if (end >= text.size() || text[end] != ' ') break;
        }
        std::string rec = text.substr(pos, end - pos);
        if (!rec.empty() && rec.back() == '\n') rec.pop_back();
        out.push_back({std::move(rec)});
        pos = end;
    }
    return out;
}

}  // namespace

bool is_raw_capture_dir(const std::string& dir) {
    auto j = slurp_json(fs::path(dir) / "meta.json");
    return j && j->is_object() && j->contains("capture_format");
}

struct CaptureDirReader::Impl {
    fs::path dir;
    CaptureMeta meta;
    std::unique_ptr<tep_handle, TepDeleter> tep;
    std::unique_ptr<PageDecoder> pages;
    std::vector<PageFile> files;
    // Per buffer of meta.json raw.buffers: its files (indexes into `files`) and the counts the capture wrote.
    struct Buffer {
        std::string name;
        std::vector<std::size_t> files;
        std::optional<std::uint64_t> pages, records;
    };
    std::vector<Buffer> buffers;
    EventStream side;  // everything but the events; diagnostics added after the pages are decoded
    std::optional<std::string> write_error;
    // meta.json raw.decode_error: the capture could not read some page files back (removed while the program
    // ran); those files may be missing here, and their events are lost.
    std::optional<std::string> decode_error;
    bool has_kallsyms = false;
    SymbolTable symbols;  // the kallsyms subset (function_graph captures); empty without one
    bool decoded = false;
};

CaptureDirReader::CaptureDirReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CaptureDirReader::CaptureDirReader(CaptureDirReader&&) noexcept = default;
CaptureDirReader& CaptureDirReader::operator=(CaptureDirReader&&) noexcept = default;
CaptureDirReader::~CaptureDirReader() = default;

const CaptureMeta& CaptureDirReader::meta() const {
    return impl_->meta;
}
EventStream& CaptureDirReader::side() {
    return impl_->side;
}
bool CaptureDirReader::has_function_graph() const {
    return impl_->has_kallsyms;
}

Result<CaptureDirReader> CaptureDirReader::open(const std::string& dir_s) {
    auto impl = std::make_unique<Impl>();
    const fs::path dir(dir_s);
    impl->dir = dir;
    const fs::path meta_path = dir / "meta.json";
    auto meta_j = slurp_json(meta_path);
    if (!meta_j) return fail(meta_j.error());
    auto meta = capture_meta_from_json(*meta_j, meta_path.string());
    if (!meta) return fail(meta.error());
    impl->meta = *meta;
    const CaptureRaw& raw = meta->raw;

    // Formats: header_page first (sub-buffer layout), then every saved event format.
    impl->tep.reset(tep_alloc());
    tep_handle* tep = impl->tep.get();
    if (!tep) return fail(Error::internal("tep_alloc failed"));
    tep_set_file_bigendian(tep, raw.endianness == "big" ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
    tep_set_long_size(tep, static_cast<int>(raw.long_size));
    {
        const fs::path hp = dir / "events" / "header_page";
        auto text = slurp(hp);
        if (!text) return fail(text.error());
        if (text->find("commit") == std::string::npos) return fail(bad(hp, "no \"commit\" field: not a header_page"));
        if (tep_parse_header_page(tep, text->data(), text->size(), static_cast<int>(raw.long_size)) < 0)
            return fail(bad(hp, "libtraceevent cannot parse it (tep_parse_header_page)"));
    }
    {
        const fs::path events_dir = dir / "events";
        std::error_code ec;
        std::vector<fs::path> formats;
        for (auto it = fs::recursive_directory_iterator(events_dir, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
            if (it->path().filename() == "format" && it.depth() == 2) formats.push_back(it->path());
        if (ec) return fail(bad(events_dir, "cannot list: " + ec.message()));
        std::sort(formats.begin(), formats.end());
        // Every format the capture saved must be there: a missing one would silently drop its events.
        for (const std::string& n : meta->event_formats) {
            auto colon = n.find(':');
            if (colon == std::string::npos || n.find('/') != std::string::npos || n.find("..") != std::string::npos)
                return fail(bad(meta_path, fmt::format("event_formats: bad name '{}'", n)));
            fs::path f = events_dir / n.substr(0, colon) / n.substr(colon + 1) / "format";
            if (std::find(formats.begin(), formats.end(), f) == formats.end())
                return fail(bad(f, "missing (meta.json event_formats lists it)"));
        }
        for (const auto& f : formats) {
            auto text = slurp(f);
            if (!text) return fail(text.error());
            std::string system = f.parent_path().parent_path().filename().string();
            std::string name = f.parent_path().filename().string();
            if (text->rfind("name: ", 0) != 0)
                return fail(bad(f, "does not start with \"name: \": not an event format"));
            tep_parse_event(tep, text->data(), text->size(), system.c_str());
            tep_event* ev = tep_find_event_by_name(tep, system.c_str(), name.c_str());
            if (!ev) return fail(bad(f, "libtraceevent cannot parse it (tep_parse_event)"));
        }
    }
    impl->pages = std::make_unique<PageDecoder>(tep, meta->kept_events);

    // Page files: buffers in the saved order, CPUs in the saved order (the live capture's drain order). Each must
    // be there and hold whole pages; their counts are checked against meta.json after decoding.
    for (const CaptureBuffer& b : raw.buffers) {
        Impl::Buffer buf;
        buf.name = b.name;
        buf.pages = b.pages;
        buf.records = b.records;
        for (int cpu : b.cpus) {
            fs::path file = dir / "raw" / b.name / fmt::format("cpu{}", cpu);
            if (std::ifstream in(file, std::ios::binary); !in) {
                if (raw.decode_error && !fs::exists(file)) {
                    impl->decode_error = raw.decode_error;
                    continue;  // the capture knew: pages_not_read below
                }
                return fail(Error::usage(fmt::format("{}: cannot open: {}", file.string(), std::strerror(errno))));
            }
            std::error_code ec;
            auto fsize = fs::file_size(file, ec);
            if (ec) return fail(bad(file, ec.message()));
            if (fsize % b.page_size != 0)
                return fail(bad(file, fmt::format("truncated: {} bytes is not a whole number of {}-byte pages "
                                                  "(last page starts at offset {})",
                                                  fsize, b.page_size, fsize - fsize % b.page_size)));
            buf.files.push_back(impl->files.size());
            impl->files.push_back({b.name, cpu, file.string(), static_cast<std::size_t>(b.page_size), 0, 0, 0});
        }
        impl->buffers.push_back(std::move(buf));
    }
    // The capture could not read or write some pages (meta.json raw.write_error): their events are lost.
    impl->write_error = raw.write_error;

    EventStream& st = impl->side;
    std::error_code kec;
    impl->has_kallsyms = fs::exists(dir / "kallsyms", kec);
    // Symbols: the kallsyms subset the capture saved (only when function_graph ran).
    if (impl->has_kallsyms) {
        auto ks = slurp(dir / "kallsyms");
        if (!ks) return fail(ks.error());
        impl->symbols = SymbolTable::from_kallsyms(*ks);
        if (impl->symbols.malformed_lines() > 0)
            return fail(bad(dir / "kallsyms", fmt::format("{} malformed line(s)", impl->symbols.malformed_lines())));
    }
    {
        const fs::path p = dir / "comms.json";
        auto j = slurp_json(p);
        if (!j) return fail(j.error());
        if (!j->is_object()) return fail(bad(p, "expected an object {\"pid\": \"comm\"}"));
        for (auto it = j->begin(); it != j->end(); ++it) {
            char* end = nullptr;
            long pid = std::strtol(it.key().c_str(), &end, 10);
            if (it.key().empty() || *end != '\0' || !it.value().is_string())
                return fail(bad(p, fmt::format("bad entry '{}'", it.key())));
            st.comms[static_cast<int>(pid)] = it.value().get<std::string>();
        }
    }
    {
        const fs::path p = dir / "fd_paths.json";
        auto j = slurp_json(p);
        if (!j) return fail(j.error());
        // Format 2 (captures that recorded the fd syscalls): {"format": 2, "lifetimes": [...], ...}, each lifetime
        // as FdLifetime (nvtrace/event.hpp) names it; format 1: [[pid, fd, path], ...] as the polls saw them.
        if (j->is_object()) {
            if (j->value("format", 0) != 2 || !j->contains("lifetimes") || !(*j)["lifetimes"].is_array())
                return fail(bad(p, "expected {\"format\": 2, \"lifetimes\": [...]} or an array of [pid, fd, path]"));
            auto ns = [](const nlohmann::json& v, std::optional<std::uint64_t>& out) {
                if (v.is_null()) return true;
                if (!v.is_number_unsigned()) return false;
                out = v.get<std::uint64_t>();
                return true;
            };
            for (const auto& e : (*j)["lifetimes"]) {
                FdLifetime l;
                bool ok = e.is_object() && e.contains("pid") && e["pid"].is_number_integer() && e.contains("fd") &&
                          e["fd"].is_number_integer() && e.contains("from_ns") && ns(e["from_ns"], l.from_ns) &&
                          e.contains("until_ns") && ns(e["until_ns"], l.until_ns) && e.contains("path") &&
                          (e["path"].is_null() || e["path"].is_string());
                for (const char* k : {"opened_by", "path_from", "unknown"})
                    ok = ok && e.contains(k) && e[k].is_string();
                if (!ok)
                    return fail(bad(p,
                                    "expected lifetimes of {pid, fd, from_ns, until_ns, opened_by, path, path_from, "
                                    "unknown}"));
                l.pid = e["pid"].get<int>();
                l.fd = e["fd"].get<int>();
                l.opened_by = e["opened_by"].get<std::string>();
                if (e["path"].is_string()) l.path = e["path"].get<std::string>();
                l.path_from = e["path_from"].get<std::string>();
                l.unknown = e["unknown"].get<std::string>();
                st.fd_lifetimes.push_back(std::move(l));
            }
            st.fd_lifetimes_recorded = true;
        } else if (!j->is_array()) {
            return fail(bad(p, "expected an array of [pid, fd, path]"));
        }
        for (const auto& e : j->is_array() ? *j : nlohmann::json::array()) {
            if (!e.is_array() || e.size() != 3 || !e[0].is_number_integer() || !e[1].is_number_integer() ||
                !e[2].is_string())
                return fail(bad(p, "expected an array of [pid, fd, path]"));
            add_fd_path(st, e[0].get<int>(), e[1].get<int>(), e[2].get<std::string>());
        }
    }
    {
        const fs::path p = dir / "buffer_stats.json";
        auto j = slurp_json(p);
        if (!j) return fail(j.error());
        if (!j->is_object() || !j->contains("before") || !j->contains("after"))
            return fail(bad(p, "expected arrays \"before\" and \"after\""));
        auto before = read_stats_list((*j)["before"], p);
        if (!before) return fail(before.error());
        auto after = read_stats_list((*j)["after"], p);
        if (!after) return fail(after.error());
        st.buffer_stats = buffer_stats_delta(*before, *after);
    }
    {
        auto k = slurp(dir / "kmsg");
        if (!k) return fail(k.error());
        st.kmsg = split_kmsg(*k);
        st.kmsg_overwritten = meta->kmsg_overwritten;
    }
    st.kmsg_clock = meta->kmsg_clock;
    st.uprobes = meta->uprobes;
    return CaptureDirReader(std::move(impl));
}

Result<void> CaptureDirReader::after_pages(PageFileProblems& problems) {
    Impl& m = *impl_;
    if (problems.io) return fail(Error::usage(problems.first));
    // The capture counted what it wrote: page files cut at a page boundary, or a meta.json edited to
    // decode them differently, read as fewer pages or records. That is data lost, never a quiet report.
    for (const auto& b : m.buffers) {
        if (!b.pages || !b.records) continue;
        std::uint64_t pages = 0, records = 0, damaged = 0;
        for (std::size_t i : b.files) {
            pages += m.files[i].pages;
            records += m.files[i].records;
            damaged += m.files[i].damaged;
        }
        // After a damaged page the record count depends on where each decoder gave up: pages only.
        if (pages != *b.pages || (damaged == 0 && records != *b.records))
            return fail(bad(m.dir / "raw" / b.name,
                            fmt::format("{} page(s) with {} record(s) where meta.json says {} with {}: the page "
                                        "files were cut or meta.json changed",
                                        pages, records, *b.pages, *b.records)));
    }
    // In the order the live capture adds them: damaged pages, pages not saved, reused fds.
    EventStream& st = m.side;
    st.diagnostics = std::move(problems.diagnostics);
    if (m.decode_error) count_diagnostic(st.diagnostics, Diag::pages_not_read, *m.decode_error);
    if (m.write_error) count_diagnostic(st.diagnostics, Diag::pages_not_saved, *m.write_error);
    note_reused_fds(st);
    return {};
}

Result<bool> CaptureDirReader::stream(const std::function<bool(Event&)>& sink) {
    Impl& m = *impl_;
    if (m.decoded) return fail(Error::internal("CaptureDirReader: the pages were decoded already"));
    m.decoded = true;
    PageFileProblems problems;
    auto named = [&m, &sink](Event& ev) {
        if (m.has_kallsyms) (void)m.symbols.resolve(ev);  // an unresolved address is named 0x<hex>
        return sink(ev);
    };
    if (!decode_page_files_merged(*m.pages, m.files, named, problems)) return false;
    if (auto r = after_pages(problems); !r) return fail(r.error());
    return true;
}

Result<CaptureDirData> CaptureDirReader::read_all() {
    Impl& m = *impl_;
    if (m.decoded) return fail(Error::internal("CaptureDirReader: the pages were decoded already"));
    m.decoded = true;
    PageFileProblems problems;
    std::uint64_t expected = 0;  // what meta.json says was written: records, plus a lost-events mark per page
    for (const auto& b : m.buffers)
        if (b.records && b.pages) expected += *b.records + *b.pages;
    std::vector<Event> all = decode_page_files(*m.pages, m.files, problems, expected);
    if (auto r = after_pages(problems); !r) return fail(r.error());
    CaptureDirData res;
    res.meta = m.meta;
    res.stream = std::move(m.side);
    res.stream.events = std::move(all);
    res.undecodable_records = m.pages->undecodable();
    if (m.has_kallsyms) res.unresolved_functions = m.symbols.resolve(res.stream);
    return res;
}

Result<CaptureDirData> read_capture_dir(const std::string& dir) {
    auto reader = CaptureDirReader::open(dir);
    if (!reader) return fail(reader.error());
    return reader->read_all();
}

}  // namespace nvtrace
