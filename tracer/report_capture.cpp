#include "report_capture.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext/stdio_filebuf.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "capture.hpp"
#include "nvtrace/capture_dir.hpp"
#include "nvtrace/expect.hpp"
#include "nvtrace/stream_report.hpp"
#include "nvtrace/visible_text.hpp"
#include "scenario.hpp"
#include "stderr_note.hpp"
#include "summary.hpp"

namespace nvtrace::cli {

namespace {

// --calls-jsonl OUT: the calls go into an unlinked file beside OUT (O_TMPFILE; a named ".OUT.nvtrace-XXXXXX" that is
// removed on every exit where the file system has none), which gets OUT's name only once the report is complete
// (commit). An input found unusable part way, a failed check file or a signal leave OUT as it was: never a file of
// half the calls under the name a notebook reads. OUT that is not a regular file or absent (a FIFO, /dev/null,
// a symbolic link) is written directly, as before.
class CallsJsonlFile {
public:
    CallsJsonlFile() = default;
    CallsJsonlFile(const CallsJsonlFile&) = delete;
    CallsJsonlFile& operator=(const CallsJsonlFile&) = delete;
    ~CallsJsonlFile() {
        os_.reset();
        buf_.reset();
        if (fd_ >= 0) ::close(fd_);
        if (!temp_name_.empty()) ::unlink(temp_name_.c_str());
    }

    // false with errno set when it cannot be created.
    bool open(const std::string& path) {
        path_ = path;
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
            direct_.emplace(path, std::ios::trunc | std::ios::binary);
            return static_cast<bool>(*direct_);
        }
        std::string dir = std::filesystem::path(path).parent_path().string();
        if (dir.empty()) dir = ".";
        fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
        if (fd_ < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
            std::string name =
                fmt::format("{}/.{}.nvtrace-XXXXXX", dir, std::filesystem::path(path).filename().string());
            fd_ = ::mkostemp(name.data(), O_CLOEXEC);
            if (fd_ >= 0) temp_name_ = name;
        }
        if (fd_ < 0) return false;
        if (fd_ <= STDERR_FILENO) {  // standard output closed: never write the calls into "standard output"
            int moved = ::fcntl(fd_, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
            int err = errno;
            ::close(fd_);
            fd_ = moved;
            errno = err;
            if (fd_ < 0) return false;
        }
        buf_ = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd_, std::ios::out | std::ios::binary, 1 << 16);
        os_ = std::make_unique<std::ostream>(buf_.get());
        return true;
    }
    std::ostream& stream() { return direct_ ? *direct_ : *os_; }

