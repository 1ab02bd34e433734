// Variants of each kind of kernel-log input, written from the formats' sources rather than taken from the
// handed cases: tests/analyze/klog/variants/*.log. Each file says, above its lines, where each shape comes
// from (util-linux dmesg(1) output modes, journalctl(1) -o modes, rsyslog templates, the kernel's printk
// call sites, open-gpu-kernel-modules' NV_PRINTF/nvkms/nvidia-drm wording, public logs). reports.log has no
// comments (they would be log lines); its shapes are named per test below.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nvtrace/kernel_log.hpp"

using namespace nvtrace;

namespace {

std::string slurp(const std::string& name) {
    std::ifstream in(std::string(NVTRACE_KLOG_VARIANTS_DIR) + "/" + name, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_FALSE(ss.str().empty()) << name;
    return ss.str();
}

// The file's lines without its '#' comment lines (the comments name the sources).
std::vector<std::string> lines_of(const std::string& name) {
    std::vector<std::string> out;
    std::istringstream in(slurp(name));
    for (std::string l; std::getline(in, l);)
        if (!l.empty() && l[0] != '#') out.push_back(l);
    return out;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines)
        s += l + "\n";
    return s;
}

std::string f(const KernelLogMessage& m, const std::string& k) {
    auto it = m.fields.find(k);
    return it == m.fields.end() ? "<absent>" : it->second;
}

TEST(KlogVariants, EveryPrefixReadsTheSameXid) {
    struct Expect {
        std::string format;
        bool ts, wall, host;
    };
    // In file order (prefixes.log names each one's source).
    const std::vector<Expect> expected{
        {"dmesg", true, false, false},          {"dmesg-ctime", false, true, false},
        {"dmesg-iso", false, true, false},      {"dmesg-reltime", false, true, false},
        {"dmesg-reltime", false, false, false}, {"dmesg-delta", false, false, false},
        {"bare", false, false, false},          {"dmesg", true, false, false},
        {"dmesg", true, false, false},          {"journal", false, true, true},
        {"journal", false, true, true},         {"syslog-iso", false, true, true},
        {"syslog-iso", false, true, true},      {"journal", false, true, true},
        {"journal-unix", false, true, true},    {"journal-monotonic", true, false, true},
        {"syslog", false, true, true},          {"syslog-dmesg", true, true, true},
        {"kernel-tag", false, false, false},    {"syslog-remote", false, true, true},
        {"bare", false, false, false},          {"kmsg", true, false, false},
        {"dmesg", true, false, false},
    };
    auto lines = lines_of("prefixes.log");
    ASSERT_EQ(lines.size(), expected.size());
    for (std::size_t i = 0; i < lines.size(); ++i) {
        SCOPED_TRACE(lines[i]);
        auto p = read_kernel_log(lines[i] + "\n", "prefixes.log");
        ASSERT_EQ(p.messages.size(), 1u);
        const auto& m = p.messages[0];
        EXPECT_EQ(p.format, expected[i].format);
        EXPECT_EQ(m.kind, "xid");
        EXPECT_EQ(m.source, "NVRM");
        EXPECT_EQ(f(m, "xid"), "13");
        EXPECT_EQ(f(m, "pid"), "42");
        EXPECT_EQ(f(m, "esr"), "0x405840=0x0");
        EXPECT_EQ(m.ts_ns.has_value(), expected[i].ts);
        EXPECT_EQ(!m.wall_time.empty(), expected[i].wall);
        EXPECT_EQ(m.host == "host1", expected[i].host);
        EXPECT_EQ(p.unread_lines, 0u);
        EXPECT_TRUE(p.complete);
    }
}

TEST(KlogVariants, PrefixValuesAreRead) {
    auto lines = lines_of("prefixes.log");
    auto one = [&](std::size_t i) { return read_kernel_log(lines.at(i) + "\n", "v.log").messages.at(0); };
    EXPECT_EQ(one(0).ts_ns, 123456789000u);
    EXPECT_EQ(one(1).wall_time, "Tue Dec  1 10:00:00 2026");
    EXPECT_EQ(one(3).wall_time, "Dec 1 10:00");
    EXPECT_EQ(one(7).level, 4);  // dmesg -r "<4>"
    EXPECT_EQ(one(8).level, 4);  // dmesg -x "warn"
    EXPECT_EQ(one(13).wall_time, "Tue 2026-12-01 10:00:00 CET");
    EXPECT_EQ(one(14).wall_time, "1764579600.123456");
    EXPECT_EQ(one(17).wall_time, "Dec 11 10:00:00");
    EXPECT_EQ(one(17).ts_ns, 123456789000u);
    auto remote = one(19);
    EXPECT_EQ(remote.wall_time, "2026-12-01T10:00:00.123456789Z");
    EXPECT_EQ(remote.level, 4);
    auto quoted = one(20);
    EXPECT_EQ(f(quoted, "line_prefix"), "[XID found] (54 minutes ago)");
    EXPECT_EQ(quoted.text.back(), '0');  // the closing quote is not part of the message
}

TEST(KlogVariants, LooksLikeKernelLogLineAgreesWithTheReader) {
    for (const auto& l : lines_of("prefixes.log"))
        EXPECT_TRUE(looks_like_kernel_log_line(l)) << l;
    EXPECT_FALSE(looks_like_kernel_log_line("hello world"));
    EXPECT_FALSE(looks_like_kernel_log_line("buffer size: 327680"));
}

TEST(KlogVariants, ManyGluedMessagesOnOneLine) {
    std::string line = "[    1.000000] NVRM: a";
    for (int i = 0; i < 3000; ++i)  // 45 KB: under the 64 KiB line cap
        line += "xNVRM: GspFn: b";
    auto p = read_kernel_log(line + "\n", "glued.log");
    EXPECT_EQ(p.messages.size(), 3001u);
    EXPECT_EQ(p.log_lines, 1u);
}

TEST(KlogVariants, UnknownPrefixKeepsTheLineAndSaysSo) {
    auto p =
        read_kernel_log("gpu-check 12:00 | NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n", "x.log");
    ASSERT_EQ(p.messages.size(), 1u);
    EXPECT_EQ(p.messages[0].kind, "xid");
    EXPECT_EQ(f(p.messages[0], "line_prefix"), "gpu-check 12:00 |");
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "unknown_prefix");
}

