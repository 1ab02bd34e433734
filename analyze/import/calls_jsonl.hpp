// calls_jsonl.hpp: the buffered JSON Lines writer of `nvtrace report --calls-jsonl` (private to analyze/import).
// One line per call, the bytes of append_call_json (json_write.hpp, from the field table of
// ../record_fields.hpp) followed by '\n', written into a fixed buffer instead of a std::string; a call larger
// than the buffer (a name of megabytes) goes through append_call_json. tests/analyze/import/test_stream_report.cpp
// compares both.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

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
        const std::size_t n = call_json_bound(c) + 1;
        if (pos_ + n > kSize) flush();
        if (n > kSize) {
            tmp_.clear();
            append_call_json(tmp_, c);
            tmp_ += '\n';
            out_.write(tmp_.data(), static_cast<std::streamsize>(tmp_.size()));
        } else {
            char* p = emit_call_json(buf_.get() + pos_, c);
            *p++ = '\n';
            pos_ = static_cast<std::size_t>(p - buf_.get());
        }
        ++count_;
    }
    void flush() {
        if (pos_) out_.write(buf_.get(), static_cast<std::streamsize>(pos_));
        pos_ = 0;
    }
    std::uint64_t count() const { return count_; }

private:
    static constexpr std::size_t kSize = std::size_t(1) << 20;

    std::ostream& out_;
    std::unique_ptr<char[]> buf_;
    std::size_t pos_ = 0;
    std::uint64_t count_ = 0;
    std::string tmp_;
};

}  // namespace nvtrace::import
