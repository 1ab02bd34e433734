#include "tracefs_session.hpp"

#include "stderr_note.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runner.hpp"
#include "tracefs_cxx.h"

namespace nvtrace::tracer {

std::optional<std::string> read_instance_file(tracefs_instance* inst, const char* file) {
    int size = 0;
    char* s = tracefs_instance_file_read(inst, file, &size);
    if (!s) return std::nullopt;
    std::string out(s, size > 0 ? static_cast<std::size_t>(size) : 0);
    std::free(s);
    return out;
}

namespace {

std::string read_top(const std::string& file) {
    return read_instance_file(nullptr, file.c_str()).value_or("");
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
        s.pop_back();
    return s;
}

}  // namespace

std::string kernel_error(tracefs_instance* inst) {
    char* e = tracefs_error_last(inst);
    if (!e) return {};
    std::string s = trim(e);
    std::free(e);
    return s;
}

Result<Instance> Instance::create() {
    std::string name = fmt::format("nvtrace-{}", ::getpid());
    tracefs_instance* inst = tracefs_instance_create(name.c_str());
    if (!inst)
        return fail(
            Error::environment(fmt::format("cannot create tracefs instance {}: {}", name, std::strerror(errno))));
    Instance i(inst);
    tracefs_trace_off(inst);
    tracefs_event_disable(inst, nullptr, nullptr);
    tracefs_instance_file_clear(inst, "trace");
    return i;
}

Instance::Instance(Instance&& o) noexcept : inst_(std::exchange(o.inst_, nullptr)) {}

Instance::~Instance() {
    if (!inst_) return;
    if (auto r = remove(); !r) tracer::note("nvtrace: {}\n", r.error().message);
}

Result<void> Instance::remove() {
    if (!inst_) return {};
    tracefs_trace_off(inst_);
    tracefs_event_disable(inst_, nullptr, nullptr);
    tracefs_instance_file_clear(inst_, "set_event_pid");
    tracefs_print_close(inst_);  // the marker fd makes rmdir fail with EBUSY
    std::string d = dir(), n = name();
    if (tracefs_instance_destroy(inst_) != 0) {
        int e = errno;
        std::vector<std::string> who;
        for (const auto& p : processes_holding(d))
            who.push_back(fmt::format("{} ({})", p.pid, p.comm));
        std::string held = who.empty() ? "" : fmt::format(" (held open by pid {})", fmt::join(who, ", "));
        tracefs_instance_free(inst_);  // given up: the error says so once, the destructor does not retry
        inst_ = nullptr;
        return fail(
            Error::environment(fmt::format("cannot remove instance {}: {}{}; once that has ended, run "
                                           "sudo nvtrace cleanup",
                                           n, std::strerror(e), held)));
    }
    tracefs_instance_free(inst_);
    inst_ = nullptr;
    return {};
}

std::string Instance::name() const {
    return tracefs_instance_get_name(inst_);
}

std::string Instance::dir() const {
    char* d = tracefs_instance_get_dir(inst_);
    std::string s = d ? d : "";
    tracefs_put_tracing_file(d);
    return s;
}

Result<void> TopLevelJournal::remember(const std::string& file) {
    for (const auto& [f, v] : saved_)
        if (f == file) return {};
    saved_.emplace_back(file, read_top(file));
    return persist();
}

Result<void> TopLevelJournal::write(const std::string& file, const std::string& value) {
    if (auto r = remember(file); !r) return r;
    tracefs_error_clear(nullptr);
    if (tracefs_instance_file_write(nullptr, file.c_str(), value.c_str()) < 0) {
        int e = errno;
        std::string why = kernel_error(nullptr);
        return fail(Error::environment(fmt::format("the kernel refused '{}' in {}: {}{}", value, file, std::strerror(e),
                                                   why.empty() ? "" : " (" + why + ")")));
    }
    return {};
}

Result<void> TopLevelJournal::persist() const {
    std::error_code ec;
    // Also /run itself in minimal systems (initramfs).
    std::filesystem::create_directories(std::filesystem::path(journal_path_).parent_path(), ec);
    nlohmann::json j;
    j["pid"] = ::getpid();
    j["files"] = nlohmann::json::array();
    for (const auto& [f, v] : saved_)
        j["files"].push_back({{"file", f}, {"content", v}});
    std::string tmp = journal_path_ + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        if (!out)
            return fail(
                Error::environment(fmt::format("cannot write the state journal {}: {}", tmp, std::strerror(errno))));
        out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        if (!out.flush()) return fail(Error::environment(fmt::format("cannot write the state journal {}", tmp)));
    }
    if (::rename(tmp.c_str(), journal_path_.c_str()) != 0)
        return fail(Error::environment(
            fmt::format("cannot write the state journal {}: {}", journal_path_, std::strerror(errno))));
    return {};
}

