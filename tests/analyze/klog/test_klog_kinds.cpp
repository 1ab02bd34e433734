// Each kind of message (docs/dmesg.md) and its fields, on single messages and short logs. Message shapes are
// from the driver sources named in analyze/klog/*.cpp and ../shared/reference/nvidia-driver.md section 6.
#include <string>

#include <gtest/gtest.h>

#include "nvtrace/kernel_log.hpp"

using namespace nvtrace;

namespace {

KernelLogMessage classify(const std::string& text, const std::string& preset_source = "") {
    KernelLogMessage m;
    m.text = text;
    m.source = preset_source;
    classify_kernel_message(m);
    return m;
}

std::string f(const KernelLogMessage& m, const std::string& k) {
    auto it = m.fields.find(k);
    return it == m.fields.end() ? "<absent>" : it->second;
}

TEST(KlogXid, WithoutPciPrefixAndWithoutPid) {
    auto m = classify("NVRM: Xid (0000:03:00): 14, Channel 00000001");
    EXPECT_EQ(m.kind, "xid");
    EXPECT_EQ(f(m, "pci"), "0000:03:00");
    EXPECT_EQ(f(m, "xid"), "14");
    EXPECT_EQ(f(m, "pid"), "<absent>");
    EXPECT_EQ(f(m, "channel"), "0x1");
    EXPECT_EQ(f(m, "xid_name"), "ROBUST_CHANNEL_FAKE_ERROR");
}

TEST(KlogXid, MigInstancesAndPreviousXid) {
    auto m = classify(
        "NVRM: Xid (PCI:0000:3b:00 GPU-I:02 GPU-CI:01): 45, pid=4242, name=python3, Ch 00000010, "
        "caused by previous Xid 43");
    EXPECT_EQ(f(m, "pci"), "0000:3b:00");
    EXPECT_EQ(f(m, "gpu_instance"), "02");
    EXPECT_EQ(f(m, "compute_instance"), "01");
    EXPECT_EQ(f(m, "pid"), "4242");
    EXPECT_EQ(f(m, "name"), "python3");
    EXPECT_EQ(f(m, "previous_xid"), "43");
}

TEST(KlogXid, ModernMmuFaultWithGpcUnit) {
    auto m = classify(
        "NVRM: Xid (PCI:0000:08:00): 31, pid=1234, name=app, Ch 0000003b, intr 10000000. MMU Fault: "
        "ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f1e_7c000000. Fault is of type FAULT_PDE "
        "ACCESS_TYPE_VIRT_READ");
    EXPECT_EQ(f(m, "engine"), "GRAPHICS");
    EXPECT_EQ(f(m, "client"), "GPCCLIENT_T1_0");
    EXPECT_EQ(f(m, "access_type"), "ACCESS_TYPE_VIRT_READ");
    auto h = classify(
        "NVRM: Xid (PCI:0000:08:00): 31, Ch 0000003b, intr 10000000. MMU Fault: ENGINE CE3 HUBCLIENT_CE1 "
        "faulted @ 0x1_00000000. Fault is of type FAULT_PTE ACCESS_TYPE_WRITE");
    EXPECT_EQ(f(h, "engine"), "CE3");
    EXPECT_EQ(f(h, "client"), "HUBCLIENT_CE1");
}

TEST(KlogXid, GspRpcTimeoutXid119) {
    auto m = classify(
        "NVRM: Xid (PCI:0000:01:00): 119, pid=1212, name=nvidia-smi, Timeout after 6s of waiting for "
        "RPC response from GPU1 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 2014 (0x20800a4c 0x4).");
    EXPECT_EQ(f(m, "xid_name"), "GSP_RPC_TIMEOUT");
    EXPECT_EQ(f(m, "rpc_function"), "76");
    EXPECT_EQ(f(m, "rpc_name"), "GSP_RM_CONTROL");
    EXPECT_EQ(f(m, "rpc_sequence"), "2014");
    EXPECT_EQ(f(m, "gpu_index"), "1");
}

TEST(KlogApiMismatch, ReversedOldWording) {
    auto m = classify(
        "NVRM: API mismatch: the NVIDIA kernel module has version 304.88,\nNVRM: but this NVIDIA driver "
        "component has version 304.64.");
    EXPECT_EQ(m.kind, "api_mismatch");
    EXPECT_EQ(f(m, "kernel_version"), "304.88");
    EXPECT_EQ(f(m, "client_version"), "304.64");
}

TEST(KlogFallenOffBus, DevicePrefixAndLegacyWording) {
    auto a = classify("NVRM: GPU 0000:2b:00.0: GPU has fallen off the bus.");
    EXPECT_EQ(a.kind, "fallen_off_bus");
    EXPECT_EQ(f(a, "pci"), "0000:2b:00.0");
    auto b = classify("NVRM: GPU at 0000:01:00.0 has fallen off the bus.");
    EXPECT_EQ(b.kind, "fallen_off_bus");
    EXPECT_EQ(f(b, "pci"), "0000:01:00.0");
}

TEST(KlogRmInit, CodeAndMinorOnOneDevice) {
    auto a = classify("NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)");
    EXPECT_EQ(a.kind, "rm_init_adapter_failed");
    EXPECT_EQ(f(a, "init_status"), "0x62");
    EXPECT_EQ(f(a, "rm_status"), "0x65");
    EXPECT_EQ(f(a, "code_line"), "1792");
    auto b = classify("NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 3");
    EXPECT_EQ(b.kind, "rm_init_adapter_failed");
    EXPECT_EQ(f(b, "minor"), "3");
}

TEST(KlogGsp, OlderHistoryRowsWithoutSequenceColumn) {
    auto p = read_kernel_log(
        "[ 2638.641500] NVRM: GPU0 _kgspLogXid119: ********************************* GSP Timeout "
        "**********************************\n"
        "[ 2638.641501] NVRM: GPU0 RPC history (CPU -> GSP):\n"
        "[ 2638.641502] NVRM:     entry function                   data0              data1              ts_start      "
        "     "
        "ts_end             duration actively_polling\n"
        "[ 2638.641597] NVRM:     -6    76   GSP_RM_CONTROL        0x000000002080a087 0x000000000000000c "
        "0x000609ffebb948b0 0x000609ffebb94cb0   1024us\n"
        "[ 2638.641615] NVRM:      0    4108 UCODE_LIBOS_PRINT     0x0000000000000000 0x0000000000000000 "
        "0x000609ffc2a20d47 0x000609ffc2a20d47          y\n"
        "[ 2644.661134] NVRM: Xid (PCI:0000:03:00): 119, pid=1, name=x, Timeout after 6s of waiting for RPC response\n",
        "g.log");
    ASSERT_EQ(p.messages.size(), 2u);
    const auto& m = p.messages[0];
    EXPECT_EQ(m.kind, "gsp_timeout");
    EXPECT_EQ(f(m, "gpu_index"), "0");
    EXPECT_EQ(f(m, "rpc_history[-6].name"), "GSP_RM_CONTROL");
    EXPECT_EQ(f(m, "rpc_history[-6].sequence"), "<absent>");
    EXPECT_EQ(f(m, "rpc_history[-6].duration_us"), "1024");
    EXPECT_EQ(f(m, "rpc_history[0].actively_polling"), "true");
    EXPECT_EQ(p.messages[1].kind, "xid");
}

TEST(KlogNvStatus, AssertAndCheckFailures) {
    auto a = classify(
        "NVRM: GPU0 nvAssertOkFailedNoLog: Assertion failed: Address not valid [NV_ERR_INVALID_ADDRESS] "
        "(0x0000001E) returned from status @ osmemdesc.c:1234");
    EXPECT_EQ(a.kind, "nv_status");
    EXPECT_EQ(f(a, "status"), "0x1e");
    EXPECT_EQ(f(a, "status_name"), "NV_ERR_INVALID_ADDRESS");
    EXPECT_EQ(f(a, "expr"), "status");
    EXPECT_EQ(f(a, "file"), "osmemdesc.c");
    EXPECT_EQ(f(a, "src_line"), "1234");
    EXPECT_EQ(f(a, "gpu_index"), "0");
    EXPECT_EQ(f(a, "function"), "nvAssertOkFailedNoLog");
    auto c = classify(
        "NVRM: nvCheckOkFailedNoLog: Check failed: Call not supported [NV_ERR_NOT_SUPPORTED] (0x00000056) "
        "returned from pRmApi->Control(pRmApi, h, h, cmd, p, s) @ kern_bus.c:77");
    EXPECT_EQ(f(c, "check"), "check");
    EXPECT_EQ(f(c, "status_name"), "NV_ERR_NOT_SUPPORTED");
    auto n = classify("NVRM: nvAssertFailedNoLog: Assertion failed: pGpu != NULL @ gpu.c:12");
    EXPECT_EQ(n.kind, "assertion_failed");
    EXPECT_EQ(f(n, "expr"), "pGpu != NULL");
    auto r =
        classify("NVRM: GPU1 _issueRpcAndWait: rpcSendMessage failed with status 0x0000000f for fn 78 sequence 9!");
    EXPECT_EQ(r.kind, "nv_status");
    EXPECT_EQ(f(r, "status_name"), "NV_ERR_GPU_IS_LOST");
}

TEST(KlogBarOverlap, Driver595Message) {
    auto m = classify(
        "NVRM: GPU0 osCheckGpuBarsOverlapAddrRange: osCheckGpuBarsOverlapAddrRange(): phys range "
        "0x383000000000-0x383003ffffff overlaps with GPU BAR0");
    EXPECT_EQ(m.kind, "bar_overlap");
    EXPECT_EQ(f(m, "range_start"), "0x383000000000");
    EXPECT_EQ(f(m, "range_end"), "0x383003ffffff");
    EXPECT_EQ(f(m, "overlaps"), "GPU BAR0");
    EXPECT_EQ(f(m, "gpu_index"), "0");
    auto fb = classify(
        "NVRM: osCheckGpuBarsOverlapAddrRange: osCheckGpuBarsOverlapAddrRange(): phys range 0x1-0x2 "
        "overlaps with FB or GPU BAR2");
    EXPECT_EQ(f(fb, "overlaps"), "FB or GPU BAR2");
}

TEST(KlogIoMemory, HostRegisterPathMessages) {
    auto a = classify("Cannot map memory with base addr 0x7f0000000000 and size of 0x4000 pages");
    EXPECT_EQ(a.source, "NVRM");
    EXPECT_EQ(a.kind, "io_memory_map_failed");
    EXPECT_EQ(f(a, "pages"), "0x4000");
    auto b = classify("NVRM: osCreateOsDescriptorFromIoMemory(): permission denied, allowPeermapping=0");
    EXPECT_EQ(b.kind, "io_memory_denied");
    auto c = classify(
        "NVRM: Invalid argument in nv_p2p_get_pages,address or length are not aligned "
        "address=0x7f0000001000, length=0x1000");
    EXPECT_EQ(c.kind, "p2p_invalid_argument");
    EXPECT_EQ(f(c, "length"), "0x1000");
}

TEST(KlogCallTrace, FramesModulesBuildIdsAndUnreliableMarks) {
    auto p = read_kernel_log(
        "[  100.000000] Call Trace:\n"
        "[  100.000001]  <TASK>\n"
        "[  100.000002]  ? _nv012865rm+0x77/0x330 [nvidia]\n"
        "[  100.000003]  os_acquire_spinlock+0x12/0x20 [nvidia 0123456789abcdef0123456789abcdef01234567]\n"
        "[  100.000004]  dump_stack_lvl+0x44/0x5c\n"
        "[  100.000005]  </TASK>\n"
        "[  100.000006] NVRM: next message\n",
        "t.log");
    ASSERT_EQ(p.messages.size(), 2u);
    const auto& m = p.messages[0];
    EXPECT_EQ(m.kind, "call_trace");
    EXPECT_EQ(f(m, "frames"), "3");
    EXPECT_EQ(f(m, "nvidia_frames"), "2");
    EXPECT_EQ(f(m, "frame[0]"), "_nv012865rm+0x77/0x330");
    EXPECT_EQ(f(m, "frame[0].reliable"), "false");
    EXPECT_EQ(f(m, "frame[1].build_id"), "0123456789abcdef0123456789abcdef01234567");
    EXPECT_EQ(f(m, "frame[2].module"), "<absent>");
}

TEST(KlogCallTrace, OldKernelAddressForm) {
    auto p = read_kernel_log(
        "[  10.0] Call Trace:\n"
        "[  10.0]  [<ffffffffa0b1c2d3>] ? _nv001234rm+0x1/0x2 [nvidia]\n"
        "[  10.0]  [<ffffffff8100abcd>] kthread+0xc0/0xd0\n",
        "t.log");
    ASSERT_EQ(p.messages.size(), 1u);
    EXPECT_EQ(f(p.messages[0], "frames"), "2");
    EXPECT_EQ(f(p.messages[0], "frame[0].address"), "0xffffffffa0b1c2d3");
}

TEST(KlogOops, InterleavedDriverLinesAndCallTraceInside) {
    auto p = read_kernel_log(
        "[ 5.0] BUG: kernel NULL pointer dereference, address: 0000000000000008\n"
        "[ 5.0] #PF: supervisor read access in kernel mode\n"
        "[ 5.0] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
        "[ 5.0] Oops: 0000 [#1] PREEMPT SMP NOPTI\n"
        "[ 5.0] CPU: 3 UID: 0 PID: 77 Comm: modprobe Not tainted 6.12.0 #1\n"
        "[ 5.0] RIP: 0010:nv_pci_probe+0x1a/0x300 [nvidia]\n"
        "[ 5.0] Call Trace:\n"
        "[ 5.0]  <TASK>\n"
        "[ 5.0]  nv_pci_probe+0x1a/0x300 [nvidia]\n"
        "[ 5.0]  </TASK>\n"
        "[ 5.0] ---[ end trace 0000000000000000 ]---\n"
        "[ 5.1] something else\n",
        "t.log");
    ASSERT_EQ(p.messages.size(), 3u);
    const auto& o = p.messages[0];
    EXPECT_EQ(o.kind, "oops");
    EXPECT_EQ(f(o, "type"), "null_pointer_dereference");
    EXPECT_EQ(f(o, "fault_address"), "0000000000000008");
    EXPECT_EQ(f(o, "cpu"), "3");
    EXPECT_EQ(f(o, "pid"), "77");
    EXPECT_EQ(f(o, "comm"), "modprobe");
    EXPECT_EQ(f(o, "tainted"), "");
    EXPECT_EQ(f(o, "kernel"), "6.12.0");
    EXPECT_EQ(f(o, "rip"), "nv_pci_probe+0x1a/0x300");
    EXPECT_EQ(f(o, "rip_module"), "nvidia");
    EXPECT_EQ(f(o, "nvidia_frames"), "1");
    EXPECT_EQ(p.messages[1].kind, "rm_init_adapter_failed");
    EXPECT_EQ(p.messages[2].kind, "other");
}

TEST(KlogDriverLoaded, Flavours) {
    auto o = classify(
        "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
        "(dvs-builder@U22-A)  Tue Sep 23 09:55:41 UTC 2025");
    EXPECT_EQ(o.kind, "driver_loaded");
    EXPECT_EQ(f(o, "flavour"), "open");
    EXPECT_EQ(f(o, "version"), "580.95.05");
    auto pr = classify("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023");
    EXPECT_EQ(f(pr, "flavour"), "proprietary");
    EXPECT_EQ(f(pr, "version"), "535.104.05");
    EXPECT_EQ(f(pr, "arch"), "x86_64");
    auto ms = classify(
        "nvidia-modeset: Loading NVIDIA UNIX Open Kernel Mode Setting Driver for x86_64  515.43.04  "
        "Release Build  (dvs-builder@U16-T02-35-3)  Thu Apr 21 19:55:05 UTC 2022");
    EXPECT_EQ(ms.source, "nvidia-modeset");
    EXPECT_EQ(f(ms, "version"), "515.43.04");
    auto uvm = classify("nvidia-uvm: Loaded the UVM driver in 8 mode, major device number 239");
    EXPECT_EQ(f(uvm, "mode"), "8");
    EXPECT_EQ(f(uvm, "major"), "239");
    auto taint = classify("nvidia: module license 'NVIDIA' taints kernel.");
    EXPECT_EQ(taint.kind, "module_taint");
    EXPECT_EQ(f(taint, "flavour"), "proprietary");
}

TEST(KlogUvm, ErrorPrintWithStatus) {
    auto m = classify(
        "nvidia-uvm: uvm_va_range.c:123 uvm_map_external_allocation[pid:4321] ERROR: Address not valid "
        "[NV_ERR_INVALID_ADDRESS] : mapping failed");
    EXPECT_EQ(m.source, "nvidia-uvm");
    EXPECT_EQ(m.kind, "nv_status");
    EXPECT_EQ(f(m, "status_name"), "NV_ERR_INVALID_ADDRESS");
    EXPECT_EQ(f(m, "function"), "uvm_map_external_allocation");
    EXPECT_EQ(f(m, "pid"), "4321");
    auto i = classify("nvidia-uvm: ioctl 99 not found. Did you mean to insmod with uvm_enable_builtin_tests=1?");
    EXPECT_EQ(f(i, "ioctl"), "99");
}

TEST(KlogPeermemGdrdrv, SourcesAndErrors) {
    EXPECT_EQ(classify("nv_peer_mem: Unknown symbol ib_register_peer_memory_client (err 0)").source, "nvidia-peermem");
    EXPECT_EQ(classify("nvidia_peermem: disagrees about version of symbol x").source, "nvidia-peermem");
    EXPECT_EQ(classify("nv_tco: NV TCO WatchDog Timer Driver v0.01").source, "kernel");
    auto g = classify("gdrdrv:gdrdrv_mmap:error in remap_pfn_range ret=-22");
    EXPECT_EQ(g.source, "gdrdrv");
    EXPECT_EQ(g.kind, "driver_error");
    EXPECT_EQ(f(g, "function"), "gdrdrv_mmap");
}

// A driver's text written from user space is read by the driver's grammar, but the driver did not print it: the
// source stays user and the driver goes into text_source (was: source NVRM, as if nvidia.ko had printed it).
TEST(KlogUser, PresetUserSourceStaysWhenTheTextNamesADriver) {
    auto u = classify("hello from user space", "user");
    EXPECT_EQ(u.source, "user");
    EXPECT_EQ(u.kind, "other");
    EXPECT_EQ(u.fields.count("text_source"), 0u);
    auto n = classify("NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen off the bus.", "user");
    EXPECT_EQ(n.source, "user");
    EXPECT_EQ(n.kind, "xid");
    EXPECT_EQ(f(n, "text_source"), "NVRM");
    EXPECT_EQ(f(n, "xid"), "79");
}

}  // namespace

