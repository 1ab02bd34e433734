#include "path_tree.hpp"

// XXH3 inlined (xxhash.h's single-header mode): PathTree::child and FunctionIds::intern hash a 64-bit key or a
// short name per call, where a call into the shared library cost as much as the hashing.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>

#include <fmt/format.h>

#include "nvtrace/call_graph.hpp"

namespace nvtrace {

namespace detail {

namespace {

std::uint64_t key_hash(std::uint64_t key) {
    return XXH3_64bits(&key, sizeof key);
}

// The parent half of the key of a beyond node: neither a node index nor kRoot.
constexpr std::uint64_t kBeyondParent = PathTree::kRoot - 1;

}  // namespace

std::string_view FunctionIds::store(std::string_view name) {
    constexpr std::size_t kBlock = 64 * 1024;
    if (name.size() > kBlock / 4) {  // a name of its own
        blocks_.push_back(std::make_unique<char[]>(name.size()));
        std::memcpy(blocks_.back().get(), name.data(), name.size());
        return {blocks_.back().get(), name.size()};
    }
    if (name.size() > block_left_) {
        blocks_.push_back(std::make_unique<char[]>(kBlock));
        block_at_ = blocks_.back().get();
        block_left_ = kBlock;
    }
    std::memcpy(block_at_, name.data(), name.size());
    std::string_view v(block_at_, name.size());
    block_at_ += name.size();
    block_left_ -= name.size();
    return v;
}

std::uint32_t FunctionIds::intern(std::string_view name) {
    std::uint64_t h = XXH3_64bits(name.data(), name.size());
    std::size_t mask = slots_.size() - 1;
    std::size_t i = h & mask;
    for (; slots_[i].id != kEmpty; i = (i + 1) & mask)
        if (slots_[i].hash == h && same_name(names_[slots_[i].id], name)) return slots_[i].id;
    auto id = static_cast<std::uint32_t>(names_.size());
    names_.push_back(store(name));
    slots_[i] = Slot{h, id};
    if (names_.size() * 2 > slots_.size()) grow();
    return id;
}

void FunctionIds::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    std::size_t mask = slots_.size() - 1;
    for (const Slot& sl : old) {
        if (sl.id == kEmpty) continue;
        std::size_t i = sl.hash & mask;
        while (slots_[i].id != kEmpty)
            i = (i + 1) & mask;
        slots_[i] = sl;
    }
}

PathTree::PathTree(std::uint32_t max_paths, std::uint64_t max_path_bytes)
    : max_paths_(max_paths), max_path_bytes_(max_path_bytes) {}

std::string PathTree::beyond_row_prefix(std::uint32_t max_paths) {
    return fmt::format("[beyond {} paths]", max_paths);
}

std::uint32_t PathTree::child(std::uint32_t parent, std::uint32_t function) {
    bool beyond = parent != kRoot && nodes_[parent].beyond;
    std::uint32_t bytes = 0;
    for (int attempt = 0; attempt < 2; ++attempt) {
        std::uint64_t key = (beyond ? kBeyondParent : std::uint64_t(parent)) << 32 | function;
        std::uint64_t h = key_hash(key);
        std::size_t mask = slots_.size() - 1;
        std::size_t i = h & mask;
        for (; slots_[i].node != kRoot; i = (i + 1) & mask)
            if (slots_[i].key == key) return slots_[i].node;
        if (!beyond) {
            // A new path: kept while both caps allow it, else its call goes to the function's beyond row.
            bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(
                (parent == kRoot ? 0 : std::uint64_t(path_bytes_[parent]) + 3) + functions_.name(function).size(),
                std::numeric_limits<std::uint32_t>::max()));
            if (kept_ >= max_paths_ || kept_bytes_ + bytes > max_path_bytes_) {
                beyond = true;
                continue;
            }
        }
        auto id = static_cast<std::uint32_t>(nodes_.size());
        Node n;
        n.parent = beyond ? kRoot : parent;
        n.function = function;
        n.beyond = beyond ? 1 : 0;
        nodes_.push_back(n);
        rows_.emplace_back();
        path_bytes_.push_back(beyond ? 0 : bytes);
        if (!beyond) {
            ++kept_;
            kept_bytes_ += bytes;
        }
        slots_[i] = Slot{key, id};
        if (nodes_.size() * 2 > slots_.size()) grow();
        return id;
    }
    return kRoot;  // not reached: the second attempt is a beyond node, found or made
}

