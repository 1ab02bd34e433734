// phases.hpp: the phase markers of docs/markers.md ("nvtrace-phase: NAME" starts phase NAME and ends the
// previous one, "nvtrace-phase-end" ends it), followed as a stream gives them (private to analyze).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvtrace::detail {

class Phases {
public:
    // Every marker text of the stream, in stream order, with its time (ns). One write to trace_marker is one
    // event, whatever it holds: each of its lines is a marker of its own ("nvtrace-phase: A\nnvtrace-phase: B"
    // begins A and then B at that time), as the lines read one by one in the trace text.
    void marker(std::uint64_t ts_ns, std::string_view text) {
        for (std::size_t nl; (nl = text.find('\n')) != std::string_view::npos; text.remove_prefix(nl + 1))
            line(ts_ns, text.substr(0, nl));
        line(ts_ns, text);
    }
    void line(std::uint64_t ts_ns, std::string_view text) {
        bool begin = text.substr(0, kBegin.size()) == kBegin;
        bool end = text.substr(0, kEnd.size()) == kEnd;
        if (!begin && !end) return;
        if (cur_) {
            cur_->end = ts_ns;
            // In time order (the usual case) spans neither overlap nor go back: at() can search them.
            if (cur_->end < cur_->begin || (!spans_.empty() && cur_->begin < spans_.back().end)) ordered_ = false;
            spans_.push_back(std::move(*cur_));
            cur_.reset();
        }
        if (begin) cur_ = Span{ts_ns, UINT64_MAX, std::string(text.substr(kBegin.size()))};
    }
    bool empty() const { return spans_.empty() && !cur_; }
    // The phase holding `ts` among the markers seen so far: the first span with begin <= ts < end, the phase
    // still open when it began at or before ts. Binary search while the spans are in time order.
    std::optional<std::string> at(std::uint64_t ts) const {
        if (ordered_) {
            // Every span ends at or before cur_ begins: the first span holding ts is the last one that
            // begins at or before it, and none holds a ts at or after cur_'s begin.
            if (cur_ && ts >= cur_->begin && (spans_.empty() || ts >= spans_.back().end)) return cur_->name;
            auto it = std::upper_bound(spans_.begin(), spans_.end(), ts,
                                       [](std::uint64_t t, const Span& s) { return t < s.begin; });
            if (it != spans_.begin() && ts < std::prev(it)->end) return std::prev(it)->name;
            // No span holds ts: cur_ does when it began at or before ts, as below.
            if (cur_ && ts >= cur_->begin) return cur_->name;
            return std::nullopt;
        }
        for (const auto& s : spans_)
            if (ts >= s.begin && ts < s.end) return s.name;
        if (cur_ && ts >= cur_->begin) return cur_->name;
        return std::nullopt;
    }

private:
    static constexpr std::string_view kBegin = "nvtrace-phase: ";
    static constexpr std::string_view kEnd = "nvtrace-phase-end";
    struct Span {
        std::uint64_t begin, end;
        std::string name;
    };
    std::vector<Span> spans_;
    std::optional<Span> cur_;
    bool ordered_ = true;
};

}  // namespace nvtrace::detail