// A status that is no 32-bit hex number ended `nvtrace dmesg` with "internal error: stoul" (exit 4), found by
// fuzz_kernel_log: an NVRM key/value `status=0xqq` (std::invalid_argument) and a modeset channel-state tuple whose
// status has 22 hex digits (std::out_of_range). The message is kept, the status as text, with no NV_STATUS name.
TEST(KlogKinds, StatusThatIsNoHexNumberIsKeptAsTextNotACrash) {
    KernelLogMessage a = classify("NVRM: nvAssertFailed: status=0xqq");
    EXPECT_EQ(a.source, "NVRM");
    EXPECT_EQ(f(a, "status"), "0xqq");
    EXPECT_EQ(a.fields.count("status_name"), 0u);
    KernelLogMessage b = classify(
        "nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state: "
        "0x0000ca7e:2:0:0x1234567890123456789012");
    EXPECT_EQ(b.kind, "driver_error");
    EXPECT_EQ(f(b, "channel"), "2");
    EXPECT_EQ(b.fields.count("status_name"), 0u);
    KernelLogMessage c = classify(  // a real one still names its status
        "nvidia-modeset: ERROR: GPU:0: Failed to query display engine channel state: 0x0000ca7e:2:0:0x00000062");
    EXPECT_FALSE(f(c, "status_name").empty());
}
