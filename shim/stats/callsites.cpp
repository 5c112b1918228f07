#include "shim/stats/callsites.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "shim/stats/python_frames.h"

#if __has_include(<elfutils/libdwfl.h>)
#include <elfutils/libdwfl.h>
#define ARSHIM_HAVE_LIBDWFL_H 1
#endif


namespace arshim::callsites {

namespace {

// ARShim's own code: the frames of the entry point and the engine sit between unw_backtrace and the caller.
constexpr int kMaxSelfRanges = 4;
Range g_self[kMaxSelfRanges];
int g_self_count = 0;

bool in_any(const Range* ranges, int count, uintptr_t pc) {
    for (int i = 0; i < count; ++i)
        if (in(ranges[i], pc)) return true;
    return false;
}

const char* base_name(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// MPI libraries and their language bindings: Open MPI's libmpi, libmpi_mpifh, libmpi_usempi*, MPICH's libmpich,
// libmpichfort, libmpifort, the C++ bindings. A caller inside them is not the user's code.
bool is_mpi_library(const char* name) { return std::strncmp(base_name(name), "libmpi", 6) == 0; }

bool is_mpi4py(const char* name) {
    return std::strstr(name, "/mpi4py/") != nullptr && std::strncmp(base_name(name), "MPI.", 4) == 0;
}

int classify_module(struct dl_phdr_info* info, size_t, void*) {
    const char* name = info->dlpi_name ? info->dlpi_name : "";
    const auto self_probe = reinterpret_cast<uintptr_t>(&warm_up);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
        Range r{info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
        if (in(r, self_probe)) {
            if (g_self_count < kMaxSelfRanges) g_self[g_self_count++] = r;
        } else if (is_mpi4py(name)) {
            g_python_binding = r;
            if (g_binding_count < kMaxBindingRanges) g_binding[g_binding_count++] = r;
        } else if (is_mpi_library(name)) {
            if (g_binding_count < kMaxBindingRanges) g_binding[g_binding_count++] = r;
        }
    }
    return 0;
}

// --- symbolization (finalize only) ---

std::string demangle(const char* name) {
    if (name == nullptr || *name == '\0') return {};
    int status = 0;
    char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status != 0 || text == nullptr) return name;
    std::string out(text);
    std::free(text);
    return out;
}

// libdw's DWARF line tables, loaded with dlopen so that the preloaded library needs nothing beyond libunwind at
// load time; without libdw (or its header at build time) frames get dladdr's dynamic symbols and module+offset.
class Symbolizer {
public:
    Symbolizer() {
#ifdef ARSHIM_HAVE_LIBDWFL_H
        handle_ = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr) return;
        bool ok = load(begin_, "dwfl_begin") && load(end_, "dwfl_end") && load(report_, "dwfl_linux_proc_report") &&
                  load(report_end_, "dwfl_report_end") && load(addrmodule_, "dwfl_addrmodule") &&
                  load(addrinfo_, "dwfl_module_addrinfo") && load(getsrc_, "dwfl_module_getsrc") &&
                  load(lineinfo_, "dwfl_lineinfo") && load(find_elf_, "dwfl_linux_proc_find_elf") &&
                  load(find_debuginfo_, "dwfl_standard_find_debuginfo");
        if (!ok) return;
        callbacks_.find_elf = find_elf_;
        callbacks_.find_debuginfo = find_debuginfo_;
        callbacks_.section_address = nullptr;
        callbacks_.debuginfo_path = &debuginfo_path_;
        dwfl_ = begin_(&callbacks_);
        if (dwfl_ == nullptr) return;
        if (report_(dwfl_, getpid()) != 0 || report_end_(dwfl_, nullptr, nullptr) != 0) {
            end_(dwfl_);
            dwfl_ = nullptr;
        }
#endif
    }
    ~Symbolizer() {
#ifdef ARSHIM_HAVE_LIBDWFL_H
        if (dwfl_ != nullptr) end_(dwfl_);
#endif
        // libdw stays loaded: unloading a library during MPI_Finalize buys nothing.
    }
    Symbolizer(const Symbolizer&) = delete;
    Symbolizer& operator=(const Symbolizer&) = delete;

