// api_calls.hpp: uprobe entry/return events paired into API call spans per thread (Report::api_calls,
// nvtrace/report.hpp; private to analyze: the ReportBuilder's).
//
// What is an API event: an OtherEvent whose printed fields start the way a uprobe's do. The kernel's own print
// (kernel/trace/trace_uprobe.c, print_uprobe_event) is "(0x%lx)" for an entry probe and "(0x%lx <- 0x%lx)" for a
// return probe (the function's address, then the return address), each followed by " NAME=VALUE" per fetch-arg
// (trace_probe_tmpl.h print_probe_args); libtraceevent prints the event's print fmt instead (trace_probe.c,
// __set_print_fmt: "(%lx)" and "(%lx <- %lx)", hex without "0x"); a capture directory's records, decoded field
// by field, give the probe's fields by their names in the event format ("__probe_ip=7f..." for an entry,
// "__probe_func=7f... __probe_ret_ip=5d591b ret=30668" for a return: trace_probe.h FIELD_STRING_*). A kprobe's
// "(do_sys_open+0x0/0x80)" names a symbol and is not one. The entry probe is named after the function (F); the return
// probe F__return (nvtrace's and perf-probe's convention; a return probe named otherwise is paired by its own name).
//
// Pairing: a stack per pid (ftrace's pid is the thread). An entry opens a span under the innermost open one; a
// return of F closes the innermost open F (recursion pairs innermost first); the spans opened above it, whose
// returns were not seen, end with exit unknown (`api_call_unclosed`); a return with no open F is counted
// (`api_return_without_entry`). Spans still open after the last event end with exit unknown.
// Units: ns on the trace clock. Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nvtrace/event.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::detail {

// The fields of a uprobe event's print, or nullopt when `text` is not one (see above).
struct UprobePrint {
    bool is_return = false;
    std::map<std::string, std::string> fields;  // NAME=VALUE after the address head, as printed
};
std::optional<UprobePrint> parse_uprobe_print(std::string_view text);

// One ioctl as an API call's summary lists it: "NV_ESC_RM_ALLOC hClass NV01_ROOT_CLIENT(0x41)",
// "UVM_MAP_EXTERNAL_ALLOCATION", "0xc030462b ret=-22(EINVAL)": the request, its RM class, and how it failed (a
// status other than NV_OK, a nonzero ret, "ret=?" when the exit was not seen).
std::string api_ioctl_label(const IoctlRecord& io);

// "16 MiB" for 16777216, "1536 bytes" for 1536 (whole binary units only).
std::string format_bytes(std::uint64_t n);

class ApiCalls {
public:
    // `probes`: the capture's record of its uprobes (EventStream::uprobes). An event they name is a call of their
    // `symbol` (its version suffix dropped) in their `library`, of their `api`; any other is named from the event.
    // Probes armed late (a library mapped after the start) make finish() count `uprobes_armed_late` per file.
    explicit ApiCalls(const std::vector<CaptureUprobe>& probes = {});
    // One OtherEvent. The new span when `o` is an entry probe; nullptr otherwise (a return, or not a uprobe).
    // Whether it was an API event at all: is_api().
    ApiCall* add(const Event& ev, const OtherEvent& o, const std::map<int, std::string>& comms,
                 std::string_view file_name);
    bool empty() const { return calls_.empty(); }

    // The innermost API call of `pid` whose span holds `ts` (entry <= ts <= exit; an unknown exit holds all
    // until the span's caller returned, or the end); its id, or nullopt.
    std::optional<std::uint64_t> innermost(int pid, std::uint64_t ts) const;
    // The top API call of that chain (no parent): its function, for phases without markers.
    std::optional<std::string> top_function(int pid, std::uint64_t ts) const;

    // An ioctl (its index in Report::ioctls) / a root call (its id) entered at `ts` on `pid`: listed under the
    // innermost span holding it.
    void ioctl(std::uint64_t index, const IoctlRecord& io);
    void call(std::uint64_t id, int pid, std::uint64_t ts);

    // After the last event: ends the open spans, counts the diagnostics into `cm` (with their reasons). The
    // calls by id.
    std::vector<ApiCall> finish(Completeness& cm);

private:
    struct Open {
        std::uint64_t index;  // into calls_
        std::string event;    // the entry probe's event name, which its return's name repeats
    };
    std::map<std::pair<std::string, std::string>, CaptureUprobe> probes_;  // (group, entry event) ->
    std::vector<ApiCall> calls_;
    std::vector<std::uint64_t> limit_;                            // per call: the latest ts its span may hold
    std::unordered_map<int, std::vector<std::uint64_t>> by_pid_;  // indexes into calls_, in entry order
    std::unordered_map<int, std::vector<Open>> open_;
    std::uint64_t orphans_ = 0, unclosed_ = 0;
    std::string first_orphan_, first_unclosed_;
    // Files whose probes were armed after the program mapped them (CaptureUprobe::late_pid): one line each.
    std::vector<std::string> late_files_;
    std::string place(const Event& ev, std::string_view function, std::string_view file_name) const;
    std::optional<std::size_t> innermost_index(int pid, std::uint64_t ts) const;
};

}  // namespace nvtrace::detail
