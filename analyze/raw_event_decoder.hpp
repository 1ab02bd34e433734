// raw_event_decoder.hpp (private to analyze): raw ring-buffer records (struct tep_record) -> nvtrace::Event.
//
// Field layouts are never hard-coded: they come from the event `format` files that libtraceevent parsed
// into the tep_handle (kernel/trace/trace_entries.h for ftrace:funcgraph_*; include/trace/events/
// syscalls.h for sys_enter/exit_*; the funcgraph_exit field order changed across kernels, see
// ../shared/reference/ftrace-formats.md section 3.1). Fields are looked up once per event type.
// Thread-safety: one thread, except that fill() of a record check() gave plain Fields (plain()) may run on another
// thread while this one goes on (ReportFold decodes such records on its fold thread).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "nvtrace/event.hpp"

struct tep_handle;
struct tep_record;
struct tep_event;
struct tep_format_field;

namespace nvtrace {

class RawEventDecoder {
public:
    // `other_events` are "system:event" names to keep as OtherEvent (the user's --event list); "system:*" keeps
    // a system's, "*:*" every event nvtrace has no other use for (a trace.dat: its recording chose them).
    explicit RawEventDecoder(tep_handle* tep, std::vector<std::string> other_events = {});

    // nullopt for event types nvtrace does not keep. A record shorter than its common header or than the
    // fields nvtrace reads (only in damaged data) is counted in undecodable() and skipped.
    std::optional<Event> decode(tep_record* record);

    // The same decoding, appended to `out` in place (no Event moved): true when an Event was appended,
    // false where decode() gives nullopt. The reading loops of trace.dat and capture pages use this one.
    bool decode_append(tep_record* record, std::vector<Event>& out);

    std::uint64_t undecodable() const { return undecodable_; }

    // Decoding in two steps, for a reader that hands records to another thread (ReportFold):
    //  - check(): the record's Fields when nvtrace keeps it, after the size checks; nullptr otherwise (counted
    //    in undecodable() when due). May call libtraceevent (first sight of a type): the decoder's thread only.
    //  - plain(f): fill() decodes records of these Fields from their bytes alone, without libtraceevent: ioctl
    //    enter/exit, funcgraph entry/exit (names not looked up), ftrace:print and printk:console, when the common
    //    fields lie in the record's first 8 bytes. Not plain: OtherEvent (its fields are printed by
    //    libtraceevent).
    //  - fill(): the Event of a checked record (`rec`: ts, cpu, data and size are read). For plain Fields it is
    //    thread-safe while the decoder lives (it reads the Fields and the decoder's common-field layout, set
    //    before check() returned them); for others, the decoder's thread only.
    //  - pid(): common_pid of a checked record with plain Fields, as fill() sets Event::pid.
    // decode_append(rec, out) is check() then fill() into out.emplace_back().
    enum class Kind { unknown, func_entry, func_exit, ioctl_enter, ioctl_exit, print, console, other };
    struct Fields {
        Kind kind = Kind::unknown;
        tep_event* event = nullptr;
        tep_format_field* func = nullptr;
        tep_format_field* depth = nullptr;
        tep_format_field* calltime = nullptr;
        tep_format_field* rettime = nullptr;
        tep_format_field* overrun = nullptr;
        tep_format_field* retval = nullptr;
        tep_format_field* fd = nullptr;
        tep_format_field* cmd = nullptr;
        tep_format_field* arg = nullptr;
        tep_format_field* ret = nullptr;
        tep_format_field* text = nullptr;  // ftrace:print buf, printk:console msg
        tep_format_field* flags = nullptr;
        int min_size = 0;  // the record must hold every fixed field read (a shorter one is undecodable)
    };
    const Fields* check(tep_record* record);
    bool plain(const Fields& f) const;
    void fill(const tep_record& record, const Fields& f, Event& ev) const;
    int pid(const tep_record& record) const;

private:
    const Fields& fields_for(int type);
    bool common_in_place() const;  // common_pid and common_flags within the first 8 bytes

    tep_handle* tep_;
    std::vector<std::string> other_events_;
    std::unordered_map<int, Fields> by_type_;
    std::vector<const Fields*> by_type_index_;  // by_type_ indexed by type id: no hash per record
    bool native_ = false;                       // the data's byte order is this machine's
    // common_type, common_flags, common_pid (kernel/trace/trace_entries.h, struct trace_entry): found with the first
    // event decoded; until then libtraceevent's tep_data_type/flags/pid read them.
    tep_format_field* common_type_ = nullptr;
    tep_format_field* common_flags_ = nullptr;
    tep_format_field* common_pid_ = nullptr;
    std::uint64_t undecodable_ = 0;
};

// A record `decoder` checked, whose Fields are plain (nvtrace/import.hpp).
struct RawRecord {
    const RawEventDecoder& decoder;
    const RawEventDecoder::Fields& fields;
    const tep_record& rec;
};

}  // namespace nvtrace