TEST(KlogVariants, UnreadLinesMakeTheParseIncomplete) {
    // Regression: lines that are no log line were dropped as info while the parse looked complete.
    auto p = read_kernel_log("[    1.000000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05\nhello there\n",
                             "mixed.log");
    EXPECT_EQ(p.messages.size(), 1u);
    EXPECT_EQ(p.unread_lines, 1u);
    EXPECT_FALSE(p.complete);
    ASSERT_EQ(p.incomplete.size(), 1u);
    EXPECT_EQ(p.incomplete[0].rfind("non_log_line x1 (first: mixed.log:2: ", 0), 0u);
    EXPECT_EQ(p.diagnostics.at(0).severity, "data_loss");
}

TEST(KlogVariants, DmesgTWithoutAnyPrefixIsRead) {
    // `dmesg -t` of a boot and module-load sequence: every line is a kernel message of some subsystem (pr_fmt
    // "x86/fpu: ", "EXT4-fs (dev): " from fs/ext4/super.c, dev_printk "usb 1-1: ", ACPI's own prefix).
    auto p = read_kernel_log(
        "nvidia: loading out-of-tree module taints kernel.\n"
        "nvidia-nvlink: Nvlink Core is being initialized, major device number 237\n"
        "nvidia 0000:01:00.0: enabling device (0000 -> 0003)\n"
        "ACPI Warning: \\_SB.PCI0.GPP0.PEGP._DSM: Argument #4 type mismatch - Found [Buffer], ACPI requires "
        "[Package] (20230628/nsarguments-61)\n"
        "nvidia-fs: Initializing nvfs driver module\n"
        "x86/fpu: Supporting XSAVE feature 0x001: 'x87 floating point registers'\n"
        "EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode\n"
        "usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
        "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)  "
        "Thu Jan 23 00:00:00 UTC 2025\n",
        "t.log");
    EXPECT_EQ(p.format, "bare");
    EXPECT_EQ(p.unread_lines, 0u);
    ASSERT_EQ(p.messages.size(), 9u);
    EXPECT_EQ(f(p.messages[2], "driver"), "nvidia");
    EXPECT_EQ(p.messages[4].source, "nvidia-fs");
    EXPECT_EQ(f(p.messages[8], "version"), "570.86.15");
}

