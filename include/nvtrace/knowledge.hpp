// nvtrace/knowledge.hpp: what nvtrace knows about GPU driver interfaces, as data. One table per family:
// NVIDIA RM escapes and OS-layer escapes (/dev/nvidiactl, /dev/nvidiaN), UVM ioctls (/dev/nvidia-uvm,
// /dev/nvidia-uvm-tools), NV_STATUS codes, common RM classes (hClass), the Xid catalog, gdrdrv ioctls
// (/dev/gdrdrv) and the DRM core ioctls a GEM or accel user meets (/dev/dri/*, /dev/accel/accelN).
//
// Sources. Every table names its driver header and the versions it was checked against in a comment
// beside the data (analyze/knowledge/*.cpp). The NVIDIA tables come from NVIDIA/open-gpu-kernel-modules,
// walked tag by tag from 515.43.04 (the first open release) to 595.45.04; parameter sizes were measured
// by compiling that release's headers for x86_64. Details: ../shared/reference/nvidia-driver.md.
//
// Versions. Each entry carries the range of versions it applies to: NVIDIA driver versions for the NVIDIA
// tables, gdrdrv versions for gdrdrv, Linux kernel versions for DRM. `first` = kOldestKnown means "already
// in the oldest version checked" (older ones are not known, not known to differ); `last` = kNewestKnown
// means "still in the newest version checked". One number may have several entries whose ranges do not
// overlap (a renamed escape, a struct that grew).
//
// Lookups take an optional version. Without one they return the newest entry for that number; with one,
// the entry whose range holds it, or nullptr. Thread-safety: the tables are immutable; every function here
// is pure and safe to call from any thread.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/event.hpp"
#include "nvtrace/ioctl.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace {

// ---- versions ---------------------------------------------------------------------------------------------

// "595.45.04", "550.100", "2.5", "6.6". Components compare numerically (535.104.05 > 535.98).
struct DriverVersion {
    std::uint32_t major = 0;
    std::uint32_t minor = 0;
    std::uint32_t patch = 0;
    std::uint8_t parts = 3;  // how many components the text had (for printing; not compared)
    constexpr std::strong_ordering operator<=>(const DriverVersion& o) const {
        if (auto c = major <=> o.major; c != 0) return c;
        if (auto c = minor <=> o.minor; c != 0) return c;
        return patch <=> o.patch;
    }
    constexpr bool operator==(const DriverVersion& o) const { return (*this <=> o) == 0; }
};

inline constexpr DriverVersion kOldestKnown{0, 0, 0, 3};
inline constexpr DriverVersion kNewestKnown{0xffffffffu, 0xffffffffu, 0xffffffffu, 3};

// Parses "MAJOR[.MINOR[.PATCH]]" (each a decimal number, leading zeros allowed); nullopt otherwise.
std::optional<DriverVersion> parse_driver_version(std::string_view text);
// As parsed: "550.100" stays two components; a third component prints with two digits ("535.104.05"),
// as NVIDIA spells its releases.
std::string to_string(DriverVersion v);

struct VersionRange {
    DriverVersion first = kOldestKnown;
    DriverVersion last = kNewestKnown;
    constexpr bool contains(DriverVersion v) const { return first <= v && v <= last; }
    constexpr bool overlaps(const VersionRange& o) const { return first <= o.last && o.first <= last; }
};
// "all versions checked", "from 535.43.02", "up to 590.48.01", "545.23.06 to 590.48.01".
std::string to_string(const VersionRange& r);

// ---- NVIDIA escapes (RM and OS layer), magic 'F' --------------------------------------------------------

inline constexpr unsigned kNvIoctlMagic = 0x46;  // 'F', NV_IOCTL_MAGIC
inline constexpr unsigned kNvIoctlBase = 200;    // NV_IOCTL_BASE: OS-layer escapes are 200..255

enum class EscapeLayer : std::uint8_t { rm, os };
// Which node the driver accepts the escape on (escape.c NV_CTL_DEVICE_ONLY / NV_ACTUAL_DEVICE_ONLY, nv.c).
enum class NvNode : std::uint8_t { ctl, device, any };

