// ReportFold (nvtrace/report_fold.hpp): a report folded on a second thread is byte for byte the one folded on the
// producer's thread, across many batches, with events and undecoded records mixed; comms reach the report before
// their pid's first event; events out of time order are taken and sorted; a function-graph event is refused at
// once; sync() returns only when everything added is handed to the report.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <event-parse.h>
#include <gtest/gtest.h>

#include "../../../analyze/raw_event_decoder.hpp"
#include "../test_io.hpp"
#include "ioctl_formats.hpp"
#include "nvtrace/report_fold.hpp"
#include "nvtrace/report_stream.hpp"

namespace fs = std::filesystem;
using namespace nvtrace;

namespace {

using test::read_fd;

std::unique_ptr<ReportStream> open_stream(EventStream side = {}) {
    auto rs = ReportStream::open(fs::temp_directory_path().string(), std::move(side));
    EXPECT_TRUE(rs) << rs.error().message;
    return rs ? std::move(*rs) : nullptr;
}

std::string finish_and_read(ReportStream& r) {
    auto f = r.finish();
    EXPECT_TRUE(f) << f.error().message;
    FILE* tmp = std::tmpfile();
    auto w = r.write(::fileno(tmp));
    EXPECT_TRUE(w) << w.error().message;
    std::string out = read_fd(::fileno(tmp));
    std::fclose(tmp);
    return out;
}

Event at(std::uint64_t ts, int pid, EventBody body) {
    return Event{ts, pid % 2, pid, false, std::move(body)};
}

// 30,000 events (about seven batches): ioctls of three tasks, markers, console lines and a lost-events record.
std::vector<Event> mixed_events() {
    std::vector<Event> v;
    std::uint64_t ts = 1000;
    for (int i = 0; i < 7'000; ++i) {
        int pid = 100 + i % 3;
        v.push_back(at(ts++, pid, IoctlEnter{3, 0x541b, static_cast<std::uint64_t>(i)}));
        v.push_back(at(ts++, pid, IoctlExit{i % 5 == 0 ? -25 : 0}));
        if (i % 7 == 0) v.push_back(at(ts++, pid, Marker{"nv_trace: step " + std::to_string(i)}));
        if (i % 1000 == 0) v.push_back(at(ts++, pid, ConsoleLine{"NVRM: line " + std::to_string(i)}));
    }
    v.push_back(at(ts++, 100, LostEvents{12}));
    v.push_back(at(ts++, 100, IoctlEnter{4, 0x5421, 0}));
    v.push_back(at(ts++, 100, IoctlExit{0}));
    return v;
}

// The markers' texts in order.
std::string describe_order(const std::vector<Event>& v) {
    std::string out;
    for (const Event& ev : v)
        out += std::get<Marker>(ev.body).text + " ";
    return out;
}

using test::IoctlFormats;

tep_record record_of(std::vector<unsigned char>& bytes, std::uint64_t ts) {
    tep_record rec{};
    rec.ts = ts;
    rec.cpu = 1;
    rec.size = static_cast<int>(bytes.size());
    rec.data = bytes.data();
    return rec;
}

}  // namespace

TEST(ReportFold, SameBytesAsAddingOnTheProducersThreadAcrossManyBatches) {
    const std::vector<Event> events = mixed_events();
    const std::map<int, std::string> comms{{100, "loop-a"}, {101, "loop-b"}};  // 102 has none

    EventStream side;
    side.comms = comms;
    auto direct = open_stream(side);
    ASSERT_TRUE(direct);
    for (const Event& ev : events)
        direct->add(ev);
    const std::string want = finish_and_read(*direct);

    auto folded = open_stream();
    ASSERT_TRUE(folded);
    std::vector<int> asked;
    {
        ReportFold fold(*folded, [&](int pid) -> std::optional<std::string> {
            asked.push_back(pid);
            auto it = comms.find(pid);
            return it == comms.end() ? std::nullopt : std::optional<std::string>(it->second);
        });
        for (Event ev : events)
            fold.add(std::move(ev));
        fold.finish();
        fold.finish();  // again: nothing more done
    }
    EXPECT_EQ(asked, (std::vector<int>{100, 101, 102}));  // once per pid, in first-event order
    EXPECT_EQ(folded->side().comms, comms);
    const std::string got = finish_and_read(*folded);
    EXPECT_NE(want.find("\"comm\":\"loop-b\""), std::string::npos);
    EXPECT_EQ(got, want);
}

