// gen_fgraph: writes a synthetic, deterministic function_graph `trace` text for the benchmarks (bench/run.sh).
//
//   gen_fgraph --size BYTES | --calls N  [--seed S] [--cpus N] [--shape SHAPE] [--out FILE]
//
// The text is what the kernel prints with funcgraph-abstime on (kernel/trace/trace_functions_graph.c):
// "  TIME |  CPU)  DURATION |  body". Variety: N CPUs interleaved in runs, context-switch banners between
// tasks (-------- / " 0)  comm-1  =>  comm-2  "), interrupts with "==========>" / "<==========" markers,
// orphan returns (each CPU starts in the middle of a tree; now and then an entry line is missing),
// "} /* func */" tails, retvals ("/* = -22 */"), every overhead mark (+ ! # * @ $), comments (trace_printk
// text and "/* event: fields */"), module suffixes ("f [nvidia]()"), and rare "CPU:N [LOST M EVENTS]" lines.
//
// The call structure comes from a fixed function universe (the same for every seed), so the number of
// distinct call paths is bounded whatever the size; the seed only changes the walk (which children run,
// how often, for how long). Two seeds therefore give two runs "of the same program" for nvtrace diff.
// Output is the same bytes for the same arguments on every machine (own PRNG, no libc rand).
//
// --shape chooses the call structure (default dag, the one above; its bytes do not depend on the others):
//   mesh       24 functions that call each other in any order, 0-4 callees per call, down to depth 10, and
//              interrupts (4 handlers that call into the same 24) nested at random points of random paths
//              (1 line in 100): the distinct call paths keep growing with the size, as in a trace of a
//              driver whose entry points reach the same helpers by many routes.
//   recursion  the dag universe where 1 function in 6 recurses into itself 8-40 levels deep before its own
//              callees run (tree and list walkers: rb_insert, __walk_page_range, kobject_put chains).
//   tasks      the dag universe with funcgraph-proc's TASK/PID column (comm cut to 7 characters, "comm-pid"
//              centred in 14 columns, print_graph_proc) on every line, 512 tasks that are preempted in the
//              middle of their call trees (a context-switch banner, then another task's stack resumes on that
//              CPU), so many shadow stacks interleave on each CPU.
//   long       the dag walk over function names of 40-110 characters ("..._internal_locked.constprop.0"),
//              nearly all with a module tag (" [nvidia]", " [nvidia_uvm]", " [nvidia_modeset]", " [nvidia_drm]").
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// splitmix64: small, fast, identical everywhere.
struct Rng {
    std::uint64_t s;
    std::uint64_t next() {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
    bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
};

enum class Shape { dag, mesh, recursion, tasks, long_names };

struct Func {
    std::string name;
    std::string module;         // "" for vmlinux
    std::vector<int> children;  // callees, in call order
    std::vector<int> repeat;    // max times each callee is called in a row
    std::uint64_t self_ns = 0;  // typical own time
    bool recursive = false;     // Shape::recursion: calls itself before its callees
};

constexpr const char* kPrefixes[] = {"nv",  "uvm",   "os", "rm",  "kbase", "drm",
                                     "dma", "iommu", "mm", "vfs", "sched", "irq"};
constexpr const char* kVerbs[] = {"alloc",  "free", "map",   "unmap", "lock", "unlock", "get",    "put",  "query",
                                  "submit", "wait", "flush", "copy",  "init", "check",  "update", "find", "insert"};
constexpr const char* kNouns[] = {"mem", "page", "ctx",   "gpu",  "chan", "fence", "range", "entry",
                                  "buf", "node", "table", "desc", "va",   "ref",   "event", "queue"};
constexpr const char* kSuffixes[] = {"", "", "", "", "", ".isra.0", ".constprop.0", ".part.0", "_locked", "_v2"};
constexpr const char* kModules[] = {"", "", "", "nvidia", "nvidia_uvm", "nvidia_modeset"};

struct Universe {
    std::vector<Func> funcs;
    std::vector<int> roots;      // syscall-like entry points
    std::vector<int> irq_roots;  // interrupt handlers
    int mesh = 0;                // Shape::mesh: funcs[0, mesh) call each other
};

// Shape::mesh: 24 functions, any of which calls any other, and 4 interrupt handlers.
Universe make_mesh() {
    Rng r{0x3e5b3e5bULL};
    Universe u;
    u.mesh = 24;
    for (int i = 0; i < u.mesh + 4; ++i) {
        Func f;
        f.name = i < u.mesh ? std::string(kPrefixes[r.below(std::size(kPrefixes))]) + "_" +
                                  kVerbs[r.below(std::size(kVerbs))] + "_" + kNouns[r.below(std::size(kNouns))] +
                                  std::to_string(i) + kSuffixes[r.below(std::size(kSuffixes))]
                            : "nv_isr_" + std::string(kNouns[r.below(std::size(kNouns))]) + std::to_string(i);
        f.module = kModules[r.below(std::size(kModules))];
        f.self_ns = 50 + r.below(1500);
        u.funcs.push_back(std::move(f));
    }
    for (int i = 0; i < u.mesh; ++i)
        u.roots.push_back(i);
    for (int i = u.mesh; i < u.mesh + 4; ++i)
        u.irq_roots.push_back(i);
    return u;
}

// Shape::long_names: a name of 40-110 characters built from the same words, and a module tag for 9 in 10.
void lengthen(Func& f, Rng& r) {
    constexpr const char* kLongModules[] = {"nvidia", "nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"};
    std::size_t want = 40 + r.below(71);
    std::string tail = f.name;
    f.name = std::string("_") + kPrefixes[r.below(std::size(kPrefixes))];
    while (f.name.size() + tail.size() + 1 < want)
        f.name += std::string("_") +
                  (r.chance(0.5) ? kVerbs[r.below(std::size(kVerbs))] : kNouns[r.below(std::size(kNouns))]);
    f.name += "_" + tail;
    f.module = r.chance(0.9) ? kLongModules[r.below(std::size(kLongModules))] : "";
}

// The function universe: a layered DAG, the same for every seed (its own fixed PRNG).
Universe make_universe(Shape shape) {
    if (shape == Shape::mesh) return make_mesh();
    Rng r{0x5eed5eedULL};
    Universe u;
    constexpr int kLayers = 7, kPerLayer = 60;
    for (int l = 0; l < kLayers; ++l)
        for (int i = 0; i < kPerLayer; ++i) {
            Func f;
            f.name = std::string(kPrefixes[r.below(std::size(kPrefixes))]) + "_" + kVerbs[r.below(std::size(kVerbs))] +
                     "_" + kNouns[r.below(std::size(kNouns))] + std::to_string(l * kPerLayer + i) +
                     kSuffixes[r.below(std::size(kSuffixes))];
            f.module = kModules[r.below(std::size(kModules))];
            f.self_ns = 50 + r.below(l == kLayers - 1 ? 400 : 2000);
            u.funcs.push_back(std::move(f));
        }
    for (int l = 0; l + 1 < kLayers; ++l)
        for (int i = 0; i < kPerLayer; ++i) {
            Func& f = u.funcs[l * kPerLayer + i];
            int n = static_cast<int>(r.below(l < 2 ? 5 : 4));  // fan-out 0..4, bounded paths
            for (int c = 0; c < n; ++c) {
                int lc = l + 1 + static_cast<int>(r.below(std::min(2, kLayers - 1 - l)));
                f.children.push_back(lc * kPerLayer + static_cast<int>(r.below(kPerLayer)));
                f.repeat.push_back(r.chance(0.2) ? 1 + static_cast<int>(r.below(4)) : 1);
            }
        }
    for (int i = 0; i < 40; ++i)
        u.roots.push_back(static_cast<int>(r.below(kPerLayer)));
    for (int i = 0; i < 6; ++i)
        u.irq_roots.push_back(2 * kPerLayer + static_cast<int>(r.below(kPerLayer)));
    // The other shapes draw from their own PRNG: the dag universe above stays the same bytes.
    Rng x{0x10e910e9ULL};
    for (Func& f : u.funcs) {
        if (shape == Shape::long_names) lengthen(f, x);
        if (shape == Shape::recursion) f.recursive = x.chance(1.0 / 6);
    }
    return u;
}

struct Frame;
struct Task {
    std::string comm;
    int pid;
    std::vector<Frame> stack;  // Shape::tasks: the call tree it was preempted in
};

struct Frame {
    int fn;
    std::size_t child = 0;   // next callee index
    int reps_left = -1;      // calls of the current callee still to make (-1: not started)
    std::uint64_t entry_ns;  // trace clock at the entry
    bool printed;            // entry line printed (false: an orphan return will follow)
    bool irq_root = false;   // close with "<==========" after the exit
    bool tail = false;       // print "} /* name */"
    int budget = 0;          // Shape::mesh: callees still to call
    int recurse = 0;         // Shape::recursion: levels of self-recursion still below this frame
};

struct Cpu {
    int id;
    int task = 0;  // index into tasks
    std::vector<Frame> stack;
    bool in_irq = false;
};

class Gen {
public:
    Gen(std::uint64_t seed, int ncpus, Shape shape, FILE* out)
        : r_{seed * 0x2545f4914f6cdd1dULL + 1}, u_(make_universe(shape)), shape_(shape), out_(out) {
        const char* comms[] = {"cuda_app",  "kworker/0:1", "nvidia-smi", "Xorg",     "python3", "bash",
                               "rcu_sched", "ksoftirqd/1", "systemd",    "nv_queue", "sshd",    "containerd"};
        int ntasks = shape == Shape::tasks ? std::max(512, 2 * ncpus) : std::max(24, 2 * ncpus);
        for (int i = 0; i < ntasks; ++i)
            tasks_.push_back({std::string(comms[i % std::size(comms)]), 1000 + i * 37, {}});
        for (int c = 0; c < ncpus; ++c) {
            Cpu cpu;
            cpu.id = c;
            cpu.task = c % static_cast<int>(tasks_.size());  // a task runs on one CPU at a time
            cpus_.push_back(cpu);
        }
        buf_.reserve(1 << 20);
        ts_ = 7238523000000000ULL + r_.below(1000000000ULL);
        for (Cpu& c : cpus_)
            start_mid_tree(c);
    }
    ~Gen() { flush(); }

