// User-space output that people paste beside kernel logs when they report a GPU driver problem: CUDA samples,
// gdrcopy tests, UCX and application loggers. Read so that a pasted report yields its facts; such messages have
// source "user". Sources of the formats:
//   gdrcopy tests (tests/common.hpp ASSERT*): "Assertion \"%s\" failed at %s:%d"; src/gdrapi.c gdr_msg levels
//     printed as "ERR:  ", "WARN: ", "INFO: ", "DBG:  "; gdr_map: "error %s(%d) while mapping handle %x,
//     rounded_size=%zu offset=%llx"; copylat.cpp: "error in gdr_pin_buffer with code=%d", "GPU id:%d; name: %s;
//     Bus id: %s"; check(1) suites: "Running suite(s): %s".
//   CUDA samples (Common/helper_cuda.h check()): "CUDA error at %s:%d code=%d(%s) \"%s\"".
//   NVIDIA test harness markers: "&&&& RUNNING|PASSED|FAILED|WAIVED <test>".
//   UCX (src/ucs/debug/log.c): "<file>:<line> <spaces> UCX  <LEVEL> <message>".
//   Bracketed application loggers (e.g. ppl.nn): "[LEVEL][date time][file:line] message".
//   CUDA driver API error strings (cuda.h CUresult, cuGetErrorString): below.
#include <array>
#include <charconv>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "klog.hpp"
#include "nvtrace/kernel_log.hpp"

