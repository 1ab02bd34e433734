#include "raw_event_decoder.hpp"

#include <algorithm>
#include <cstring>

#include <event-parse.h>
#include <trace-seq.h>

namespace nvtrace {

namespace {

// `native`: the file's byte order is this machine's, so a field is its bytes as they are (the records were
// checked to hold every field read: RawEventDecoder::Fields::min_size); else libtraceevent swaps them.
std::uint64_t read_u(const tep_format_field* f, const tep_record* rec, bool native) {
    if (!f) return 0;
    if (native) {
        const char* p = static_cast<const char*>(rec->data) + f->offset;
        switch (f->size) {
            case 1:
                return static_cast<std::uint8_t>(*p);
            case 2: {
                std::uint16_t v;
                std::memcpy(&v, p, 2);
                return v;
            }
            case 4: {
                std::uint32_t v;
                std::memcpy(&v, p, 4);
                return v;
            }
            case 8: {
                std::uint64_t v;
                std::memcpy(&v, p, 8);
                return v;
            }
            default:
                return 0;  // as tep_read_number_field: only 1, 2, 4 and 8-byte numbers
        }
    }
    unsigned long long v = 0;
    if (tep_read_number_field(const_cast<tep_format_field*>(f), rec->data, &v) != 0) return 0;
    return v;
}

// Sign-extends a field read through tep_read_number_field according to its declared size and signedness.
std::int64_t read_s(const tep_format_field* f, const tep_record* rec, bool native) {
    std::uint64_t v = read_u(f, rec, native);
    if (!f || !(f->flags & TEP_FIELD_IS_SIGNED)) return static_cast<std::int64_t>(v);
    switch (f->size) {
        case 1:
            return static_cast<std::int8_t>(v);
        case 2:
            return static_cast<std::int16_t>(v);
        case 4:
            return static_cast<std::int32_t>(v);
        default:
            return static_cast<std::int64_t>(v);
    }
}

// A string field: __data_loc (printk:console msg) or a size-0 trailing array (ftrace:print buf, whose
// real length is the record size minus the field offset). Stops at the first NUL; drops one final '\n'.
std::string read_text(const tep_format_field* f, const tep_record* rec) {
    if (!f) return {};
    const char* base = static_cast<const char*>(rec->data);
    std::size_t off = 0, len = 0;
    if (f->flags & TEP_FIELD_IS_DYNAMIC) {
        unsigned long long loc = 0;
        if (tep_read_number_field(const_cast<tep_format_field*>(f), rec->data, &loc) != 0) return {};
        off = loc & 0xffff;
        len = (loc >> 16) & 0xffff;
        if (f->flags & TEP_FIELD_IS_RELATIVE) off += static_cast<std::size_t>(f->offset + f->size);
    } else {
        off = static_cast<std::size_t>(f->offset);
        len = f->size > 0 ? static_cast<std::size_t>(f->size) : 0;
        if (len == 0 && rec->size > f->offset) len = static_cast<std::size_t>(rec->size - f->offset);
    }
    if (off >= static_cast<std::size_t>(rec->size)) return {};
    len = std::min(len, static_cast<std::size_t>(rec->size) - off);
    std::string s(base + off, strnlen(base + off, len));
    if (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

}  // namespace

RawEventDecoder::RawEventDecoder(tep_handle* tep, std::vector<std::string> other_events)
    : tep_(tep),
      other_events_(std::move(other_events)),
      native_(tep && tep_is_file_bigendian(tep) == tep_is_local_bigendian(tep)) {}

const RawEventDecoder::Fields& RawEventDecoder::fields_for(int type) {
    auto [it, fresh] = by_type_.try_emplace(type);
    Fields& f = it->second;
    if (!fresh) return f;
    tep_event* ev = tep_find_event(tep_, type);
    f.event = ev;
    if (!ev || !ev->name || !ev->system) return f;
    // The common fields (struct trace_entry) are the same in every event: read in place from now on (check, fill).
    if (!common_type_) {
        common_type_ = tep_find_common_field(ev, "common_type");
        common_flags_ = tep_find_common_field(ev, "common_flags");
        common_pid_ = tep_find_common_field(ev, "common_pid");
    }
    std::string sys = ev->system, name = ev->name;
    auto field = [&](const char* n) { return tep_find_field(ev, n); };
    if (sys == "ftrace" && (name == "funcgraph_entry" || name == "fgraph_retaddr_entry")) {
        f.kind = Kind::func_entry;
        f.func = field("func");
        f.depth = field("depth");
    } else if (sys == "ftrace" && name == "funcgraph_exit") {
        f.kind = Kind::func_exit;
        f.func = field("func");
        f.depth = field("depth");
        f.calltime = field("calltime");
        f.rettime = field("rettime");
        f.overrun = field("overrun");
        f.retval = field("retval");
    } else if (sys == "syscalls" && name == "sys_enter_ioctl") {
        f.kind = Kind::ioctl_enter;
        f.fd = field("fd");
        f.cmd = field("cmd");
        f.arg = field("arg");
    } else if (sys == "syscalls" && name == "sys_exit_ioctl") {
        f.kind = Kind::ioctl_exit;
        f.ret = field("ret");
    } else if (sys == "ftrace" && name == "print") {
        f.kind = Kind::print;
        f.text = field("buf");
    } else if (sys == "printk" && name == "console") {
        f.kind = Kind::console;
        f.text = field("msg");
    } else if (std::find(other_events_.begin(), other_events_.end(), sys + ":" + name) != other_events_.end() ||
               std::find(other_events_.begin(), other_events_.end(), sys + ":*") != other_events_.end() ||
               std::find(other_events_.begin(), other_events_.end(), "*:*") != other_events_.end()) {
        f.kind = Kind::other;
    }
    if ((f.kind == Kind::func_entry && !f.func) ||
        (f.kind == Kind::func_exit && (!f.func || !f.calltime || !f.rettime)) ||
        (f.kind == Kind::ioctl_enter && !f.cmd) || (f.kind == Kind::ioctl_exit && !f.ret))
        f.kind = Kind::unknown;  // a format nvtrace does not understand: counted, not guessed
    for (tep_format_field* x : {f.func, f.depth, f.calltime, f.rettime, f.overrun, f.retval, f.fd, f.cmd, f.arg, f.ret})
        if (x) f.min_size = std::max(f.min_size, x->offset + x->size);
    if (f.text)  // a fixed text is clamped to the record by read_text; a __data_loc word must be there
        f.min_size = std::max(f.min_size, f.text->offset + ((f.text->flags & TEP_FIELD_IS_DYNAMIC) ? f.text->size : 0));
    return f;
}

const RawEventDecoder::Fields* RawEventDecoder::check(tep_record* rec) {
    if (rec->size < 8) {  // common_type, common_flags, common_preempt_count, common_pid
        ++undecodable_;
        return nullptr;
    }
    int type = common_type_ && common_type_->offset + common_type_->size <= 8
                   ? static_cast<int>(read_u(common_type_, rec, native_))
                   : tep_data_type(tep_, rec);
    const Fields* fp = nullptr;
    if (type >= 0 && type < 65536) {  // common_type is a u16: a flat index, filled on first sight
        auto t = static_cast<std::size_t>(type);
        if (t >= by_type_index_.size()) by_type_index_.resize(t + 1, nullptr);
        if (!by_type_index_[t]) by_type_index_[t] = &fields_for(type);  // unordered_map nodes do not move
        fp = by_type_index_[t];
    } else {
        fp = &fields_for(type);
    }
    const Fields& f = *fp;
    if (f.kind != Kind::unknown && rec->size < f.min_size) {
        ++undecodable_;
        return nullptr;
    }
    if (f.kind == Kind::unknown) {
        if (f.event) {
            std::string n = f.event->name ? f.event->name : "";
            if (n == "funcgraph_entry" || n == "funcgraph_exit" || n == "sys_enter_ioctl" || n == "sys_exit_ioctl")
                ++undecodable_;
        }
        return nullptr;
    }
    return fp;
}

bool RawEventDecoder::common_in_place() const {
    return common_pid_ && common_flags_ && common_pid_->offset + common_pid_->size <= 8 &&
           common_flags_->offset + common_flags_->size <= 8;
}

bool RawEventDecoder::plain(const Fields& f) const {
    return f.kind != Kind::other && f.kind != Kind::unknown && common_in_place();
}

int RawEventDecoder::pid(const tep_record& rec) const {
    return static_cast<int>(read_s(common_pid_, &rec, native_));
}

void RawEventDecoder::fill(const tep_record& record, const Fields& f, Event& ev) const {
    const tep_record* rec = &record;
    ev.ts_ns = rec->ts;
    ev.cpu = rec->cpu;
    // The common fields lie in the first 8 bytes, which check() found in the record. libtraceevent's readers
    // take a non-const record but only read it.
    auto* mut = const_cast<tep_record*>(rec);
    const bool common = common_in_place();
    ev.pid = common ? static_cast<int>(read_s(common_pid_, rec, native_)) : tep_data_pid(tep_, mut);
    int flags = common ? static_cast<int>(read_u(common_flags_, rec, native_)) : tep_data_flags(tep_, mut);
    ev.irq = flags >= 0 && (flags & (TRACE_FLAG_HARDIRQ | TRACE_FLAG_SOFTIRQ)) != 0;
    switch (f.kind) {
        case Kind::func_entry: {
            auto& e = ev.body.emplace<FuncEntry>();
            e.func_addr = read_u(f.func, rec, native_);
            e.depth = static_cast<int>(read_s(f.depth, rec, native_));
            break;
        }
        case Kind::func_exit: {
            auto& x = ev.body.emplace<FuncExit>();
            x.func_addr = read_u(f.func, rec, native_);
            x.depth = static_cast<int>(read_s(f.depth, rec, native_));
            x.calltime_ns = read_u(f.calltime, rec, native_);
            x.rettime_ns = read_u(f.rettime, rec, native_);
            x.overrun = read_u(f.overrun, rec, native_);
            if (f.retval) x.retval = read_s(f.retval, rec, native_);
            break;
        }
        case Kind::ioctl_enter:
            ev.body.emplace<IoctlEnter>(IoctlEnter{static_cast<int>(read_s(f.fd, rec, native_)),
                                                   read_u(f.cmd, rec, native_), read_u(f.arg, rec, native_)});
            break;
        case Kind::ioctl_exit:
            ev.body.emplace<IoctlExit>(IoctlExit{read_s(f.ret, rec, native_)});
            break;
        case Kind::print:
            ev.body.emplace<Marker>(Marker{read_text(f.text, rec)});
            break;
        case Kind::console:
            ev.body.emplace<ConsoleLine>(ConsoleLine{read_text(f.text, rec)});
            break;
        case Kind::other: {
            trace_seq s;
            trace_seq_init(&s);
            tep_record_print_fields(&s, mut, f.event);
            trace_seq_terminate(&s);
            ev.body.emplace<OtherEvent>(OtherEvent{f.event->system, f.event->name, std::string(s.buffer, s.len)});
            trace_seq_destroy(&s);
            break;
        }
        case Kind::unknown:  // check() never returns these
            break;
    }
}

std::optional<Event> RawEventDecoder::decode(tep_record* rec) {
    const Fields* f = check(rec);
    if (!f) return std::nullopt;
    std::optional<Event> ev(std::in_place);
    fill(*rec, *f, *ev);
    return ev;
}

bool RawEventDecoder::decode_append(tep_record* rec, std::vector<Event>& out) {
    const Fields* f = check(rec);
    if (!f) return false;
    fill(*rec, *f, out.emplace_back());
    return true;
}

}  // namespace nvtrace