    void header() {
        put("# tracer: function_graph\n#\n#     TIME        CPU  DURATION                  FUNCTION CALLS\n"
            "#      |          |     |   |                     |   |   |   |\n");
    }

    // Emits one run of lines on one CPU.
    void step() {
        Cpu& c = cpus_[r_.below(cpus_.size())];
        int n = 1 + static_cast<int>(r_.below(12));
        for (int i = 0; i < n; ++i)
            line(c);
        if (r_.chance(0.0005)) ts_ += 100'000 + r_.below(2'000'000'000ULL);  // idle: big durations, all marks
        if (r_.chance(0.000002)) {
            std::snprintf(tmp_, sizeof tmp_, "CPU:%d [LOST %" PRIu64 " EVENTS]\n", c.id, 1 + r_.below(5000));
            put(tmp_);
            start_mid_tree(c);  // what follows a loss is mid-tree again
        }
    }

    std::uint64_t bytes() const { return written_ + buf_.size(); }
    std::uint64_t calls() const { return calls_; }

private:
    void put(const char* s) { buf_.append(s); }
    void put(const char* s, std::size_t n) { buf_.append(s, n); }
    void flush() {
        std::fwrite(buf_.data(), 1, buf_.size(), out_);
        written_ += buf_.size();
        buf_.clear();
    }
    void maybe_flush() {
        if (buf_.size() > (1u << 20) - 4096) flush();
    }