Result<void> restore_file(const std::string& file, const std::string& content) {
    std::string value;
    if (file == "set_ftrace_filter" || file == "set_ftrace_notrace" || file == "set_graph_function" ||
        file == "set_graph_notrace") {
        // "#### all functions enabled ####" (and other '#' lines) mean an empty filter; module functions read
        // back as "name [module]" and are written back as "name".
        std::istringstream in(content);
        std::string line;
        while (std::getline(in, line)) {
            if (line.empty() || line[0] == '#') continue;
            value += line.substr(0, line.find_first_of(" \t")) + "\n";
        }
    } else if (file == "set_ftrace_pid" || file == "set_event_pid") {
        value = content.rfind("no pid", 0) == 0 ? "" : content;
    } else {
        value = trim(content);
    }
    if (value.empty()) {
        if (tracefs_instance_file_clear(nullptr, file.c_str()) < 0)
            return fail(Error::environment(fmt::format("cannot clear {}: {}", file, std::strerror(errno))));
        return {};
    }
    if (tracefs_instance_file_write(nullptr, file.c_str(), value.c_str()) < 0)
        return fail(Error::environment(fmt::format("cannot restore {}: {}", file, std::strerror(errno))));
    return {};
}

std::vector<std::pair<std::string, std::string>> restore_order(
    const std::vector<std::pair<std::string, std::string>>& saved) {
    // The tracer first: restoring an empty filter while function_graph still runs would make the kernel
    // patch every function (minutes under qemu TCG, a soft lockup in our guest), then the rest in reverse.
    std::vector<std::pair<std::string, std::string>> order;
    for (const auto& entry : saved)
        if (entry.first == "current_tracer") order.push_back(entry);
    for (auto it = saved.rbegin(); it != saved.rend(); ++it)
        if (it->first != "current_tracer") order.push_back(*it);
    return order;
}

std::vector<std::string> TopLevelJournal::restore() {
    std::vector<std::string> failed;
    for (const auto& [file, content] : restore_order(saved_))
        if (!restore_file(file, content)) failed.push_back(file);
    if (!saved_.empty() && failed.empty()) ::unlink(journal_path_.c_str());
    saved_.clear();
    return failed;
}

std::size_t count_matches(const char* filter, const char* module) {
    char** list = nullptr;
    // libtracefs 1.6.4 returns an empty list for a NULL filter with a module: match everything explicitly.
    if (tracefs_filter_functions(filter ? filter : "*", module, &list) < 0) return 0;
    std::size_t n = static_cast<std::size_t>(std::max(0, tracefs_list_size(list)));
    tracefs_list_free(list);
    return n;
}

std::vector<CpuBufferStats> read_buffer_stats(tracefs_instance* inst, const std::string& label) {
    std::vector<CpuBufferStats> out;
    long ncpu = ::sysconf(_SC_NPROCESSORS_CONF);
    for (int cpu = 0; cpu < ncpu; ++cpu) {
        std::string file = fmt::format("per_cpu/cpu{}/stats", cpu);
        auto text = read_instance_file(inst, file.c_str());
        if (!text) continue;
        CpuBufferStats st;
        st.cpu = cpu;
        st.buffer = label;
        std::istringstream in(*text);
        std::string line;
        while (std::getline(in, line)) {
            auto colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string key = line.substr(0, colon);
            std::uint64_t v = std::strtoull(line.c_str() + colon + 1, nullptr, 10);
            if (key == "overrun")
                st.overrun = v;
            else if (key == "dropped events")
                st.dropped_events = v;
        }
        out.push_back(st);
    }
    return out;
}

}  // namespace nvtrace::tracer
