// Source links (--source DIR): the grep-like definition search on the fixture tree tests/data/source_links.
#include "nvtrace/source_links.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using namespace nvtrace;

namespace {

const std::filesystem::path kTree = std::filesystem::path(NVTRACE_TEST_DATA) / "source_links";

std::vector<std::string> names(const std::vector<FunctionDefinition>& d) {
    std::vector<std::string> out;
    for (const auto& x : d)
        out.push_back(x.name + ":" + std::to_string(x.line));
    return out;
}

const SourceLink* find(const std::vector<SourceLink>& v, const std::string& f) {
    auto it = std::find_if(v.begin(), v.end(), [&](const SourceLink& l) { return l.function == f; });
    return it == v.end() ? nullptr : &*it;
}

}  // namespace

TEST(SourceLinks, DefinitionsNotCallsPrototypesMacrosOrComments) {
    std::string text =
        "int f(void);\n"       // prototype
        "#define g(x) (x)\n"   // function-like macro
        "/* h(void) { } */\n"  // comment
        "static const char *s = \"i(void) { }\";\n"
        "EXPORT_SYMBOL(f);\n"
        "int\n"
        "f(void)\n"
        "{\n"
        "    return g(1) + k(2);\n"  // calls
        "}\n";
    EXPECT_EQ(names(find_function_definitions(text)), std::vector<std::string>{"f:7"});
}

TEST(SourceLinks, FixtureFileFindsEveryShape) {
    auto links = link_sources(
        kTree, {"drv_inline", "drv_type_above", "drv_macros", "drv_attr", "drv_after_split", "drv_header_inline",
                "in_extern_c", "nv_detect_sme_enabled", "nvidia_ctl_open", "nv_register_peer_io_mem"});
    ASSERT_TRUE(links) << links.error().message;
    auto at = [&](const std::string& f) {
        const SourceLink* l = find(links->found, f);
        if (!l) return std::string("not found");
        return l->candidates[0].file + ":" + std::to_string(l->candidates[0].line);
    };
    EXPECT_EQ(at("drv_inline"), "drv.c:15");        // static inline, one line
    EXPECT_EQ(at("drv_type_above"), "drv.c:18");    // return type on the line above
    EXPECT_EQ(at("drv_macros"), "drv.c:24");        // NV_STATUS NV_API_CALL, parameters over two lines
    EXPECT_EQ(at("drv_attr"), "drv.c:35");          // attribute between ) and {
    EXPECT_EQ(at("drv_after_split"), "drv.c:52");   // after #if branches that leave braces unbalanced
    EXPECT_EQ(at("drv_header_inline"), "drv.h:5");  // headers are searched too
    EXPECT_EQ(at("in_extern_c"), "sub/other.c:7");  // inside extern "C" { }
    // The shapes of the real driver (excerpt of kernel-open/nvidia/nv.c).
    EXPECT_EQ(at("nv_detect_sme_enabled"), "real/nv_excerpt.c:10");
    EXPECT_EQ(at("nvidia_ctl_open"), "real/nv_excerpt.c:18");  // not its prototype on line 2
    EXPECT_EQ(at("nv_register_peer_io_mem"), "real/nv_excerpt.c:26");
    EXPECT_TRUE(links->ambiguous.empty());
    EXPECT_TRUE(links->missing.empty());
    EXPECT_EQ(links->files_scanned, 4u);  // .c and .h only: sub/not_c.txt and README.md are not read
}

TEST(SourceLinks, MissingIsListedNotGuessed) {
    // Declared (prototype), called, exported, in a comment, in a string, a macro, a struct member, in a .txt:
    // never defined.
    auto links = link_sources(kTree, {"helper_prototype", "drv_call_only", "drv_in_comment", "drv_in_string",
                                      "DRV_MACRO", "fake_member_def", "txt_func", "nvidia_unlocked_ioctl"});
    ASSERT_TRUE(links) << links.error().message;
    EXPECT_TRUE(links->found.empty());
    EXPECT_TRUE(links->ambiguous.empty());
    EXPECT_EQ(links->missing,
              (std::vector<std::string>{"DRV_MACRO", "drv_call_only", "drv_in_comment", "drv_in_string",
                                        "fake_member_def", "helper_prototype", "nvidia_unlocked_ioctl", "txt_func"}));
}

TEST(SourceLinks, SeveralDefinitionsAreAmbiguousWithEveryCandidate) {
    auto links = link_sources(kTree, {"dup_func", "drv_split"});
    ASSERT_TRUE(links) << links.error().message;
    ASSERT_EQ(links->ambiguous.size(), 2u);
    const SourceLink* dup = find(links->ambiguous, "dup_func");
    ASSERT_NE(dup, nullptr);
    ASSERT_EQ(dup->candidates.size(), 2u);
    EXPECT_EQ(dup->candidates[0].file, "drv.c");
    EXPECT_EQ(dup->candidates[0].line, 47u);
    EXPECT_EQ(dup->candidates[1].file, "sub/other.c");
    EXPECT_EQ(dup->candidates[1].line, 5u);
    const SourceLink* split = find(links->ambiguous, "drv_split");  // both #if branches define it
    ASSERT_NE(split, nullptr);
    ASSERT_EQ(split->candidates.size(), 2u);
    EXPECT_EQ(split->candidates[0].line, 40u);
    EXPECT_EQ(split->candidates[1].line, 42u);
}

TEST(SourceLinks, CompilerCloneSuffixesAreDropped) {
    EXPECT_EQ(source_lookup_name("drv_macros.isra.0"), "drv_macros");
    EXPECT_EQ(source_lookup_name("drv_macros.constprop.3"), "drv_macros");
    EXPECT_EQ(source_lookup_name("drv_macros.cold"), "drv_macros");
    EXPECT_EQ(source_lookup_name("drv_macros"), "drv_macros");
    auto links = link_sources(kTree, {"drv_macros.part.0"});
    ASSERT_TRUE(links);
    ASSERT_EQ(links->found.size(), 1u);
    EXPECT_EQ(links->found[0].function, "drv_macros.part.0");
    EXPECT_EQ(links->found[0].lookup, "drv_macros");
}

TEST(SourceLinks, ReportFunctionsAndBadRoot) {
    Report r;
    Call a;
    a.id = 1;
    a.function = "drv_macros";
    Call b = a;
    b.id = 2;
    b.function = "not_in_tree";
    r.calls = {a, b, a};
    auto links = link_report_sources(kTree, r);
    ASSERT_TRUE(links);
    EXPECT_EQ(links->found.size(), 1u);
    EXPECT_EQ(links->missing, std::vector<std::string>{"not_in_tree"});
    auto bad = link_sources(kTree / "drv.c", {"x"});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("not a directory"), std::string::npos);
}