struct NvEscape {
    unsigned nr = 0;  // _IOC_NR of the cmd
    const char* name = "";
    EscapeLayer layer = EscapeLayer::rm;
    const char* param_struct = "";  // "" when not recorded
    unsigned size = 0;              // sizeof(param_struct) on x86_64; 0 = variable or not recorded
    unsigned alt_size = 0;          // a second accepted size (NV_ESC_RM_ALLOC: NVOS21 or NVOS64); 0 = none
    NvNode node = NvNode::any;
    VersionRange versions;
    const char* note = "";
    // True when `bytes` is a size the driver accepts (always true when the size is not recorded).
    constexpr bool size_fits(unsigned bytes) const {
        return size == 0 || bytes == size || (alt_size != 0 && bytes == alt_size);
    }
};
using RmEscape = NvEscape;

std::span<const NvEscape> rm_escapes();  // src/nvidia/arch/nvalloc/unix/include/nv_escape.h
std::span<const NvEscape> os_escapes();  // kernel-open/common/inc/nv-ioctl-numbers.h, nv-ioctl-numa.h
const NvEscape* rm_escape(unsigned nr, std::optional<DriverVersion> version = std::nullopt);
const NvEscape* os_escape(unsigned nr, std::optional<DriverVersion> version = std::nullopt);
// Either layer; with `size`, prefers the entry whose recorded size matches (e.g. 0x2B with 0x28 bytes
// is the NVOS64 of drivers before 535.43.02).
const NvEscape* nv_escape(unsigned nr, std::optional<DriverVersion> version = std::nullopt,
                          std::optional<unsigned> size = std::nullopt);
const NvEscape* nv_escape_by_name(std::string_view name);  // newest entry of that name
std::string_view to_string(NvNode node);                   // "/dev/nvidiactl", "/dev/nvidiaN", "either"

// ---- UVM (plain numbers on Linux; kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_linux_ioctl.h) ------------------

enum class UvmNode : std::uint8_t { uvm, tools };  // /dev/nvidia-uvm (minor 0), /dev/nvidia-uvm-tools (minor 1)
// How uvm_ioctl()/uvm_tools_unlocked_ioctl() route the number (uvm_api.h UVM_ROUTE_CMD_* macros).
enum class UvmRoute : std::uint8_t {
    stack_init_check,     // params on the stack, NV_ERR_ILLEGAL_ACTION before UVM_INITIALIZE
    alloc_init_check,     // params kvmalloc'd (too big for the stack), init check
    stack_no_init_check,  // allowed before UVM_INITIALIZE
    inline_case,          // a bare `case` (UVM_DEINITIALIZE returns 0)
    not_routed,           // defined but not routed: falls to uvm_test_ioctl, -ENOSYS without builtin tests
};

inline constexpr std::uint32_t kUvmTestIoctlBase = 200;  // UVM_TEST_IOCTL_BASE(i) = 200 + i (uvm_test_ioctl.h)

struct UvmIoctl {
    std::uint32_t cmd = 0;  // the whole request number (not _IOC-encoded)
    const char* name = "";
    const char* handler = "";  // uvm_api_* function; "" when none
    UvmNode node = UvmNode::uvm;
    UvmRoute route = UvmRoute::stack_init_check;
    VersionRange versions;
};

std::span<const UvmIoctl> uvm_ioctls();
const UvmIoctl* uvm_ioctl(std::uint32_t cmd, std::optional<DriverVersion> version = std::nullopt);
const UvmIoctl* uvm_ioctl_by_name(std::string_view name);
std::string_view to_string(UvmRoute route);

// ---- NV_STATUS (src/common/sdk/nvidia/inc/nvstatuscodes.h) ------------------------------------------------

struct NvStatusInfo {
    std::uint32_t value = 0;
    const char* name = "";
    const char* message = "";  // nvstatusToString()'s text before " [NAME]"
    VersionRange versions;
};

std::span<const NvStatusInfo> nv_statuses();
const NvStatusInfo* nv_status(std::uint32_t value, std::optional<DriverVersion> version = std::nullopt);
const NvStatusInfo* nv_status_by_name(std::string_view name);
std::optional<std::string_view> nv_status_name(std::uint32_t value);
// nvstatusToString()'s form: "Address not valid [NV_ERR_INVALID_ADDRESS]"; "Unknown error code!" otherwise.
std::string nv_status_string(std::uint32_t value);

// ---- RM classes (src/common/sdk/nvidia/inc/class/clXXXX.h) -------------------------------------------------

struct RmClass {
    std::uint32_t hclass = 0;
    const char* name = "";
    const char* header = "";  // clXXXX.h (or nvos.h)
    const char* role = "";
    VersionRange versions;
};