std::vector<KernelLogMessage> bodies() {
    std::vector<KernelLogMessage> out;
    for (const auto& l : lines_of("bodies.log")) {
        auto p = read_kernel_log(l + "\n", "bodies.log");
        for (auto& m : p.messages)
            out.push_back(std::move(m));
    }
    return out;
}

TEST(KlogVariants, BodiesBarOverlapBothWordings) {
    auto b = bodies();
    ASSERT_GE(b.size(), 4u);
    EXPECT_EQ(b[0].kind, "bar_overlap");
    EXPECT_EQ(f(b[0], "overlaps"), "GPU BAR0");
    EXPECT_EQ(f(b[0], "gpu_index"), "0");
    EXPECT_EQ(f(b[0], "driver_range"), ">=595.44.02");
    EXPECT_EQ(f(b[0], "range_start"), "0x0000000090000000");
    EXPECT_EQ(f(b[1], "overlaps"), "FB or GPU BAR2");
    // <= 590: no newline after "GPU BARs"; the glued assertion is a message of its own.
    EXPECT_EQ(b[2].kind, "bar_overlap");
    EXPECT_EQ(f(b[2], "overlaps"), "GPU BARs");
    EXPECT_EQ(f(b[2], "driver_range"), "<=590.48.01");
    EXPECT_EQ(f(b[2], "fused"), "true");
    EXPECT_EQ(f(b[2], "result_status_name"), "NV_ERR_INVALID_ADDRESS");
    EXPECT_EQ(b[3].kind, "nv_status");
    EXPECT_EQ(f(b[3], "status_name"), "NV_ERR_INVALID_ADDRESS");
    EXPECT_EQ(f(b[3], "fused"), "true");
    EXPECT_EQ(b[2].line, b[3].line);
}

TEST(KlogVariants, BodiesKeyValueForms) {
    auto b = bodies();
    ASSERT_EQ(b.size(), 20u);
    EXPECT_EQ(f(b[4], "xid"), "94");
    EXPECT_EQ(f(b[4], "contained"), "SM");
    EXPECT_EQ(f(b[4], "contained_code"), "0x1");
    EXPECT_EQ(f(b[4], "rst"), "No");
    EXPECT_EQ(f(b[4], "d_rst"), "No");
    EXPECT_EQ(f(b[5], "uncontained"), "FBHUB");
    EXPECT_EQ(f(b[5], "rst"), "Yes");
    EXPECT_EQ(f(b[6], "hObject"), "0xbeef0310");
    EXPECT_EQ(f(b[6], "status_name"), "NV_ERR_GPU_IS_LOST");
    EXPECT_EQ(f(b[6], "status_truncated"), "<absent>");
    EXPECT_EQ(b[6].kind, "nv_status");
    EXPECT_EQ(f(b[7], "rpc_function"), "76");
    EXPECT_EQ(f(b[7], "status"), "0xf");
    EXPECT_EQ(f(b[8], "class"), "0x927c");
    EXPECT_EQ(f(b[8], "channel"), "1");
    EXPECT_EQ(f(b[8], "status_name"), "NV_ERR_GPU_IS_LOST");
    EXPECT_EQ(b[9].kind, "driver_warning");
    EXPECT_EQ(f(b[10], "connector"), "HDMI-0");
    EXPECT_EQ(f(b[10], "gpu"), "1");
    EXPECT_EQ(b[11].source, "kernel");
    EXPECT_EQ(b[11].kind, "driver_error");
    EXPECT_EQ(f(b[11], "module"), "drm_kms_helper");
    EXPECT_EQ(f(b[11], "function"), "drm_atomic_helper_wait_for_flip_done");
    EXPECT_EQ(b[12].source, "nvidia-drm");
    EXPECT_EQ(f(b[12], "gpu_id"), "0x200");
    EXPECT_EQ(f(b[12], "function"), "nv_drm_master_set");
    EXPECT_EQ(b[13].kind, "driver_loaded");
    EXPECT_EQ(f(b[13], "date"), "20160202");
    EXPECT_EQ(f(b[13], "module"), "nvidia-drm");
    EXPECT_EQ(b[14].kind, "probe_failed");
    EXPECT_EQ(f(b[14], "errno_name"), "ENOMEM");
    EXPECT_EQ(b[15].kind, "firmware_load_failed");
    EXPECT_EQ(f(b[15], "firmware"), "amdgpu/psp_13_0_0_sos.bin");
    EXPECT_EQ(f(b[15], "errno_name"), "ENOENT");
    EXPECT_EQ(f(b[16], "errno"), "-517");  // include/linux/errno.h, kernel-internal
    EXPECT_EQ(f(b[16], "errno_name"), "EPROBE_DEFER");
    EXPECT_EQ(f(b[17], "errno_name"), "EIO");
    EXPECT_EQ(f(b[18], "pci"), "0000:41:00");
    EXPECT_EQ(f(b[18], "chip"), "AD102");
    EXPECT_EQ(b[19].kind, "register_dump");
    EXPECT_EQ(f(b[19], "register"), "NV_PFSP_FALCON_COMMON_SCRATCH_GROUP_3");
    EXPECT_EQ(f(b[19], "register_index"), "2");
    EXPECT_EQ(f(b[19], "values"), "0xdead");
}