void PathTree::grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    std::size_t mask = slots_.size() - 1;
    for (const Slot& sl : old) {
        if (sl.node == kRoot) continue;
        std::size_t i = key_hash(sl.key) & mask;
        while (slots_[i].node != kRoot)
            i = (i + 1) & mask;
        slots_[i] = sl;
    }
}

std::vector<GraphNode> PathTree::rows() const {
    std::vector<std::string> paths(nodes_.size());
    std::string beyond = beyond_row_prefix(max_paths_) + " > ";
    for (std::size_t i = 0; i < nodes_.size(); ++i) {  // a parent is always interned before its children
        const Node& n = nodes_[i];
        if (!rows_[i].count && n.beyond) continue;  // a beyond node is nobody's parent path
        std::string_view name = functions_.name(n.function);
        std::string& p = paths[i];
        if (n.beyond) {
            p.reserve(beyond.size() + name.size());
            p.append(beyond).append(name);
        } else if (n.parent == kRoot) {
            p.assign(name);
        } else {
            const std::string& up = paths[n.parent];
            p.reserve(up.size() + 3 + name.size());
            p.append(up).append(" > ").append(name);
        }
    }
    std::vector<std::size_t> order;
    order.reserve(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (rows_[i].count) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return paths[a] < paths[b]; });
    std::vector<GraphNode> out;
    out.reserve(order.size());
    for (std::size_t i : order) {
        const Row& r = rows_[i];
        if (!out.empty() && out.back().path == paths[i]) {  // names holding " > " can spell one path twice
            GraphNode& n = out.back();
            n.count += r.count;
            n.total_ns += r.total_ns;
            n.self_ns += r.self_ns;
            n.min_ns = std::min(n.min_ns, r.min_ns);
            n.max_ns = std::max(n.max_ns, r.max_ns);
            continue;
        }
        GraphNode& n = out.emplace_back();
        n.count = r.count;
        n.total_ns = r.total_ns;
        n.self_ns = r.self_ns;
        n.min_ns = r.min_ns;
        n.max_ns = r.max_ns;
        n.path = std::move(paths[i]);
    }
    for (GraphNode& n : out)
        if (n.min_ns == std::numeric_limits<std::uint64_t>::max()) n.min_ns = 0;
    return out;
}

}  // namespace detail

using detail::PathTree;

std::vector<GraphNode> aggregate_graph(const std::vector<Call>& calls, GraphStats* stats) {
    PathTree tree;
    std::vector<std::uint32_t> node(calls.size());
    std::vector<std::uint64_t> child_ns(calls.size(), 0);
    for (std::size_t i = 0; i < calls.size(); ++i) {
        const Call& c = calls[i];
        if (c.parent) {
            std::size_t p = *c.parent - 1;
            node[i] = tree.intern(node[p], c.function);
            if (c.duration_ns) child_ns[p] += *c.duration_ns;
        } else {
            node[i] = tree.intern(PathTree::kRoot, c.function);
        }
    }
    for (std::size_t i = 0; i < calls.size(); ++i)
        tree.add(node[i], calls[i].duration_ns, child_ns[i]);
    if (stats) *stats = tree.stats();
    return tree.rows();
}

void add_graph_cap_diagnostic(Completeness& c, const GraphStats& s) {
    if (s.beyond_calls == 0) return;
    c.diagnostics.push_back(make_diagnostic(
        Diag::graph_paths_capped, s.beyond_calls,
        fmt::format("calls past the first {} distinct call paths ({} MiB of path text at most) are aggregated "
                    "by function in the graph rows '{} > FUNCTION'",
                    s.max_paths, s.max_path_bytes >> 20,
                    PathTree::beyond_row_prefix(static_cast<std::uint32_t>(s.max_paths)))));
}

}  // namespace nvtrace
