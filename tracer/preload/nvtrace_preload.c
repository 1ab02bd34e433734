// nvtrace_preload.c: libnvtrace_preload.so, injected by `nvtrace run` with LD_PRELOAD (off with --no-preload).
//
// Around each ioctl(2) on a GPU device fd (/dev/nvidiactl, /dev/nvidiaN, /dev/nvidia-uvm[-tools], other
// /dev/nvidia-*, /dev/gdrdrv, /dev/dri/*, /dev/accel/*) it writes one marker line before the call and one after
// it to the fd named by NVTRACE_TRACE_MARKER_FD (the tracefs instance's trace_marker, so the lines land in
// the trace on the kernel's clock). Grammar and limits: docs/preload.md.
//
// Rules this file keeps:
//  * Pass-through when NVTRACE_TRACE_MARKER_FD is unset or not an open fd: nothing is written or read.
//  * The hot path is async-signal-safe: only syscalls (fstat, readlink, process_vm_readv, write), atomics, and
//    stack buffers. No allocation, no stdio, no locks. errno is what the real ioctl left.
//  * Parameter memory is read with process_vm_readv on ourselves, so a bad pointer from the program gives
//    EFAULT to us, never SIGSEGV; never at a NULL pointer, never beyond _IOC_SIZE(cmd) (RM escapes) or the
//    parameter struct's size (UVM, whose numbers carry no size).
//  * Nothing is set close-on-exec or otherwise changed on the program's fds.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* The process's pid by the system call itself, not libc's getpid(): a `--uprobe libc:getpid` of the traced program
 * (docs/api.md) must see the program's calls only, not this library's. */
static pid_t self_pid(void) {
    return (pid_t)syscall(SYS_getpid);
}

#define NVP_EXPORT __attribute__((visibility("default")))

typedef int (*ioctl_fn)(int, unsigned long, ...);

// ---- state set once by the constructor --------------------------------------------------------------------

static ioctl_fn g_real_ioctl;
static int g_marker_fd = -1;  // -1: pass-through
static dev_t g_marker_dev;
static ino_t g_marker_ino;
static atomic_int g_disabled;  // set when the marker fd stopped being the trace_marker we were given
static uint32_t g_driver;      // NVIDIA driver version as MAJOR*1000000 + MINOR*1000 + PATCH; 0 = unknown
static char g_test_prefix[128];
static size_t g_test_prefix_len;

#define V(a, b, c) ((uint32_t)(a)*1000000u + (uint32_t)(b)*1000u + (uint32_t)(c))
#define VMAX 0xffffffffu

// ---- small async-signal-safe helpers -----------------------------------------------------------------------

struct buf {
    char* p;
    size_t len;
    size_t cap;
};

static void put_str(struct buf* b, const char* s) {
    while (*s && b->len < b->cap)
        b->p[b->len++] = *s++;
}

// A path as one word of a marker: space, backslash and bytes outside 0x21..0x7e as \xHH (parse_preload_marker
// in analyze/ioctl.cpp decodes them), so that a file name with a space cannot split the line.
static void put_path(struct buf* b, const char* s) {
    for (; *s && b->len < b->cap; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c > 0x20 && c < 0x7f && c != '\\') {
            b->p[b->len++] = (char)c;
        } else if (b->len + 4 <= b->cap) {
            b->p[b->len++] = '\\';
            b->p[b->len++] = 'x';
            b->p[b->len++] = "0123456789abcdef"[c >> 4];
            b->p[b->len++] = "0123456789abcdef"[c & 0xf];
        } else {
            break;
        }
    }
}

static void put_hex(struct buf* b, uint64_t v) {
    char tmp[16];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 0xf];
        v >>= 4;
    } while (v);
    put_str(b, "0x");
    while (n > 0 && b->len < b->cap)
        b->p[b->len++] = tmp[--n];
}

static void put_dec(struct buf* b, int64_t sv) {
    char tmp[24];
    int n = 0;
    uint64_t v = sv < 0 ? (uint64_t)0 - (uint64_t)sv : (uint64_t)sv;
    if (sv < 0) put_str(b, "-");
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    while (n > 0 && b->len < b->cap)
        b->p[b->len++] = tmp[--n];
}

