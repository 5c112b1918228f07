#include "shim/sharp/lib.h"

#include <dlfcn.h>

#include <mutex>

#include "policy/text.h"
#include "shim/base/log.h"
#include "shim/stats/trace.h"

namespace arshim::sharp {

namespace {

std::once_flag g_once;
Library g_library;

template <typename Fn>
bool resolve(void* handle, const char* name, Fn* out, std::string* error) {
    *out = reinterpret_cast<Fn>(dlsym(handle, name));
    if (*out == nullptr && error->empty()) *error = std::string("symbol ") + name + " missing";
    return *out != nullptr;
}

void load(const Settings& settings) {
    Library& lib = g_library;
    lib.mode = settings.sharp == SharpMode::off  ? Mode::off
               : settings.sharp == SharpMode::on ? Mode::on
                                                 : Mode::automatic;
    lib.file = settings.sharp_lib;
    if (lib.mode == Mode::off) return;
    if (lib.file.empty()) {
        lib.error = "no file named";
        return;
    }
    // RTLD_LOCAL: the library's symbols stay out of the application's namespace.
    void* handle = dlopen(lib.file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        lib.error = why != nullptr ? why : "dlopen failed";
        return;
    }
    auto* api = new Api;  // lives as long as the process (the library is never closed)
    std::string error;
    bool ok = resolve(handle, "sharp_coll_init", &api->init, &error);
    ok &= resolve(handle, "sharp_coll_finalize", &api->finalize, &error);
    ok &= resolve(handle, "sharp_coll_caps_query", &api->caps_query, &error);
    ok &= resolve(handle, "sharp_coll_comm_init", &api->comm_init, &error);
    ok &= resolve(handle, "sharp_coll_comm_destroy", &api->comm_destroy, &error);
    ok &= resolve(handle, "sharp_coll_reg_mr", &api->reg_mr, &error);
    ok &= resolve(handle, "sharp_coll_dereg_mr", &api->dereg_mr, &error);
    ok &= resolve(handle, "sharp_coll_do_allreduce", &api->do_allreduce, &error);
    ok &= resolve(handle, "sharp_coll_do_allreduce_nb", &api->do_allreduce_nb, &error);
    ok &= resolve(handle, "sharp_coll_req_test", &api->req_test, &error);
    ok &= resolve(handle, "sharp_coll_req_wait", &api->req_wait, &error);
    ok &= resolve(handle, "sharp_coll_req_free", &api->req_free, &error);
    ok &= resolve(handle, "sharp_coll_strerror", &api->strerror, &error);
    ok &= resolve(handle, "sharp_coll_default_config", &api->default_config, &error);
    if (!ok) {
        lib.error = lib.file + ": " + error;
        delete api;
        dlclose(handle);
        return;
    }
    lib.api = api;
    log::debug("SHARP library {} loaded", printable(lib.file, 200));
}

}  // namespace

std::string Api::describe(int rc) const {
    const char* text = strerror != nullptr ? strerror(rc) : nullptr;
    return "SHARP error " + std::to_string(rc) + " (" + (text != nullptr ? text : "unknown") + ")";
}

const Library& library(const Settings& settings) {
    std::call_once(g_once, [&settings] { load(settings); });
    return g_library;
}

void warn_missing(const Library& lib, const char* detail) {
    if (!log::first_time("sharp-missing")) return;
    // The warning as data (docs/stats.md "The trace"), for tests: one event per warning line.
    trace::event("sharp_warning", {{"problem", "library_missing"}, {"error", detail}});
    log::warn("ARSHIM_SHARP=on but the SHARP library ARSHIM_SHARP_LIB={} cannot be loaded ({}): sharp-routed "
              "calls fall back to the MPI library's allreduce",
              printable(lib.file, 200), detail);
}

bool load_at_init(const Settings& settings, int world_rank) {
    const Library& lib = library(settings);
    if (lib.mode == Mode::off || lib.api != nullptr) return lib.api != nullptr;
    if (world_rank != 0) return false;
    if (lib.mode == Mode::on)
        warn_missing(lib, printable(lib.error, 300).c_str());
    else if (log::first_time("sharp-missing-info"))
        log::info("SHARP library {} not loaded ({}): no in-network reduction", printable(lib.file, 200),
                  printable(lib.error, 300));
    return false;
}

bool map_type(kernels::Type type, kernels::Op op, ::sharp_datatype* dtype, ::sharp_datatype* tag) {
    using kernels::Type;
    const bool loc = op == kernels::Op::minloc || op == kernels::Op::maxloc;
    *tag = SHARP_DTYPE_NULL;
    if (loc) {
        // {value; int index;} without padding: 32-bit values only.
        *tag = SHARP_DTYPE_INT;
        switch (type) {
        case Type::float_int: *dtype = SHARP_DTYPE_FLOAT; return true;
        case Type::int_int: *dtype = SHARP_DTYPE_INT; return true;
        default: return false;
        }
    }
    switch (type) {
    case Type::i8: *dtype = SHARP_DTYPE_INT8; return true;
    case Type::u8: *dtype = SHARP_DTYPE_UINT8; return true;
    case Type::boolean: *dtype = SHARP_DTYPE_UINT8; return true;  // C _Bool: 0 or 1 in one byte
    case Type::i16: *dtype = SHARP_DTYPE_SHORT; return true;
    case Type::u16: *dtype = SHARP_DTYPE_UNSIGNED_SHORT; return true;
    case Type::i32: *dtype = SHARP_DTYPE_INT; return true;
    case Type::u32: *dtype = SHARP_DTYPE_UNSIGNED; return true;
    case Type::i64: *dtype = SHARP_DTYPE_LONG; return true;
    case Type::u64: *dtype = SHARP_DTYPE_UNSIGNED_LONG; return true;
    case Type::f32: *dtype = SHARP_DTYPE_FLOAT; return true;
    case Type::f64: *dtype = SHARP_DTYPE_DOUBLE; return true;
    default: return false;  // long double, complex, other pairs
    }
}

bool map_op(kernels::Op op, ::sharp_reduce_op* out) {
    using kernels::Op;
    switch (op) {
    case Op::sum: *out = SHARP_OP_SUM; return true;
    case Op::min: *out = SHARP_OP_MIN; return true;
    case Op::max: *out = SHARP_OP_MAX; return true;
    case Op::land: *out = SHARP_OP_LAND; return true;
    case Op::lor: *out = SHARP_OP_LOR; return true;
    case Op::lxor: *out = SHARP_OP_LXOR; return true;
    case Op::band: *out = SHARP_OP_BAND; return true;
    case Op::bor: *out = SHARP_OP_BOR; return true;
    case Op::bxor: *out = SHARP_OP_BXOR; return true;
    case Op::minloc: *out = SHARP_OP_MINLOC; return true;
    case Op::maxloc: *out = SHARP_OP_MAXLOC; return true;
    case Op::prod:  // no switch implements it
    default: return false;
    }
}

}  // namespace arshim::sharp
