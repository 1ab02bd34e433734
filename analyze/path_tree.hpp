// path_tree.hpp: the per-path aggregation behind CallGraph rows (aggregate_graph, CallStream::graph); private
// to analyze.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvtrace/report.hpp"

namespace nvtrace::detail {

// A fast hash of a short name (8 bytes at a time, multiply-xorshift mixing); not for untrusted adversarial
// keys beyond what a slower lookup costs.
inline std::uint64_t name_hash(std::string_view s, std::uint64_t seed) {
    std::uint64_t h = seed ^ (s.size() * 0x9e3779b97f4a7c15ULL);
    const char* p = s.data();
    std::size_t n = s.size();
    auto mix = [](std::uint64_t x) {
        x ^= x >> 32;
        x *= 0xd6e8feb86659fd93ULL;
        x ^= x >> 32;
        return x;
    };
    while (n >= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        h = mix(h ^ w) * 0x9e3779b97f4a7c15ULL;
        p += 8;
        n -= 8;
    }
    if (n) {
        std::uint64_t w = 0;
        std::memcpy(&w, p, n);
        h = mix(h ^ w ^ (std::uint64_t(n) << 59)) * 0x9e3779b97f4a7c15ULL;
    }
    return mix(h);
}

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

// Distinct call paths ("a > b > c"), each a node under its parent path, with the aggregated row. One flat
// open-addressing table of (parent, name) -> node: a lookup per call hashes the name once and compares it
// once; the child a node got last is tried before that.
class PathTree {
public:
    static constexpr std::uint32_t kRoot = std::numeric_limits<std::uint32_t>::max();

    std::uint32_t intern(std::uint32_t parent, std::string_view function) {
        // Calls repeat: the child a path got last time is the likely one again (one compare, no hashing).
        std::uint32_t& last = parent == kRoot ? last_root_ : nodes_[parent].last_kid;
        if (last != kRoot && same_name(nodes_[last].name(), function)) return last;
        std::uint64_t h = name_hash(function, parent);
        std::size_t mask = slots_.size() - 1;
        std::size_t i = h & mask;
        for (; slots_[i].node != kRoot; i = (i + 1) & mask) {
            const Slot& sl = slots_[i];
            if (sl.hash == h && sl.parent == parent && same_name(nodes_[sl.node].name(), function))
                return last = sl.node;
        }
        auto id = static_cast<std::uint32_t>(nodes_.size());
        names_.emplace_back(function);  // a deque: the pointers in nodes_ stay valid
        Node n;
        n.parent = parent;
        n.data = names_.back().data();
        n.size = static_cast<std::uint32_t>(names_.back().size());
        nodes_.push_back(n);
        rows_.emplace_back().min_ns = std::numeric_limits<std::uint64_t>::max();
        slots_[i] = Slot{h, parent, id};
        if (nodes_.size() * 2 > slots_.size()) grow();
        (parent == kRoot ? last_root_ : nodes_[parent].last_kid) = id;
        return id;
    }

    void add(std::uint32_t node, const std::optional<std::uint64_t>& duration, std::uint64_t child_ns) {
        GraphNode& n = rows_[node];
        ++n.count;
        if (duration) {
            std::uint64_t d = *duration;
            n.total_ns += d;
            n.self_ns += d > child_ns ? d - child_ns : 0;
            n.min_ns = std::min(n.min_ns, d);
            n.max_ns = std::max(n.max_ns, d);
        }
    }

    // One row per path that was counted, sorted by path (byte order).
    std::vector<GraphNode> rows() const {
        std::vector<std::string> paths(nodes_.size());
        for (std::size_t i = 0; i < nodes_.size(); ++i) {  // a parent is always interned before its children
            const Node& n = nodes_[i];
            paths[i] = n.parent == kRoot ? std::string(n.name()) : paths[n.parent] + " > " + std::string(n.name());
        }
        std::vector<std::size_t> order;
        order.reserve(nodes_.size());
        for (std::size_t i = 0; i < nodes_.size(); ++i)
            if (rows_[i].count) order.push_back(i);
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return paths[a] < paths[b]; });
        std::vector<GraphNode> out;
        out.reserve(order.size());
        for (std::size_t i : order) {
            const GraphNode& r = rows_[i];
            if (!out.empty() && out.back().path == paths[i]) {  // names holding " > " can spell one path twice
                GraphNode& n = out.back();
                n.count += r.count;
                n.total_ns += r.total_ns;
                n.self_ns += r.self_ns;
                n.min_ns = std::min(n.min_ns, r.min_ns);
                n.max_ns = std::max(n.max_ns, r.max_ns);
                continue;
            }
            out.push_back(r);
            out.back().path = std::move(paths[i]);
        }
        for (GraphNode& n : out)
            if (n.min_ns == std::numeric_limits<std::uint64_t>::max()) n.min_ns = 0;
        return out;
    }

private:
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t parent = kRoot;
        std::uint32_t node = kRoot;  // kRoot: empty
    };
    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        std::size_t mask = slots_.size() - 1;
        for (const Slot& sl : old) {
            if (sl.node == kRoot) continue;
            std::size_t i = sl.hash & mask;
            while (slots_[i].node != kRoot)
                i = (i + 1) & mask;
            slots_[i] = sl;
        }
    }
    struct Node {
        std::uint32_t parent = kRoot;
        std::uint32_t last_kid = kRoot;  // the child interned last, kRoot for none
        const char* data = nullptr;      // the function, in names_
        std::uint32_t size = 0;
        std::string_view name() const { return {data, size}; }
    };
    std::vector<Node> nodes_;
    std::vector<GraphNode> rows_;  // by node; path filled in by rows()
    std::deque<std::string> names_;
    std::vector<Slot> slots_ = std::vector<Slot>(1024);  // a power of two, at most half full
    std::uint32_t last_root_ = kRoot;
};

}  // namespace nvtrace::detail