std::span<const RmClass> rm_classes();
const RmClass* rm_class(std::uint32_t hclass, std::optional<DriverVersion> version = std::nullopt);
const RmClass* rm_class_by_name(std::string_view name);
std::optional<std::string_view> rm_class_name(std::uint32_t hclass);

// ---- Xid (src/common/sdk/nvidia/inc/nverror.h; NVIDIA's Xid catalog) ----------------------------------------

enum class XidSource : std::uint8_t {
    header,   // mnemonic from nverror.h
    catalog,  // only in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors), not in the public header
};

struct XidInfo {
    unsigned xid = 0;
    const char* mnemonic = "";
    const char* meaning = "";  // "" when nvtrace has no checked description
    const char* action = "";   // usual first action; "" when nvtrace has none to offer
    XidSource source = XidSource::header;
    VersionRange versions;
};

std::span<const XidInfo> xids();
const XidInfo* xid_info(unsigned xid, std::optional<DriverVersion> version = std::nullopt);
const XidInfo* xid_by_mnemonic(std::string_view mnemonic);

// ---- gdrdrv (NVIDIA/gdrcopy src/gdrdrv/gdrdrv.h), magic 0xDA, /dev/gdrdrv -----------------------------------

inline constexpr unsigned kGdrdrvIoctlMagic = 0xDA;

struct GdrdrvIoctl {
    unsigned nr = 0;
    const char* name = "";
    const char* param_struct = "";
    unsigned size = 0;             // the _IOC_SIZE gdrdrv encodes
    bool size_is_pointer = false;  // the header encodes `struct ... *`, so the size is 8, not the struct's
    const char* handler = "";
    VersionRange versions;  // gdrdrv versions (GDRDRV_MAJOR_VERSION.GDRDRV_MINOR_VERSION)
};

std::span<const GdrdrvIoctl> gdrdrv_ioctls();
const GdrdrvIoctl* gdrdrv_ioctl(unsigned nr);
const GdrdrvIoctl* gdrdrv_ioctl_by_name(std::string_view name);

// ---- DRM core (include/uapi/drm/drm.h), magic 'd'; /dev/dri/cardN, renderDN, /dev/accel/accelN ----------------

inline constexpr unsigned kDrmIoctlBase = 0x64;    // 'd', DRM_IOCTL_BASE
inline constexpr unsigned kDrmCommandBase = 0x40;  // driver-specific ioctls are 0x40..0x9f
inline constexpr unsigned kDrmCommandEnd = 0xA0;   // core ioctls resume at 0xA0
inline constexpr unsigned kAccelMajor = 261;       // /dev/accel/accelN (include/drm/drm_accel.h ACCEL_MAJOR)
inline constexpr unsigned kDrmMajor = 226;         // /dev/dri/* (DRM_MAJOR)
inline constexpr unsigned kNvidiaMajor = 195;      // /dev/nvidia*, NV_MAJOR_DEVICE_NUMBER
inline constexpr unsigned kNvidiaCtlMinor = 255;   // /dev/nvidiactl

struct DrmIoctl {
    unsigned nr = 0;
    const char* name = "";
    unsigned dir = 0;  // as IocFields::dir
    const char* param_struct = "";
    unsigned size = 0;         // sizeof(param_struct) on x86_64
    const char* handler = "";  // the drm_ioctls[] handler in drivers/gpu/drm
    VersionRange kernel;       // Linux versions
    std::uint64_t cmd() const;
};

std::span<const DrmIoctl> drm_ioctls();
const DrmIoctl* drm_ioctl(unsigned nr);
const DrmIoctl* drm_ioctl_by_name(std::string_view name);

// ---- device nodes ------------------------------------------------------------------------------------------

enum class DeviceKind : std::uint8_t {
    unknown,           // no path, or a path nvtrace does not recognise
    nvidia_ctl,        // /dev/nvidiactl
    nvidia_device,     // /dev/nvidiaN
    nvidia_uvm,        // /dev/nvidia-uvm
    nvidia_uvm_tools,  // /dev/nvidia-uvm-tools
    nvidia_other,      // /dev/nvidia-modeset, /dev/nvidia-caps/*, /dev/nvidia-nvswitchN, ...
    gdrdrv,            // /dev/gdrdrv
    drm,               // /dev/dri/cardN, /dev/dri/renderDN
    accel,             // /dev/accel/accelN
    tty,               // /dev/tty*, /dev/pts/*, /dev/console
    other,             // any other path
};