    // `return_address` is what the stack holds; the call instruction is just before it.
    Frame resolve(uintptr_t return_address) {
        const uintptr_t pc = return_address - 1;
        Frame frame;
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(pc), &info) != 0) {
            frame.module = info.dli_fname ? base_name(info.dli_fname) : "";
            frame.offset = pc - reinterpret_cast<uintptr_t>(info.dli_fbase);
            if (info.dli_sname) {
                frame.function = demangle(info.dli_sname);
                frame.function_offset = pc - reinterpret_cast<uintptr_t>(info.dli_saddr);
            }
            if (info.dli_fname && is_mpi4py(info.dli_fname)) frame.binding = "mpi4py";
        }
        if (frame.module.empty()) frame.module = "?";
#ifdef ARSHIM_HAVE_LIBDWFL_H
        if (dwfl_ != nullptr) {
            if (Dwfl_Module* mod = addrmodule_(dwfl_, pc)) {
                GElf_Off offset = 0;
                GElf_Sym sym{};
                if (const char* name = addrinfo_(mod, pc, &offset, &sym, nullptr, nullptr, nullptr)) {
                    frame.function = demangle(name);
                    frame.function_offset = offset;
                }
                if (Dwfl_Line* line = getsrc_(mod, pc)) {
                    int lineno = 0;
                    if (const char* file = lineinfo_(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
                        frame.file = file;
                        frame.line = lineno;
                    }
                }
            }
        }
#endif
        return frame;
    }

private:
#ifdef ARSHIM_HAVE_LIBDWFL_H
    template <typename Fn>
    bool load(Fn*& fn, const char* name) {
        fn = reinterpret_cast<Fn*>(dlsym(handle_, name));
        return fn != nullptr;
    }
    void* handle_ = nullptr;
    Dwfl* dwfl_ = nullptr;
    Dwfl_Callbacks callbacks_{};
    char* debuginfo_path_ = nullptr;
    decltype(dwfl_begin)* begin_ = nullptr;
    decltype(dwfl_end)* end_ = nullptr;
    decltype(dwfl_linux_proc_report)* report_ = nullptr;
    decltype(dwfl_report_end)* report_end_ = nullptr;
    decltype(dwfl_addrmodule)* addrmodule_ = nullptr;
    decltype(dwfl_module_addrinfo)* addrinfo_ = nullptr;
    decltype(dwfl_module_getsrc)* getsrc_ = nullptr;
    decltype(dwfl_lineinfo)* lineinfo_ = nullptr;
    decltype(dwfl_linux_proc_find_elf)* find_elf_ = nullptr;
    decltype(dwfl_standard_find_debuginfo)* find_debuginfo_ = nullptr;
#endif
};

std::string merge_key(std::vector<Frame> frames) {
    for (Frame& f : frames)
        if (f.line > 0) f.offset = f.function_offset = 0;  // same source line = same site, whatever the instruction
    return encode(frames);
}

}  // namespace

std::string warm_up(int64_t depth, bool python_frames) {
    dl_iterate_phdr(classify_module, nullptr);
    g_depth = static_cast<uint32_t>(std::clamp<int64_t>(depth, 1, static_cast<int64_t>(stats::kMaxDepth)));
    if (!python_frames || g_python_binding.hi == 0) return {};  // not wanted, or no mpi4py in this process
    std::string why = python::find_api();
    g_python_frames = why.empty();
    return why;
}

void record_python(stats::ThreadCounters& t, uintptr_t pc, const stats::Sample& sample) {
    if (g_python_frames) {
        python::Capture capture;  // holds the GIL until the site is recorded (and registered if new)
        uintptr_t words[stats::kMaxDepth];
        if (const uint32_t n = capture.frames(words, g_depth)) {
            add_site(t, words, n, true, sample, [&] { capture.register_frames(words, n); });
            return;
        }
    }
    add_site(t, &pc, 1, sample);  // mpi4py's module frame
}