namespace nvtrace::klog {

namespace {

constexpr std::size_t kWindow = 1024;

struct CudaError {
    int code;
    std::string_view name;
    std::string_view text;
};
// cuda.h (CUDA 12.x) CUresult values and the strings cuGetErrorString / cudaGetErrorString return.
constexpr std::array<CudaError, 14> kCudaErrors{{
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
}};

void add_cuda_error_by_text(std::map<std::string, std::string>& f, std::string_view text) {
    for (const auto& e : kCudaErrors)
        if (e.text == text) {
            f["cuda_error"] = std::string(e.name);
            f["cuda_code"] = std::to_string(e.code);
            return;
        }
}
void add_cuda_error_by_name(std::map<std::string, std::string>& f, std::string_view name) {
    for (const auto& e : kCudaErrors)
        if (e.name == name) {
            f["cuda_code"] = std::to_string(e.code);
            f["error_text"] = std::string(e.text);
            return;
        }
}

// Linux errno names (asm-generic/errno-base.h) for the codes tools print as numbers.
std::string_view errno_name(int e) {
    static constexpr std::array<std::string_view, 35> names{
        "",      "EPERM",  "ENOENT",  "ESRCH",  "EINTR",  "EIO",    "ENXIO",   "E2BIG",  "ENOEXEC",
        "EBADF", "ECHILD", "EAGAIN",  "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY",  "EEXIST",
        "EXDEV", "ENODEV", "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE",  "ENOTTY", "ETXTBSY",
        "EFBIG", "ENOSPC", "ESPIPE",  "EROFS",  "EMLINK", "EPIPE",  "EDOM",    "ERANGE"};
    int a = e < 0 ? -e : e;
    return a > 0 && a < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(a)] : std::string_view{};
}

int to_int(const std::string& s) {
    int v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

std::string first_call(const std::string& expr) {
    static const std::regex call(R"(([A-Za-z_]\w*)\s*\()");
    std::smatch m;
    return std::regex_search(expr, m, call) ? m[1].str() : std::string{};
}

struct Patterns {
    std::regex assertion{R"re(^Assertion "(.*)" failed at ([\w./-]+):(\d+)$)re"};
    std::regex cuda_at{R"re(^CUDA error at ([\w./-]+):(\d+) code=(\d+)\((\w+)\) "(.*)"$)re"};
    std::regex cuda_colon{R"(^CUDA error: (\w+)$)"};
    std::regex harness{R"(^&&&& (RUNNING|PASSED|FAILED|WAIVED) (\S+))"};
    std::regex gdr_log{R"(^(ERR|WARN|INFO|DBG):\s+(.*)$)"};
    std::regex ucx{R"(^([\w.-]+):(\d+)\s+UCX\s+(ERROR|WARN|DIAG|INFO|DEBUG|TRACE)\s+(.*)$)"};
    std::regex bracketed{R"(^\[(ERROR|WARNING|WARN|INFO|DEBUG|FATAL)\]\[([^\]]+)\]\[([\w./-]+):(\d+)\] (.*)$)"};
    std::regex gpu_info{R"(^GPU id:(\d+); name: (.*); Bus id: (\S+)$)"};
    std::regex error_in{R"(^error in (\w+) with code=(-?\d+))"};
    std::regex tool_call_error{R"(^(\w+) error: (.*)$)"};
    std::regex command{R"(^\$ (.+)$)"};
    std::regex suite{R"(^Running suite\(s\): (.*)$)"};
    std::regex program_output{R"(^> (.*)$)"};
};
const Patterns& patterns() {
    static const Patterns p;
    return p;
}

}  // namespace

bool is_tool_output_line(std::string_view line_in) {
    std::string line(trim(line_in.substr(0, kWindow)));
    const auto& p = patterns();
    for (const std::regex* re : {&p.assertion, &p.cuda_at, &p.cuda_colon, &p.harness, &p.gdr_log, &p.ucx, &p.bracketed,
                                 &p.gpu_info, &p.error_in, &p.tool_call_error, &p.command, &p.suite, &p.program_output})
        if (std::regex_search(line, *re)) return true;
    return false;
}

bool classify_tool_output(KernelLogMessage& msg, const std::string& flat_in) {
    std::string line(trim(std::string_view(flat_in).substr(0, kWindow)));
    const auto& p = patterns();
    auto& f = msg.fields;
    std::smatch m;
    if (std::regex_search(line, m, p.assertion)) {
        msg.kind = "assertion_failed";
        f["expr"] = m[1];
        f["file"] = m[2];
        f["src_line"] = m[3];
        if (auto c = first_call(m[1]); !c.empty()) f["call"] = c;
    } else if (std::regex_search(line, m, p.cuda_at)) {
        msg.kind = "cuda_error";
        f["file"] = m[1];
        f["src_line"] = m[2];
        f["code"] = m[3];
        f["error"] = m[4];
        f["expr"] = m[5];
        if (auto c = first_call(m[5]); !c.empty()) f["call"] = c;
    } else if (std::regex_search(line, m, p.cuda_colon)) {
        msg.kind = "cuda_error";
        f["error"] = m[1];
        add_cuda_error_by_name(f, m[1].str());
    } else if (std::regex_search(line, m, p.harness)) {
        msg.kind = "test_status";
        f["status"] = m[1];
        f["test"] = m[2];
    } else if (std::regex_search(line, m, p.gdr_log)) {
        f["severity"] = m[1];
        std::string rest = m[2];
        static const std::regex map_err(
            R"(error (.*)\((\d+)\) while mapping handle ([0-9a-fA-F]+), rounded_size=(\d+) offset=([0-9a-fA-F]+))");
        std::smatch r;
        if (std::regex_search(rest, r, map_err)) {
            msg.kind = "tool_error";
            f["call"] = "gdr_map";
            f["error"] = r[1];
            f["errno"] = r[2];
            f["errno_name"] = std::string(errno_name(to_int(r[2].str())));
            f["handle"] = r[3];
            f["rounded_size"] = r[4];
            f["offset"] = r[5];
        } else if (m[1] == "ERR") {
            msg.kind = "tool_error";
        }
    } else if (std::regex_search(line, m, p.ucx)) {
        f["producer"] = "ucx";
        f["file"] = m[1];
        f["src_line"] = m[2];
        f["severity"] = m[3];
        std::string rest = m[4];
        static const std::regex call_failed(R"(^(\w+)\(([^)]*)\) is failed\. ret:(.*)$)");
        static const std::regex reg(
            R"(failed to register address (0x[0-9a-fA-F]+) length (\d+) on md\[(\d+)\]=(\S+): (.*)$)");
        std::smatch r;
        if (std::regex_search(rest, r, call_failed)) {
            f["call"] = r[1];
            f["args"] = r[2];
            f["error"] = std::string(trim(r[3].str()));
            static const std::regex flags(R"((0x[0-9a-fA-F]+)\s*$)");
            std::string args = r[2];
            std::smatch fl;
            if (f["call"] == "cudaHostRegister" && std::regex_search(args, fl, flags)) f["flags"] = fl[1];
            add_cuda_error_by_text(f, f["error"]);
            msg.kind = f["call"].rfind("cu", 0) == 0 ? "cuda_error" : "tool_error";
        } else if (std::regex_search(rest, r, reg)) {
            msg.kind = "tool_error";
            f["address"] = r[1];
            f["length"] = r[2];
            f["md"] = r[3];
            f["md_name"] = r[4];
            f["error"] = r[5];
        } else if (f["severity"] == "ERROR") {
            msg.kind = "tool_error";
        }
    } else if (std::regex_search(line, m, p.bracketed)) {
        f["severity"] = m[1];
        f["time"] = m[2];
        f["file"] = m[3];
        f["src_line"] = m[4];
        std::string rest = m[5];
        static const std::regex failed(R"(^(\w+) failed: (.*)$)");
        std::smatch r;
        if (std::regex_search(rest, r, failed)) {
            f["call"] = r[1];
            f["error"] = std::string(trim(r[2].str()));
            add_cuda_error_by_text(f, f["error"]);
            msg.kind = f["call"].rfind("cu", 0) == 0 ? "cuda_error" : "tool_error";
        } else if (m[1] == "ERROR" || m[1] == "FATAL") {
            msg.kind = "tool_error";
        }
    } else if (std::regex_search(line, m, p.gpu_info)) {
        msg.kind = "gpu_info";
        f["gpu"] = m[1];
        f["name"] = m[2];
        f["pci"] = m[3];
    } else if (std::regex_search(line, m, p.error_in)) {
        msg.kind = "tool_error";
        f["call"] = m[1];
        f["code"] = m[2];
        if (auto n = errno_name(to_int(m[2].str())); !n.empty()) f["errno_name"] = std::string(n);
    } else if (std::regex_search(line, m, p.tool_call_error)) {
        msg.kind = "tool_error";
        f["call"] = m[1];
        f["error"] = m[2];
    } else if (std::regex_search(line, m, p.command)) {
        msg.kind = "command";
        f["command"] = m[1];
    } else if (std::regex_search(line, m, p.suite)) {
        msg.kind = "test_status";
        f["status"] = "SUITE";
        f["test"] = m[1];
    } else if (std::regex_search(line, m, p.program_output)) {
        std::string out = m[1];
        static const std::regex call(R"(^(\w+)\(\))");
        static const std::regex size(R"((\d+(?:\.\d+)?) (Mbytes|MB|MiB|Kbytes|KB|KiB|bytes)\b)");
        std::smatch r;
        if (std::regex_search(out, r, call)) f["call"] = r[1];
        if (std::regex_search(out, r, size)) {
            double v = std::strtod(r[1].str().c_str(), nullptr);
            std::string u = r[2];
            double mul = (u[0] == 'M') ? 1048576.0 : (u[0] == 'K') ? 1024.0 : 1.0;
            f["size_bytes"] = fmt::format("{}", static_cast<std::uint64_t>(v * mul));
        }
    } else {
        return false;
    }
    return true;
}

}  // namespace nvtrace::klog
