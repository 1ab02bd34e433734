// Prefixed event text: the function tracer's `trace` (kernel/trace/trace_output.c) and `trace-cmd report`
// (trace-cmd's trace-read.c and lib/trace-cmd/trace-ftrace.c). Both print every record behind
// "comm-pid [cpu] flags ts: " (ftrace-formats.md section 2); the readers share this file.
#include <algorithm>
#include <string>

#include "graph_line.hpp"
#include "nvtrace/import.hpp"
#include "stream_builder.hpp"

namespace nvtrace {

using namespace import;

namespace {

struct FunctionHit {
    std::string_view function, module, parent;
};

// "f <-parent" (kernel, "%ps <-%ps"), "f <-- parent" (trace-cmd), "f [mod] <-p [mod]", "f+0x0/0x10 <-p+0x4c/0x1b0".
std::optional<FunctionHit> parse_function_hit(std::string_view body) {
    body = trim(body);
    std::size_t arrow = body.find(" <-");
    if (arrow == std::string_view::npos || arrow == 0) return std::nullopt;
    std::string_view left = trim(body.substr(0, arrow));
    std::string_view right = body.substr(arrow + 3);
    if (!right.empty() && right[0] == '-') right.remove_prefix(1);
    right = trim(right);
    if (right.empty() || left.find(':') != std::string_view::npos) return std::nullopt;
    FunctionHit h;
    std::size_t sp = left.find(' ');
    h.function = left.substr(0, sp);
    if (sp != std::string_view::npos) {
        std::string_view m = trim(left.substr(sp));
        if (starts_with(m, "[") && ends_with(m, "]")) h.module = m.substr(1, m.size() - 2);
    }
    if (std::size_t plus = h.function.find('+'); plus != std::string_view::npos && plus > 0)
        h.function = h.function.substr(0, plus);  // sym-offset
    h.parent = right;
    return h;
}

enum class Mode { function_text, trace_cmd };

Result<EventStream> read_event_text(std::string_view text, std::string_view file_name, Mode mode) {
    StreamBuilder b(file_name, text);
    struct PendingStack {
        LineCtx ctx;
        std::string name;  // "kernel_stack" / "user_stack"
        std::string frames;
        bool open = false;
    } stack;
    auto flush_stack = [&] {
        if (!stack.open) return;
        b.push(stack.ctx, OtherEvent{"ftrace", stack.name, std::move(stack.frames)});
        stack.frames.clear();
        stack.open = false;
    };

    LineSplitter lines(text);
    std::string_view line;
    std::uint64_t last_ts = 0;
    int started_cpu = -1;  // "##### CPU N buffer started ####" not given its time yet: N, and its line
    std::uint32_t started_line = 0;
    // "CPU:N [LOST M EVENTS]" (kernel/trace/trace.c, print_trace_line) and "CPU:N [M EVENTS DROPPED]" (trace-cmd's
    // trace-read.c, for a record with missed_events) are printed with CPU N's first record after the loss: the
    // gap waits for CPU N's next line and takes its time (as a page's missed events take the time of the page's
    // first record). A mark no line of its CPU follows (a cut trace) has no time.
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
    while (lines.next(line)) {
        std::uint32_t n = lines.number();
        std::string_view s = line;
        while (!s.empty() && s[0] == '\t')
            s.remove_prefix(1);
        std::string_view t = trim(s);
        if (starts_with(t, "=>")) {  // a stack frame: " => fn" (kernel), "=> fn (ffffffff81234567)" (trace-cmd)
            if (!stack.open) {
                b.malformed(n, "'<stack trace>' before a ' => frame' line", line);
                continue;
            }
            std::string_view f = trim(t.substr(2));
            if (ends_with(f, ")")) {
                std::size_t paren = f.rfind(" (");
                if (paren != std::string_view::npos) f = trim(f.substr(0, paren));
            }
            if (!stack.frames.empty()) stack.frames.push_back('\n');
            append_utf8_clean(stack.frames, f);
            continue;
        }
        flush_stack();
        if (t.empty()) continue;
        if (t[0] == '#') {
            if (auto cpu = parse_buffer_started(t)) {
                started_cpu = *cpu;  // given the time of the first event after it
                started_line = n;
            } else
                b.header(trim(t.substr(1)));
            continue;
        }
        if (is_elision_row(t)) {
            LineCtx ctx;
            ctx.line = n;
            ctx.ts_ns = last_ts;
            ctx.ts_known = last_ts != 0;
            b.lost(ctx, std::nullopt, LostEvents::Kind::elided);
            continue;
        }
        // trace-cmd's preamble (v6 files and `trace-cmd report` of several CPUs): "version = 6",
        // "CPU 0 is empty", "cpus=2".
        if (starts_with(t, "version = ") || starts_with(t, "cpus=") ||
            (starts_with(t, "CPU ") && ends_with(t, " is empty")))
            continue;
        if (starts_with(t, "CPU:")) {
            // "CPU:%d [%lld EVENTS DROPPED]", "CPU:%d [EVENTS DROPPED]" (trace-cmd), "CPU:%d [LOST %lu EVENTS]"
            std::size_t sp = t.find(' ');
            auto cpu = parse_int(t.substr(4, sp == t.npos ? t.npos : sp - 4));
            std::string_view r = sp == t.npos ? std::string_view() : trim(t.substr(sp));
            LineCtx ctx;
            ctx.line = n;
            ctx.ts_ns = last_ts;
            ctx.ts_known = true;
            if (cpu && r == "[EVENTS DROPPED]") {
                ctx.cpu = *cpu;
                pending_loss.push_back({ctx, std::nullopt});
                continue;
            }
            if (cpu && starts_with(r, "[") && ends_with(r, " EVENTS DROPPED]")) {
                ctx.cpu = *cpu;
                pending_loss.push_back({ctx, parse_u64(r.substr(1, r.size() - 1 - 16))});
                continue;
            }
            if (cpu && starts_with(r, "[LOST ") && ends_with(r, " EVENTS]")) {
                ctx.cpu = *cpu;
                pending_loss.push_back({ctx, parse_u64(r.substr(6, r.size() - 6 - 8))});
                continue;
            }
            b.malformed(n, "'CPU:N [M EVENTS DROPPED]'", line);
            continue;
        }
        auto p = parse_prefix(s);
        std::string_view body;
        LineCtx ctx;
        ctx.line = n;
        if (p) {
            ctx.cpu = p->cpu;
            ctx.pid = p->task.pid;
            ctx.ts_ns = *p->ts_ns;
            ctx.ts_known = true;
            last_ts = ctx.ts_ns;
            if (!pending_loss.empty() && ctx.cpu >= 0) place_losses(ctx.cpu, ctx.ts_ns);
            ctx.irq = lat_flags_irq(p->flags);
            b.comm(p->task.pid, p->task.comm);
            body = p->body;
            if (started_cpu >= 0) {
                LineCtx at = ctx;
                at.line = started_line;
                at.cpu = started_cpu;
                at.pid = -1;
                at.irq = false;
                b.lost(at, std::nullopt, LostEvents::Kind::buffer_started);
                started_cpu = -1;
            }
        } else if (mode == Mode::function_text && parse_function_hit(t)) {
            body = t;  // nocontext-info: no prefix at all
        } else {
            b.malformed(n,
                        mode == Mode::trace_cmd ? "an event line ('comm-pid [cpu] ts: event: ...')"
                                                : "a trace line ('comm-pid [cpu] flags ts: func <-parent')",
                        line);
            continue;
        }
        std::string_view bt = trim(body);
        if (bt == "<stack trace>" || bt == "<user stack trace>") {
            stack = {ctx, bt == "<stack trace>" ? "kernel_stack" : "user_stack", {}, true};
            continue;
        }
        std::size_t i = 0;
        while (i < bt.size() && is_ident_char(bt[i]))
            ++i;
        std::string_view name = i > 0 && i < bt.size() && bt[i] == ':' ? bt.substr(0, i) : std::string_view();
        std::string_view rest = name.empty() ? bt : bt.substr(i + 1);
        if (name == "funcgraph_entry" || name == "funcgraph_exit" || name == "fgraph_retaddr_entry") {
            GraphColumns c = parse_graph_columns(rest, 0);
            if (c.body.kind == GraphBody::Kind::malformed) {
                b.malformed(n, c.body.expected, line);
                continue;
            }
            b.graph(ctx, c.body);
            continue;
        }
        if (name == "kernel_stack" || name == "user_stack") {
            stack = {ctx, std::string(name), {}, true};
            continue;
        }
        std::string_view hit_text = name == "function" ? rest : bt;
        if (auto h = parse_function_hit(hit_text); h && (name.empty() || name == "function")) {
            std::string fn = clean(h->function);
            std::optional<std::string> mod;
            if (!h->module.empty()) mod = clean(h->module);
            b.push(ctx, OtherEvent{"ftrace", "function", "ip=" + fn + " parent_ip=" + clean(h->parent)});
            FuncEntry e;
            e.function = fn;
            e.module = mod;
            b.push(ctx, std::move(e));
            FuncExit x;  // the function tracer records entries only: no duration
            x.function = std::move(fn);
            x.module = std::move(mod);
            b.push(ctx, std::move(x));
            continue;
        }
        if (auto ev = event_from_body(bt)) {
            b.push(ctx, std::move(*ev));
            continue;
        }
        b.push(ctx, Marker{clean(bt)});  // trace_printk text without a recognisable head
    }
    flush_stack();
    place_losses(-1, std::nullopt);
    if (started_cpu >= 0) {  // nothing followed it
        LineCtx at;
        at.line = started_line;
        at.cpu = started_cpu;
        at.ts_ns = last_ts;
        at.ts_known = last_ts != 0;
        b.lost(at, std::nullopt, LostEvents::Kind::buffer_started);
    }
    b.check_last_line(text, lines.number());
    return b.finish(mode == Mode::trace_cmd ? "trace-cmd report event lines ('comm-pid [cpu] ts: event: ...')"
                                            : "trace lines ('comm-pid [cpu] flags ts: func <-parent')");
}

}  // namespace

Result<EventStream> read_function_text(std::string_view text, std::string_view file_name) {
    return read_event_text(text, file_name, Mode::function_text);
}

Result<EventStream> read_trace_cmd_report(std::string_view text, std::string_view file_name) {
    return read_event_text(text, file_name, Mode::trace_cmd);
}

}  // namespace nvtrace