TEST(KlogVariants, ResourceSanityCheckAndItsCallerAreOneEvent) {
    auto p = read_kernel_log(joined(lines_of("resource-sanity.log")), "r.log");
    ASSERT_EQ(p.messages.size(), 2u);
    EXPECT_EQ(p.messages[0].kind, "resource_conflict");
    EXPECT_EQ(f(p.messages[0], "spans"), "pnp 00:01");
    EXPECT_EQ(f(p.messages[0], "caller"), "pci_map_rom+0x78/0x1d0");
    EXPECT_EQ(f(p.messages[1], "range_start"), "0xfdfff000");
    EXPECT_EQ(f(p.messages[1], "resource_end"), "0xfeffffff");
    EXPECT_EQ(f(p.messages[1], "caller"), "_nv000723rm+0x1ad/0x200");
    EXPECT_EQ(f(p.messages[1], "caller_module"), "nvidia");
}

TEST(KlogVariants, KernelReportsEachBecomeOneRecord) {
    auto p = read_kernel_log(slurp("reports.log"), "reports.log");
    std::vector<const KernelLogMessage*> oops;
    for (const auto& m : p.messages)
        if (m.kind == "oops") oops.push_back(&m);
    ASSERT_EQ(oops.size(), 6u);
    EXPECT_EQ(p.unread_lines, 0u);
    // 1. kernel/panic.c __warn with a file ("WARNING: CPU: %d PID: %d at %s:%d %pS"), print_modules,
    //    lib/dump_stack.c's CPU/Hardware name lines, frames with [module] and [module build-id]
    //    (CONFIG_STACKTRACE_BUILD_ID), <TASK>/</TASK>, "---[ end trace %016llx ]---".
    const auto& w = *oops[0];
    EXPECT_EQ(f(w, "type"), "warning");
    EXPECT_EQ(f(w, "warn_at"), "drivers/gpu/drm/drm_vblank.c:1291");
    EXPECT_EQ(f(w, "warn_function"), "drm_wait_one_vblank+0x1b0/0x1c0");
    EXPECT_EQ(f(w, "comm"), "Xorg");
    EXPECT_EQ(f(w, "tainted"), "P OE");
    EXPECT_EQ(f(w, "hardware"), "Dell Inc. Precision 7920 Tower/060K5C, BIOS 2.30.0 07/18/2023");
    EXPECT_EQ(f(w, "frames"), "3");
    EXPECT_EQ(f(w, "frame[0].reliable"), "false");
    EXPECT_EQ(f(w, "frame[2].module"), "nvidia_drm");
    EXPECT_EQ(f(w, "frame[2].build_id"), "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d");
    EXPECT_EQ(f(w, "modules_linked_in"), "nvidia_drm(POE) nvidia_modeset(POE) nvidia(POE)");
    // 2. lib/ubsan.c before 5.x under `dmesg -t`: a row of '=' opens and closes the report, "UBSAN: Undefined
    //    behaviour in %s:%d:%d", handle_shift_out_of_bounds' text, indented frames with no timestamp.
    const auto& u = *oops[1];
    EXPECT_EQ(f(u, "type"), "ubsan");
    EXPECT_EQ(f(u, "ubsan_check"), "undefined_behaviour");
    EXPECT_EQ(f(u, "file"), "drivers/gpu/drm/foo/foo.c");
    EXPECT_EQ(f(u, "src_line"), "123");
    EXPECT_EQ(f(u, "shift_exponent"), "32");
    EXPECT_EQ(f(u, "shift_type"), "int");
    EXPECT_EQ(f(u, "comm"), "swapper/0");
    EXPECT_EQ(f(u, "tainted"), "");
    EXPECT_EQ(f(u, "frames"), "3");
    // 3. 3.x kernels: "BUG: unable to handle kernel NULL pointer dereference at %p", "IP: [<addr>] sym",
    //    "[<addr>] ? sym+off/len [module]" frames, <IRQ>/<EOI> (arch/x86/kernel/dumpstack_64.c of that time).
    const auto& o = *oops[2];
    EXPECT_EQ(f(o, "type"), "null_pointer_dereference");
    EXPECT_EQ(f(o, "oops_code"), "0000");
    EXPECT_EQ(f(o, "frames"), "2");
    EXPECT_EQ(f(o, "frame[0].address"), "0xffffffffa0123456");
    EXPECT_EQ(f(o, "frame[0].module"), "nvidia");
    EXPECT_EQ(f(o, "kernel"), "3.10.0-1160.el7.x86_64");
    // 4. mm/kasan/report.c: a row of '=', "BUG: KASAN: %s in %pS", "Read of size %zu at addr %px by task
    //    %s/%d", lib/dump_stack.c with the UID field of 6.13+.
    const auto& k = *oops[3];
    EXPECT_EQ(f(k, "type"), "kasan");
    EXPECT_EQ(f(k, "kasan_check"), "slab-out-of-bounds");
    EXPECT_EQ(f(k, "pid"), "4242");
    EXPECT_EQ(f(k, "comm"), "python3");
    EXPECT_EQ(f(k, "frame[1].module"), "nvidia_uvm");
    // 5. Two reports back to back, the first without its end marker: two records.
    EXPECT_EQ(f(*oops[4], "warn_function"), "__flush_work+0x30/0x40");
    EXPECT_EQ(f(*oops[5], "type"), "ubsan");
    EXPECT_EQ(f(*oops[5], "index"), "8");
    EXPECT_EQ(f(*oops[5], "index_type"), "u8 [8]");
}