    // Gives the written file OUT's name (replacing what had it). false with errno set when it cannot.
    bool commit() {
        if (!stream().flush()) return false;
        if (direct_) return true;
        if (temp_name_.empty()) {
            // A name for the unlinked file beside OUT, then rename(2) over OUT (linkat cannot replace a file).
            std::string name = fmt::format("{}.nvtrace-{}", path_, ::getpid());
            ::unlink(name.c_str());
            if (::linkat(AT_FDCWD, fmt::format("/proc/self/fd/{}", fd_).c_str(), AT_FDCWD, name.c_str(),
                         AT_SYMLINK_FOLLOW) != 0)
                return false;
            temp_name_ = name;
        }
        if (::rename(temp_name_.c_str(), path_.c_str()) != 0) return false;
        temp_name_.clear();
        return true;
    }

private:
    std::string path_;
    std::optional<std::ofstream> direct_;
    int fd_ = -1;
    std::string temp_name_;
    std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> buf_;
    std::unique_ptr<std::ostream> os_;
};

// "program: CMD (pid P, exit N)" and "tracer: MODE", from meta.json (docs/run.md "Summary").
void print_program(const CaptureMeta& meta) {
    std::string status = meta.exit_code ? fmt::format("exit {}", *meta.exit_code)
                         : meta.signal  ? fmt::format("killed by signal {} ({})", *meta.signal, strsignal(*meta.signal))
                                        : "unknown";
    if (meta.timed_out) status += ", timed out";
    if (!meta.descendants_ended.empty())
        status += fmt::format(", {} process(es) it left running ended", meta.descendants_ended.size());
    fmt::print("program: {} (pid {}, {})\n", visible(fmt::format("{}", fmt::join(meta.command, " "))),
               meta.pid ? std::to_string(*meta.pid) : std::string("unknown"), status);
    fmt::print("tracer: {}\n", meta.absent_keys.count("tracer_mode") ? "unknown" : meta.tracer_mode);
}

// The reason a scenario program gave for exiting kScenarioCannotRun ("nvtrace-cannot-run: REASON" marker).
std::string cannot_run_reason(const Report& r, const std::string& program) {
    constexpr std::string_view prefix = "nvtrace-cannot-run: ";
    for (const auto& m : r.markers)
        if (m.text.rfind(prefix, 0) == 0) {
            std::string t = m.text.substr(prefix.size());
            while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
                t.pop_back();
            return t;
        }
    return fmt::format("{} exited {} (requirements not met; its stderr says which)", program,
                       tracer::kScenarioCannotRun);
}

// The expectations the run checked (docs/report.md "Capture directory"): the copy the run kept in the capture
// directory (meta.json "expectations_copy"), read as the recorded path so that messages and checks are the run's.
// A capture made before the copy: the recorded path, a relative one against the run's working directory
// ("working_dir") when meta.json has it; without it the path cannot be resolved and the error says why.
Result<ExpectFile> run_expectations(const std::string& dir, const CaptureMeta& meta, const std::string& recorded) {
    namespace fs = std::filesystem;
    if (meta.expectations_copy) {
        const fs::path copy(*meta.expectations_copy);
        bool inside = copy.is_relative() && !copy.empty();
        for (const auto& part : copy)
            inside = inside && part != "..";
        if (!inside)
            return fail(
                Error::usage(fmt::format("{}/meta.json: expectations_copy \"{}\" is not a path inside the "
                                         "capture directory",
                                         dir, *meta.expectations_copy)));
        const fs::path p = fs::path(dir) / copy;
        std::ifstream in(p, std::ios::binary);
        if (!in)
            return fail(Error::usage(fmt::format("their copy {} (meta.json expectations_copy) cannot be opened: {}",
                                                 p.string(), std::strerror(errno))));
        std::ostringstream bytes;
        bytes << in.rdbuf();
        return parse_expectations(bytes.str(), recorded);
    }
    if (fs::path(recorded).is_absolute()) return read_expectations_file(recorded);
    if (!meta.working_dir)
        return fail(Error::usage(fmt::format(
            "{} is a relative path, and this capture (made before nvtrace kept the expectations in the capture "
            "directory) does not record the directory the run was started in; give the file with --expect FILE",
            recorded)));
    auto ex = read_expectations_file((fs::path(*meta.working_dir) / recorded).string());
    if (ex) ex->file_name = recorded;
    return ex;
}

// The run's checks again: a scenario that said it cannot run here is not checked (report.source.cannot_run);
// else its expectations (the capture's copy, or `expect` given to `nvtrace report DIR --expect F`) and, for a
// scenario, the program's own verdict.
void redo_checks(Report& report, const std::string& dir, const CaptureMeta& meta, const std::string& expect,
                 CaptureReport& out) {
    const ReportSource& captured = report.source;
    if (captured.scenario && meta.exit_code == tracer::kScenarioCannotRun) {
        out.cannot_run = cannot_run_reason(report, meta.command.empty() ? std::string() : meta.command[0]);
        report.source.cannot_run = *out.cannot_run;
        return;
    }
    if (!expect.empty()) {
        auto ex = read_expectations_file(expect);
        if (!ex) {
            tracer::note("nvtrace: --expect {}\n", ex.error().message);
            out.exit_code = static_cast<int>(ex.error().code);
            return;
        }
        report.source.expectations = expect;
        report.checks = check_report(report, *ex);
    } else if (captured.expectations) {
        auto ex = run_expectations(dir, meta, *captured.expectations);
        if (!ex)
            tracer::note("nvtrace: the run's expectations {} are not checked: {}\n", *captured.expectations,
                         ex.error().message);
        else
            report.checks = check_report(report, *ex);
    }
    if (captured.scenario)
        report.checks.insert(report.checks.begin(), tracer::scenario_program_check(meta.exit_code, meta.signal));
}

// The summary around the body: the program lines first, the checks and the caller's tail after.
ReportSinks with_capture_summary(ReportSinks s, const CaptureMeta& meta, const Report& report) {
    auto head = s.head;
    s.head = [head, &meta] {
        if (head) head();
        print_program(meta);
    };
    auto tail = s.tail;
    s.tail = [tail, &report] {
        if (!report.checks.empty()) tracer::print_checks(report.checks, false);
        if (tail) tail();
    };
    return s;
}

}  // namespace

