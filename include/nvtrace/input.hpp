// nvtrace/input.hpp: what an input is, decided in one place for every command that reads one (`report`,
// `check`, `diff`, `export`, `dmesg`; docs/report.md "Inputs").
//
// open_input takes a path as the user gave it: a file, a directory, a FIFO, a Unix socket, "-" (standard input) or
// a /dev/stdin, /dev/fd/N, /proc/self/fd/N name, and says what it is:
//  - a directory: a capture directory. `capture_dir` when meta.json has "capture_format" (raw ring-buffer pages
//    and their formats, nvtrace/capture_dir.hpp), `capture_dir_saved` when it holds a report only (meta.json
//    without "capture_format": written before the raw format; or a report.json without meta.json);
//  - anything else is read for its bytes: `saved_report` when the first non-blank byte is '{' (nvtrace.report/1,
//    docs/report-format.md), `trace_dat` for trace-cmd's magic, else `text` with the format detect_format finds
//    (nullopt when none fits: import_input then reads it as a kernel log or says what it expected).
//    `forced` (--format) skips the detection and the saved-report test: the kind is then trace_dat or text.
//    A directory is always a capture directory; with `forced` kernel_log (`dmesg`, `--kmsg`) it is an error.
//
// Read once: standard input, a FIFO, a socket (a named AF_UNIX socket is connected to, SOCK_STREAM, and read
// until the peer closes) and a character device standing for standard input (/dev/stdin on a terminal) can be
// read only once. Their bytes are read whole by open_input and kept in the Input (in memory, or in an unlinked
// file of `spool_dir` when one is given); nothing re-opens the path, so a peek never loses what it read. Other
// devices are refused (/dev/zero would be read until memory runs out). A regular file is mapped, not read; a
// regular file that says it is empty is read (tracefs `trace`, procfs files report size 0).
//
// Errors (all Error::usage, exit 2, each naming the path): "PATH: cannot open: REASON", "PATH: cannot read:
// REASON", "PATH: a device, not a trace file (...)", "<stdin>: empty input", "PATH: empty file";
// directories: "DIR: not a capture directory (no meta.json; `nvtrace run` writes one)", "DIR: no meta.json: an
// unfinished capture (nvtrace was killed before writing it?); its raw pages cannot be decoded without it" (a
// raw/ folder without meta.json), "DIR/meta.json: not valid JSON (damaged or unfinished capture)",
// "DIR/meta.json: cannot open: REASON". Error::environment: `spool_dir` cannot hold the copy.
//
// Thread-safety: open_input on different paths may run at once (`diff` opens its two inputs); an Input is
// read-only after open_input and may be read from several threads; it is move-only (it owns a mapping).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nvtrace/error.hpp"
#include "nvtrace/import.hpp"

namespace nvtrace {

enum class InputKind : std::uint8_t {
    capture_dir,        // a directory with meta.json "capture_format": re-analysed from its raw pages
    capture_dir_saved,  // a directory that holds a report only (before the raw format): its report.json
    saved_report,       // a saved report (nvtrace.report/1 JSON)
    trace_dat,          // trace-cmd's trace.dat
    text,               // a text format (Input::format), read by import_input
};

// "capture directory", "capture directory without raw data", "saved report", "trace-dat", "text".
std::string_view input_kind_name(InputKind k);

struct OpenOptions;

class Input {
public:
    Input() = default;
    Input(Input&& o) noexcept;
    Input& operator=(Input&& o) noexcept;
    Input(const Input&) = delete;
    Input& operator=(const Input&) = delete;
    ~Input();

    std::string path;  // as given ("-" for standard input)
    std::string name;  // for messages and report.source: "<stdin>" for "-", else `path`
    InputKind kind = InputKind::text;
    std::optional<TraceFormat> format;  // trace_dat and text: forced or detected; nullopt: no format fits
    bool read_once = false;             // stdin, FIFO, socket, terminal: `bytes()` is all there will ever be
    bool forced = false;                // `format` came from --format

    // Directories: what is in it (report.json is what check, diff and export read).
    bool has_report_json = false;

    // Not a directory: the whole content (mapped, or read once). Valid while the Input lives.
    std::string_view bytes() const { return {data_, size_}; }
    // bytes() is a mapping (of the file, or of the spooled copy): pages already read may be dropped
    // (madvise MADV_DONTNEED), the kernel reads them again if needed.
    bool mapped() const { return mapped_; }

    // `path` names a regular file that readers taking a path (libtracecmd) may open again; false for read-once
    // inputs and for standard input redirected from a file (the caller hands bytes() over instead).
    bool reopenable() const { return reopenable_; }

private:
    friend Result<Input> open_input(const std::string&, const OpenOptions&);
    const char* data_ = nullptr;
    std::size_t size_ = 0;
    bool mapped_ = false;  // data_ is an mmap of size_ bytes (a regular file, or a read-once input's copy)
    std::string memory_;   // a read-once input kept in memory
    bool reopenable_ = false;
    void release();
};

struct OpenOptions {
    std::optional<TraceFormat> forced;  // --format: no detection
    // Where a read-once input is copied (an unlinked file: disk instead of memory, `report - --calls-jsonl`);
    // "" keeps it in memory.
    std::string spool_dir;
    bool allow_empty = false;  // an empty input is an Input with no bytes (`--kmsg` of a quiet `dmesg > log`)
};

// What `path` is (see above).
Result<Input> open_input(const std::string& path, const OpenOptions& o);
inline Result<Input> open_input(const std::string& path, std::optional<TraceFormat> forced = std::nullopt) {
    return open_input(path, OpenOptions{forced, "", false});
}

// Whether `path` can be read only once ("-", a FIFO, a socket, a character device), told without opening it (which
// would consume it). open_input keeps such an input's bytes.
bool is_read_once(const std::string& path);

// The events of a trace_dat or text input (import_file's result for it). Errors: the readers' (Error::usage
// naming file:line; Error::environment for a trace.dat without libtracecmd), and Error::usage for an input
// whose kind is not a trace ("PATH: a saved report, not a trace", "DIR: a capture directory, not a trace file").
Result<ImportResult> import_input(const Input& in);

}  // namespace nvtrace