    // "7238523.638063 |   0) " then the DURATION column (print_graph_duration: mark, number, " us ").
    void prefix(const Cpu& c, const std::uint64_t* dur) {
        ts_ += 50 + r_.below(400);
        int n = std::snprintf(tmp_, sizeof tmp_, "%" PRIu64 ".%06" PRIu64 " |   %d) ",
                              static_cast<std::uint64_t>(ts_ / 1000000000ULL),
                              static_cast<std::uint64_t>((ts_ / 1000) % 1000000), c.id);
        put(tmp_, static_cast<std::size_t>(n));
        if (shape_ == Shape::tasks) proc(c);
        if (!dur) {
            put("              |  ");
            return;
        }
        std::uint64_t d = *dur;
        char mark = d > 1'000'000'000ULL ? '$'
                    : d > 100'000'000ULL ? '@'
                    : d > 10'000'000ULL  ? '*'
                    : d > 1'000'000ULL   ? '#'
                    : d > 100'000ULL     ? '!'
                    : d > 10'000ULL      ? '+'
                                         : ' ';
        char us[24], num[32];
        int len = std::snprintf(us, sizeof us, "%" PRIu64, d / 1000);
        if (len < 7) {
            char ns[8];
            std::snprintf(ns, sizeof ns, "%03" PRIu64, d % 1000);
            ns[8 - len - 1 < 3 ? 8 - len - 1 : 3] = 0;
            len = std::snprintf(num, sizeof num, "%s.%s", us, ns);
        } else {
            std::snprintf(num, sizeof num, "%s", us);
        }
        n = std::snprintf(tmp_, sizeof tmp_, "%c %s us %*s|  ", mark, num, len < 8 ? 8 - len : 0, "");
        put(tmp_, static_cast<std::size_t>(n));
    }
    // funcgraph-proc's column: "comm-pid" (comm cut to 7) centred in 14 columns, then " | " (print_graph_proc).
    void proc(const Cpu& c) {
        const Task& t = tasks_[c.task];
        int n = std::snprintf(tmp_, sizeof tmp_, "%.7s-%d", t.comm.c_str(), t.pid);
        int spaces = n < 14 ? 14 - n : 0;
        char col[64];
        int m = std::snprintf(col, sizeof col, "%*s%s%*s | ", spaces / 2, "", tmp_, spaces - spaces / 2, "");
        put(col, static_cast<std::size_t>(m));
    }
    void indent(int depth) {
        for (int i = 0; i < depth; ++i)
            put("  ", 2);
    }
    void name(int fn) {
        const Func& f = u_.funcs[fn];
        put(f.name.data(), f.name.size());
        if (!f.module.empty()) {
            put(" [", 2);
            put(f.module.data(), f.module.size());
            put("]", 1);
        }
    }
    std::int64_t retval() {
        static constexpr std::int64_t kVals[] = {0, 0, 0, 0, 0, -22, -12, -14, 1, 0x1e};
        return kVals[r_.below(std::size(kVals))];
    }

