// stream_builder.hpp: turns tokenized lines into Events (private to analyze/import). Shared by the
// function_graph text reader and the trace-cmd report reader, so both rebuild calls the same way.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph_line.hpp"
#include "nvtrace/error.hpp"
#include "nvtrace/event.hpp"

namespace nvtrace::import {

// Where one line's events happened.
struct LineCtx {
    std::uint64_t ts_ns = 0;
    bool ts_known = false;
    int cpu = -1;
    int pid = -1;
    bool irq = false;  // from latency flags
    std::uint32_t line = 0;
};

class StreamBuilder {
public:
    // `text` sizes the event vector up front (about one event per line, leaves two): growing a vector of
    // 1e6+ events by doubling costs more than parsing them.
    StreamBuilder(std::string_view file_name, std::string_view text);

    // Entry, leaf, exit, comment or irq marker. Comments become events (comment_event).
    void graph(const LineCtx& ctx, const GraphBody& body);
    void push(const LineCtx& ctx, EventBody body);
    void lost(const LineCtx& ctx, std::optional<std::uint64_t> count);
    // "(Overruns: N)" after a return line: belongs to the last FuncExit.
    bool overruns(std::uint64_t n);
    void malformed(std::uint32_t line, std::string_view expected, std::string_view found);
    void comm(int pid, std::string_view comm);

    EventStream& stream() { return stream_; }
    std::size_t size() const { return stream_.events.size(); }

    // Sorts by timestamp when the text had them and was out of order (counted), fails when nothing usable
    // was read: `what` names the lines that were expected.
    Result<EventStream> finish(std::string_view what);

private:
    struct TaskState {
        std::vector<int> open;  // depths of the open entries
        int irq_floor = -1;     // depth of an interrupt entered with no marker, while it runs
    };
    TaskState& task(const LineCtx& ctx);
    bool in_irq(const LineCtx& ctx, TaskState& t, int depth, bool entering);

    std::string file_;
    EventStream stream_;
    std::unordered_map<std::int64_t, TaskState> tasks_;
    std::unordered_map<int, int> irq_markers_;  // cpu -> open "==========>" scopes
    std::optional<std::size_t> last_exit_;
    std::uint32_t first_malformed_line_ = 0;
    std::string first_malformed_;
};

// A function_graph comment ("/* console: ... */", "/* irq_handler_entry: irq=17 ... */", trace_printk text).
EventBody comment_event(std::string_view text);

}  // namespace nvtrace::import
