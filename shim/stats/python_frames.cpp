#include "shim/stats/python_frames.h"

#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "shim/base/log.h"

namespace arshim::callsites::python {

namespace {

// CPython's C API as found in the process. Objects are opaque here (no Python.h: ARShim builds and runs without
// Python); PyGILState_STATE is an int-sized enum.
struct Api {
    int (*is_initialized)() = nullptr;           // Py_IsInitialized
    int (*is_finalizing)() = nullptr;            // Py_IsFinalizing (3.13) or _Py_IsFinalizing (3.7-3.12)
    void* (*this_thread_state)() = nullptr;      // PyGILState_GetThisThreadState: NULL = never ran Python
    int (*gil_ensure)() = nullptr;               // PyGILState_Ensure
    void (*gil_release)(int) = nullptr;          // PyGILState_Release
    void* (*current_frame)() = nullptr;          // PyEval_GetFrame: borrowed
    void* (*frame_code)(void*) = nullptr;        // PyFrame_GetCode: new reference (3.9)
    void* (*frame_back)(void*) = nullptr;        // PyFrame_GetBack: new reference (3.9)
    int (*frame_lasti)(void*) = nullptr;         // PyFrame_GetLasti (3.11), optional: byte offset
    int (*frame_line)(void*) = nullptr;          // PyFrame_GetLineNumber
    int (*code_line)(void*, int) = nullptr;      // PyCode_Addr2Line
    void* (*get_attr)(void*, const char*) = nullptr;  // PyObject_GetAttrString
    const char* (*utf8)(void*) = nullptr;        // PyUnicode_AsUTF8
    void (*incref)(void*) = nullptr;             // Py_IncRef
    void (*decref)(void*) = nullptr;             // Py_DecRef
    void (*err_fetch)(void**, void**, void**) = nullptr;  // PyErr_Fetch
    void (*err_restore)(void*, void*, void*) = nullptr;   // PyErr_Restore
};
Api g_api;
bool g_ready = false;

// Without PyFrame_GetLasti (Python < 3.11) a frame's position is its line number, marked by this bit.
constexpr uintptr_t kLineTag = uintptr_t{1} << (sizeof(uintptr_t) * 8 - 1);

template <typename Fn>
bool load(Fn*& fn, const char* name) {
    fn = reinterpret_cast<Fn*>(dlsym(RTLD_DEFAULT, name));
    return fn != nullptr;
}

// Names come from the program (file names, function names of generated code): control characters would break the
// tab- and newline-separated frame encoding, and a site's text is bounded.
std::string printable(const char* text, std::size_t limit) {
    std::string out;
    if (text == nullptr) return out;
    for (const char* p = text; *p != '\0' && out.size() < limit; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
    }
    return out;
}

std::string text_attribute(void* object, const char* name) {
    void* value = g_api.get_attr(object, name);
    if (value == nullptr) return {};
    std::string out = printable(g_api.utf8(value), 512);
    g_api.decref(value);
    return out;
}

struct Resolved {
    std::string function;
    std::string file;
    int line = 0;
};

// GIL held. The program's pending exception, if any, is kept: a failed attribute lookup must not replace it.
Resolved resolve_now(uintptr_t code, uintptr_t position) {
    void *type = nullptr, *value = nullptr, *traceback = nullptr;
    g_api.err_fetch(&type, &value, &traceback);
    auto* object = reinterpret_cast<void*>(code);
    Resolved r;
    r.function = text_attribute(object, "co_qualname");  // 3.11; co_name before
    if (r.function.empty()) r.function = text_attribute(object, "co_name");
    r.file = text_attribute(object, "co_filename");
    if (position & kLineTag)
        r.line = static_cast<int>(position & ~kLineTag);
    else
        r.line = g_api.code_line(object, static_cast<int>(position));
    if (r.line < 0) r.line = 0;
    g_api.err_restore(nullptr, nullptr, nullptr);  // clears what the lookups raised
    g_api.err_restore(type, value, traceback);
    return r;
}

// Every (code, position) a thread recorded, resolved at registration; the code objects they name are kept alive.
std::mutex g_lock;
std::map<std::pair<uintptr_t, uintptr_t>, Resolved> g_registry;
std::set<uintptr_t> g_kept;
bool g_full_logged = false;

}  // namespace

std::string find_api() {
    Api a;
    const bool ok = load(a.is_initialized, "Py_IsInitialized") &&
                    (load(a.is_finalizing, "Py_IsFinalizing") || load(a.is_finalizing, "_Py_IsFinalizing")) &&
                    load(a.this_thread_state, "PyGILState_GetThisThreadState") &&
                    load(a.gil_ensure, "PyGILState_Ensure") && load(a.gil_release, "PyGILState_Release") &&
                    load(a.current_frame, "PyEval_GetFrame") && load(a.frame_code, "PyFrame_GetCode") &&
                    load(a.frame_back, "PyFrame_GetBack") && load(a.frame_line, "PyFrame_GetLineNumber") &&
                    load(a.code_line, "PyCode_Addr2Line") && load(a.get_attr, "PyObject_GetAttrString") &&
                    load(a.utf8, "PyUnicode_AsUTF8") && load(a.incref, "Py_IncRef") && load(a.decref, "Py_DecRef") &&
                    load(a.err_fetch, "PyErr_Fetch") && load(a.err_restore, "PyErr_Restore");
    if (!ok)
        return "the process has no Python interpreter with the C API ARShim needs (Python >= 3.9, symbols visible "
               "to dlsym)";
    load(a.frame_lasti, "PyFrame_GetLasti");  // 3.11+; older versions record the line number per call
    g_api = a;
    g_ready = true;
    return {};
}

Capture::Capture() {
    if (!g_ready || !g_api.is_initialized() || g_api.is_finalizing() || g_api.this_thread_state() == nullptr) return;
    state_ = g_api.gil_ensure();
    ok_ = true;
}

Capture::~Capture() {
    if (ok_) g_api.gil_release(state_);
}

uint32_t Capture::frames(uintptr_t* words, uint32_t max_frames) {
    if (!ok_) return 0;
    uint32_t n = 0;
    void* frame = g_api.current_frame();  // borrowed
    void* owned = nullptr;                // the reference PyFrame_GetBack returned
    for (uint32_t i = 0; frame != nullptr && i < max_frames && i < kMaxFrames; ++i) {
        void* code = g_api.frame_code(frame);
        if (code == nullptr) break;
        uintptr_t position = kLineTag;
        const int lasti = g_api.frame_lasti ? g_api.frame_lasti(frame) : -1;
        if (lasti >= 0)
            position = static_cast<uintptr_t>(lasti);
        else
            position |= static_cast<uintptr_t>(std::max(0, g_api.frame_line(frame)));
        words[n++] = reinterpret_cast<uintptr_t>(code);
        words[n++] = position;
        g_api.decref(code);  // the frame holds it; the registry takes its own reference
        if (i + 1 == max_frames) break;
        void* back = g_api.frame_back(frame);
        if (owned != nullptr) g_api.decref(owned);
        owned = frame = back;
    }
    if (owned != nullptr) g_api.decref(owned);
    return n;
}

void Capture::register_frames(const uintptr_t* words, uint32_t count) {
    if (!ok_) return;
    std::vector<std::pair<uintptr_t, uintptr_t>> fresh;
    {
        std::lock_guard<std::mutex> lock(g_lock);
        for (uint32_t i = 0; i + 1 < count; i += kWordsPerFrame)
            if (g_registry.count({words[i], words[i + 1]}) == 0) fresh.emplace_back(words[i], words[i + 1]);
    }
    // Resolved outside the lock: the lookups run interpreter code (never the program's: code objects' own
    // attributes), and the GIL orders them anyway.
    std::vector<Resolved> resolved;
    for (const auto& [code, position] : fresh) resolved.push_back(resolve_now(code, position));
    std::lock_guard<std::mutex> lock(g_lock);
    for (std::size_t i = 0; i < fresh.size(); ++i) {
        if (g_registry.size() >= kMaxRegistered) {
            if (!g_full_logged)
                log::warn("more than {} distinct Python call-site frames: the others are listed as \"?\"",
                          kMaxRegistered);
            g_full_logged = true;
            break;
        }
        if (g_registry.emplace(fresh[i], std::move(resolved[i])).second && g_kept.insert(fresh[i].first).second)
            g_api.incref(reinterpret_cast<void*>(fresh[i].first));  // never released: its address stays unique
    }
}

std::string Capture::describe_innermost() {
    uintptr_t words[kWordsPerFrame];
    if (frames(words, 1) == 0) return {};
    const Resolved r = resolve_now(words[0], words[1]);
    Frame frame;
    frame.function = r.function;
    frame.file = r.file;
    frame.line = r.line;
    frame.module = "python";
    return describe(frame);
}

Frame resolve(uintptr_t code, uintptr_t position) {
    Frame frame;
    frame.module = "python";
    frame.binding = "python";
    std::lock_guard<std::mutex> lock(g_lock);
    auto it = g_registry.find({code, position});
    if (it == g_registry.end()) {
        frame.function = "?";
        return frame;
    }
    frame.function = it->second.function;
    frame.file = it->second.file;
    frame.line = it->second.line;
    return frame;
}

}  // namespace arshim::callsites::python