    void banner(Cpu& c, int next) {
        const Task& a = tasks_[c.task];
        const Task& b = tasks_[next];
        std::snprintf(tmp_, sizeof tmp_,
                      " ------------------------------------------\n %d)  %.7s-%d  =>  %.7s-%d  \n"
                      " ------------------------------------------\n\n",
                      c.id, a.comm.c_str(), a.pid, b.comm.c_str(), b.pid);
        put(tmp_);
        if (shape_ == Shape::tasks) {  // the stack of the task switched out waits for it; the next one's resumes
            tasks_[c.task].stack = std::move(c.stack);
            c.stack = std::move(tasks_[next].stack);
            tasks_[next].stack.clear();
        }
        c.task = next;
    }
    // Shape::tasks: now and then the running task is preempted wherever it is (not inside an interrupt).
    void maybe_preempt(Cpu& c) {
        if (c.in_irq || !r_.chance(0.01)) return;
        int next = static_cast<int>(r_.below(tasks_.size()));
        for (const Cpu& o : cpus_)
            if (o.task == next) return;  // running (here or on another CPU)
        banner(c, next);
    }

    // The CPU's task is in the middle of a call tree whose entries were not recorded: walk down a path
    // without printing entries; their exits become orphan returns.
    void start_mid_tree(Cpu& c) {
        c.stack.clear();
        c.in_irq = false;
        int fn = u_.roots[r_.below(u_.roots.size())];
        int depth = 1 + static_cast<int>(r_.below(4));
        for (int d = 0; d < depth; ++d) {
            Frame f{fn, 0, -1, ts_ - r_.below(1'000'000), false};
            f.tail = true;
            const Func& F = u_.funcs[fn];
            if (F.children.empty()) break;
            f.child = r_.below(F.children.size());
            c.stack.push_back(f);
            fn = F.children[f.child];
            ++c.stack.back().child;
        }
    }