CaptureReport report_and_write(const Input& in, ReportSinks sinks, CaptureReportOptions o) {
    CaptureReport out;
    auto failed = [&](int code) {
        out.exit_code = code;
        return out;
    };
    std::optional<CallsJsonlFile> calls;
    if (!o.calls_jsonl.empty() && !calls.emplace().open(o.calls_jsonl)) {
        tracer::note("nvtrace {}: cannot write {}: {}\n", sinks.command, o.calls_jsonl, std::strerror(errno));
        return failed(static_cast<int>(ExitCode::environment));
    }
    ReportRequest req;
    // Nothing reaches standard output before the end: an input found unusable, or page files that do not hold what
    // meta.json says, fail after events were read (--json alone goes through a temporary file too).
    req.out = streamed_output(sinks, true, req.temp_dir);
    if (!o.temp_dir.empty()) req.temp_dir = o.temp_dir;
    req.calls_jsonl = calls ? &calls->stream() : nullptr;
    req.diagnostics = std::move(o.extra_diagnostics);
    SummaryTap tap(sinks.verbose);  // the summary of a report written as it is built
    if (sinks.summary && !sinks.json) {
        req.on_ioctl = [&tap](const IoctlRecord& io) { tap.ioctl(io); };
        req.on_call = [&tap](const Call& c) { tap.call(c); };
    }
    // Held whole only when something reads it whole: --source (links for every call), the run's checks to redo
    // (docs/architecture.md "The route").
    req.hold_if = [&o](const CaptureMeta* meta) {
        bool checks = meta && (meta->report_source.expectations || meta->report_source.scenario || !o.expect.empty());
        return !o.source_dir.empty() || checks;
    };
    auto routed = report_input(in, std::move(req));
    if (!routed) {
        // A full disk at the report's temporary files fails here, not at -o: the run's capture is kept all the same.
        const bool environment = routed.error().code == ExitCode::environment;
        tracer::note("nvtrace {}: {}{}\n", sinks.command, routed.error().message,
                     environment ? sinks.write_hint : std::string());
        return failed(static_cast<int>(routed.error().code));
    }
    if (calls && !calls->stream().flush()) {
        tracer::note("nvtrace {}: cannot write {}: {}\n", sinks.command, o.calls_jsonl, std::strerror(errno));
        return failed(static_cast<int>(ExitCode::environment));
    }
    ReportStream& rs = *routed->stream;
    Report& report = rs.report();
    for (auto& m : o.extra_log)
        report.kernel_log.push_back(std::move(m));
    if (calls) {
        report.source.calls_jsonl = o.calls_jsonl;
        report.source.calls_count = rs.calls();
    }
    if (!o.kmsg.empty()) report.source.kmsg = o.kmsg;
    if (!o.source_dir.empty())
        if (int rc = add_source_links(report, o.source_dir, sinks.command)) return failed(rc);
    if (routed->meta) {
        redo_checks(report, in.path, *routed->meta, o.expect, out);
        if (out.exit_code != 0) return out;
        out.checks = report.checks;
        sinks = with_capture_summary(sinks, *routed->meta, report);
    }
    if (calls && !calls->commit()) {
        tracer::note("nvtrace {}: cannot write {}: {}\n", sinks.command, o.calls_jsonl, std::strerror(errno));
        return failed(static_cast<int>(ExitCode::environment));
    }
    out.exit_code = rs.held() ? write_and_print(report, sinks) : write_and_print_streamed(rs, tap, sinks);
    return out;
}

int reemit_report_json(const std::string& dir, const ReportSinks& sinks, std::vector<KernelLogMessage> extra_log) {
    auto path = std::filesystem::path(dir) / "report.json";
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in) {
        tracer::note("nvtrace {}: {}: not a capture directory (expected report.json and meta.json)\n", sinks.command,
                     dir);
        return static_cast<int>(ExitCode::usage);
    }
    nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("schema")) {
        tracer::note("nvtrace {}: {}: expected an nvtrace report (JSON with \"schema\")\n", sinks.command,
                     path.string());
        return static_cast<int>(ExitCode::usage);
    }
    if (!extra_log.empty()) {
        Report only_log;
        only_log.kernel_log = std::move(extra_log);
        std::ostringstream only_log_json;
        write_json(only_log, only_log_json);
        nlohmann::json added = nlohmann::json::parse(only_log_json.str());
        if (!j.contains("kernel_log") || !j["kernel_log"].is_array()) j["kernel_log"] = nlohmann::json::array();
        for (auto& m : added["kernel_log"])
            j["kernel_log"].push_back(m);
    }
    if (!sinks.out.empty()) {
        std::ofstream f(sinks.out, std::ios::trunc);
        if (!f || !(f << dump(j, 1) << "\n") || !f.flush()) {
            tracer::note("nvtrace {}: cannot write {}: {}\n", sinks.command, sinks.out, std::strerror(errno));
            return static_cast<int>(ExitCode::environment);
        }
    }
    if (sinks.json) {
        fmt::print("{}\n", dump(j, -1));
        return 0;
    }
    std::size_t calls = j.contains("calls") && j["calls"].is_array() ? j["calls"].size() : 0;
    fmt::print("input: {} (capture directory without raw data; report.json re-emitted)\n", dir);
    fmt::print("calls: {}\n", calls);
    if (j.contains("kernel_log") && j["kernel_log"].is_array())
        fmt::print("kernel log: {} message(s)\n", j["kernel_log"].size());
    const auto& c = j.value("completeness", nlohmann::json::object());
    if (c.value("complete", false)) {
        fmt::print("complete: yes\n");
    } else {
        // The saved report's own reasons, in the one-line form the other routes print.
        std::vector<std::string> reasons;
        if (auto r = c.find("reasons"); r != c.end() && r->is_array())
            for (const auto& x : *r)
                if (x.is_string()) reasons.push_back(x.get<std::string>());
        if (reasons.empty())
            fmt::print("complete: no\n");
        else
            fmt::print("complete: no: {}\n", fmt::join(reasons, "; "));
    }
    return 0;
}

}  // namespace nvtrace::cli