TEST(KlogVariants, FallenOffTheBusIsOneEventPerGpu) {
    auto p = read_kernel_log(joined(lines_of("duplicates.log")), "d.log");
    std::vector<std::string> xid_devices, lone;
    for (const auto& m : p.messages) {
        if (m.kind == "xid") xid_devices.push_back(f(m, "device"));
        if (m.kind == "fallen_off_bus") lone.push_back(f(m, "pci"));
    }
    EXPECT_EQ(xid_devices, (std::vector<std::string>{"0000:01:00.0", "0000:41:00.0", "0000:81:00.0", "<absent>"}));
    EXPECT_EQ(lone, (std::vector<std::string>{"0000:c1:00.0", "0000:c2:00.0"}));
}

}  // namespace

// A negative reading after ": " or "KEY=" was taken for an errno ("temperature: -5" became EIO). A number there
// is an errno only when the message speaks of a failure, or the key holds a return code (ret=, err=, status=).
TEST(KlogVariants, NegativeReadingsAreNotErrnos) {
    auto p = read_kernel_log(
        "[    1.000000] thermal thermal_zone3: temperature: -5\n"
        "[    1.100000] ACPI: _OSC: adjustment: -1\n"
        "[    1.200000] foo 0000:00:01.0: offset=-12 ok\n"
        "[    1.300000] intel_vpu 0000:00:0b.0: Failed to request firmware: -2\n"
        "[    1.400000] mydrv: setup done, ret=-5\n",
        "t.log");
    ASSERT_EQ(p.messages.size(), 5u);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(p.messages[i].fields.count("errno"), 0u) << p.messages[i].text;
    EXPECT_EQ(p.messages[3].fields.at("errno_name"), "ENOENT");
    EXPECT_EQ(p.messages[4].fields.at("errno_name"), "EIO");
}