    void comment(Cpu& c) {
        prefix(c, nullptr);
        indent(static_cast<int>(c.stack.size()));
        switch (r_.below(3)) {
            case 0:
                std::snprintf(tmp_, sizeof tmp_, "/* nv_trace: submit chan=%" PRIu64 " seq=%" PRIu64 " */\n",
                              r_.below(8), r_.below(100000));
                break;
            case 1:
                std::snprintf(tmp_, sizeof tmp_, "/* irq_handler_entry: irq=%" PRIu64 " name=nvidia */\n",
                              16 + r_.below(8));
                break;
            default:
                std::snprintf(tmp_, sizeof tmp_, "/* phase %" PRIu64 " done */\n", r_.below(16));
        }
        put(tmp_);
    }

    // Calls fn at the CPU's current depth: a leaf line, or an entry line and a new frame.
    void call(Cpu& c, int fn, bool irq_root, int recurse = -1) {
        ++calls_;
        int depth = static_cast<int>(c.stack.size());
        const Func& F = u_.funcs[fn];
        int budget = 0;
        if (shape_ == Shape::mesh) {  // 0-4 callees above depth 10 (0 for 1 call in 3), none at it
            budget = depth >= 9 || r_.chance(0.34) ? 0 : 1 + static_cast<int>(r_.below(4));
            if (irq_root && budget == 0) budget = 1;
        }
        if (recurse < 0) recurse = F.recursive ? 8 + static_cast<int>(r_.below(33)) : 0;
        bool leaf = shape_ == Shape::mesh ? budget == 0 : F.children.empty() && recurse == 0;
        if (leaf && !irq_root) {
            std::uint64_t d = F.self_ns + r_.below(F.self_ns);
            prefix(c, &d);
            indent(depth);
            name(fn);
            if (r_.chance(0.05)) {
                std::snprintf(tmp_, sizeof tmp_, "(); /* = %" PRId64 " */\n", retval());
                put(tmp_);
            } else {
                put("();\n", 4);
            }
            return;
        }
        bool hidden = !irq_root && r_.chance(0.0002);  // a lost entry line: orphan return + depth gap later
        if (!hidden) {
            prefix(c, nullptr);
            indent(depth);
            name(fn);
            put("() {\n", 5);
        }
        Frame f{fn, 0, -1, ts_, !hidden};
        f.irq_root = irq_root;
        f.tail = hidden || r_.chance(0.08);
        f.budget = budget;
        f.recurse = recurse;
        c.stack.push_back(f);
    }