// Classifies a path as strace -y or /proc/<pid>/fd prints it ("/dev/nvidia0", "/dev/dri/renderD128").
DeviceKind classify_device(std::string_view path);
std::string_view to_string(DeviceKind kind);

// ---- one ioctl request, explained -------------------------------------------------------------------------

enum class IoctlFamily : std::uint8_t {
    unknown,
    generic,     // legacy tty/file requests (include/uapi/asm-generic/ioctls.h)
    nvidia_rm,   // RM escape, 'F' 0x27..0x5F
    nvidia_os,   // OS-layer escape, 'F' 200..255
    nvidia_uvm,  // UVM plain number (either UVM node)
    gdrdrv,
    drm_core,
    drm_driver,  // DRM driver-specific range 0x40..0x9f
};
std::string_view to_string(IoctlFamily family);

struct IoctlCandidate {
    IoctlFamily family = IoctlFamily::unknown;
    std::string name;
    std::string detail;  // one line: parameter struct and size, handler, node, versions
};

struct IoctlDescription {
    std::uint64_t cmd = 0;
    IocFields fields;      // decode_ioc(cmd)
    std::string encoding;  // "_IOC(_IOC_READ|_IOC_WRITE, 0x46, 0x2b, 0x28)"
    std::optional<std::string> device_path;
    DeviceKind device = DeviceKind::unknown;
    std::optional<std::string> name;  // set when exactly one family claims the number
    IoctlFamily family = IoctlFamily::unknown;
    std::vector<IoctlCandidate> candidates;  // every family the number could belong to, best first
    std::vector<std::string> notes;          // size mismatches, wrong node, versions, XFER wrapping, ...
    // The entry that named it (at most one is set).
    const NvEscape* escape = nullptr;
    const UvmIoctl* uvm = nullptr;
    const GdrdrvIoctl* gdrdrv = nullptr;
    const DrmIoctl* drm = nullptr;
};

// Names any request number nvtrace knows and explains its encoding (direction, type, nr, size). The
// device path, when given, decides between families where numbers could collide (NVIDIA type 'F', UVM plain
// numbers, DRM type 'd'); without one the number is named only when exactly one family claims it.
IoctlDescription describe_ioctl(std::uint64_t cmd, std::optional<std::string_view> device_path = std::nullopt);
// `nvtrace decode --json` (docs/decode.md): indented by two spaces, invalid UTF-8 replaced, no final newline.
std::string to_json_text(const IoctlDescription& d);

// The request number of a name nvtrace knows ("NV_ESC_RM_ALLOC" -> the cmd of its newest entry with the
// recorded size, "UVM_FREE" -> 34, "DRM_IOCTL_GEM_CLOSE", "TCGETS"); nullopt otherwise.
std::optional<std::uint64_t> ioctl_number_by_name(std::string_view name);

// `_IOC(dir, type, nr, size)` as include/uapi/asm-generic/ioctl.h builds it.
constexpr std::uint32_t encode_ioc(unsigned dir, unsigned type, unsigned nr, unsigned size) {
    return (static_cast<std::uint32_t>(dir & 3u) << 30) | (static_cast<std::uint32_t>(size & 0x3fffu) << 16) |
           (static_cast<std::uint32_t>(type & 0xffu) << 8) | (nr & 0xffu);
}

// ---- strace output ------------------------------------------------------------------------------------------

