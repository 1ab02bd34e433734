// path_tree.hpp: the per-path aggregation behind the report's `graph` rows (aggregate_graph,
// CallStream::graph); private to analyze.
//
// A call path ("a > b > c") is a node under its parent path. Function names are interned once to dense
// integer ids (FunctionIds, hashed with XXH3 from libxxhash); a path is keyed by (parent node, function id)
// in an open-addressing table, so a lookup hashes one 64-bit key and compares integers, whatever the names.
//
// Memory is bounded: at most `max_paths` distinct paths, holding at most `max_path_bytes` bytes of path text
// together, are kept (the paths of the first calls, in id order). A call whose path would be a new one
// beyond that, and every call under it, is aggregated into one row per function instead, whose path is
// "[beyond N paths] > FUNCTION" (beyond_row_prefix): its count, durations and self time are those of every
// such call of that function, wherever it ran. beyond_calls() counts them, for the report's
// `graph_paths_capped` diagnostic (docs/report-format.md). Function names themselves are stored once each,
// however often they occur: bounded by the distinct symbols of the traced kernel.
// Thread-safety: one instance per thread.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/call_graph.hpp"
#include "nvtrace/report.hpp"

namespace nvtrace::detail {

// a == b for short names without a memcmp call: 8 bytes at a time, the last word overlapping.
inline bool same_name(std::string_view a, std::string_view b) {
    std::size_t n = a.size();
    if (n != b.size()) return false;
    if (n < 8) return a == b;
    const char* p = a.data();
    const char* q = b.data();
    for (std::size_t i = 0;; i += 8) {
        if (i + 8 > n) i = n - 8;
        std::uint64_t x, y;
        std::memcpy(&x, p + i, 8);
        std::memcpy(&y, q + i, 8);
        if (x != y) return false;
        if (i + 8 == n) return true;
    }
}

// Distinct function names -> ids 0, 1, 2, ... in first-seen order; each name's bytes are stored once, in
// blocks that never move (name() views stay valid for the table's lifetime).
class FunctionIds {
public:
    std::uint32_t intern(std::string_view name);
    std::string_view name(std::uint32_t id) const { return names_[id]; }
    std::size_t size() const { return names_.size(); }

private:
    static constexpr std::uint32_t kEmpty = std::numeric_limits<std::uint32_t>::max();
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t id = kEmpty;
    };
    std::string_view store(std::string_view name);
    void grow();
    std::vector<std::string_view> names_;
    std::vector<std::unique_ptr<char[]>> blocks_;
    char* block_at_ = nullptr;
    std::size_t block_left_ = 0;
    std::vector<Slot> slots_ = std::vector<Slot>(1024);  // a power of two, at most half full
};

class PathTree {
public:
    static constexpr std::uint32_t kRoot = std::numeric_limits<std::uint32_t>::max();
    // Defaults: 131,072 paths and 64 MiB of path text (the rows' strings), about 100 MB at the end with the
    // rows built; far above the 12,095 paths of 100 MB of bench/gen_fgraph's default shape.
    static constexpr std::uint32_t kMaxPaths = 1u << 17;
    static constexpr std::uint64_t kMaxPathBytes = std::uint64_t(64) << 20;

    explicit PathTree(std::uint32_t max_paths = kMaxPaths, std::uint64_t max_path_bytes = kMaxPathBytes);

    // The node of a call of `function` under the call whose node is `parent` (kRoot: a root call).
    std::uint32_t intern(std::uint32_t parent, std::string_view function) {
        // Calls repeat: the child a path got last time is the likely one again (one compare, no hashing).
        std::uint32_t& last = parent == kRoot ? last_root_ : nodes_[parent].last_kid;
        if (last != kRoot && same_name(functions_.name(nodes_[last].function), function)) return last;
        std::uint32_t n = child(parent, functions_.intern(function));
        (parent == kRoot ? last_root_ : nodes_[parent].last_kid) = n;  // `last` may have moved with nodes_
        return n;
    }

    // Adds one call to its node's row: `duration` if known, `child_ns` the known durations of its children.
    void add(std::uint32_t node, const std::optional<std::uint64_t>& duration, std::uint64_t child_ns) {
        Row& n = rows_[node];
        ++n.count;
        beyond_calls_ += nodes_[node].beyond;
        if (duration) {
            std::uint64_t d = *duration;
            n.total_ns += d;
            n.self_ns += d > child_ns ? d - child_ns : 0;
            if (d < n.min_ns) n.min_ns = d;
            if (d > n.max_ns) n.max_ns = d;
        }
    }

    // One row per path that was counted, sorted by path (byte order).
    std::vector<GraphNode> rows() const;

    std::uint64_t beyond_calls() const { return beyond_calls_; }  // calls added to "[beyond N paths]" rows
    std::uint32_t max_paths() const { return max_paths_; }
    std::uint64_t max_path_bytes() const { return max_path_bytes_; }
    std::size_t paths() const { return kept_; }  // distinct paths kept
    GraphStats stats() const { return {kept_, max_paths_, max_path_bytes_, beyond_calls_}; }

    // "[beyond N paths]": the first component of the per-function rows past the cap.
    static std::string beyond_row_prefix(std::uint32_t max_paths);

private:
    std::uint32_t child(std::uint32_t parent, std::uint32_t function);
    void grow();

    struct Node {
        std::uint32_t parent = kRoot;    // kRoot for a root and for a beyond node
        std::uint32_t function = 0;      // FunctionIds id
        std::uint32_t last_kid = kRoot;  // the child interned last, kRoot for none
        std::uint32_t beyond = 0;        // 1: a per-function row past the cap
    };
    struct Row {
        std::uint64_t count = 0;
        std::uint64_t total_ns = 0;
        std::uint64_t self_ns = 0;
        std::uint64_t min_ns = std::numeric_limits<std::uint64_t>::max();
        std::uint64_t max_ns = 0;
    };
    struct Slot {
        std::uint64_t key = 0;       // parent << 32 | function
        std::uint32_t node = kRoot;  // kRoot: empty
    };

    FunctionIds functions_;
    std::vector<Node> nodes_;
    std::vector<Row> rows_;                              // by node
    std::vector<std::uint32_t> path_bytes_;              // by node: the length of its path text (0 for beyond nodes)
    std::vector<Slot> slots_ = std::vector<Slot>(1024);  // a power of two, at most half full
    std::uint32_t last_root_ = kRoot;
    std::uint32_t max_paths_;
    std::uint64_t max_path_bytes_;
    std::size_t kept_ = 0;          // nodes that are paths (not beyond nodes)
    std::uint64_t kept_bytes_ = 0;  // their path text
    std::uint64_t beyond_calls_ = 0;
};

}  // namespace nvtrace::detail
