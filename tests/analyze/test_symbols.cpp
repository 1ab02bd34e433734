#include "nvtrace/symbols.hpp"

#include <gtest/gtest.h>

using namespace nvtrace;

namespace {
constexpr const char* kKallsyms =
    "ffffffff81000000 T _stext\n"
    "ffffffff81001000 t do_one_initcall\n"
    "ffffffff82000000 D some_data\n"
    "ffffffffc0a01000 t null_queue_rq\t[null_blk]\n"
    "ffffffffc0a01200 t null_handle_cmd\t[null_blk]\n"
    "garbage line\n";
}

TEST(SymbolTable, ParsesTextSymbolsWithModules) {
    auto t = SymbolTable::from_kallsyms(kKallsyms);
    EXPECT_EQ(t.size(), 4u);  // the data symbol is not a function
    EXPECT_EQ(t.malformed_lines(), 1u);
    EXPECT_TRUE(t.has_addresses());
    const Symbol* s = t.lookup(0xffffffffc0a01000);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->name, "null_queue_rq");
    EXPECT_EQ(s->module, "null_blk");
    const Symbol* inside = t.lookup(0xffffffffc0a01210);
    ASSERT_NE(inside, nullptr);
    EXPECT_EQ(inside->name, "null_handle_cmd");
    EXPECT_EQ(t.lookup(0x1000), nullptr);
}

TEST(SymbolTable, ZeroAddressesMeanNoUsableTable) {
    auto t = SymbolTable::from_kallsyms("0000000000000000 T _stext\n0000000000000000 t f\t[m]\n");
    EXPECT_FALSE(t.has_addresses());
    EventStream s;
    FuncEntry e;
    e.func_addr = 0xffffffffc0a01000;
    s.events.push_back(Event{1, 0, 1, false, e});
    EXPECT_EQ(t.resolve(s), 1u);
    EXPECT_EQ(std::get<FuncEntry>(s.events[0].body).function, "0xffffffffc0a01000");
}

TEST(SymbolTable, ResolveFillsEntriesAndExits) {
    auto t = SymbolTable::from_kallsyms(kKallsyms);
    EventStream s;
    FuncEntry e;
    e.func_addr = 0xffffffffc0a01200;
    FuncExit x;
    x.func_addr = 0xffffffff81001000;
    s.events = {Event{1, 0, 1, false, e}, Event{2, 0, 1, false, x}};
    EXPECT_EQ(t.resolve(s), 0u);
    EXPECT_EQ(std::get<FuncEntry>(s.events[0].body).function, "null_handle_cmd");
    EXPECT_EQ(std::get<FuncEntry>(s.events[0].body).module, "null_blk");
    EXPECT_EQ(std::get<FuncExit>(s.events[1].body).function, "do_one_initcall");
    EXPECT_FALSE(std::get<FuncExit>(s.events[1].body).module.has_value());
}