// One ioctl of strace output, e.g.
//   ioctl(14, _IOC(_IOC_READ|_IOC_WRITE, 0x46, 0xce, 0x10), 0x7ffd23823b20) = 0
// with or without -f pid prefixes, -t/-tt/-ttt timestamps, -T durations, -y/-yy fd paths, -X raw numbers,
// symbolic requests (TCGETS, DRM_IOCTL_VERSION), the older "_IOC(0, ...)" spelling of _IOC_NONE, negative fds,
// <unfinished ...>/<... ioctl resumed> pairs, and the program's own output written into a line
// ("write(1, "x\n", 2x" then ") = 2" on the next line: strace(1), output of the traced program interleaves).
// Also gVisor's strace (runsc --strace, pkg/sentry/strace/strace.go):
//   I1229 09:57:11.030378   13265 strace.go:605] [   2:   2] python X ioctl(0x3 /dev/nvidiactl, 0xc020462a,
//   0x7ebe51113480) = 0 (0x0) (21.883µs)
// as E (enter) and X (exit) lines paired per thread, "errno=N (text)" on a failed exit, nvproxy debug lines
// between them.
struct StraceIoctl {
    std::uint32_t line = 0;  // 1-based line of the call (of its first half when split; gVisor: of its E line)
    std::optional<int> pid;  // strace -f's pid; gVisor's thread id
    int fd = -1;
    std::optional<std::uint64_t> cmd;  // nullopt when truncated, or symbolic and unknown to nvtrace
    std::string cmd_text;              // the request as strace printed it
    std::string arg;
    std::optional<std::int64_t> ret;           // the kernel's: -errno for strace's "-1 ENAME"; nullopt when not known
    std::optional<std::string> error;          // "EINVAL (Invalid argument)" as printed after the return value
    std::optional<std::string> errno_name;     // "EINVAL", "ERESTARTSYS", as printed (gVisor: named from errno=N)
    std::optional<std::string> errno_text;     // "Invalid argument", as printed
    std::optional<std::string> fd_path;        // -y/-yy at this call, or from an earlier open/openat of that fd
    bool truncated = false;                    // the line ends mid-call
    bool entered = true;                       // gVisor: false for an X line whose E is not in the log
    std::optional<std::uint64_t> duration_ns;  // -T "<0.000012>", gVisor's "(21.883µs)"
    // When it started and returned, ns: the line's -t/-tt/-ttt/-r timestamp (time of day counted from the first
    // midnight, the epoch, or the sum of -r's deltas), gVisor's glog time. exit_ns only from a line stamped at the
    // return (a "resumed" line, gVisor's X line); a whole call's line is stamped at its start.
    std::optional<std::uint64_t> enter_ns, exit_ns;
    std::optional<std::uint32_t> ctrl;              // gVisor nvproxy "control command 0x2080122b" between E and X
    std::optional<std::uint32_t> nvproxy_nr;        // gVisor nvproxy "frontend ioctl: nr = 0x2a, argSize = 0x20"
    std::optional<std::uint32_t> nvproxy_arg_size;  // the same line's argSize
};

// An open/openat/openat2/creat. `opens` holds the successful ones (fd >= 0); `failed_opens` the ones that
// returned an error, with the errno as printed ("/dev/nvidia-uvm" = -1 EPERM explains why no ioctl followed).
struct StraceOpen {
    std::uint32_t line = 0;
    int fd = -1;
    std::string path;
    std::string syscall;  // "openat"
    std::string flags;    // "O_RDWR|O_CLOEXEC", as printed
    std::optional<std::int64_t> ret;
    std::optional<std::string> errno_name, errno_text;
    std::optional<int> pid;
    std::optional<std::uint64_t> time_ns;  // the line's timestamp, as StraceIoctl::enter_ns
};

// "+++ exited with N +++" / "+++ killed by SIGSEGV (core dumped) +++" (strace -f: with "[pid N] ").
struct StraceExit {
    std::uint32_t line = 0;
    std::optional<int> pid;
    std::optional<int> status;          // exited with
    std::optional<std::string> signal;  // killed by
    bool core_dumped = false;
    std::optional<std::uint64_t> time_ns;  // the line's timestamp, as StraceIoctl::enter_ns
};

// A stat/lstat/newfstatat/statx of a character or block device: "st_rdev=makedev(237, 0)" (major, minor as
// strace prints them, decimal or hex). Says which driver a node belongs to (UVM's major is dynamic).
struct StraceDeviceNode {
    std::uint32_t line = 0;
    std::string path;
    std::uint32_t major = 0, minor = 0;
};

// A write(2): the fd and the count it returned (the program's output around it is not a syscall).
struct StraceWrite {
    std::uint32_t line = 0;
    int fd = -1;
    std::optional<std::int64_t> ret;
};

struct StraceLog {
    std::vector<StraceIoctl> ioctls;
    std::vector<StraceDeviceNode> device_nodes;
    std::vector<StraceWrite> writes;
    std::vector<StraceOpen> opens;         // successful open/openat/creat calls, in order
    std::vector<StraceOpen> failed_opens;  // failed ones, in order
    std::vector<StraceExit> exits;
    // --decode-pids=comm ("1234<python3> ioctl(...)"): pid -> the comm strace printed last for it (print_comm_str,
    // as printed, escapes kept); empty without the option.
    std::map<int, std::string> comms;
    std::uint32_t lines = 0;
    std::vector<std::uint32_t> elided_rows;  // lines of the "..." rows of an excerpt (lines left out)
    std::uint32_t program_output_lines = 0;  // the traced program's output found inside call lines
    bool truncated = false;                  // the last line of the input is cut off mid-call
    bool gvisor = false;                     // the lines were gVisor's (runsc) strace
    std::vector<Diagnostic> diagnostics;     // "strace_truncated_line", "strace_malformed_ioctl", ...
};

