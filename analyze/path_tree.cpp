#include "path_tree.hpp"

#include "nvtrace/call_graph.hpp"

namespace nvtrace {

using detail::PathTree;

std::vector<GraphNode> aggregate_graph(const std::vector<Call>& calls) {
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
    return tree.rows();
}

}  // namespace nvtrace
