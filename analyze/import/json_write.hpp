// json_write.hpp: the direct JSON writer of the report's per-record arrays (private to analyze). A report of
// millions of calls or ioctls spends most of its writing time building one nlohmann::json object per record;
// these functions write the same bytes as `<record>_json(x).dump(-1, ' ', false, error_handler_t::replace)`
// of to_json() (keys in nlohmann's sorted order, the same string escaping, no spaces) straight into memory.
// Both take the fields from one table (../record_fields.hpp). tests/analyze/test_record_fields.cpp,
// tests/analyze/import/test_json_write.cpp and test_stream_report.cpp compare them with nlohmann's dump.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nvtrace/kernel_log.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::import {

// `s` as a JSON string, escaped as nlohmann::json::dump() does (ensure_ascii off). Text with bytes >= 0x80
// goes through nlohmann itself with error_handler_t::replace: invalid UTF-8 becomes U+FFFD, as everywhere
// else in write_json(), never an exception.
void append_json_string(std::string& out, std::string_view s);

// One record as the compact JSON object of docs/report-format.md (the element of its array in to_json()).
void append_call_json(std::string& out, const Call& c);             // calls[]
void append_ioctl_json(std::string& out, const IoctlRecord& i);     // ioctls[]
void append_ioctl_stat_json(std::string& out, const IoctlStat& s);  // ioctl_stats[]
void append_event_json(std::string& out, const EventRecord& e);     // events[]
void append_marker_json(std::string& out, const MarkerEntry& m);    // markers[]
void append_graph_json(std::string& out, const GraphNode& n);       // graph[]
void append_log_json(std::string& out, const KernelLogMessage& m);  // kernel_log[]
void append_api_call_json(std::string& out, const ApiCall& a);      // api_calls[]

// append_call_json into fixed memory (the --calls-jsonl writer's buffer): emit_call_json writes at most
// call_json_bound(c) bytes at `p` (it may store up to that many, past what it returns) and returns the end.
std::size_t call_json_bound(const Call& c);
char* emit_call_json(char* p, const Call& c);

// Hands `buf` to `out` once it holds about 1 MiB (and empties it); `force`: whatever it holds. `Out` has
// write(const char*, std::streamsize), as std::ostream has.
template <class Out>
void flush_buffer(Out& out, std::string& buf, bool force = false) {
    if (buf.empty() || (!force && buf.size() < (1u << 20) - 4096)) return;
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    buf.clear();
}

// The separator write_array() puts before an element: "\n  " before the first, ",\n  " before the others.
inline void append_element_separator(std::string& buf, bool first) {
    if (first)
        buf.append("\n  ", 3);
    else
        buf.append(",\n  ", 4);
}

// ` "KEY": [` ... `],` (`]` and a newline only when `last`) as write_json() lays out its arrays: one element
// a line, written through `buf` in 1 MiB writes. `append(buf, element)` appends one element.
template <class Out, class T, class Append>
void write_array(Out& out, std::string& buf, std::string_view key, const std::vector<T>& items, Append append,
                 bool last) {
    buf += " \"";
    buf += key;
    buf += "\": [";
    for (std::size_t i = 0; i < items.size(); ++i) {
        append_element_separator(buf, i == 0);
        append(buf, items[i]);
        flush_buffer(out, buf);
    }
    buf += items.empty() ? "]" : "\n ]";
    buf += last ? "\n" : ",\n";
}

}  // namespace nvtrace::import