// Reads strace text. Never fails: lines it cannot use become diagnostics ("<source>:<line>: why").
// Fds are tracked across threads and processes as one table (strace -f prints no fd-table ownership).
StraceLog parse_strace(std::string_view text, std::string_view source = "strace");

// True for the open of a device node whose failure explains a missing ioctl: /dev/nvidia*, /dev/dri/*,
// /dev/accel/*, /dev/kfd, /dev/gdrdrv.
bool is_accelerator_device_path(std::string_view path);

// The ioctls as report rows, named from their fd path when known, else from the number.
std::vector<IoctlRecord> strace_ioctl_records(const StraceLog& log);

// ---- CUDA driver API (libcuda.so.1) and runtime (libcudart.so.N): the entry points nvtrace probes ---------------
// Sources: cuda.h (CUresult, the driver API prototypes) and driver_types.h / cuda_runtime_api.h (cudaError_t, the
// runtime prototypes) of the CUDA toolkit 13.0 (CUDA_VERSION 13000, CUDART_VERSION 13000). Arguments are placed
// by the x86-64 System V ABI (integer and pointer arguments in rdi, rsi, rdx, rcx, r8, r9, then on the stack;
// a dim3 by value takes two registers) and written as uprobe fetch-args (kernel Documentation/trace/
// uprobetracer.rst): "%di", "$stack1" (the first stack argument: $stack0 is the return address at entry),
// "+0(%si)" with type "string" (a C string the argument points to).

enum class CudaLayer : std::uint8_t { driver, runtime };  // libcuda.so.1 (CUresult) / libcudart.so.N (cudaError_t)

enum class CudaArgKind : std::uint8_t {
    bytes,           // a size in bytes
    count,           // a number of elements, a grid or block dimension
    flags,           // a flags word (printed in hex)
    address,         // a host (or unified) virtual address: a buffer, an out-parameter, a struct
    device_address,  // a CUdeviceptr
    handle,          // CUcontext, CUstream, CUmodule, CUfunction, ... (opaque pointers)
    device,          // a device ordinal (CUdevice, int device)
    enum_value,      // an enum (cudaMemcpyKind, CUdevice_attribute, ...)
    value,           // any other integer
    string,          // a C string (a file name, a symbol name)
};

struct CudaApiArg {
    const char* name = nullptr;  // the parameter's name in the header; nullptr ends the list
    const char* location = "";   // "%di", "$stack1", "+0(%si)"
    const char* type = "";       // uprobe fetch type: "u64", "x32", "s32", "string", "b32@32/64"
    CudaArgKind kind = CudaArgKind::value;
};

inline constexpr std::size_t kCudaApiMaxArgs = 12;

struct CudaApi {
    const char* symbol = "";  // the exported name ("cuMemAlloc_v2"); the _ptds/_ptsz per-thread-stream variant of a
                              // symbol takes the same arguments (cuda.h __CUDA_API_PTDS / __CUDA_API_PTSZ)
    CudaLayer layer = CudaLayer::driver;
    CudaApiArg args[kCudaApiMaxArgs] = {};
    std::span<const CudaApiArg> arguments() const;
};

std::span<const CudaApi> cuda_apis();
// The entry for an exported name; a name ending in _ptds or _ptsz finds the entry of the name without it.
const CudaApi* cuda_api(std::string_view symbol);
// "name=%di:u64 name2=+0(%si):string": the uprobe fetch-args of `api`'s arguments.
std::string cuda_fetchargs(const CudaApi& api);

struct CudaResult {
    std::int32_t value = 0;
    const char* name = "";
};
std::span<const CudaResult> cu_results();                             // CUresult (cuda.h enum cudaError_enum)
std::span<const CudaResult> cuda_errors();                            // cudaError_t (driver_types.h enum cudaError)
std::optional<std::string_view> cu_result_name(std::int64_t value);   // 34 -> "CUDA_ERROR_STUB_LIBRARY"
std::optional<std::string_view> cuda_error_name(std::int64_t value);  // 35 -> "cudaErrorInsufficientDriver"

}  // namespace nvtrace