    void line(Cpu& c) {
        maybe_flush();
        if (shape_ == Shape::tasks) maybe_preempt(c);
        if (c.stack.empty()) {
            if (r_.chance(0.25)) {
                int next = static_cast<int>(r_.below(tasks_.size()));
                bool running = false;  // on another CPU
                for (const Cpu& o : cpus_)
                    running = running || (o.id != c.id && o.task == next);
                if (next != c.task && !running) banner(c, next);
            }
            if (r_.chance(0.01)) {
                comment(c);
                return;
            }
            call(c, u_.roots[r_.below(u_.roots.size())], false);
            return;
        }
        if (!c.in_irq && r_.chance(shape_ == Shape::mesh ? 0.01 : 0.002)) {
            prefix(c, nullptr);
            // The marker sits in the DURATION column: rewrite the last "              |  " written by prefix().
            buf_.resize(buf_.size() - 17);
            put("  ==========> |\n");
            c.in_irq = true;
            call(c, u_.irq_roots[r_.below(u_.irq_roots.size())], true);
            return;
        }
        if (r_.chance(0.002)) {
            comment(c);
            return;
        }
        Frame& f = c.stack.back();
        const Func& F = u_.funcs[f.fn];
        if (f.recurse > 0) {  // one level deeper into itself, then its own callees
            int below = f.recurse - 1;
            f.recurse = 0;
            call(c, f.fn, false, below);
            return;
        }
        if (f.budget > 0) {  // Shape::mesh
            --f.budget;
            call(c, static_cast<int>(r_.below(static_cast<std::uint64_t>(u_.mesh))), false);
            return;
        }
        while (shape_ != Shape::mesh && f.child < F.children.size()) {
            if (f.reps_left < 0) f.reps_left = r_.chance(0.85) ? 1 + static_cast<int>(r_.below(F.repeat[f.child])) : 0;
            if (f.reps_left > 0) {
                --f.reps_left;
                int callee = F.children[f.child];
                if (f.reps_left == 0) {
                    ++f.child;
                    f.reps_left = -1;
                }
                call(c, callee, false);
                return;
            }
            ++f.child;
            f.reps_left = -1;
        }
        // All callees done: the exit.
        Frame done = f;
        c.stack.pop_back();
        std::uint64_t d = ts_ - done.entry_ns + F.self_ns;
        prefix(c, &d);
        indent(static_cast<int>(c.stack.size()));
        if (done.tail) {
            put("} /* ", 5);
            put(F.name.data(), F.name.size());
            put(" */\n", 4);
        } else if (r_.chance(0.03)) {
            std::snprintf(tmp_, sizeof tmp_, "} /* %s = %" PRId64 " */\n", F.name.c_str(), retval());
            put(tmp_);
        } else {
            put("}\n", 2);
        }
        if (done.irq_root) {
            prefix(c, nullptr);
            buf_.resize(buf_.size() - 17);
            put("  <========== |\n");
            c.in_irq = false;
        }
    }

    Rng r_;
    Universe u_;
    Shape shape_;
    FILE* out_;
    std::vector<Task> tasks_;
    std::vector<Cpu> cpus_;
    std::string buf_;
    char tmp_[512];
    std::uint64_t ts_ = 0;
    std::uint64_t written_ = 0;
    std::uint64_t calls_ = 0;
};

[[noreturn]] void usage() {
    std::fprintf(stderr,
                 "usage: gen_fgraph (--size BYTES | --calls N) [--seed S] [--cpus N] "
                 "[--shape dag|mesh|recursion|tasks|long] [--out FILE]\n");
    std::exit(2);
}

std::uint64_t number(const char* s) {
    char* end = nullptr;
    std::uint64_t v = std::strtoull(s, &end, 10);
    if (end == s) usage();
    switch (*end) {
        case 'k':
        case 'K':
            return v << 10;
        case 'm':
        case 'M':
            return v << 20;
        case 'g':
        case 'G':
            return v << 30;
        case 0:
            return v;
        default:
            usage();
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t size = 0, ncalls = 0, seed = 1, cpus = 4;
    const char* out = nullptr;
    Shape shape = Shape::dag;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) usage();
        if (a == "--size")
            size = number(argv[++i]);
        else if (a == "--calls")
            ncalls = number(argv[++i]);
        else if (a == "--seed")
            seed = number(argv[++i]);
        else if (a == "--cpus")
            cpus = number(argv[++i]);
        else if (a == "--out")
            out = argv[++i];
        else if (a == "--shape") {
            std::string v = argv[++i];
            if (v == "dag")
                shape = Shape::dag;
            else if (v == "mesh")
                shape = Shape::mesh;
            else if (v == "recursion")
                shape = Shape::recursion;
            else if (v == "tasks")
                shape = Shape::tasks;
            else if (v == "long")
                shape = Shape::long_names;
            else
                usage();
        } else
            usage();
    }
    if ((size == 0) == (ncalls == 0) || cpus == 0 || cpus > 256) usage();
    FILE* f = out ? std::fopen(out, "wb") : stdout;
    if (!f) {
        std::perror(out);
        return 1;
    }
    {
        Gen g(seed, static_cast<int>(cpus), shape, f);
        g.header();
        while (size ? g.bytes() < size : g.calls() < ncalls)
            g.step();
    }
    if (out && std::fclose(f) != 0) {
        std::perror(out);
        return 1;
    }
    return 0;
}
