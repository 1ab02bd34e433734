#include "scenario.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "nvtrace/expect.hpp"
#include "nvtrace/fleet.hpp"
#include "nvtrace/visible_text.hpp"
#include "procfs.hpp"

namespace nvtrace::tracer {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    std::string w;
    while (in >> w)
        out.push_back(w);
    return out;
}

std::string rest_after_key(const std::string& line, const std::string& key) {
    auto p = line.find(key);
    std::string r = line.substr(p + key.size());
    auto b = r.find_first_not_of(" \t");
    auto e = r.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : r.substr(b, e - b + 1);
}

std::optional<fs::path> self_exe_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    return exe.parent_path();
}

bool executable(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string sanitized_file_name(const std::string& raw, const std::string& fallback) {
    std::string n;
    for (char c : raw.substr(0, 64))
        n += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' || c == '-') ? c : '_';
    if (n.empty() || n == "." || n == "..") n = fallback;
    return n;
}

bool is_scenario_dir(const fs::path& dir) {
    std::error_code ec;
    return fs::is_directory(dir, ec) && fs::is_regular_file(dir / kScenarioFile, ec);
}

Result<Scenario> read_scenario(const fs::path& dir) {
    const fs::path file = dir / kScenarioFile;
    std::ifstream in(file);
    if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", file.string(), std::strerror(errno))));
    Scenario s;
    s.dir = dir;
    s.name = fs::absolute(dir).lexically_normal().filename().string();
    if (s.name.empty()) s.name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
    std::string raw;
    int line_no = 0;
    auto err = [&](const std::string& what) {
        return fail(Error::usage(fmt::format("{}:{}: {}", file.string(), line_no, what)));
    };
    while (std::getline(in, raw)) {
        ++line_no;
        std::string line = raw.substr(0, raw.find('#'));
        auto w = words(line);
        if (w.empty()) continue;
        const std::string& key = w[0];
        std::string value = rest_after_key(line, key);
        auto one = [&](std::string& out) -> Result<void> {
            if (w.size() != 2) return err(fmt::format("expected one value after '{}'", key));
            out = w[1];
            return {};
        };
        Result<void> ok;
        if (key == "name")
            ok = one(s.name);
        else if (key == "summary")
            s.summary = value;
        else if (key == "program")
            ok = one(s.program);
        else if (key == "expect")
            ok = one(s.expect);
        else if (key == "args")
            s.args.insert(s.args.end(), w.begin() + 1, w.end());
        else if (key == "module")
            s.modules.insert(s.modules.end(), w.begin() + 1, w.end());
        else if (key == "filter")
            s.filters.insert(s.filters.end(), w.begin() + 1, w.end());
        else if (key == "notrace")
            s.notrace.insert(s.notrace.end(), w.begin() + 1, w.end());
        else if (key == "graph-function")
            s.graph_functions.insert(s.graph_functions.end(), w.begin() + 1, w.end());
        else if (key == "event")
            s.events.insert(s.events.end(), w.begin() + 1, w.end());
        else if (key == "as-root") {
            if (w.size() != 1) return err("'as-root' takes no value");
            s.as_root = true;
        } else if (key == "requires") {
            if (value.empty()) return err("expected a requirement after 'requires'");
            // `requires module` or `requires device` without its name was kept as free text, never checked.
            // Other free text (`requires an NVIDIA GPU ...`) is documentation for people.
            if (w.size() == 2 && (w[1] == "module" || w[1] == "device"))
                return err(
                    fmt::format("expected a {} after 'requires {}'", w[1] == "module" ? "module name" : "path", w[1]));
            s.requires_.push_back(value);
        } else if (key == "max-depth" || key == "timeout") {
            if (w.size() != 2) return err(fmt::format("expected one number after '{}'", key));
            char* end = nullptr;
            double v = std::strtod(w[1].c_str(), &end);
            if (end == w[1].c_str() || *end != '\0' || v <= 0)
                return err(fmt::format("expected a positive number after '{}', found '{}'", key, w[1]));
            if (key == "timeout")
                s.timeout_s = v;
            else
                s.max_depth = static_cast<int>(v);
        } else {
            return err(
                fmt::format("unknown key '{}' (name, summary, program, args, expect, module, filter, notrace, "
                            "graph-function, event, max-depth, timeout, as-root, requires)",
                            key));
        }
        if (!ok) return fail(ok.error());
    }
    if (s.program.empty()) return fail(Error::usage(fmt::format("{}: no 'program' line", file.string())));
    return s;
}

Result<fs::path> find_scenario_program(const Scenario& s, const std::optional<std::string>& bin_dir) {
    std::vector<fs::path> tried;
    std::optional<std::string> dir = bin_dir;
    if (!dir)
        if (const char* e = std::getenv("NVTRACE_SCENARIO_BIN_DIR"); e && *e) dir = e;
    if (dir) {
        tried.push_back(fs::path(*dir) / s.program);
    } else if (auto exe = self_exe_dir()) {
        tried.push_back(*exe / s.program);
        tried.push_back(*exe / ".." / "scenarios" / s.name / s.program);
        tried.push_back(*exe / ".." / "libexec" / "nvtrace" / s.program);
    }
    for (const auto& p : tried)
        if (executable(p)) return p.lexically_normal();
    std::vector<std::string> names;
    for (const auto& p : tried)
        names.push_back(p.lexically_normal().string());
    return fail(Error::environment(fmt::format(
        "scenario program {} is not built here (looked at {}); build it (cmake --build BUILD --target {}) or give "
        "--bin-dir",
        s.program, fmt::join(names, ", "), s.program)));
}

fs::path sysfs_root() {
    const char* e = std::getenv("NVTRACE_TEST_SYSFS_ROOT");
    return e && *e ? fs::path(e) : fs::path("/sys");
}

fs::path procfs_root() {
    const char* e = std::getenv("NVTRACE_TEST_PROCFS_ROOT");
    return e && *e ? fs::path(e) : fs::path("/proc");
}

ModuleState module_state(const std::string& module) {
    std::string name = module;
    for (char& c : name)
        if (c == '-') c = '_';
    std::error_code ec;
    const fs::path dir = sysfs_root() / "module" / name;
    std::ifstream f(dir / "initstate");
    std::string state;
    if (f >> state) return state == "live" ? ModuleState::live : ModuleState::absent;  // "coming", "going"
    if (fs::is_directory(dir, ec)) return ModuleState::builtin;
    // nv.c makes /proc/driver/nvidia at init, built in or loaded; nvidia_uvm has no such directory.
    if (name == "nvidia" && fs::is_directory(procfs_root() / "driver" / "nvidia", ec)) return ModuleState::builtin;
    return ModuleState::absent;
}

GraphPlan plan_graph(const std::vector<std::string>& modules, bool other_graph_options) {
    GraphPlan plan;
    std::vector<std::string> builtin;
    for (const auto& m : modules) {
        if (module_state(m) == ModuleState::builtin) {
            builtin.push_back(m);
            plan.notes.push_back(fmt::format(
                "{} is built into the kernel: :mod:{} matches no function (built-in functions carry no module)", m, m));
        } else {
            plan.modules.push_back(m);
        }
    }
    if (modules.empty() && !other_graph_options) return plan;  // no graph was asked for
    std::optional<fs::path> dir;
    std::error_code ec;
    if (const char* e = std::getenv("NVTRACE_TEST_SYSFS_ROOT"); e && *e)
        dir = sysfs_root() / "kernel" / "tracing";
    else
        for (const char* d : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
            if (fs::exists(fs::path(d) / "available_tracers", ec)) {
                dir = d;
                break;
            }
    if (dir) {
        std::ifstream in(*dir / "available_tracers");
        std::string tracers, w;
        bool listed = false;
        while (in >> w) {
            tracers += (tracers.empty() ? "" : " ") + w;
            listed = listed || w == "function_graph";
        }
        if (in.eof() && !listed) {
            plan.no_graph_reason =
                fmt::format("function_graph not available: this kernel does not offer it (available_tracers: {})",
                            tracers.empty() ? "empty" : tracers);
            plan.modules.clear();
            return plan;
        }
    }
    if (plan.modules.empty() && !other_graph_options)
        plan.no_graph_reason = fmt::format(
            "function_graph not available: {} {} built into the kernel, and :mod: matches only the functions of "
            "loadable modules (trace them with --filter GLOB)",
            fmt::join(builtin, " and "), builtin.size() == 1 ? "is" : "are");
    return plan;
}

std::map<std::string, std::string> not_traceable(const ExpectFile& ex) {
    std::map<std::string, std::string> out;
    std::set<std::string> wanted;
    for (const auto& c : ex.checks)
        for (const auto& f : c.facts)
            for (const auto& st : f.chain)
                wanted.insert(st.function);
    std::ifstream aff;
    for (const char* d : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
        aff.open(fs::path(d) / "available_filter_functions");
        if (aff) break;
        aff.clear();
    }
    if (!aff || wanted.empty()) return out;
    // "name [module]" or "name" per line; a function may be listed once per copy (static functions).
    std::set<std::string> traceable, known;
    std::string line;
    while (std::getline(aff, line))
        if (auto n = line.substr(0, line.find_first_of(" \t")); wanted.count(n)) traceable.insert(n);
    std::ifstream ks("/proc/kallsyms");  // "ADDR TYPE NAME [MODULE]"
    std::string addr, type, name;
    while (ks >> addr >> type >> name) {
        if (wanted.count(name)) known.insert(name);
        std::getline(ks, line);
    }
    for (const auto& fn : wanted) {
        if (traceable.count(fn)) continue;
        out[fn] = known.count(fn) ? "not in available_filter_functions (in /proc/kallsyms: notrace, or a function "
                                    "ftrace cannot patch)"
                                  : "not in available_filter_functions nor /proc/kallsyms: inlined in this driver "
                                    "version, not built, or its module is not loaded";
    }
    return out;
}

std::optional<std::string> unmet_requirement(const Scenario& s) {
    for (const auto& r : s.requires_) {
        auto w = words(r);
        if (w.size() == 1 && w[0] == "root") {
            if (::geteuid() != 0) return "tracing needs root (run nvtrace with sudo)";
        } else if (w.size() == 2 && w[0] == "module") {
            if (module_state(w[1]) == ModuleState::absent)
                return fmt::format("module {} is not loaded nor built in (no {}; load it: modprobe {})", w[1],
                                   (sysfs_root() / "module" / w[1]).string(), w[1]);
        } else if (w.size() == 2 && w[0] == "device") {
            std::error_code ec;
            if (!fs::exists(w[1], ec)) return fmt::format("{} does not exist", w[1]);
        }
    }
    return std::nullopt;
}

Result<ResolvedRun> resolve_run(RunRequest a) {
    ResolvedRun out;
    CaptureMeta& m = a.capture.meta;
    // A module name as the kernel has them (MODULE_NAME_LEN 56 with its NUL; lsmod's names, '-' read as '_'): it
    // goes into ":mod:M" and /sys/module/M, so a '/' or '..' must never reach a path.
    auto bad_module = [](const std::vector<std::string>& modules) -> std::optional<Error> {
        for (const auto& mod : modules) {
            bool ok = !mod.empty() && mod.size() <= 55;
            for (char c : mod)
                ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
            if (!ok)
                return Error::usage(
                    fmt::format("--module '{}': not a module name (letters, digits, '_' and '-', at "
                                "most 55 bytes, as lsmod lists them)",
                                visible(mod)));
        }
        return std::nullopt;
    };
    if (auto e = bad_module(m.modules)) return fail(*e);
    if (std::error_code ec; !m.command.empty() && fs::is_directory(m.command[0], ec) && !is_scenario_dir(m.command[0]))
        return fail(Error::usage(
            fmt::format("{} is a directory but not a scenario (no scenario.conf in it; `nvtrace scenarios` lists them)",
                        m.command[0])));
    if (!m.command.empty() && is_scenario_dir(m.command[0])) {
        auto sc = read_scenario(m.command[0]);
        if (!sc) return fail(sc.error());
        out.scenario = *sc;
        // Command-line tracing options replace the scenario's (modules, filters) or add to them (events).
        if (m.modules.empty()) m.modules = sc->modules;
        if (auto e = bad_module(m.modules)) return fail(*e);
        if (m.filters.empty()) m.filters = sc->filters;
        if (m.notrace.empty()) m.notrace = sc->notrace;
        if (m.graph_functions.empty()) m.graph_functions = sc->graph_functions;
        m.events.insert(m.events.begin(), sc->events.begin(), sc->events.end());
        if (!m.max_depth) m.max_depth = sc->max_depth;
        if (!a.capture.timeout_s) a.capture.timeout_s = sc->timeout_s;
        a.capture.as_root = a.capture.as_root || sc->as_root;
        if (a.expect.empty()) a.expect = (sc->dir / sc->expect).string();
        // Requirements nvtrace can check itself come first: a clean "cannot run here" beats a capture error.
        Scenario req = *sc;
        if (m.modules != sc->modules && !a.no_graph) {  // --module replaces the scenario's module requirements
            std::erase_if(req.requires_, [](const std::string& r) { return r.rfind("module ", 0) == 0; });
            for (const auto& mod : m.modules)
                req.requires_.push_back("module " + mod);
        }
        if (!a.device.empty())
            std::erase_if(req.requires_, [](const std::string& r) { return r.rfind("device ", 0) == 0; });
        if ((out.cannot_run = unmet_requirement(req))) return out;
        auto prog = find_scenario_program(*sc, a.bin_dir.empty() ? std::nullopt : std::optional(a.bin_dir));
        if (!prog) return fail(prog.error());
        std::vector<std::string> argv{prog->string()};
        argv.insert(argv.end(), sc->args.begin(), sc->args.end());
        if (!a.device.empty()) argv.insert(argv.end(), {"--device", a.device});
        argv.insert(argv.end(), m.command.begin() + 1, m.command.end());
        m.command = argv;
        out.default_name = sc->name;
    } else if (!a.device.empty()) {
        return fail(Error::usage("--device is for scenario directories"));
    }
    if (out.default_name.empty() && !m.command.empty()) out.default_name = fs::path(m.command[0]).filename().string();
    // A scenario whose call graph this kernel cannot record (no function_graph, a built-in driver) runs without it;
    // the report says why (environment.function_graph) and the call-graph checks are inconclusive with that reason.
    if (out.scenario && !a.no_graph) {
        auto plan = plan_graph(m.modules, !m.filters.empty() || !m.graph_functions.empty());
        out.notes = plan.notes;
        m.modules = plan.modules;
        out.no_graph_reason = plan.no_graph_reason;
        if (plan.no_graph_reason) out.notes.push_back(*plan.no_graph_reason + "; running without the call graph");
    }
    if (a.no_graph || out.no_graph_reason) {
        m.modules.clear();
        m.filters.clear();
        m.notrace.clear();
        m.graph_functions.clear();
        m.max_depth.reset();
    }
    if (!a.expect.empty() && is_scenario_dir(a.expect)) {  // like `nvtrace check --expect`
        auto sc = read_scenario(a.expect);
        if (!sc) return fail(sc.error());
        a.expect = (sc->dir / sc->expect).string();
    } else if (!a.expect.empty() && fs::is_directory(a.expect)) {
        return fail(Error::usage(fmt::format(
            "--expect {}: a directory but not a scenario (no scenario.conf): give the .expect file", a.expect)));
    }
    if (!a.expect.empty()) {
        // Read once: the bytes checked are the bytes the capture directory keeps (expect/NAME, meta.json
        // "expectations_copy"), so that `nvtrace report DIR` checks the same file wherever it is started.
        std::error_code ec;
        if (fs::is_directory(a.expect, ec))
            return fail(Error::usage(fmt::format("{}: is a directory, not an expectations file", a.expect)));
        std::ifstream in(a.expect, std::ios::binary);
        if (!in) return fail(Error::usage(fmt::format("{}: cannot open: {}", a.expect, std::strerror(errno))));
        std::ostringstream bytes;
        bytes << in.rdbuf();
        if (in.bad()) return fail(Error::usage(fmt::format("{}: cannot read: {}", a.expect, std::strerror(errno))));
        auto ex = parse_expectations(bytes.str(), a.expect);
        if (!ex) return fail(ex.error());
        if (ex->checks.empty())
            return fail(
                Error::usage(fmt::format("--expect {}: holds no checks, so nothing would be checked", a.expect)));
        out.expectations = std::move(*ex);
        a.capture.expectations_text = bytes.str();
    }
    // Option errors before anything is announced or made. Whether the event exists is known once tracefs is read.
    for (const auto& e : m.events)
        if (auto colon = e.find(':'); colon == std::string::npos || colon == 0 || colon + 1 == e.size())
            return fail(Error::usage(fmt::format("--event '{}': expected SYSTEM:EVENT", e)));
    // The report's source names the scenario and the expectations file (capture() adds its own keys).
    if (out.scenario) m.report_source.scenario = out.scenario->name;
    if (out.expectations) {
        m.report_source.expectations = a.expect;
        m.expectations_copy =
            "expect/" + sanitized_file_name(fs::path(a.expect).filename().string(), "expectations.expect");
    }
    // Where relative paths of the run (its --expect, its command) were resolved.
    if (std::error_code ec; true)
        if (fs::path cwd = fs::current_path(ec); !ec) m.working_dir = cwd.string();
    if (out.no_graph_reason) m.environment.function_graph = *out.no_graph_reason;
    if (out.expectations && wants_function_graph(m))
        if (auto nt = not_traceable(*out.expectations); !nt.empty()) m.environment.not_traceable = nt;
    // The node that ran it and its Slurm job step: `nvtrace fleet` names nodes by them (docs/fleet.md).
    if (char host[256] = {}; ::gethostname(host, sizeof host - 1) == 0 && host[0]) m.environment.host = host;
    if (auto slurm = slurm_environment([](const char* n) { return std::getenv(n); }); !slurm.empty())
        m.environment.slurm = std::move(slurm);
    out.run = std::move(a);
    return out;
}

std::vector<fs::path> scenario_roots(const std::optional<std::string>& dir) {
    std::vector<fs::path> c;
    if (dir) {
        c.emplace_back(*dir);
    } else {
        if (const char* e = std::getenv("NVTRACE_SCENARIOS_DIR"); e && *e) c.emplace_back(e);
        c.emplace_back("scenarios");
#ifdef NVTRACE_SOURCE_SCENARIOS
        c.emplace_back(NVTRACE_SOURCE_SCENARIOS);
#endif
        if (auto exe = self_exe_dir()) c.push_back(*exe / ".." / "share" / "nvtrace" / "scenarios");
    }
    std::vector<fs::path> out;
    for (auto& p : c) {
        std::error_code ec;
        if (!fs::is_directory(p, ec)) continue;
        fs::path canon = fs::weakly_canonical(p, ec);
        bool dup = false;
        for (const auto& o : out)
            dup = dup || fs::weakly_canonical(o, ec) == canon;
        if (!dup) out.push_back(p);
    }
    return out;
}

void print_checks(const std::vector<Check>& checks, bool verbose) {
    auto s = summarize(checks);
    fmt::print("checks: {} pass, {} fail, {} inconclusive\n", s.pass, s.fail, s.inconclusive);
    for (const auto& c : checks) {
        const char* label = c.result == "pass" ? "pass" : c.result == "fail" ? "FAIL" : "inconclusive";
        fmt::print("  {:<12}  {}\n", label, c.id);
        if (c.result != "pass" || verbose) {
            if (!c.evidence.empty()) fmt::print("      seen: {}\n", c.evidence);
            if (!c.why.empty()) fmt::print("      why:  {}\n", c.why);
        }
    }
}

nlohmann::json checks_json(const std::vector<Check>& checks) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& c : checks)
        a.push_back({{"id", c.id}, {"result", c.result}, {"evidence", c.evidence}, {"why", c.why}});
    return a;
}

}  // namespace nvtrace::tracer
