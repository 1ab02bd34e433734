// libFuzzer target: ring-buffer pages of a capture directory (PageDecoder, include/nvtrace/capture_dir.hpp)
// decoded with the event formats of the committed capture tests/data/capture_dir/fionread20. The input is
// cut into 4096-byte pages (the last one zero-padded); every page is decoded, errors are expected.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <event-parse.h>

#include "nvtrace/capture_dir.hpp"

namespace {

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

tep_handle* load_tep() {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(__FILE__).parent_path().parent_path() / "tests/data/capture_dir/fionread20";
    tep_handle* tep = tep_alloc();
    std::string hp = slurp(dir / "events/header_page");
    tep_parse_header_page(tep, hp.data(), hp.size(), 8);
    for (const char* ev : {"syscalls/sys_enter_ioctl", "syscalls/sys_exit_ioctl", "ftrace/print"}) {
        std::string f = slurp(dir / "events" / ev / "format");
        std::string sys(ev, std::strchr(ev, '/'));
        tep_parse_event(tep, f.data(), f.size(), sys.c_str());
    }
    return tep;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static tep_handle* tep = load_tep();
    constexpr std::size_t kPage = 4096;
    nvtrace::PageDecoder pages(tep, {"ftrace:*"});
    std::vector<unsigned char> page(kPage + nvtrace::PageDecoder::kPageSlack);
    std::vector<nvtrace::Event> out;
    for (std::size_t off = 0; off < size; off += kPage) {
        std::fill(page.begin(), page.end(), 0);
        std::memcpy(page.data(), data + off, std::min(kPage, size - off));
        (void)pages.decode(page.data(), kPage, 0, out);
    }
    return 0;
}
