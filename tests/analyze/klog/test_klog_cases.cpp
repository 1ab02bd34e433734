// One test per real kernel log in tests/data/cases (../shared/cases/README.md): a golden JSON of the whole
// parse, and by hand every value the README lists for that file.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "nvtrace/kernel_log.hpp"

using namespace nvtrace;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

KernelLogParse load(const std::string& name) {
    std::string text = slurp(std::string(NVTRACE_CASES_DIR) + "/" + name);
    EXPECT_FALSE(text.empty()) << name;
    return read_kernel_log(text, name);
}

std::vector<const KernelLogMessage*> of_kind(const KernelLogParse& p, const std::string& kind) {
    std::vector<const KernelLogMessage*> out;
    for (const auto& m : p.messages)
        if (m.kind == kind) out.push_back(&m);
    return out;
}

std::string f(const KernelLogMessage* m, const std::string& k) {
    if (!m) return "<no message>";
    auto it = m->fields.find(k);
    return it == m->fields.end() ? "<absent>" : it->second;
}

const KernelLogMessage* first(const KernelLogParse& p, const std::string& kind) {
    auto v = of_kind(p, kind);
    return v.empty() ? nullptr : v[0];
}

const char* const kCases[] = {
    "nvrm-xid79-fallen-off-bus-continuation.log",
    "nvrm-api-mismatch-syslog-octal012.log",
    "nvrm-api-mismatch-client-pid.log",
    "nvrm-api-mismatch-journal-indent.log",
    "nvrm-rminitadapter-gsp-gfw-boot.log",
    "nvrm-rminitadapter-oops-journal.log",
    "nvrm-rminitadapter-syslog-plus-dmesg-ts.log",
    "nvrm-rminitadapter-legacy-358.log",
    "nvrm-xid31-13-32-legacy-418.log",
    "nvrm-xid13-109-ctime-peermem.log",
    "nvrm-gsp-timeout-rpc-history-gh100.log",
    "nvrm-raw-stack-dump-nvidia-symbols.log",
    "nvidia-uvm-load-bumblebee-331.log",
    "nvidia-peermem-unknown-symbol-dmesg-T.log",
    "gdrcopy-sanity-copylat-fail.txt",
    "cuda-hostregister-cumemaddressreserve-fail.txt",
    "nvrm-xid79-dmesg-T-crashdump-continuation.log",
    "nvrm-nvassertokfailed-bar1-va-exhaustion.log",
    "nvrm-nvoc-fused-line-cc-tdx.log",
    "nvrm-fsp-boot-cc-insufficient-resources.log",
    "nvrm-nocolon-rfc3339-kbusverify.log",
    "nvidia-modeset-error-journal-flip-timeout.log",
    "nvidia-uvm-ubsan-calltrace-uvm-ioctl.log",
    "accel-ivpu-firmware-variants.log",
};

class KlogGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(KlogGolden, MatchesGoldenJson) {
    std::string name = GetParam();
    std::string json = kernel_log_json(load(name)) + "\n";
    std::string golden_path = std::string(NVTRACE_KLOG_GOLDEN_DIR) + "/" + name.substr(0, name.rfind('.')) + ".json";
    const char* update = std::getenv("NVTRACE_UPDATE_GOLDEN");
    if (update && std::string(update) == "1") {
        std::ofstream(golden_path, std::ios::binary | std::ios::trunc) << json;
        GTEST_SKIP() << "golden written: " << golden_path;
    }
    std::string golden = slurp(golden_path);
    ASSERT_FALSE(golden.empty()) << "no golden " << golden_path << "; run NVTRACE_UPDATE_GOLDEN=1 ctest -R golden";
    EXPECT_EQ(json, golden) << "regenerate with NVTRACE_UPDATE_GOLDEN=1 ctest -R golden and review the diff";
}

