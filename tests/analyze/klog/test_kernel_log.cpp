#include "nvtrace/kernel_log.hpp"

#include <gtest/gtest.h>

using namespace nvtrace;

TEST(KmsgRecord, ParsesHeaderLevelFacilityAndMessage) {
    // A line injected as root reads back with facility LOG_USER (ci-environment.md section 5).
    auto r =
        parse_kmsg_record("11,343,1703889856,-;NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen off the bus.");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->level, 3);
    EXPECT_EQ(r->facility, 1);
    EXPECT_EQ(r->seq, 343u);
    EXPECT_EQ(r->ts_us, 1703889856u);
    EXPECT_EQ(r->flags, '-');
    EXPECT_EQ(r->message, "NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen off the bus.");
}

TEST(KmsgRecord, ReadsDictionaryLinesAndUndoesEscapes) {
    auto r = parse_kmsg_record("6,12,5000,c,more;tab\\x09here\\x5c\n SUBSYSTEM=pci\n DEVICE=+pci:0000:01:00.0");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->message, "tab\there\\");
    EXPECT_EQ(r->flags, 'c');
    EXPECT_EQ(r->dict.at("SUBSYSTEM"), "pci");
    EXPECT_EQ(r->dict.at("DEVICE"), "+pci:0000:01:00.0");
}

TEST(KmsgRecord, MalformedRecordsAreErrorsThatSayWhatWasExpected) {
    auto a = parse_kmsg_record("no semicolon here");
    ASSERT_FALSE(a);
    EXPECT_NE(a.error().message.find("expected"), std::string::npos);
    auto b = parse_kmsg_record("x,1,2,-;msg");
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message.find("x,1,2,-"), std::string::npos);
}

TEST(ClassifyKernelMessage, XidWithPciPidAndDetail) {
    KernelLogMessage m;
    m.text = "NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen off the bus.";
    classify_kernel_message(m);
    EXPECT_EQ(m.source, "NVRM");
    EXPECT_EQ(m.kind, "xid");
    EXPECT_EQ(m.fields.at("xid"), "79");
    EXPECT_EQ(m.fields.at("pci"), "0000:01:00");
    EXPECT_EQ(m.fields.at("pid"), "123");
    EXPECT_EQ(m.fields.at("detail"), "GPU has fallen off the bus.");
}

TEST(ClassifyKernelMessage, XidWithQuotedUnknownPidAndName) {
    KernelLogMessage m;
    m.text = "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception";
    classify_kernel_message(m);
    EXPECT_EQ(m.kind, "xid");
    EXPECT_EQ(m.fields.at("pid"), "<unknown>");
    EXPECT_EQ(m.fields.at("name"), "<unknown>");
}

TEST(ClassifyKernelMessage, FallenOffTheBusWithoutXid) {
    KernelLogMessage m;
    m.text = "NVRM: GPU 0000:b3:00.0: GPU has fallen off the bus.";
    classify_kernel_message(m);
    EXPECT_EQ(m.kind, "fallen_off_bus");
    EXPECT_EQ(m.fields.at("pci"), "0000:b3:00.0");
}

TEST(ClassifyKernelMessage, OtherSources) {
    KernelLogMessage a;
    a.text = "nvidia_uvm: Loaded the UVM driver, major device number 251.";
    classify_kernel_message(a);
    EXPECT_EQ(a.source, "nvidia-uvm");
    EXPECT_EQ(a.kind, "driver_loaded");
    EXPECT_EQ(a.fields.at("major"), "251");
    KernelLogMessage b;
    b.text = "r8169 0000:03:00.0 eth0: Link is Up";
    classify_kernel_message(b);
    EXPECT_EQ(b.source, "kernel");
}
