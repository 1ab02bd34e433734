// phases.hpp: the phase markers of docs/markers.md ("nvtrace-phase: NAME" starts phase NAME and ends the
// previous one, "nvtrace-phase-end" ends it), followed as a stream gives them (private to analyze). The one
// grammar of a phase marker: the builder (Phases), check, diff and the HTML timeline all read markers with it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvtrace::detail {

// One line of a marker, as a phase marker. `begin` names the phase it starts (the text after "nvtrace-phase: "
// without trailing blanks: a line written by echo or fprintf may end in spaces, a tab or "\r"); a begin marker
// whose name is empty after that ends the phase before it like "nvtrace-phase-end" and starts none.
struct PhaseLine {
    enum Kind { none, begin, end } kind = none;
    std::string_view name;  // begin only; points into the line
};

inline PhaseLine parse_phase_line(std::string_view line) {
    constexpr std::string_view kBegin = "nvtrace-phase: ";
    constexpr std::string_view kEnd = "nvtrace-phase-end";
    if (line.substr(0, kEnd.size()) == kEnd) return {PhaseLine::end, {}};
    if (line.substr(0, kBegin.size()) != kBegin) return {};
    std::string_view name = line.substr(kBegin.size());
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t' || name.back() == '\r'))
        name.remove_suffix(1);
    if (name.empty()) return {PhaseLine::end, {}};
    return {PhaseLine::begin, name};
}

// Calls f(PhaseLine) for each phase-marker line of one marker's text, in order. One write to trace_marker is
// one event, whatever it holds: each of its lines is a marker of its own ("nvtrace-phase: A\nnvtrace-phase: B"
// begins A and then B at that time), as the lines read one by one in the trace text.
template <class F>
void for_each_phase_line(std::string_view text, F&& f) {
    for (;;) {
        std::size_t nl = text.find('\n');
        PhaseLine p = parse_phase_line(text.substr(0, nl));
        if (p.kind != PhaseLine::none) f(p);
        if (nl == std::string_view::npos) return;
        text.remove_prefix(nl + 1);
    }
}

class Phases {
public:
    // Every marker text of the stream, in stream order, with its time (ns); each of its lines is read as a
    // marker of its own (for_each_phase_line).
    void marker(std::uint64_t ts_ns, std::string_view text) {
        for_each_phase_line(text, [&](const PhaseLine& p) { line(ts_ns, p); });
    }
    void line(std::uint64_t ts_ns, const PhaseLine& p) {
        if (cur_) {
            cur_->end = ts_ns;
            // In time order (the usual case) spans neither overlap nor go back: at() can search them.
            if (cur_->end < cur_->begin || (!spans_.empty() && cur_->begin < spans_.back().end)) ordered_ = false;
            spans_.push_back(std::move(*cur_));
            cur_.reset();
        }
        if (p.kind == PhaseLine::begin) cur_ = Span{ts_ns, UINT64_MAX, std::string(p.name)};
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
    struct Span {
        std::uint64_t begin, end;
        std::string name;
    };
    std::vector<Span> spans_;
    std::optional<Span> cur_;
    bool ordered_ = true;
};

}  // namespace nvtrace::detail
