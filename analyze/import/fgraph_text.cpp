// function_graph text: `trace`, `trace_pipe`, perf ftrace (ftrace-formats.md section 1).
#include <algorithm>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "graph_line.hpp"
#include "nvtrace/import.hpp"
#include "stream_builder.hpp"

namespace nvtrace {

using namespace import;

namespace {
constexpr std::size_t kDrainChunk = 1 << 16;       // events held before a drain
constexpr std::size_t kParentLookahead = 1 << 16;  // lines looked at for the returns of an entry's missing parents

struct MissingParent {
    int depth;
    std::string_view function;  // from the return's tail comment; empty for a bare "}"
};

// An entry at `depth` whose task has nothing open has its parents' entries outside the excerpt. The kernel
// prints each return at its call's depth (trace_functions_graph.c), so scanning on from `from` on that CPU
// (and task, `pid` >= 0, when the TASK/PID column is printed): the first line below `depth` is a "}" at
// depth - 1 when the parent returns inside the excerpt, the next line below that a "}" at depth - 2 for the
// grandparent, and so on. `out` gets those returns, innermost first; `stop` the line where the scan ended.
void find_missing_parents(std::string_view text, std::size_t from, int cpu, int pid, int depth,
                          std::vector<MissingParent>& out, const char*& stop) {
    out.clear();
    int level = depth - 1;
    FgraphLine L;
    TaskColumnCache tasks;  // the lines looked at are read like the reader's own
    std::size_t pos = from;
    for (std::size_t n = 0; n < kParentLookahead && pos < text.size() && level >= 0; ++n) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        stop = line.data();
        pos = nl + 1;
        tokenize_fgraph_line(line, L, &tasks);
        if (L.kind == FgraphLine::Kind::elided) return;  // what the gap held is not known
        if (L.cpu != cpu) continue;
        if (L.kind == FgraphLine::Kind::banner || L.kind == FgraphLine::Kind::lost ||
            L.kind == FgraphLine::Kind::annotation)
            return;
        if (L.kind != FgraphLine::Kind::graph) continue;
        const GraphBody& b = L.cols.body;
        if (pid >= 0 && L.cols.task && L.cols.task->pid != pid) continue;
        if (b.kind != GraphBody::Kind::entry && b.kind != GraphBody::Kind::leaf && b.kind != GraphBody::Kind::exit)
            continue;
        if (b.depth > level) continue;
        if (b.kind != GraphBody::Kind::exit || b.depth != level) return;
        out.push_back({level, b.function});
        --level;
    }
}
// Events a CPU with no known pid may hold back (for backfill_pid at its first context-switch banner) before
// they go on with the pid unknown: about 35 MB of pending records. Without the cap a CPU whose task never
// switches would hold the rest of the file.
constexpr std::size_t kBackfillMax = 1 << 18;
}  // namespace