// Records handed over undecoded are decoded on the fold thread into the events the producer would decode.
TEST(ReportFold, RecordsDecodedOnTheFoldThreadGiveTheReportOfTheDecodedEvents) {
    IoctlFormats formats;
    RawEventDecoder producer(formats.tep), reference(formats.tep);
    std::vector<std::vector<unsigned char>> records;
    for (int i = 0; i < 6'000; ++i) {
        records.push_back(formats.enter_record(200 + i % 2, 3, 0x541b, static_cast<std::uint64_t>(i)));
        records.push_back(formats.exit_record(200 + i % 2, i % 3 == 0 ? -22 : 0));
    }

    auto direct = open_stream();
    ASSERT_TRUE(direct);
    std::uint64_t ts = 5000;
    for (auto& bytes : records) {
        tep_record rec = record_of(bytes, ts++);
        auto ev = reference.decode(&rec);
        ASSERT_TRUE(ev);
        direct->add(*ev);
    }
    const std::string want = finish_and_read(*direct);

    auto folded = open_stream();
    ASSERT_TRUE(folded);
    {
        ReportFold fold(*folded);
        ts = 5000;
        std::size_t i = 0;
        for (auto& bytes : records) {
            tep_record rec = record_of(bytes, ts++);
            const RawEventDecoder::Fields* f = producer.check(&rec);
            ASSERT_NE(f, nullptr);
            ASSERT_TRUE(producer.plain(*f));
            if (i++ % 3 == 0) {  // a third as decoded events, in the same order
                Event ev;
                producer.fill(rec, *f, ev);
                fold.add(std::move(ev));
            } else {
                fold.add(RawRecord{producer, *f, rec});
            }
            std::memset(bytes.data(), 0xff, bytes.size());  // the record is copied: its bytes may change now
        }
        fold.finish();
    }
    EXPECT_EQ(finish_and_read(*folded), want);
    EXPECT_EQ(folded->ioctls(), 6'000u);
}

// Function-graph entries and exits are folded like any other event (a trace.dat or capture directory of
// function_graph streams): the report is the one build_report gives for the same events, calls included.
TEST(ReportFold, FunctionGraphEventsAreFoldedIntoTheSameReport) {
    EventStream st;
    std::uint64_t ts = 1000;
    for (int i = 0; i < 3000; ++i) {  // past a batch: calls of one task around its ioctls
        FuncEntry e;
        e.function = "nv_ioctl";
        e.depth = 0;
        st.events.push_back(at(ts++, 7, IoctlEnter{3, 0x541b, 0}));
        st.events.push_back(at(ts++, 7, e));
        FuncEntry leaf;
        leaf.function = "rm_ioctl";
        leaf.depth = 1;
        st.events.push_back(at(ts++, 7, leaf));
        FuncExit lx;
        lx.function = "rm_ioctl";
        lx.depth = 1;
        st.events.push_back(at(ts++, 7, lx));
        FuncExit x;
        x.function = "nv_ioctl";
        x.depth = 0;
        st.events.push_back(at(ts++, 7, x));
        st.events.push_back(at(ts++, 7, IoctlExit{0}));
    }
    auto r = open_stream();
    ASSERT_TRUE(r);
    {
        ReportFold fold(*r);
        for (Event ev : st.events)
            fold.add(std::move(ev));
        fold.finish();
    }
    const std::string got = finish_and_read(*r);
    EXPECT_EQ(r->calls(), 6000u);
    std::ostringstream want;
    write_json(build_report(st), want);
    EXPECT_NE(got.find("\"function\":\"rm_ioctl\""), std::string::npos);
    EXPECT_EQ(got, want.str());
}

// Two CPUs' events handed over one CPU's run after the other's (times going back at each switch): the fold used
// to stop at the first one and the caller read the whole input again. Now every event is taken and the report is
// that of the events sorted by time.
TEST(ReportFold, EventsGoingBackInTimeAreTakenAndSortedNotRefused) {
    std::vector<Event> in_order, interleaved;
    std::uint64_t id = 0;
    for (std::uint64_t run = 0; run < 2'000; ++run)
        for (int pid : {7, 8})  // at(): cpu = pid % 2
            for (std::uint64_t k = 0; k < 4; ++k) {
                const std::uint64_t ts = 1000 + run * 1000 + k * 200 + (pid == 8 ? 100 : 0);
                interleaved.push_back(at(ts, pid, Marker{"m" + std::to_string(id++)}));
            }
    in_order = interleaved;
    std::stable_sort(in_order.begin(), in_order.end(),
                     [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
    ASSERT_NE(describe_order(in_order), describe_order(interleaved));

    auto direct = open_stream();
    ASSERT_TRUE(direct);
    for (const Event& ev : in_order)
        direct->add(ev);
    const std::string want = finish_and_read(*direct);

    auto folded = open_stream();
    ASSERT_TRUE(folded);
    {
        ReportFold fold(*folded);
        for (Event ev : interleaved)
            fold.add(std::move(ev));
        fold.finish();
    }
    EXPECT_EQ(finish_and_read(*folded), want);
    EXPECT_EQ(folded->markers(), interleaved.size());
    EXPECT_EQ(want.find("late_"), std::string::npos);
}

// After sync() the fold thread has taken every event added (and is waiting): the comms are in the report, and
// the events are folded except those the report's sorter still holds (here the last, the newest: the markers are
// 1 s apart, past the sorter's 100 ms span).
TEST(ReportFold, SyncReturnsWhenEverythingAddedIsFolded) {
    auto r = open_stream();
    ASSERT_TRUE(r);
    ReportFold fold(*r, [](int pid) { return std::optional<std::string>("task-" + std::to_string(pid)); });
    const std::uint64_t s = 1'000'000'000;
    for (int i = 0; i < 10; ++i)
        fold.add(at(s + static_cast<std::uint64_t>(i) * s, 40 + i, Marker{"m"}));
    fold.sync();
    // Read on this thread after sync(): the fold thread has folded nine and is waiting.
    EXPECT_EQ(r->markers(), 9u);
    EXPECT_EQ(r->side().comms.size(), 10u);
    EXPECT_EQ(r->side().comms.at(49), "task-49");
    fold.add(at(20 * s, 40, Marker{"n"}));
    fold.finish();
    ASSERT_TRUE(r->finish());
    EXPECT_EQ(r->markers(), 11u);
}
