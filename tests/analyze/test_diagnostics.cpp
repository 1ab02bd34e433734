#include "nvtrace/diagnostics.hpp"

#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "nvtrace/report.hpp"

using namespace nvtrace;

namespace {

// docs/report-format.md, from its "### Diagnostics" heading to the end of the table that follows it.
std::string documented_table() {
    std::ifstream in(std::string(NVTRACE_TEST_DATA) + "/../../docs/report-format.md");
    std::string line, out;
    bool in_section = false;
    while (std::getline(in, line)) {
        if (line == "### Diagnostics") {
            in_section = true;
            continue;
        }
        if (!in_section) continue;
        if (line.rfind('|', 0) == 0)
            out += line + "\n";
        else if (!out.empty())
            break;
    }
    return out;
}

}  // namespace

TEST(Diagnostics, DocumentedTableIsTheTable) {
    // To update the doc: paste the expected text below under "### Diagnostics" in docs/report-format.md.
    EXPECT_EQ(documented_table(), diagnostics_markdown_table());
}

TEST(Diagnostics, NamesAreUniqueSnakeCase) {
    std::set<std::string_view> names;
    for (const auto& d : kDiagnostics) {
        EXPECT_TRUE(names.insert(d.name).second) << d.name;
        for (char c : d.name)
            EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << d.name;
        EXPECT_FALSE(d.meaning.empty()) << d.name;
    }
}

TEST(Diagnostics, CountingTwiceAddsToOneEntryWithTheTablesNameAndSeverity) {
    std::vector<Diagnostic> ds;
    count_diagnostic(ds, Diag::malformed_line, "f.txt:3: expected X", 1);
    count_diagnostic(ds, Diag::malformed_line, "f.txt:9: expected Y", 2);
    ASSERT_EQ(ds.size(), 1u);
    EXPECT_EQ(ds[0].name, "malformed_line");
    EXPECT_EQ(ds[0].severity, "error");
    EXPECT_EQ(ds[0].count, 3u);
    EXPECT_EQ(ds[0].first_example, "f.txt:3: expected X");
}

TEST(Diagnostics, StringOverloadRefusesANameOrSeverityNotInTheTable) {
    std::vector<Diagnostic> ds;
    count_diagnostic(ds, "pages_not_read", "data_loss", "raw/instance/cpu0: gone");
    ASSERT_EQ(ds.size(), 1u);
    EXPECT_EQ(ds[0].severity, "data_loss");
    EXPECT_THROW(count_diagnostic(ds, "pages_not_raed", "data_loss", "x"), std::logic_error);
    EXPECT_THROW(count_diagnostic(ds, "pages_not_read", "info", "x"), std::logic_error);
    EXPECT_EQ(ds.size(), 1u);
}

// The report's completeness follows the table: a data_loss entry and an unreadable error entry make it
// incomplete, an info entry and a readable error entry do not.
TEST(Diagnostics, ReportIsIncompleteExactlyForTheEntriesThatSaySo) {
    for (const auto& d : kDiagnostics) {
        EventStream s;
        s.diagnostics.push_back(make_diagnostic(d.id, 1, "somewhere"));
        Report r = build_report(s);
        EXPECT_EQ(r.completeness.complete, !makes_incomplete(d)) << d.name;
        EXPECT_EQ(r.completeness.unreadable_lines(), d.unreadable ? 1u : 0u) << d.name;
    }
}