std::string test_name(const ::testing::TestParamInfo<const char*>& info) {
    std::string n = info.param;
    n = n.substr(0, n.rfind('.'));
    for (auto& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(golden, KlogGolden, ::testing::ValuesIn(kCases), test_name);

// `log KIND` in an expectations file is checked against is_kernel_log_kind (a list beside the classifiers): every
// kind the classifiers give on the real cases must be on it, or a check of it could not be written.
TEST(KlogCases, EveryKindTheCasesGiveIsOneExpectationFilesAccept) {
    std::size_t kinds = 0;
    for (const char* name : kCases)
        for (const auto& m : load(name).messages) {
            EXPECT_TRUE(is_kernel_log_kind(m.kind)) << name << ": " << m.kind;
            ++kinds;
        }
    EXPECT_GT(kinds, 0u);
    EXPECT_FALSE(is_kernel_log_kind("xdi"));
}

TEST(KlogCases, EveryCaseReadsWithoutNonLogLinesExceptKnownOnes) {
    for (const char* name : kCases) {
        auto p = load(name);
        EXPECT_FALSE(p.messages.empty()) << name;
        EXPECT_NE(p.format, "unknown") << name;
    }
}

TEST(KlogCases, Xid79FallenOffTheBusContinuation) {
    auto p = load("nvrm-xid79-fallen-off-bus-continuation.log");
    EXPECT_EQ(p.format, "dmesg");
    auto fob = of_kind(p, "fallen_off_bus");
    ASSERT_EQ(fob.size(), 1u);  // three physical lines, one message
    EXPECT_EQ(f(fob[0], "pci"), "0000:b3:00.0");
    EXPECT_EQ(f(fob[0], "pci_id"), "10de:26b5");
    EXPECT_EQ(fob[0]->ts_ns, 1843308145000u);
    EXPECT_EQ(fob[0]->source, "NVRM");
    EXPECT_EQ(std::count(fob[0]->text.begin(), fob[0]->text.end(), '\n'), 2);
    auto probe = first(p, "probe_failed");
    EXPECT_EQ(f(probe, "count"), "1");
    auto drv = first(p, "driver_loaded");
    EXPECT_EQ(f(drv, "version"), "570.158.01");
    EXPECT_EQ(f(drv, "open"), "true");
    EXPECT_EQ(f(drv, "flavour"), "open");
    EXPECT_EQ(p.messages.size(), 3u);
    EXPECT_TRUE(p.diagnostics.empty());
}

TEST(KlogCases, ApiMismatchSyslogOctal012) {
    auto p = load("nvrm-api-mismatch-syslog-octal012.log");
    EXPECT_EQ(p.format, "syslog");
    ASSERT_EQ(p.messages.size(), 1u);
    auto m = first(p, "api_mismatch");
    EXPECT_EQ(f(m, "client_version"), "535.54.03");
    EXPECT_EQ(f(m, "kernel_version"), "530.30.02");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->wall_time, "Jun 30 11:07:05");
    EXPECT_EQ(m->host, "host1");
    EXPECT_EQ(std::count(m->text.begin(), m->text.end(), '\n'), 3);  // #012 undone
}

TEST(KlogCases, ApiMismatchClientPid) {
    auto p = load("nvrm-api-mismatch-client-pid.log");
    auto m = first(p, "api_mismatch");
    EXPECT_EQ(f(m, "client_name"), "kwin_wayland");
    EXPECT_EQ(f(m, "client_pid"), "1005");
    EXPECT_EQ(f(m, "client_version"), "595.84");
    EXPECT_EQ(f(m, "kernel_version"), "595.80");
    ASSERT_TRUE(m);
    EXPECT_EQ(m->ts_ns, 9424670000u);
    EXPECT_EQ(p.messages.size(), 2u);  // the r8169 line and the five-line mismatch
    EXPECT_EQ(f(&p.messages[0], "driver"), "r8169");
}

TEST(KlogCases, ApiMismatchJournalIndent) {
    auto p = load("nvrm-api-mismatch-journal-indent.log");
    EXPECT_EQ(p.format, "journal");
    ASSERT_EQ(p.messages.size(), 1u);
    auto m = first(p, "api_mismatch");
    EXPECT_EQ(f(m, "client_version"), "367.44");
    EXPECT_EQ(f(m, "kernel_version"), "367.35");
    EXPECT_EQ(m->host, "host1");
}

TEST(KlogCases, RmInitAdapterGspGfwBoot) {
    auto p = load("nvrm-rminitadapter-gsp-gfw-boot.log");
    auto rm = of_kind(p, "rm_init_adapter_failed");
    ASSERT_EQ(rm.size(), 1u);
    EXPECT_EQ(f(rm[0], "pci"), "0000:98:00.0");
    EXPECT_EQ(f(rm[0], "code"), "0x62:0x65:1792");
    EXPECT_EQ(f(rm[0], "minor"), "0");
    EXPECT_EQ(f(rm[0], "rm_status_name"), "NV_ERR_TIMEOUT");
    auto gfw = first(p, "gfw_boot_timeout");
    EXPECT_EQ(f(gfw, "gfw_boot_progress"), "0x3");
    EXPECT_EQ(f(gfw, "chip"), "TU102");
    auto st = first(p, "nv_status");
    EXPECT_EQ(f(st, "vbios_version"), "94.02.59.00.05");
    EXPECT_EQ(f(st, "status_name"), "NV_ERR_TIMEOUT");
}

TEST(KlogCases, RmInitAdapterOopsJournal) {
    auto p = load("nvrm-rminitadapter-oops-journal.log");
    EXPECT_EQ(p.format, "journal");
    auto rm = of_kind(p, "rm_init_adapter_failed");
    ASSERT_EQ(rm.size(), 1u);  // the companion line after the Oops lines joins its RmInitAdapter line
    EXPECT_EQ(f(rm[0], "pci"), "0000:13:00.0");
    EXPECT_EQ(f(rm[0], "code"), "0x26:0x56:1463");
    EXPECT_EQ(f(rm[0], "minor"), "0");
    auto oops = of_kind(p, "oops");
    ASSERT_EQ(oops.size(), 1u);
    EXPECT_EQ(f(oops[0], "pid"), "591");
    EXPECT_EQ(f(oops[0], "comm"), "nv_queue");
    EXPECT_EQ(f(oops[0], "cpu"), "15");
    EXPECT_EQ(f(oops[0], "kernel"), "5.10.0-11-amd64");
    EXPECT_EQ(f(oops[0], "tainted"), "P OE");
    EXPECT_EQ(f(oops[0], "fault_address"), "0000000000002a04");
    EXPECT_EQ(oops[0]->source, "kernel");
}

TEST(KlogCases, RmInitAdapterSyslogPlusDmesgTimestamp) {
    auto p = load("nvrm-rminitadapter-syslog-plus-dmesg-ts.log");
    EXPECT_EQ(p.format, "syslog-dmesg");
    auto rm = of_kind(p, "rm_init_adapter_failed");
    ASSERT_EQ(rm.size(), 3u);
    for (auto* m : rm) {
        EXPECT_EQ(f(m, "pci"), "0000:0a:00.0");
        EXPECT_EQ(f(m, "code"), "0x24:0x72:1568");
        EXPECT_EQ(f(m, "minor"), "5");
        EXPECT_EQ(m->host, "host1");
    }
    EXPECT_EQ(rm[0]->ts_ns, 885242168000u);
    EXPECT_EQ(rm[0]->wall_time, "Dec  2 11:49:53");
}

TEST(KlogCases, RmInitAdapterLegacy358) {
    auto p = load("nvrm-rminitadapter-legacy-358.log");
    auto rm = of_kind(p, "rm_init_adapter_failed");
    ASSERT_EQ(rm.size(), 1u);
    EXPECT_EQ(f(rm[0], "code"), "0x26:0xffff:1375");
    EXPECT_EQ(f(rm[0], "minor"), "0");
    EXPECT_EQ(f(rm[0], "pci"), "<absent>");
    auto open = first(p, "device_open_failed");
    EXPECT_EQ(f(open, "errno"), "-5");
    EXPECT_EQ(f(open, "function"), "nvidia_frontend_open");
}

TEST(KlogCases, Xid31_13_32Legacy418) {
    auto p = load("nvrm-xid31-13-32-legacy-418.log");
    EXPECT_EQ(p.format, "bare+dmesg");
    auto xids = of_kind(p, "xid");
    ASSERT_EQ(xids.size(), 4u);  // 31 (no timestamp), 31, 13 (four lines, one event), 32
    EXPECT_EQ(xids[0]->line, 1u);
    EXPECT_FALSE(xids[0]->ts_ns);
    const auto* x31 = xids[1];
    EXPECT_EQ(f(x31, "xid"), "31");
    EXPECT_EQ(f(x31, "pci"), "0000:01:00");
    EXPECT_EQ(f(x31, "channel"), "0x3a");
    EXPECT_EQ(f(x31, "fault_address"), "0x17_00592000");
    EXPECT_EQ(f(x31, "fault_type"), "FAULT_PDE");
    EXPECT_EQ(f(x31, "access_type"), "ACCESS_TYPE_READ");
    EXPECT_EQ(f(x31, "client"), "GPCCLIENT_T1_3");
    EXPECT_EQ(f(x31, "pid"), "<absent>");
    const auto* x13 = xids[2];
    EXPECT_EQ(f(x13, "xid"), "13");
    EXPECT_EQ(f(x13, "channel"), "0x52");  // "ChID 0052"
    EXPECT_EQ(f(x13, "esr"), "0x4041b0=0x0 0x404000=0x80000002");
    EXPECT_EQ(std::count(x13->text.begin(), x13->text.end(), '\n'), 3);
    EXPECT_EQ(f(xids[3], "xid"), "32");
    EXPECT_EQ(f(xids[3], "channel"), "0x52");
    EXPECT_EQ(f(first(p, "gpu_uuid"), "uuid"), "GPU-00000000-0000-0000-0000-000000000000");
    ASSERT_EQ(p.diagnostics.size(), 1u);
    EXPECT_EQ(p.diagnostics[0].name, "elided_lines");
    EXPECT_EQ(p.diagnostics[0].first_example.rfind("nvrm-xid31-13-32-legacy-418.log:4:", 0), 0u);
}

TEST(KlogCases, Xid13_109CtimePeermem) {
    auto p = load("nvrm-xid13-109-ctime-peermem.log");
    EXPECT_EQ(p.format, "dmesg-ctime");
    auto xids = of_kind(p, "xid");
    ASSERT_EQ(xids.size(), 4u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(f(xids[i], "xid"), "13");
        EXPECT_EQ(f(xids[i], "pci"), "0000:cb:00");
        EXPECT_EQ(f(xids[i], "pid"), "<unknown>");
        EXPECT_EQ(f(xids[i], "name"), "<unknown>");
    }
    EXPECT_EQ(f(xids[0], "gpc"), "7");
    EXPECT_EQ(f(xids[0], "tpc"), "7");
    EXPECT_EQ(f(xids[0], "sm"), "0");
    EXPECT_EQ(xids[0]->wall_time, "Fri Aug 30 11:43:09 2024");
    const auto* x109 = xids[3];
    EXPECT_EQ(f(x109, "xid"), "109");
    EXPECT_EQ(f(x109, "pid"), "1797828");
    EXPECT_EQ(f(x109, "name"), "pt_main_thread");
    EXPECT_EQ(f(x109, "channel"), "0x8");
    EXPECT_EQ(f(x109, "info"), "0x58005");
    EXPECT_EQ(f(x109, "error_string"), "CTX SWITCH TIMEOUT");
    const auto& peer = p.messages.at(0);
    EXPECT_EQ(peer.source, "nvidia-peermem");
    EXPECT_EQ(peer.wall_time, "Fri Aug 30 11:11:22 2024");
    EXPECT_EQ(f(&peer, "error"), "invalid_context");
}

TEST(KlogCases, GspTimeoutRpcHistoryGH100) {
    auto p = load("nvrm-gsp-timeout-rpc-history-gh100.log");
    auto gsp = of_kind(p, "gsp_timeout");
    ASSERT_EQ(gsp.size(), 3u);  // two heartbeat lines, one RPC timeout report
    EXPECT_EQ(f(gsp[0], "gpu_index"), "6");
    EXPECT_EQ(f(gsp[0], "timeout_type"), "heartbeat");
    EXPECT_EQ(f(gsp[0], "diff_ms"), "6070");
    EXPECT_EQ(f(gsp[0], "timeout_ms"), "5200");
    const auto* rpc = gsp[2];
    EXPECT_EQ(f(rpc, "timeout_type"), "rpc");
    EXPECT_EQ(f(rpc, "gpu_index"), "6");
    EXPECT_EQ(f(rpc, "chip"), "<absent>");
    // kernel_gsp.c _kgspLogRpcHistoryEntry prints entry, function number, name, sequence: 4124 is the
    // function number of GSP_LOCKDOWN_NOTICE (the README calls it "seq"); the sequence column is 0.
    EXPECT_EQ(f(rpc, "rpc_event_history[0].name"), "GSP_LOCKDOWN_NOTICE");
    EXPECT_EQ(f(rpc, "rpc_event_history[0].function"), "4124");
    EXPECT_EQ(f(rpc, "rpc_event_history[0].sequence"), "0");
    EXPECT_EQ(f(rpc, "rpc_event_history[-3].duration_us"), "2");
    EXPECT_EQ(f(rpc, "rpc_event_history[-2].duration_us"), "<absent>");
    EXPECT_EQ(f(rpc, "rpc_history[-2].name"), "SET_REGISTRY");
    EXPECT_EQ(f(rpc, "rpc_history[-2].duration_us"), "1095000");
    EXPECT_EQ(f(rpc, "rpc_event_history.rows"), "5");
    EXPECT_EQ(f(rpc, "rpc_history.rows"), "2");
    auto st = first(p, "nv_status");
    EXPECT_EQ(f(st, "status"), "0x72");
    EXPECT_EQ(f(st, "status_name"), "NV_ERR_MEMORY_ERROR");
    EXPECT_EQ(f(first(p, "driver_loaded"), "version"), "595.71.05");
    EXPECT_EQ(f(of_kind(p, "other")[3], "chip"), "GH100");
}

TEST(KlogCases, RawStackDumpNvidiaSymbols) {
    auto p = load("nvrm-raw-stack-dump-nvidia-symbols.log");
    auto traces = of_kind(p, "call_trace");
    ASSERT_EQ(traces.size(), 2u);  // the syslog excerpt and the dmesg excerpt are separate dumps
    EXPECT_EQ(f(traces[0], "words"), "14");
    EXPECT_EQ(f(traces[0], "symbol[0]"), "_nv012865rm+0x77/0x330");
    EXPECT_EQ(f(traces[0], "symbol[0].obfuscated"), "true");
    EXPECT_EQ(f(traces[0], "symbol[0].module"), "nvidia");
    EXPECT_EQ(f(traces[0], "symbol[1]"), "_nv048628rm+0x49f/0x7f0");
    EXPECT_EQ(f(traces[1], "symbol[0]"), "nv_kthread_q+0x40/0xfffffffffdaf8420");
    EXPECT_EQ(f(traces[1], "symbol[1]"), "rm_ioctl+0x58/0xb0");
    EXPECT_EQ(f(traces[1], "symbol[1].obfuscated"), "<absent>");
    EXPECT_EQ(p.messages.size(), 2u);
}

TEST(KlogCases, UvmLoadBumblebee331) {
    auto p = load("nvidia-uvm-load-bumblebee-331.log");
    auto loaded = of_kind(p, "driver_loaded");
    ASSERT_EQ(loaded.size(), 3u);  // nvidia-drm, nvidia, nvidia-uvm
    EXPECT_EQ(f(loaded[1], "version"), "331.113");
    EXPECT_EQ(f(loaded[1], "flavour"), "proprietary");
    EXPECT_EQ(loaded[2]->source, "nvidia-uvm");
    EXPECT_EQ(f(loaded[2], "major"), "251");
    EXPECT_EQ(f(loaded[0], "module"), "nvidia-drm");
    EXPECT_EQ(loaded[0]->source, "kernel");
    const KernelLogMessage* irq = nullptr;
    for (const auto& m : p.messages)
        if (m.fields.count("irq")) irq = &m;
    EXPECT_EQ(f(irq, "pci"), "0000:01:00.0");
    EXPECT_EQ(f(irq, "irq"), "50");
    EXPECT_EQ(f(irq, "irq_type"), "MSI/MSI-X");
}

TEST(KlogCases, PeermemUnknownSymbolDmesgT) {
    auto p = load("nvidia-peermem-unknown-symbol-dmesg-T.log");
    EXPECT_EQ(p.format, "dmesg-ctime+dmesg");
    auto unknown = of_kind(p, "unknown_symbol");
    ASSERT_EQ(unknown.size(), 5u);
    std::set<std::string> symbols;
    for (auto* m : unknown) {
        symbols.insert(f(m, "symbol"));
        EXPECT_EQ(f(m, "err"), "-22");
        EXPECT_EQ(m->source, "nvidia-peermem");
        EXPECT_EQ(f(m, "version_mismatch"), "true");
    }
    EXPECT_EQ(symbols, (std::set<std::string>{"ib_register_peer_memory_client", "ib_unregister_peer_memory_client",
                                              "nvidia_p2p_get_pages"}));
    EXPECT_EQ(unknown[0]->wall_time, "Tue Sep  8 17:16:02 2026");
    auto err = first(p, "driver_error");
    ASSERT_TRUE(err);
    EXPECT_EQ(err->ts_ns, 25033266922000u);
    EXPECT_EQ(f(err, "function"), "nv_get_p2p_free_callback");
    EXPECT_EQ(f(err, "src_line"), "127");
    for (const auto& m : p.messages) {
        if (m.text.rfind("nv_tco", 0) == 0) {
            EXPECT_EQ(m.source, "kernel");
        }
    }
}

TEST(KlogCases, GdrcopySanityCopylatFail) {
    auto p = load("gdrcopy-sanity-copylat-fail.txt");
    EXPECT_EQ(p.format, "tool-output");
    std::vector<std::string> pin_lines;
    for (auto* m : of_kind(p, "assertion_failed"))
        if (f(m, "call") == "gdr_pin_buffer") pin_lines.push_back(f(m, "file") + ":" + f(m, "src_line"));
    EXPECT_EQ(pin_lines, (std::vector<std::string>{"sanity.cpp:188", "sanity.cpp:282", "sanity.cpp:1526"}));
    EXPECT_EQ(f(first(p, "cuda_error"), "error"), "CUDA_ERROR_INVALID_DEVICE");
    auto gpu = first(p, "gpu_info");
    EXPECT_EQ(f(gpu, "name"), "GeForce RTX 2070");
    EXPECT_EQ(f(gpu, "pci"), "0000:01:00");
    std::vector<std::string> handles;
    bool copylat_code = false;
    for (auto* m : of_kind(p, "tool_error")) {
        if (f(m, "call") == "gdr_pin_buffer" && f(m, "code") == "22") copylat_code = true;
        if (f(m, "call") == "gdr_map") {
            EXPECT_EQ(f(m, "errno_name"), "EINVAL");
            EXPECT_EQ(f(m, "errno"), "22");
            handles.push_back(f(m, "handle"));
        }
    }
    EXPECT_TRUE(copylat_code);
    EXPECT_EQ(handles, (std::vector<std::string>{"2466d50", "2466d80"}));
    for (const auto& m : p.messages)
        EXPECT_EQ(m.source, "user");
}

TEST(KlogCases, CudaHostRegisterCuMemAddressReserveFail) {
    auto p = load("cuda-hostregister-cumemaddressreserve-fail.txt");
    auto errs = of_kind(p, "cuda_error");
    ASSERT_EQ(errs.size(), 3u);
    EXPECT_EQ(f(errs[0], "call"), "cudaHostRegister");
    EXPECT_EQ(f(errs[0], "code"), "30");
    EXPECT_EQ(f(errs[0], "error"), "cudaErrorUnknown");
    EXPECT_EQ(f(errs[0], "file"), "simpleStreams.cu");
    EXPECT_EQ(f(errs[0], "src_line"), "117");
    EXPECT_EQ(f(&p.messages.at(1), "size_bytes"), "67108864");  // 64.00 Mbytes
    EXPECT_EQ(f(errs[1], "producer"), "ucx");
    EXPECT_EQ(f(errs[1], "flags"), "0x01");
    EXPECT_EQ(f(errs[1], "error"), "invalid argument");
    const KernelLogMessage* reg = first(p, "tool_error");
    EXPECT_EQ(f(reg, "address"), "0x7fb473081000");
    EXPECT_EQ(f(reg, "length"), "4915200");
    EXPECT_EQ(f(errs[2], "call"), "cuMemAddressReserve");
    EXPECT_EQ(f(errs[2], "error"), "operation not supported");
    EXPECT_EQ(f(errs[2], "cuda_code"), "801");
}

// ---- Added 2026-12-01 (../shared/cases/README.md, second collection round) ----

TEST(KlogCases, Xid79DmesgTCrashDumpContinuation) {
    auto p = load("nvrm-xid79-dmesg-T-crashdump-continuation.log");
    EXPECT_EQ(p.format, "dmesg-ctime");
    auto drv = first(p, "driver_loaded");
    EXPECT_EQ(f(drv, "version"), "535.161.07");
    ASSERT_TRUE(drv);
    EXPECT_EQ(drv->wall_time, "Thu Apr  4 18:03:56 2024");
    auto xids = of_kind(p, "xid");
    ASSERT_EQ(xids.size(), 1u);
    EXPECT_EQ(f(xids[0], "xid"), "79");
    EXPECT_EQ(f(xids[0], "pci"), "0000:a1:00");
    EXPECT_EQ(f(xids[0], "pid"), "<unknown>");
    EXPECT_EQ(xids[0]->wall_time, "Fri Apr  5 21:29:39 2024");
    // The device-prefixed "GPU has fallen off the bus." line is the same event, joined to the Xid.
    EXPECT_EQ(f(xids[0], "device"), "0000:a1:00.0");
    EXPECT_EQ(f(xids[0], "duplicate_lines"), "4");
    EXPECT_TRUE(of_kind(p, "fallen_off_bus").empty());
    auto dump = of_kind(p, "crash_dump");
    ASSERT_EQ(dump.size(), 1u);
    EXPECT_EQ(std::count(dump[0]->text.begin(), dump[0]->text.end(), '\n'), 2);
    EXPECT_TRUE(p.complete);
}

TEST(KlogCases, NvAssertOkFailedBar1VaExhaustion) {
    auto p = load("nvrm-nvassertokfailed-bar1-va-exhaustion.log");
    EXPECT_EQ(p.format, "journal");
    auto st = of_kind(p, "nv_status");
    ASSERT_EQ(st.size(), 2u);
    for (auto* m : st) {
        EXPECT_EQ(f(m, "status_name"), "NV_ERR_NO_MEMORY");
        EXPECT_EQ(f(m, "status"), "0x51");
        EXPECT_EQ(f(m, "file"), "mapping_reuse.c");
        EXPECT_EQ(f(m, "src_line"), "273");
        EXPECT_EQ(f(m, "expr"),
                  "pReuseMappingDb->pMapCb(pReuseMappingDb->pGlobalCtx, pAllocCtx, range, cachingFlags, &token, "
                  "_reusemappingdbAddMappingCallback)");
    }
    std::size_t va = 0;
    for (const auto& m : p.messages)
        if (f(&m, "function") == "dmaAllocMapping_GM107") {
            ++va;
            EXPECT_EQ(m.wall_time, "Jun 14 03:23:32");
            EXPECT_EQ(m.host, "host1");
            EXPECT_EQ(f(&m, "chip"), "GM107");
        }
    EXPECT_EQ(va, 7u);
}

TEST(KlogCases, NvocFusedLineCcTdx) {
    auto p = load("nvrm-nvoc-fused-line-cc-tdx.log");
    std::size_t enc = 0;
    for (const auto& m : p.messages)
        if (f(&m, "function") == "_issueRpcAndWait") {
            ++enc;
            EXPECT_EQ(f(&m, "status"), "0x1f");
            EXPECT_EQ(f(&m, "rpc_function"), "10");
        }
    EXPECT_EQ(enc, 2u);
    std::vector<std::string> objects;
    for (const auto& m : p.messages)
        if (f(&m, "function") == "rpcRmApiFree_GSP") {
            EXPECT_EQ(f(&m, "hClient"), "0xc1e00004");
            EXPECT_EQ(f(&m, "status_truncated"), "true");  // "status=0x0000": cut where the line ends
            EXPECT_EQ(f(&m, "status_name"), "<absent>");
            objects.push_back(f(&m, "hObject"));
        }
    EXPECT_EQ(objects, (std::vector<std::string>{"0xcaf00001", "0xcaf00000"}));
    // The fused physical line 9: NVOC's objDelete report, then a cut-off RmInitAdapter message.
    const KernelLogMessage* nvoc = nullptr;
    for (const auto& m : p.messages)
        if (m.line == 9 && f(&m, "component") == "NVOC") nvoc = &m;
    ASSERT_TRUE(nvoc);
    EXPECT_EQ(f(nvoc, "function"), "__nvoc_objDelete");
    EXPECT_EQ(f(nvoc, "child_class"), "PrereqTracker");
    EXPECT_EQ(f(nvoc, "parent_class"), "OBJGPU");
    EXPECT_EQ(f(nvoc, "fused"), "true");
    auto rm = of_kind(p, "rm_init_adapter_failed");
    ASSERT_EQ(rm.size(), 1u);  // the truncated RmInitAdapt and its rm_init_adapter companion: one failure
    EXPECT_EQ(f(rm[0], "pci"), "0000:01:00.0");
    EXPECT_EQ(f(rm[0], "truncated"), "true");
    EXPECT_EQ(f(rm[0], "minor"), "0");
    EXPECT_EQ(rm[0]->line, 9u);
    std::vector<std::string> asserts;
    for (auto* m : of_kind(p, "assertion_failed"))
        asserts.push_back(f(m, "file") + ":" + f(m, "src_line"));
    EXPECT_EQ(asserts, (std::vector<std::string>{"gpu.c:5282", "objvgpu.c:150"}));
    EXPECT_EQ(f(of_kind(p, "assertion_failed")[0], "expr"), "GPU_GET_VGPU(pGpu) != NULL");
    auto oops = first(p, "oops");
    EXPECT_EQ(f(oops, "fault_address"), "00000000000152ba");
    EXPECT_EQ(p.lines, 14u);
    EXPECT_EQ(p.log_lines, 14u);
}

TEST(KlogCases, FspBootCcInsufficientResources) {
    auto p = load("nvrm-fsp-boot-cc-insufficient-resources.log");
    EXPECT_EQ(p.format, "dmesg");
    EXPECT_EQ(p.messages.at(0).fields.at("pci"), "0000:01:00");  // no ".0" function number
    EXPECT_EQ(p.messages.at(0).fields.at("chip"), "GH100");
    auto regs = of_kind(p, "register_dump");
    ASSERT_EQ(regs.size(), 1u);
    EXPECT_EQ(f(regs[0], "register"), "NV_PFSP_FALCON_COMMON_SCRATCH_GROUP_2");
    EXPECT_EQ(f(regs[0], "values"), "0x9f, 0x110186, 0x1103c0, 0x5");
    EXPECT_EQ(f(regs[0], "registers"), "4");
    EXPECT_EQ(f(regs[0], "NV_PFSP_FALCON_COMMON_SCRATCH_GROUP_2(3)"), "0x5");
    auto chk = first(p, "nv_status");
    EXPECT_EQ(f(chk, "check"), "check");
    EXPECT_EQ(f(chk, "status_name"), "NV_ERR_INSUFFICIENT_RESOURCES");
    EXPECT_EQ(f(chk, "status"), "0x1a");
    EXPECT_EQ(f(chk, "expr"), "kfspSendBootCommands_HAL(pGpu, pKernelFsp)");
    EXPECT_EQ(f(chk, "file"), "kernel_gsp_gh100.c");
    EXPECT_EQ(f(chk, "src_line"), "756");
    const KernelLogMessage* bad = nullptr;
    for (const auto& m : p.messages)
        if (f(&m, "function") == "gpuHandleSanityCheckRegReadError_GH100") bad = &m;
    EXPECT_EQ(f(bad, "addr"), "0x110804");
    EXPECT_EQ(f(bad, "regvalue"), "0xbadf4100");
    EXPECT_EQ(f(bad, "error_code"), "Unknown SYS_PRI_ERROR_CODE");
    auto rm = of_kind(p, "rm_init_adapter_failed");
    ASSERT_EQ(rm.size(), 1u);
    EXPECT_EQ(f(rm[0], "pci"), "0000:01:00.0");
    EXPECT_EQ(f(rm[0], "code"), "0x62:0x1a:1792");
    EXPECT_EQ(f(rm[0], "minor"), "0");
    EXPECT_EQ(f(&p.messages.back(), "gspFmcSysmemOffset"), "0x110680000");
    EXPECT_EQ(f(&p.messages.back(), "size"), "0x35c");
    EXPECT_TRUE(p.complete);
}

TEST(KlogCases, NoColonRfc3339KbusVerify) {
    auto p = load("nvrm-nocolon-rfc3339-kbusverify.log");
    EXPECT_EQ(p.format, "syslog-iso");
    ASSERT_EQ(p.messages.size(), 8u);
    for (const auto& m : p.messages) {
        EXPECT_EQ(m.source, "NVRM");  // "NVRM kbusVerifyBar2_GM107:" has no colon after NVRM
        EXPECT_EQ(f(&m, "function"), "kbusVerifyBar2_GM107");
        EXPECT_EQ(f(&m, "offset"), "0x70f000");
        EXPECT_EQ(f(&m, "garbage"), "0x0");
        EXPECT_EQ(m.host, "host1");
    }
    EXPECT_EQ(p.messages.front().ts_ns, 67529695000u);
    EXPECT_EQ(p.messages.back().ts_ns, 67533978000u);
    EXPECT_EQ(p.messages.front().wall_time, "2023-12-11T22:20:08.944986+01:00");
    EXPECT_EQ(p.messages[2].wall_time, p.messages[3].wall_time);  // same syslog time, different kernel times
}

TEST(KlogCases, ModesetErrorJournalFlipTimeout) {
    auto p = load("nvidia-modeset-error-journal-flip-timeout.log");
    std::vector<std::string> channels;
    for (auto* m : of_kind(p, "driver_error"))
        if (m->source == "nvidia-modeset" && f(m, "class") == "0xca7e") {
            channels.push_back(f(m, "channel"));
            EXPECT_EQ(f(m, "status"), "0x62");
            EXPECT_EQ(f(m, "gpu"), "0");
            EXPECT_EQ(f(m, "severity"), "ERROR");
        }
    EXPECT_EQ(channels, (std::vector<std::string>{"2", "4", "6"}));
    const KernelLogMessage* dp = nullptr;
    for (const auto& m : p.messages)
        if (f(&m, "connector") == "DP-0") dp = &m;
    EXPECT_EQ(f(dp, "message"), "Failed to disable DisplayPort audio stream-3");
    EXPECT_EQ(of_kind(p, "driver_warning").size(), 2u);
    EXPECT_EQ(f(first(p, "driver_warning"), "message"), "Lost display notification (0:0x00000000); continuing.");
    const KernelLogMessage* drm = nullptr;
    for (const auto& m : p.messages)
        if (m.source == "nvidia-drm") drm = &m;
    ASSERT_TRUE(drm);
    EXPECT_EQ(drm->kind, "driver_error");
    EXPECT_EQ(f(drm, "function"), "nv_drm_atomic_commit");
    EXPECT_EQ(f(drm, "module"), "nvidia_drm");
    EXPECT_EQ(f(drm, "gpu_id"), "0x100");
    EXPECT_EQ(f(drm, "head"), "0");
    auto as = first(p, "assertion_failed");
    EXPECT_EQ(f(as, "file"), "rs_client.c");
    EXPECT_EQ(f(as, "src_line"), "844");
    EXPECT_EQ(f(as, "gpu_index"), "0");
    ASSERT_TRUE(as);
    EXPECT_EQ(as->wall_time, "Jun 12 16:30:43");
    EXPECT_EQ(p.messages.at(7).source, "kernel");  // Console: ...
}

TEST(KlogCases, UvmUbsanCallTraceUvmIoctl) {
    auto p = load("nvidia-uvm-ubsan-calltrace-uvm-ioctl.log");
    ASSERT_EQ(p.messages.size(), 1u);  // banner, title, detail, CPU, Hardware name and trace: one report
    const auto& r = p.messages[0];
    EXPECT_EQ(r.kind, "oops");
    EXPECT_EQ(f(&r, "type"), "ubsan");
    EXPECT_EQ(f(&r, "ubsan_check"), "array-index-out-of-bounds");
    EXPECT_EQ(f(&r, "file"), "build/nvidia/535.171.04/build/nvidia-uvm/uvm_pmm_gpu.c");
    EXPECT_EQ(f(&r, "src_line"), "2038");
    EXPECT_EQ(f(&r, "column"), "44");
    EXPECT_EQ(f(&r, "index"), "0");
    EXPECT_EQ(f(&r, "index_type"), "uvm_gpu_chunk_t *[*]");
    EXPECT_EQ(f(&r, "cpu"), "24");
    EXPECT_EQ(f(&r, "pid"), "3014");
    EXPECT_EQ(f(&r, "comm"), "ollama");
    EXPECT_EQ(f(&r, "kernel"), "6.8.0-31-generic");
    EXPECT_EQ(f(&r, "tainted"), "P O");
    EXPECT_EQ(f(&r, "driver_version"), "535.171.04");
    EXPECT_EQ(f(&r, "frames"), "13");
    std::vector<std::string> unreliable;
    for (int i = 0; i < 13; ++i)
        if (f(&r, "frame[" + std::to_string(i) + "].reliable") == "false")
            unreliable.push_back(f(&r, "frame[" + std::to_string(i) + "]"));
    EXPECT_EQ(unreliable,
              (std::vector<std::string>{"allocate_directory+0xb4/0x130", "srso_alias_return_thunk+0x5/0xfbef5"}));
    EXPECT_EQ(f(&r, "frame[3]"), "uvm_pmm_gpu_alloc+0x2f5/0x6d0");
    EXPECT_EQ(f(&r, "frame[3].module"), "nvidia_uvm");
    EXPECT_EQ(f(&r, "frame[11]"), "uvm_ioctl+0x1a26/0x1cd0");
    EXPECT_EQ(f(&r, "frame[11].module"), "nvidia_uvm");
    EXPECT_EQ(f(&r, "hardware"), "ASUS System Product Name/Pro WS WRX90E-SAGE SE, BIOS 0404 12/20/2023");
}

TEST(KlogCases, AccelIvpuFirmwareVariants) {
    auto p = load("accel-ivpu-firmware-variants.log");
    EXPECT_EQ(p.format, "bare+journal+dmesg");
    EXPECT_TRUE(p.complete) << (p.incomplete.empty() ? "" : p.incomplete[0]);
    EXPECT_EQ(p.unread_lines, 0u);
    std::size_t fw_request = 0, probe = 0;
    for (const auto& m : p.messages) {
        if (f(&m, "function") == "ivpu_fw_request") {
            ++fw_request;
            EXPECT_EQ(f(&m, "errno"), "-2");
            EXPECT_EQ(f(&m, "errno_name"), "ENOENT");
            EXPECT_EQ(f(&m, "driver"), "intel_vpu");
            EXPECT_EQ(f(&m, "pci"), "0000:00:0b.0");
        }
        if (m.kind == "probe_failed" && f(&m, "probe_driver") == "intel_vpu") {
            ++probe;
            EXPECT_EQ(f(&m, "errno"), "-2");
        }
    }
    EXPECT_EQ(fw_request, 2u);  // the dmesg -t and the journalctl block
    EXPECT_EQ(probe, 2u);
    const KernelLogMessage* idle = nullptr;
    for (const auto& m : p.messages)
        if (f(&m, "function") == "ivpu_hw_power_down") idle = &m;
    EXPECT_EQ(f(idle, "message"), "NPU not idle during power down");
    std::vector<std::uint64_t> load_ts;
    for (auto* m : of_kind(p, "firmware_load_failed"))
        if (f(m, "firmware") == "vpu_37xx.bin") {
            EXPECT_EQ(f(m, "errno_name"), "ENOENT");
            load_ts.push_back(m->ts_ns.value_or(0));
        }
    EXPECT_EQ(load_ts, (std::vector<std::uint64_t>{4445538000u, 4445548000u, 4445554000u}));
    auto ipu = of_kind(p, "firmware_load_failed");
    bool enoent_spelled = false;
    for (auto* m : ipu)
        if (f(m, "driver") == "intel-ipu6" && f(m, "errno") == "-2") enoent_spelled = true;  // "-ENOENT"
    EXPECT_TRUE(enoent_spelled);
    auto fw = first(p, "firmware_loaded");
    EXPECT_EQ(f(fw, "firmware"), "intel/vpu/vpu_37xx_v0.0.bin");
    EXPECT_EQ(f(fw, "firmware_version"),
              "20250306*MTL_CLIENT_SILICON-release*1130*ci_tag_ud202512_vpu_rc_20250306_1130*5064b5debc3");
    auto init = first(p, "driver_loaded");
    EXPECT_EQ(f(init, "module"), "intel_vpu");
    EXPECT_EQ(f(init, "version"), "1.0.0");
    EXPECT_EQ(f(init, "minor"), "0");
    ASSERT_TRUE(init);
    EXPECT_EQ(init->ts_ns, 4535283000u);
}

}  // namespace