void record_walk(stats::ThreadCounters& t, uintptr_t caller, const stats::Sample& sample) {
    constexpr int kMaxWalk = 24 + static_cast<int>(stats::kMaxDepth);
    void* stack[kMaxWalk];
    const int limit = std::min(kMaxWalk, 8 + static_cast<int>(g_depth) + 8);
    const int n = unw_backtrace(stack, limit);
    int i = 0;
    while (i < n && in_any(g_self, g_self_count, reinterpret_cast<uintptr_t>(stack[i]))) ++i;
    // Binding frames (MPICH's Fortran library, an MPI library calling its own MPI_Allreduce) up to the user's.
    while (i < n && is_binding(reinterpret_cast<uintptr_t>(stack[i])) &&
           !in(g_python_binding, reinterpret_cast<uintptr_t>(stack[i])))
        ++i;
    if (i < n && in(g_python_binding, reinterpret_cast<uintptr_t>(stack[i]))) {
        record_python(t, reinterpret_cast<uintptr_t>(stack[i]), sample);  // above it: the interpreter
        return;
    }
    uintptr_t frames[stats::kMaxDepth];
    uint32_t depth = 0;
    for (; i < n && depth < g_depth; ++i) frames[depth++] = reinterpret_cast<uintptr_t>(stack[i]);
    if (depth == 0) frames[depth++] = caller;  // the stack could not be walked: the immediate caller
    add_site(t, frames, depth, sample);
}

std::vector<LocalSite> collect(stats::Cell* overflow) {
    // Same addresses first (threads share code), then symbolize each distinct site once. Python sites (code,
    // position pairs) come from the registry filled when they were first recorded.
    std::map<std::pair<bool, std::vector<uintptr_t>>, stats::Cell> by_address;
    stats::for_each_thread([&](const stats::ThreadCounters& t) {
        overflow->merge(t.sites_overflow);
        t.sites.for_each([&](const stats::SiteKey& site, const stats::Cell& cell) {
            if (cell.calls == 0) return;
            by_address[{site.python, std::vector<uintptr_t>(site.frames, site.frames + site.depth)}].merge(cell);
        });
    });
    std::vector<LocalSite> sites;
    if (by_address.empty()) return sites;
    Symbolizer symbolizer;
    std::map<std::string, std::size_t> by_key;
    for (const auto& [site, cell] : by_address) {
        const auto& [is_python, addresses] = site;
        std::vector<Frame> frames;
        if (is_python) {
            for (std::size_t i = 0; i + 1 < addresses.size(); i += python::kWordsPerFrame)
                frames.push_back(python::resolve(addresses[i], addresses[i + 1]));
        } else {
            for (uintptr_t address : addresses) frames.push_back(symbolizer.resolve(address));
        }
        std::string key = merge_key(frames);
        auto [it, fresh] = by_key.emplace(key, sites.size());
        if (fresh) sites.push_back({addresses, std::move(frames), std::move(key), {}});
        sites[it->second].cell.merge(cell);
    }
    return sites;
}

std::string describe_address(const void* return_address) {
    if (return_address == nullptr) return "an unknown call site";
    if (g_python_frames && in(g_python_binding, reinterpret_cast<uintptr_t>(return_address))) {
        python::Capture capture;
        std::string text = capture.describe_innermost();
        if (!text.empty()) return text;
    }
    Symbolizer symbolizer;
    return describe(symbolizer.resolve(reinterpret_cast<uintptr_t>(return_address)));
}

// describe(): shim/stats/summary.cpp, MPI-free, beside the summary's formatter that names sites with it.

std::string encode(const std::vector<Frame>& frames) {
    std::string out;
    for (const Frame& f : frames) {
        if (!out.empty()) out += '\n';
        char offsets[48];
        std::snprintf(offsets, sizeof offsets, "%llx\t%llx", static_cast<unsigned long long>(f.offset),
                      static_cast<unsigned long long>(f.function_offset));
        out += f.function + '\t' + f.file + '\t' + std::to_string(f.line) + '\t' + f.module + '\t' + offsets + '\t' +
               f.binding;
    }
    // Tabs and newlines are the separators: a name containing them (never seen in practice) is cut there.
    return out;
}

std::vector<Frame> decode(const std::string& text) {
    std::vector<Frame> frames;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        std::vector<std::string> fields;
        std::size_t a = 0;
        while (true) {
            std::size_t b = line.find('\t', a);
            fields.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
            if (b == std::string::npos) break;
            a = b + 1;
        }
        fields.resize(7);
        Frame f;
        f.function = fields[0];
        f.file = fields[1];
        f.line = std::atoi(fields[2].c_str());
        f.module = fields[3];
        f.offset = std::strtoull(fields[4].c_str(), nullptr, 16);
        f.function_offset = std::strtoull(fields[5].c_str(), nullptr, 16);
        f.binding = fields[6];
        frames.push_back(std::move(f));
        start = end + 1;
    }
    return frames;
}

}  // namespace arshim::callsites
