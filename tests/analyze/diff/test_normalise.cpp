#include <gtest/gtest.h>

#include "nvtrace/diff.hpp"

using namespace nvtrace;

TEST(NormaliseSymbol, StripsCloneSuffixes) {
    EXPECT_EQ(normalise_symbol("rm_ioctl.constprop.0"), "rm_ioctl");
    EXPECT_EQ(normalise_symbol("nv_alloc_pages.isra.0"), "nv_alloc_pages");
    EXPECT_EQ(normalise_symbol("os_alloc_mem.part.12"), "os_alloc_mem");
    EXPECT_EQ(normalise_symbol("nvos_create_alloc.cold"), "nvos_create_alloc");
    EXPECT_EQ(normalise_symbol("nvos_create_alloc.isra.0.cold"), "nvos_create_alloc");
    EXPECT_EQ(normalise_symbol("x.constprop.0.isra.0"), "x");
    EXPECT_EQ(normalise_symbol("f.llvm.1234567890123"), "f");
    EXPECT_EQ(normalise_symbol("g.lto_priv.0"), "g");
}

TEST(NormaliseSymbol, StripsModuleTail) {
    EXPECT_EQ(normalise_symbol("uvm_ioctl [nvidia_uvm]"), "uvm_ioctl");
    EXPECT_EQ(normalise_symbol("nvidia_ioctl\t[nvidia]"), "nvidia_ioctl");
    EXPECT_EQ(normalise_symbol("rm_ioctl.isra.0 [nvidia]"), "rm_ioctl");
}

TEST(NormaliseSymbol, KeepsWhatIsNotASuffix) {
    EXPECT_EQ(normalise_symbol("nvidia_ioctl"), "nvidia_ioctl");
    EXPECT_EQ(normalise_symbol("foo.5"), "foo.5");
    EXPECT_EQ(normalise_symbol("foo.unknownsuffix"), "foo.unknownsuffix");
    EXPECT_EQ(normalise_symbol("[irq]"), "[irq]");
    EXPECT_EQ(normalise_symbol("0xffffffffc0001000"), "0xffffffffc0001000");
}

TEST(Rename, ParsesPairsAndCollapse) {
    auto r = parse_rename("nvidia_frontend_unlocked_ioctl=nvidia_unlocked_ioctl");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->first, "nvidia_frontend_unlocked_ioctl");
    EXPECT_EQ(r->second, "nvidia_unlocked_ioctl");
    auto c = parse_rename("nvidia_frontend_ioctl.isra.0=");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->first, "nvidia_frontend_ioctl");
    EXPECT_EQ(c->second, "");
    EXPECT_FALSE(parse_rename("=x"));
}

TEST(Rename, MapFileFormsAndErrors) {
    auto m = parse_rename_map("# comment\n a b \nc=d # tail\ne=\nf\n\n", "map");
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->size(), 4u);
    EXPECT_EQ(m->at("a"), "b");
    EXPECT_EQ(m->at("c"), "d");
    EXPECT_EQ(m->at("e"), "");
    EXPECT_EQ(m->at("f"), "");
    auto bad = parse_rename_map("a b\nx y z\n", "renames.txt");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("renames.txt:2:"), std::string::npos) << bad.error().message;
}

TEST(MinDelta, Parses) {
    auto t = parse_min_delta("5us,30%");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->min_abs_ns, 5000u);
    EXPECT_DOUBLE_EQ(t->min_rel, 0.30);
    auto abs_only = parse_min_delta("1.5ms");
    ASSERT_TRUE(abs_only);
    EXPECT_EQ(abs_only->min_abs_ns, 1'500'000u);
    EXPECT_DOUBLE_EQ(abs_only->min_rel, DiffThreshold{}.min_rel);
    auto rel_only = parse_min_delta("0%");
    ASSERT_TRUE(rel_only);
    EXPECT_DOUBLE_EQ(rel_only->min_rel, 0.0);
    EXPECT_FALSE(parse_min_delta("10"));
    EXPECT_FALSE(parse_min_delta("10 parsecs"));
    EXPECT_FALSE(parse_min_delta("-1us"));
    EXPECT_FALSE(parse_min_delta(""));
}

// Seen: three parts or two of a kind were taken (the last won), a huge value saturated, and 0 was
// refused for lacking a unit.
TEST(MinDelta, OneOfEachKindAtMostNoSaturationAndAPlainZero) {
    EXPECT_FALSE(parse_min_delta("10us,20%,30%"));
    EXPECT_FALSE(parse_min_delta("10us,20us"));
    EXPECT_FALSE(parse_min_delta("99999999999999999999s"));
    auto zero = parse_min_delta("0");
    ASSERT_TRUE(zero);
    EXPECT_EQ(zero->min_abs_ns, 0u);
    auto both = parse_min_delta("0,5%");
    ASSERT_TRUE(both);
    EXPECT_EQ(both->min_abs_ns, 0u);
    EXPECT_DOUBLE_EQ(both->min_rel, 0.05);
}
