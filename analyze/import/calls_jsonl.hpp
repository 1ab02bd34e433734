// calls_jsonl.hpp: the buffered JSON Lines writer of `nvtrace report --calls-jsonl` (private to analyze/import).
// One line per call, the same bytes as append_call_json (json_write.hpp) followed by '\n', written into a
// fixed buffer instead of a std::string: a call whose strings need no escaping (printable ASCII without '"'
// or '\\', the usual case) is copied as is; any other string goes through append_json_string, so escaping
// and invalid UTF-8 handling stay exactly json_write's. tests/analyze/import/test_stream_report.cpp compares
// both.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "json_write.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::import {

class CallsJsonlWriter {
public:
    explicit CallsJsonlWriter(std::ostream& out) : out_(out), buf_(new char[kSize]) {}
    ~CallsJsonlWriter() { flush(); }
    CallsJsonlWriter(const CallsJsonlWriter&) = delete;
    CallsJsonlWriter& operator=(const CallsJsonlWriter&) = delete;

    void write(const Call& c) {
        if (pos_ + kFixed > kSize) flush();
        lit("{\"comm\":");
        str(c.comm);
        lit(",\"cpu\":");
        num(c.cpu);
        lit(",\"depth\":");
        num(c.depth);
        lit(",\"duration_ns\":");
        opt(c.duration_ns);
        lit(",\"entry_ns\":");
        opt(c.entry_ns);
        if (c.entry_seen)
            lit(",\"entry_seen\":true");
        else
            lit(",\"entry_seen\":false");
        if (c.exit_seen)
            lit(",\"exit_seen\":true");
        else
            lit(",\"exit_seen\":false");
        lit(",\"function\":");
        str(c.function);
        lit(",\"id\":");
        num(c.id);
        if (c.irq)
            lit(",\"irq\":true");
        else
            lit(",\"irq\":false");
        lit(",\"module\":");
        opt_str(c.module);
        lit(",\"parent\":");
        opt(c.parent);
        lit(",\"phase\":");
        opt_str(c.phase);
        lit(",\"pid\":");
        num(c.pid);
        lit(",\"retval\":");
        opt(c.retval);
        lit("}\n");
        ++count_;
    }
    void flush() {
        if (pos_) out_.write(buf_.get(), static_cast<std::streamsize>(pos_));
        pos_ = 0;
    }
    std::uint64_t count() const { return count_; }

private:
    static constexpr std::size_t kSize = std::size_t(1) << 20;
    static constexpr std::size_t kFixed = 512;  // more than the keys, numbers and literals of one call

    template <std::size_t N>
    void lit(const char (&s)[N]) {
        std::memcpy(buf_.get() + pos_, s, N - 1);
        pos_ += N - 1;
    }
    template <class T>
    void num(T v) {
        auto r = std::to_chars(buf_.get() + pos_, buf_.get() + kSize, v);
        pos_ = static_cast<std::size_t>(r.ptr - buf_.get());
    }
    template <class T>
    void opt(const std::optional<T>& v) {
        if (v)
            num(*v);
        else
            lit("null");
    }
    void str(std::string_view s) {
        for (char ch : s) {
            auto u = static_cast<unsigned char>(ch);
            if (u < 0x20 || u >= 0x80 || ch == '"' || ch == '\\') {
                tmp_.clear();
                append_json_string(tmp_, s);
                put(tmp_);
                return;
            }
        }
        if (pos_ + s.size() + 2 + kFixed > kSize) {
            tmp_.assign(1, '"').append(s).push_back('"');
            put(tmp_);
            return;
        }
        buf_[pos_++] = '"';
        std::memcpy(buf_.get() + pos_, s.data(), s.size());
        pos_ += s.size();
        buf_[pos_++] = '"';
    }
    // Copies `s`, keeping room for the rest of the call (kFixed) behind it; written directly when larger.
    void put(std::string_view s) {
        if (pos_ + s.size() + kFixed > kSize) flush();
        if (s.size() + kFixed > kSize) {
            out_.write(s.data(), static_cast<std::streamsize>(s.size()));
            return;
        }
        std::memcpy(buf_.get() + pos_, s.data(), s.size());
        pos_ += s.size();
    }
    void opt_str(const std::optional<std::string>& s) {
        if (s)
            str(*s);
        else
            lit("null");
    }

    std::ostream& out_;
    std::unique_ptr<char[]> buf_;
    std::size_t pos_ = 0;
    std::uint64_t count_ = 0;
    std::string tmp_;
};

}  // namespace nvtrace::import