namespace import {

Result<EventStream> read_fgraph_text_into(std::string_view text, StreamBuilder& b) {
    struct CpuState {
        int pid = -1;                                 // from the last context-switch banner
        std::size_t first_unknown = std::size_t(-1);  // first event on this CPU with no pid, for backfill
        bool no_backfill = false;  // gave up waiting for a banner (kBackfillMax): pids stay unknown until one
        int no_parent_depth = -1;  // an entry at this depth before no_parent_until found no parent's return
        const char* no_parent_until = nullptr;
    };
    std::unordered_map<int, CpuState> cpus;
    CpuState* last_cs = nullptr;  // cpus[last_cpu]: lines of one CPU come in runs
    int last_cpu = 0;
    auto cpu_state = [&](int cpu) -> CpuState& {
        if (!last_cs || cpu != last_cpu) {
            last_cs = &cpus[cpu];  // stable: an unordered_map never moves its elements
            last_cpu = cpu;
        }
        return *last_cs;
    };
    std::uint64_t last_ts = 0;
    bool any_ts = false;
    // "CPU:N [LOST M EVENTS]" waiting for CPU N's next line: ftrace prints the mark as part of that line
    // (kernel/trace/trace.c, print_trace_line), the first event the CPU recorded after the loss, so the gap comes
    // before it with its time (as a page's missed events take the time of its first record). A mark that no line
    // of its CPU follows (a cut trace), or whose line has no timestamp (no abstime column), has no time.
    struct PendingLoss {
        LineCtx ctx;
        std::optional<std::uint64_t> count;
    };
    std::vector<PendingLoss> pending_loss;
    auto place_losses = [&](int cpu, std::optional<std::uint64_t> ts) {
        auto last = std::stable_partition(pending_loss.begin(), pending_loss.end(),
                                          [&](const PendingLoss& p) { return cpu >= 0 && p.ctx.cpu != cpu; });
        for (auto p = last; p != pending_loss.end(); ++p) {
            // No line of its CPU after it: no time of its own, but it keeps its place (the time of the line
            // before it), not 0, which read as a timestamp going back and sorted it to the front.
            p->ctx.ts_ns = ts.value_or(p->ctx.ts_ns);
            p->ctx.ts_known = ts.has_value();
            b.lost(p->ctx, p->count);
        }
        pending_loss.erase(last, pending_loss.end());
    };
    std::size_t next_drain = kDrainChunk;  // held events (size() - base()) at which to drain next

    LineSplitter lines(text);
    std::string_view line;
    std::vector<MissingParent> parents;
    FgraphLine L;  // reused: tokenize_fgraph_line sets what each kind of line uses
    TaskColumnCache tasks;
    while (lines.next(line)) {
        tokenize_fgraph_line(line, L, &tasks);
        std::uint32_t n = lines.number();
        if (!pending_loss.empty() && L.kind == FgraphLine::Kind::graph && L.cpu >= 0) place_losses(L.cpu, L.ts_ns);
        LineCtx ctx;
        ctx.line = n;
        ctx.cpu = L.cpu;
        if (L.ts_ns) {
            last_ts = *L.ts_ns;
            any_ts = true;
        }
        ctx.ts_ns = last_ts;
        ctx.ts_known = any_ts;
        switch (L.kind) {
            case FgraphLine::Kind::blank:
            case FgraphLine::Kind::dashes:
                continue;
            case FgraphLine::Kind::header:
                b.header(L.header);
                continue;
            case FgraphLine::Kind::annotation:
                if (L.cpu >= 0) b.lost(ctx, std::nullopt, LostEvents::Kind::buffer_started);
                continue;
            case FgraphLine::Kind::elided:
                ctx.cpu = -1;  // the row names no CPU
                b.lost(ctx, std::nullopt, LostEvents::Kind::elided);
                continue;
            case FgraphLine::Kind::malformed:
                b.malformed(n, L.expected.empty() ? "a function_graph line" : L.expected, line);
                continue;
            case FgraphLine::Kind::overruns:
                if (!b.overruns(*L.count)) b.malformed(n, "a return line before '(Overruns: N)'", line);
                continue;
            case FgraphLine::Kind::lost:
                pending_loss.push_back({ctx, L.count});
                continue;
            case FgraphLine::Kind::banner: {
                CpuState& cs = cpu_state(L.cpu);
                // Lines of this CPU before its first banner ran as the task switched out.
                if (cs.pid < 0 && cs.first_unknown != std::size_t(-1))
                    b.backfill_pid(cs.first_unknown, L.cpu, L.prev.pid);  // drain() kept them all
                cs.first_unknown = std::size_t(-1);
                cs.no_backfill = false;
                cs.pid = L.next.pid;
                b.comm(L.prev.pid, L.prev.comm);
                b.comm(L.next.pid, L.next.comm);
                ctx.pid = L.prev.pid;
                b.push(ctx,
                       OtherEvent{"nvtrace", "task_switch",
                                  "prev_comm=" + clean(L.prev.comm) + " prev_pid=" + std::to_string(L.prev.pid) +
                                      " next_comm=" + clean(L.next.comm) + " next_pid=" + std::to_string(L.next.pid)});
                continue;
            }
            case FgraphLine::Kind::graph:
                break;
        }
        const GraphColumns& c = L.cols;
        CpuState& cs = cpu_state(L.cpu);
        if (c.task) {
            ctx.pid = c.task->pid;
            b.comm(c.task->pid, c.task->comm);
        } else {
            ctx.pid = cs.pid;
        }
        if (!c.lat_flags.empty()) ctx.irq = lat_flags_irq(c.lat_flags);
        // The entries inferred for this line's missing parents are its task's too: a later banner's pid goes to them
        // as well (before, the inferred parents kept pid -1, on a stack of their own that nothing closed).
        std::size_t before = b.size();
        if ((c.body.kind == GraphBody::Kind::entry || c.body.kind == GraphBody::Kind::leaf) && c.body.depth > 0 &&
            b.nothing_open(ctx) && !(cs.no_parent_depth == c.body.depth && line.data() < cs.no_parent_until)) {
            const char* stop = nullptr;
            std::size_t next = static_cast<std::size_t>(line.data() - text.data()) + line.size() + 1;
            find_missing_parents(text, next, L.cpu, c.task ? c.task->pid : -1, c.body.depth, parents, stop);
            for (auto p = parents.rbegin(); p != parents.rend(); ++p)
                b.inferred_entry(ctx, p->function, p->depth);
            if (parents.empty()) {  // siblings before `stop` at this depth need not look again
                cs.no_parent_depth = c.body.depth;
                cs.no_parent_until = stop;
            }
        }
        b.graph(ctx, c.body);
        if (ctx.pid < 0 && b.size() > before && cs.first_unknown == std::size_t(-1) && !cs.no_backfill)
            cs.first_unknown = before;
        if (b.draining() && b.size() - b.base() >= next_drain) {
            // Events a later banner may still give a pid stay, up to kBackfillMax of them.
            std::size_t upto = b.size();
            for (auto& [cpu, st] : cpus) {
                if (st.pid >= 0 || st.first_unknown == std::size_t(-1)) continue;
                if (b.size() - st.first_unknown > kBackfillMax) {
                    count_diagnostic(b.stream().diagnostics, Diag::pid_backfill_limit,
                                     fmt::format("{}:{}: cpu {}: no context-switch banner within {} events of its "
                                                 "first line; its lines until one keep the pid unknown",
                                                 b.stream().file_name, n, cpu, kBackfillMax));
                    st.first_unknown = std::size_t(-1);
                    st.no_backfill = true;
                    continue;
                }
                upto = std::min(upto, st.first_unknown);
            }
            b.drain(upto);
            b.consumed(line.data());  // or before the first name a kept event still views
            // Held back events are scanned by each drain: the next one waits for kDrainChunk new events.
            next_drain = b.size() - b.base() + kDrainChunk;
        }
    }
    place_losses(-1, std::nullopt);
    b.check_last_line(text, lines.number());
    return b.finish("function_graph lines (' 0)   1.234 us    |  func();')");
}

}  // namespace import

Result<EventStream> read_fgraph_text(std::string_view text, std::string_view file_name) {
    StreamBuilder b(file_name, text);
    return read_fgraph_text_into(text, b);
}

}  // namespace nvtrace
