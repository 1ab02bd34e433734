// graph_line.hpp: the pure tokenizers of function_graph text (private to analyze/import).
// A line goes in as a std::string_view, a plain struct of views into that line comes out; nothing is
// allocated. Formats: ../shared/reference/ftrace-formats.md sections 1 and 2; the kernel's
// kernel/trace/trace_functions_graph.c (print_graph_prologue, print_graph_duration, print_graph_irq,
// verif_pid, print_graph_retval) and trace-cmd's lib/trace-cmd/trace-ftrace.c.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "text_util.hpp"

namespace nvtrace::import {

// The function-call part of a line, after the prefix columns.
struct GraphBody {
    enum class Kind { none, entry, leaf, exit, comment, irq_enter, irq_exit, malformed };
    Kind kind = Kind::none;
    std::optional<std::uint64_t> duration_ns;  // DURATION column
    int depth = 0;                             // indentation / 2 after the separator's own spaces
    std::string_view function;                 // entry/leaf: the name; exit: the tail comment's name, if any
    std::string_view module;                   // "[module]" suffix, without brackets
    std::string_view args;                     // funcgraph-args text inside the parentheses
    std::string_view retaddr;                  // "<-caller+0x1a/0x40" without "<-"
    std::string_view comment;                  // comment lines: the text inside "/* */"
    std::optional<std::int64_t> retval;        // "/* = V */", "/* f = V */", "/* f ret=V */", " (ret=V)"
    std::string_view expected;                 // malformed: what was expected
    // Text after "{", ";" or "}" that is no "/* */" comment, " (ret=V)" or " (N)": not read (the call is kept;
    // StreamBuilder::graph counts it, diagnostic graph_unknown_tail).
    std::string_view unknown_tail;
};

// The columns after the CPU column, each optional, in the kernel's order: TASK/PID (" comm-pid | "),
// latency flags (" d..1 | "), DURATION ("<mark> <n> us |  ", or spaces for a nested entry), then the
// indented body. `base` is the number of spaces the last separator consumed before `rest` prints after
// itself (1 for the CPU column's ") ", 2 for "|  ", 0 at the start of a line).
struct GraphColumns {
    std::optional<CommPid> task;
    std::string_view lat_flags;
    GraphBody body;
};
// `first_bar`: rest.find('|') when the caller already looked (npos: none), to save searching again.
GraphColumns parse_graph_columns(std::string_view rest, int base, std::optional<std::size_t> first_bar = std::nullopt);

// The TASK/PID column of the last line that had one, kept by a reader across its lines: funcgraph-proc prints
// it on every line and a task's lines come in runs, so a column with the same bytes as last time gives the same
// comm and pid without being parsed again. It holds a copy of the bytes (no view into an earlier line).
struct TaskColumn {
    static constexpr std::size_t kMax = 32;  // longer columns are parsed every time
    char bytes[kMax] = {};
    std::size_t size = 0;  // 0: nothing cached
    std::size_t comm_at = 0, comm_size = 0;
    int pid = -1;
};
// One TaskColumn per CPU (by CPU number modulo kCpus): each CPU runs one task at a time while the lines of the
// CPUs interleave, so the column a line is compared with is the one its CPU printed last. Which slot a line
// uses never changes what it gives (a hit needs the same bytes), only how often the column is parsed.
struct TaskColumnCache {
    static constexpr std::size_t kCpus = 8;
    TaskColumn by_cpu[kCpus];
    TaskColumn& slot(int cpu) { return by_cpu[static_cast<unsigned>(cpu) % kCpus]; }
};

// The same into `c`, whatever it held before (a reader reuses one per-line struct: no zeroing, no copy);
// `first_bar` is rest.find('|'), already looked for. `task`, when given, is looked at and updated for the
// first column. `kernel_layout`: a DURATION column as the kernel prints it is read in one pass (the same
// result as the general reading, which takes every other column); false: the general reading alone, for tests
// that compare the two.
void parse_graph_columns(std::string_view rest, int base, std::size_t first_bar, GraphColumns& c,
                         TaskColumn* task = nullptr, bool kernel_layout = true);

// The body itself ("func() {", "f [mod](a=1);", "} /* f = -22 */", "/* text */", "==========>").
void parse_graph_body(std::string_view body, GraphBody& out);

// One line of function_graph `trace` / `trace_pipe` text.
struct FgraphLine {
    // annotation: "##### CPU N buffer started ####" (cpu = N; -1 for another "#####" line); elided: a " [..]"
    // or "..." row of an excerpt (is_elision_row).
    enum class Kind { blank, header, graph, banner, dashes, lost, overruns, annotation, elided, malformed };
    Kind kind = Kind::malformed;
    std::optional<std::uint64_t> ts_ns;  // funcgraph-abstime
    int cpu = -1;
    GraphColumns cols;
    CommPid prev, next;                  // banner
    std::optional<std::uint64_t> count;  // lost, overruns
    std::string_view header;             // header: the comment text after '#'
    std::string_view expected;           // malformed
};
FgraphLine tokenize_fgraph_line(std::string_view line);
// The same into `L`, whatever it held before: the fields the resulting kind uses are all set (prev and
// next are set for a banner only, count for lost and overruns only, header for header and annotation only).
// `tasks`: the reader's cache, the slot of the line's CPU used. `kernel_layout` as for parse_graph_columns.
void tokenize_fgraph_line(std::string_view line, FgraphLine& L, TaskColumnCache* tasks = nullptr,
                          bool kernel_layout = true);

}  // namespace nvtrace::import