static int starts_with(const char* s, const char* prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

// Reads `len` bytes of our own memory at `addr` without faulting: 0 on success.
static int safe_read(uint64_t addr, void* out, size_t len) {
    if (addr == 0) return -1;
    struct iovec local = {out, len};
    struct iovec remote = {(void*)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(self_pid(), &local, 1, &remote, 1, 0);
    return n == (ssize_t)len ? 0 : -1;
}

static int read_u32(uint64_t addr, uint32_t off, uint32_t* out) {
    return safe_read(addr + off, out, sizeof *out);
}

// ---- device classification ---------------------------------------------------------------------------------

enum dev_kind {
    DEV_NONE = 0,  // not a GPU device: markers with the path only (no parameters decoded)
    DEV_NV_CTL,
    DEV_NV_GPU,
    DEV_NV_UVM,
    DEV_NV_UVM_TOOLS,
    DEV_NV_OTHER,
    DEV_GDRDRV,
    DEV_DRM,
};

static int all_digits(const char* s) {
    if (!*s) return 0;
    for (; *s; ++s)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

// `path` as the kernel names the fd. With NVTRACE_PRELOAD_TEST_DEVICE_PREFIX=DIR (tests only), DIR/dev/X
// is classified as /dev/X.
static enum dev_kind classify(const char* path) {
    if (g_test_prefix_len && strncmp(path, g_test_prefix, g_test_prefix_len) == 0) path += g_test_prefix_len;
    if (!starts_with(path, "/dev/")) return DEV_NONE;
    const char* n = path + 5;
    if (strcmp(n, "nvidiactl") == 0) return DEV_NV_CTL;
    if (strcmp(n, "nvidia-uvm") == 0) return DEV_NV_UVM;
    if (strcmp(n, "nvidia-uvm-tools") == 0) return DEV_NV_UVM_TOOLS;
    if (starts_with(n, "nvidia") && all_digits(n + 6)) return DEV_NV_GPU;
    if (starts_with(n, "nvidia")) return DEV_NV_OTHER;
    if (strcmp(n, "gdrdrv") == 0) return DEV_GDRDRV;
    if (starts_with(n, "dri/") || starts_with(n, "accel/")) return DEV_DRM;
    return DEV_NONE;
}

// Per-fd cache, checked against fstat's (st_dev, st_ino) so that a closed and reused fd number is noticed
// without interposing close/dup. A seqlock per slot: a writer makes the sequence odd with a CAS (and gives
// up if that fails), readers retry nothing: a torn or busy slot is a miss and the fd is classified afresh.
#define FD_SLOTS 1024
#define PATH_WORDS 16  // 128 bytes of path
struct fd_slot {
    atomic_uint seq;  // even: stable; 0: empty
    atomic_ullong dev;
    atomic_ullong ino;
    atomic_uint kind;
    atomic_ullong path[PATH_WORDS];
};
static struct fd_slot g_fds[FD_SLOTS];

struct dev_info {
    enum dev_kind kind;
    char path[PATH_WORDS * 8];
};

static int cache_get(int fd, const struct stat* st, struct dev_info* out) {
    if (fd < 0 || fd >= FD_SLOTS) return 0;
    struct fd_slot* s = &g_fds[fd];
    unsigned s1 = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (s1 == 0 || (s1 & 1u)) return 0;
    if (atomic_load_explicit(&s->dev, memory_order_relaxed) != (unsigned long long)st->st_dev ||
        atomic_load_explicit(&s->ino, memory_order_relaxed) != (unsigned long long)st->st_ino)
        return 0;
    out->kind = (enum dev_kind)atomic_load_explicit(&s->kind, memory_order_relaxed);
    for (int i = 0; i < PATH_WORDS; ++i) {
        unsigned long long w = atomic_load_explicit(&s->path[i], memory_order_relaxed);
        memcpy(out->path + i * 8, &w, 8);
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != s1) return 0;
    out->path[sizeof out->path - 1] = '\0';
    return 1;
}

static void cache_put(int fd, const struct stat* st, const struct dev_info* in) {
    if (fd < 0 || fd >= FD_SLOTS) return;
    struct fd_slot* s = &g_fds[fd];
    unsigned s1 = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if ((s1 & 1u) ||
        !atomic_compare_exchange_strong_explicit(&s->seq, &s1, s1 + 1, memory_order_acquire, memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&s->dev, (unsigned long long)st->st_dev, memory_order_relaxed);
    atomic_store_explicit(&s->ino, (unsigned long long)st->st_ino, memory_order_relaxed);
    atomic_store_explicit(&s->kind, (unsigned)in->kind, memory_order_relaxed);
    for (int i = 0; i < PATH_WORDS; ++i) {
        unsigned long long w;
        memcpy(&w, in->path + i * 8, 8);
        atomic_store_explicit(&s->path[i], w, memory_order_relaxed);
    }
    atomic_store_explicit(&s->seq, s1 + 2, memory_order_release);
}

static void lookup_fd(int fd, struct dev_info* out) {
    out->kind = DEV_NONE;
    out->path[0] = '\0';
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return;
    if (cache_get(fd, &st, out)) return;
    char link[32];
    struct buf lb = {link, 0, sizeof link - 1};
    put_str(&lb, "/proc/self/fd/");
    put_dec(&lb, fd);
    link[lb.len] = '\0';
    char target[512];
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0 || (size_t)n >= sizeof target - 1) {
        return;  // unreadable or too long for us: not cached, not a device
    }
    target[n] = '\0';
    memset(out->path, 0, sizeof out->path);
    out->kind = classify(target);
    // Every fd's path, not only a GPU device's: the report names an ioctl's file from what was read at the call
    // (a /proc poll may have seen another file under the same number). A path longer than the cache slot is
    // not named (and a device with such a path not decoded).
    if ((size_t)n >= sizeof out->path)
        out->kind = DEV_NONE;
    else
        memcpy(out->path, target, (size_t)n + 1);
    cache_put(fd, &st, out);
}

// ---- parameter layouts -------------------------------------------------------------------------------------
// Offsets measured by compiling the headers of every NVIDIA/open-gpu-kernel-modules tag from 515.43.04 to
// 595.45.04 for x86_64 (src/common/sdk/nvidia/inc/nvos.h, nv-unix-nvos-params-wrappers.h,
// kernel-open/common/inc/nv-ioctl.h, kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_linux_ioctl.h). A range's `first`
// of 0 means "already so in 515.43.04", a `last` of VMAX "still so in 595.45.04". -1 = the struct has no such
// field.

struct rm_layout {
    uint8_t nr;     // _IOC_NR, or the inner escape of NV_ESC_IOCTL_XFER_CMD
    uint16_t size;  // _IOC_SIZE (or the XFER inner size) this layout is for
    uint32_t first, last;
    int16_t hclass, ctrl, status;
    const char* name;
};

static const struct rm_layout k_rm[] = {
    {0x27, 56, 0, VMAX, 12, -1, 40, "NV_ESC_RM_ALLOC_MEMORY"},  // nv_ioctl_nvos02_parameters_with_fd
    {0x27, 48, 0, VMAX, 12, -1, 40, "NV_ESC_RM_ALLOC_MEMORY"},  // bare NVOS02
    {0x28, 20, 0, VMAX, 12, -1, 16, "NV_ESC_RM_ALLOC_OBJECT"},  // NVOS05
    {0x29, 16, 0, VMAX, -1, -1, 12, "NV_ESC_RM_FREE"},          // NVOS00
    {0x2A, 32, 0, VMAX, -1, 8, 28, "NV_ESC_RM_CONTROL"},        // NVOS54: cmd@8
    // NV_ESC_RM_ALLOC: NVOS21 (32 bytes; status moved from 24 to 28 at 535.43.02 without a size change) or
    // NVOS64 (40 bytes before 535.43.02, status@32 before 525.47.04 and @36 after; then 48 bytes, status@40).
    {0x2B, 32, 0, V(535, 43, 1), 12, -1, 24, "NV_ESC_RM_ALLOC"},
    {0x2B, 32, V(535, 43, 2), VMAX, 12, -1, 28, "NV_ESC_RM_ALLOC"},
    {0x2B, 40, 0, V(525, 47, 3), 12, -1, 32, "NV_ESC_RM_ALLOC"},
    {0x2B, 40, V(525, 47, 4), V(535, 43, 1), 12, -1, 36, "NV_ESC_RM_ALLOC"},
    {0x2B, 48, 0, VMAX, 12, -1, 40, "NV_ESC_RM_ALLOC"},
    {0x34, 28, 0, VMAX, -1, -1, 24, "NV_ESC_RM_DUP_OBJECT"},                  // NVOS55
    {0x35, 24, 0, VMAX, -1, -1, 20, "NV_ESC_RM_SHARE"},                       // NVOS57
    {0x41, 56, 0, VMAX, -1, -1, 48, "NV_ESC_RM_IDLE_CHANNELS"},               // NVOS30
    {0x4A, 184, 0, VMAX, -1, -1, 20, "NV_ESC_RM_VID_HEAP_CONTROL"},           // NVOS32
    {0x4D, 72, 0, VMAX, -1, -1, 64, "NV_ESC_RM_ACCESS_REGISTRY"},             // NVOS38
    {0x4E, 56, 0, VMAX, -1, -1, 40, "NV_ESC_RM_MAP_MEMORY"},                  // nvos33_parameters_with_fd
    {0x4E, 48, 0, VMAX, -1, -1, 40, "NV_ESC_RM_MAP_MEMORY"},                  // bare NVOS33
    {0x4F, 32, 0, VMAX, -1, -1, 24, "NV_ESC_RM_UNMAP_MEMORY"},                // NVOS34
    {0x52, 16, 0, VMAX, -1, -1, 12, "NV_ESC_RM_GET_EVENT_DATA"},              // NVOS41
    {0x54, 56, 0, VMAX, 12, -1, 48, "NV_ESC_RM_ALLOC_CONTEXT_DMA2"},          // NVOS39
    {0x57, 56, 0, VMAX, -1, -1, 48, "NV_ESC_RM_MAP_MEMORY_DMA"},              // NVOS46 up to 575
    {0x57, 64, 0, VMAX, -1, -1, 56, "NV_ESC_RM_MAP_MEMORY_DMA"},              // NVOS46 from 580
    {0x58, 40, 0, VMAX, -1, -1, 32, "NV_ESC_RM_UNMAP_MEMORY_DMA"},            // NVOS47 up to 545
    {0x58, 48, 0, VMAX, -1, -1, 40, "NV_ESC_RM_UNMAP_MEMORY_DMA"},            // NVOS47 from 550
    {0x59, 16, 0, VMAX, -1, -1, 12, "NV_ESC_RM_BIND_CONTEXT_DMA"},            // NVOS49
    {0x5E, 40, 0, VMAX, -1, -1, 32, "NV_ESC_RM_UPDATE_DEVICE_MAPPING_INFO"},  // NVOS56
    {0xCE, 16, 0, VMAX, -1, -1, 12, "NV_ESC_ALLOC_OS_EVENT"},                 // nv_ioctl_alloc_os_event_t
    {0xCF, 16, 0, VMAX, -1, -1, 12, "NV_ESC_FREE_OS_EVENT"},                  // nv_ioctl_free_os_event_t
    {0xD9, 2608, 0, VMAX, -1, -1, 2600, "NV_ESC_EXPORT_TO_DMABUF_FD"},        // from 570
};

// UVM: the request number is the whole cmd and carries no size; rmStatus is the last field. Only numbers the
// driver routes to a handler (which writes rmStatus) are listed.
struct uvm_layout {
    uint32_t cmd;
    uint32_t first, last;
    int16_t status;
    const char* name;
};

static const struct uvm_layout k_uvm[] = {
    {23, 0, VMAX, 8, "UVM_CREATE_RANGE_GROUP"},
    {24, 0, VMAX, 8, "UVM_DESTROY_RANGE_GROUP"},
    {25, 0, VMAX, 28, "UVM_REGISTER_GPU_VASPACE"},
    {26, 0, VMAX, 16, "UVM_UNREGISTER_GPU_VASPACE"},
    {27, 0, VMAX, 48, "UVM_REGISTER_CHANNEL"},
    {28, 0, V(590, 44, 0), 24, "UVM_UNREGISTER_CHANNEL"},
    {28, V(590, 44, 1), VMAX, 8, "UVM_UNREGISTER_CHANNEL"},
    {29, 0, VMAX, 32, "UVM_ENABLE_PEER_ACCESS"},
    {30, 0, VMAX, 32, "UVM_DISABLE_PEER_ACCESS"},
    {31, 0, VMAX, 24, "UVM_SET_RANGE_GROUP"},
    {33, 0, V(550, 40, 52), 1196, "UVM_MAP_EXTERNAL_ALLOCATION"},
    {33, V(550, 40, 53), VMAX, 9260, "UVM_MAP_EXTERNAL_ALLOCATION"},
    {34, 0, V(590, 44, 0), 16, "UVM_FREE"},
    {34, V(590, 44, 1), VMAX, 8, "UVM_FREE"},
    {37, 0, VMAX, 36, "UVM_REGISTER_GPU"},
    {38, 0, VMAX, 16, "UVM_UNREGISTER_GPU"},
    {39, 0, VMAX, 4, "UVM_PAGEABLE_MEM_ACCESS"},
    {40, 0, VMAX, 264, "UVM_PREVENT_MIGRATION_RANGE_GROUPS"},
    {41, 0, VMAX, 264, "UVM_ALLOW_MIGRATION_RANGE_GROUPS"},
    {42, 0, V(550, 40, 6), 32, "UVM_SET_PREFERRED_LOCATION"},
    {42, V(550, 40, 7), VMAX, 36, "UVM_SET_PREFERRED_LOCATION"},
    {43, 0, VMAX, 16, "UVM_UNSET_PREFERRED_LOCATION"},
    {44, 0, VMAX, 16, "UVM_ENABLE_READ_DUPLICATION"},
    {45, 0, VMAX, 16, "UVM_DISABLE_READ_DUPLICATION"},
    {46, 0, VMAX, 32, "UVM_SET_ACCESSED_BY"},
    {47, 0, VMAX, 32, "UVM_UNSET_ACCESSED_BY"},
    {51, 0, VMAX, 72, "UVM_MIGRATE"},
    {53, 0, VMAX, 24, "UVM_MIGRATE_RANGE_GROUP"},
    {54, 0, V(590, 48, 1), 16, "UVM_ENABLE_SYSTEM_WIDE_ATOMICS"},
    {55, 0, V(590, 48, 1), 16, "UVM_DISABLE_SYSTEM_WIDE_ATOMICS"},
    {56, 0, V(560, 28, 2), 48, "UVM_TOOLS_INIT_EVENT_TRACKER"},
    {56, V(560, 28, 3), V(565, 57, 0), 52, "UVM_TOOLS_INIT_EVENT_TRACKER"},
    {56, V(565, 57, 1), VMAX, 48, "UVM_TOOLS_INIT_EVENT_TRACKER"},
    {57, 0, VMAX, 4, "UVM_TOOLS_SET_NOTIFICATION_THRESHOLD"},
    {58, 0, VMAX, 8, "UVM_TOOLS_EVENT_QUEUE_ENABLE_EVENTS"},
    {59, 0, VMAX, 8, "UVM_TOOLS_EVENT_QUEUE_DISABLE_EVENTS"},
    {60, 0, VMAX, 8, "UVM_TOOLS_ENABLE_COUNTERS"},
    {61, 0, VMAX, 8, "UVM_TOOLS_DISABLE_COUNTERS"},
    {62, 0, VMAX, 32, "UVM_TOOLS_READ_PROCESS_MEMORY"},
    {63, 0, VMAX, 32, "UVM_TOOLS_WRITE_PROCESS_MEMORY"},
    {64, 0, V(565, 57, 0), 12, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE"},
    {64, V(565, 57, 1), VMAX, 8, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE"},
    {65, 0, VMAX, 32, "UVM_MAP_DYNAMIC_PARALLELISM_REGION"},
    {66, 0, VMAX, 32, "UVM_UNMAP_EXTERNAL"},
    {67, 0, VMAX, 0, "UVM_TOOLS_FLUSH_EVENTS"},
    {68, 0, V(550, 40, 52), 1176, "UVM_ALLOC_SEMAPHORE_POOL"},
    {68, V(550, 40, 53), VMAX, 9240, "UVM_ALLOC_SEMAPHORE_POOL"},
    {69, 0, VMAX, 0, "UVM_CLEAN_UP_ZOMBIE_RESOURCES"},
    {70, 0, VMAX, 20, "UVM_PAGEABLE_MEM_ACCESS_ON_GPU"},
    {71, 0, VMAX, 20, "UVM_POPULATE_PAGEABLE"},
    {72, 0, VMAX, 16, "UVM_VALIDATE_VA_RANGE"},
    {73, 0, VMAX, 16, "UVM_CREATE_EXTERNAL_RANGE"},
    {74, 0, VMAX, 32, "UVM_MAP_EXTERNAL_SPARSE"},
    {75, 0, VMAX, 4, "UVM_MM_INITIALIZE"},
    {76, V(565, 57, 1), VMAX, 48, "UVM_TOOLS_INIT_EVENT_TRACKER_V2"},
    {77, V(565, 57, 1), VMAX, 8, "UVM_TOOLS_GET_PROCESSOR_UUID_TABLE_V2"},
    {78, V(565, 57, 1), VMAX, 52, "UVM_ALLOC_DEVICE_P2P"},
    {79, V(565, 57, 1), VMAX, 0, "UVM_CLEAR_ALL_ACCESS_COUNTERS"},
    {80, V(580, 65, 6), VMAX, 24, "UVM_DISCARD"},
    {0x30000001u, 0, VMAX, 8, "UVM_INITIALIZE"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// What the enter half decoded, carried to the exit half (on the stack of the interposed call).
struct decoded {
    const char* name;
    uint64_t params;       // address of the parameter struct
    int status_off;        // -1: no status to read
    int status_ambiguous;  // several layouts fit and the driver version is unknown
    int have_xfer;
    uint32_t xfer_nr, xfer_size;
    int have_hclass, have_ctrl;
    uint32_t hclass, ctrl;
};

static int in_range(uint32_t first, uint32_t last) {
    return g_driver == 0 || (g_driver >= first && g_driver <= last);
}

// Picks the layout for (nr, size): the one for the running driver when its version is known; otherwise the
// first that fits, with `ambiguous` set when another one fits too and puts status elsewhere.
static const struct rm_layout* rm_find(unsigned nr, unsigned size, int* ambiguous) {
    const struct rm_layout* best = NULL;
    *ambiguous = 0;
    for (size_t i = 0; i < COUNT(k_rm); ++i) {
        const struct rm_layout* l = &k_rm[i];
        if (l->nr != nr || l->size != size || !in_range(l->first, l->last)) continue;
        if (!best)
            best = l;
        else if (l->status != best->status)
            *ambiguous = 1;
    }
    return best;
}

static const struct uvm_layout* uvm_find(uint32_t cmd, int* ambiguous) {
    const struct uvm_layout* best = NULL;
    *ambiguous = 0;
    for (size_t i = 0; i < COUNT(k_uvm); ++i) {
        const struct uvm_layout* l = &k_uvm[i];
        if (l->cmd != cmd || !in_range(l->first, l->last)) continue;
        if (!best)
            best = l;
        else if (l->status != best->status)
            *ambiguous = 1;
    }
    return best;
}

static void decode_rm(unsigned nr, unsigned size, uint64_t arg, struct decoded* d) {
    if (nr == 0xD3 && size == 16 && arg) {  // NV_ESC_IOCTL_XFER_CMD: {u32 cmd; u32 size; u64 ptr}
        uint32_t inner[2];
        uint64_t ptr;
        d->name = "NV_ESC_IOCTL_XFER_CMD";
        if (safe_read(arg, inner, sizeof inner) != 0 || safe_read(arg + 8, &ptr, sizeof ptr) != 0) return;
        d->have_xfer = 1;
        d->xfer_nr = inner[0];
        d->xfer_size = inner[1];
        if (inner[0] > 0xff) return;
        nr = inner[0];
        size = inner[1];
        arg = ptr;
    }
    int ambiguous;
    const struct rm_layout* l = rm_find(nr, size, &ambiguous);
    if (!l) return;
    if (!d->have_xfer) d->name = l->name;
    d->params = arg;
    if (!arg) return;
    if (l->hclass >= 0 && (unsigned)l->hclass + 4 <= size && read_u32(arg, (uint32_t)l->hclass, &d->hclass) == 0)
        d->have_hclass = 1;
    if (l->ctrl >= 0 && (unsigned)l->ctrl + 4 <= size && read_u32(arg, (uint32_t)l->ctrl, &d->ctrl) == 0)
        d->have_ctrl = 1;
    if (l->status >= 0 && (unsigned)l->status + 4 <= size) {
        d->status_off = l->status;
        d->status_ambiguous = ambiguous;
    }
}

static void decode(enum dev_kind kind, unsigned long cmd, uint64_t arg, struct decoded* d) {
    memset(d, 0, sizeof *d);
    d->status_off = -1;
    uint32_t c = (uint32_t)cmd;
    if (kind == DEV_NV_CTL || kind == DEV_NV_GPU) {
        if (((c >> 8) & 0xffu) == 0x46u) decode_rm(c & 0xffu, (c >> 16) & 0x3fffu, arg, d);
    } else if (kind == DEV_NV_UVM || kind == DEV_NV_UVM_TOOLS) {
        int ambiguous;
        const struct uvm_layout* l = uvm_find(c, &ambiguous);
        if (!l) return;
        d->name = l->name;
        d->params = arg;
        d->status_off = l->status;
        d->status_ambiguous = ambiguous;
    }
}

// ---- marker output -----------------------------------------------------------------------------------------

static int marker_ok(void) {
    if (g_marker_fd < 0 || atomic_load_explicit(&g_disabled, memory_order_relaxed)) return 0;
    struct stat st;
    if (fstat(g_marker_fd, &st) != 0 || st.st_dev != g_marker_dev || st.st_ino != g_marker_ino) {
        // The program closed or replaced the fd: never write into whatever it is now.
        atomic_store_explicit(&g_disabled, 1, memory_order_relaxed);
        return 0;
    }
    return 1;
}

static void emit(struct buf* b) {
    if (b->len < b->cap) b->p[b->len++] = '\n';
    ssize_t r;
    do {
        r = write(g_marker_fd, b->p, b->len);
    } while (r < 0 && errno == EINTR);
}

static void put_common(struct buf* b, const char* half, int fd) {
    put_str(b, "nvtrace-ioctl ");
    put_str(b, half);
    put_str(b, " fd=");
    put_dec(b, fd);
}

static void write_enter(int fd, const struct dev_info* dev, unsigned long cmd, const struct decoded* d) {
    char line[1024];  // room for a whole escaped path (4 x 127 bytes): a cut dev= would name another file
    struct buf b = {line, 0, sizeof line - 1};
    put_common(&b, "enter", fd);
    put_str(&b, " dev=");
    put_path(&b, dev->path);
    put_str(&b, " cmd=");
    put_hex(&b, (uint32_t)cmd);
    if (d->name) {
        put_str(&b, " name=");
        put_str(&b, d->name);
    }
    if (d->have_xfer) {
        put_str(&b, " xfer_nr=");
        put_hex(&b, d->xfer_nr);
        put_str(&b, " xfer_size=");
        put_hex(&b, d->xfer_size);
    }
    if (d->have_hclass) {
        put_str(&b, " hclass=");
        put_hex(&b, d->hclass);
    }
    if (d->have_ctrl) {
        put_str(&b, " ctrl=");
        put_hex(&b, d->ctrl);
    }
    emit(&b);
}

static void write_exit(int fd, unsigned long cmd, int ret, int err, const struct decoded* d) {
    char line[200];
    struct buf b = {line, 0, sizeof line - 1};
    put_common(&b, "exit", fd);
    put_str(&b, " cmd=");
    put_hex(&b, (uint32_t)cmd);
    put_str(&b, " ret=");
    put_dec(&b, ret);
    if (ret == -1) {
        put_str(&b, " errno=");
        put_dec(&b, err);
    }
    uint32_t status;
    if (d->status_off >= 0 && !d->status_ambiguous && d->params &&
        read_u32(d->params, (uint32_t)d->status_off, &status) == 0) {
        put_str(&b, " status=");
        put_hex(&b, status);
    }
    emit(&b);
}

// ---- the interposed call -----------------------------------------------------------------------------------

static int call_real(int fd, unsigned long request, void* arg) {
    if (g_real_ioctl) return g_real_ioctl(fd, request, arg);
    return (int)syscall(SYS_ioctl, fd, request, arg);  // before our constructor ran
}

NVP_EXPORT int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void* arg = va_arg(ap, void*);
    va_end(ap);

    if (g_marker_fd < 0 || atomic_load_explicit(&g_disabled, memory_order_relaxed)) return call_real(fd, request, arg);

    int saved = errno;
    struct dev_info dev;
    lookup_fd(fd, &dev);
    if (dev.path[0] == '\0' || !marker_ok()) {
        errno = saved;
        return call_real(fd, request, arg);
    }
    struct decoded d;
    decode(dev.kind, request, (uint64_t)(uintptr_t)arg, &d);
    write_enter(fd, &dev, request, &d);
    errno = saved;

    int ret = call_real(fd, request, arg);

    int err = errno;
    write_exit(fd, request, ret, err, &d);
    errno = err;
    return ret;
}

// ---- constructor -------------------------------------------------------------------------------------------

// "595.45.04" -> V(595,45,4); 0 when it does not start with a version.
static uint32_t parse_version(const char* s) {
    uint32_t part[3] = {0, 0, 0};
    int n = 0, digits = 0;
    for (; *s && n < 3; ++s) {
        if (*s >= '0' && *s <= '9') {
            part[n] = part[n] * 10u + (uint32_t)(*s - '0');
            if (++digits > 6) return 0;
        } else if (*s == '.' && digits) {
            ++n;
            digits = 0;
        } else {
            break;
        }
    }
    if (n == 0 || part[0] > 4000 || part[1] > 999 || part[2] > 999) return 0;
    return V(part[0], part[1], part[2]);
}

static uint32_t read_version_file(const char* path, const char* after) {
    char text[256];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = '\0';
    const char* p = text;
    if (after) {
        // /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX ... Kernel Module for x86_64  595.45.04  ..."
        p = strstr(text, after);
        if (!p) return 0;
        p += strlen(after);
        while (*p == ' ')
            ++p;
    }
    return parse_version(p);
}

__attribute__((constructor)) static void nvtrace_preload_init(void) {
    int saved = errno;
    void* real = dlsym(RTLD_NEXT, "ioctl");
    memcpy(&g_real_ioctl, &real, sizeof real);  // object -> function pointer without a pedantic cast
    const char* fd_text = getenv("NVTRACE_TRACE_MARKER_FD");
    if (!fd_text || !*fd_text) goto out;
    char* end = NULL;
    long fd = strtol(fd_text, &end, 10);
    if (*end != '\0' || fd < 0 || fd > 1 << 20) goto out;
    struct stat st;
    if (fstat((int)fd, &st) != 0 || (fcntl((int)fd, F_GETFL) & O_ACCMODE) == O_RDONLY) goto out;
    g_marker_dev = st.st_dev;
    g_marker_ino = st.st_ino;

    const char* prefix = getenv("NVTRACE_PRELOAD_TEST_DEVICE_PREFIX");
    if (prefix && *prefix && strlen(prefix) < sizeof g_test_prefix) {
        strcpy(g_test_prefix, prefix);
        g_test_prefix_len = strlen(prefix);
    }
    const char* ver = getenv("NVTRACE_PRELOAD_DRIVER_VERSION");
    if (ver && *ver)
        g_driver = parse_version(ver);
    else if (!(g_driver = read_version_file("/sys/module/nvidia/version", NULL)))
        g_driver = read_version_file("/proc/driver/nvidia/version", "x86_64");
    g_marker_fd = (int)fd;

    char line[128];
    struct buf b = {line, 0, sizeof line - 1};
    put_str(&b, "nvtrace-preload start pid=");
    put_dec(&b, self_pid());
    put_str(&b, " driver=");
    if (g_driver) {
        put_dec(&b, g_driver / 1000000u);
        put_str(&b, ".");
        put_dec(&b, g_driver / 1000u % 1000u);
        uint32_t patch = g_driver % 1000u;
        if (patch) {
            put_str(&b, patch < 10 ? ".0" : ".");
            put_dec(&b, patch);
        }
    } else {
        put_str(&b, "unknown");
    }
    emit(&b);
out:
    errno = saved;
}
