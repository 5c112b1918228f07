// Predefined MPI datatype and op handles -> kernels::Type / kernels::Op, and the standard's op x datatype legality.
//
// The tables are built once (build_type_map) into small fixed hash tables (shim/base/fixed_table.h) keyed by the
// handle's bits, so a per-call lookup is a multiply and one or two probes: no allocation, no lock, no scan. Handles are compile-time
// constants in MPICH (ints) but addresses of globals in Open MPI, hence hashing rather than a switch.
#include "shim/base/mpi_types.h"

#include <cstddef>
#include <cstring>

#include "shim/base/fixed_table.h"
#include "shim/base/mpi_util.h"

namespace arshim {

namespace {

using kernels::Op;
using kernels::Type;

// The datatype categories of MPI 4.0 §6.9.2; legality of an op is decided per category, not per representation
// (LAND is defined on MPI_INT but not on MPI_INTEGER, though both are i32 here).
enum class Category : uint8_t { none, c_integer, fortran_integer, multi_language, floating, complex, logical, byte, pair };

constexpr uint16_t bit(Op op) { return static_cast<uint16_t>(1u << static_cast<unsigned>(op)); }
constexpr uint16_t kMinMax = bit(Op::min) | bit(Op::max);
constexpr uint16_t kSumProd = bit(Op::sum) | bit(Op::prod);
constexpr uint16_t kLogical = bit(Op::land) | bit(Op::lor) | bit(Op::lxor);
constexpr uint16_t kBitwise = bit(Op::band) | bit(Op::bor) | bit(Op::bxor);
constexpr uint16_t kLoc = bit(Op::minloc) | bit(Op::maxloc);

constexpr uint16_t legal_ops(Category category) {
    switch (category) {
    case Category::c_integer: return kMinMax | kSumProd | kLogical | kBitwise;
    case Category::fortran_integer:
    case Category::multi_language: return kMinMax | kSumProd | kBitwise;
    case Category::floating: return kMinMax | kSumProd;
    case Category::complex: return kSumProd;
    case Category::logical: return kLogical;
    case Category::byte: return kBitwise;
    case Category::pair: return kLoc;
    case Category::none: break;
    }
    return 0;
}

// How the bytes of a datatype are to be read; the width comes from MPI_Type_get_extent at build time, so
// MPI_LONG, MPI_INTEGER, MPI_AINT, MPI_LOGICAL ... follow whatever the ABI in use says.
enum class Rep : uint8_t { sint, uint, real, cplx, flogical, cbool, byte, pair, opaque };

struct Known {
    MPI_Datatype handle;
    const char* name;
    Category category;
    Rep rep;
    Type pair_type;  // Rep::pair only
};

#define ARSHIM_DT(h, cat, rep) Known{h, #h, Category::cat, Rep::rep, Type::count}
#define ARSHIM_PAIR(h, type) Known{h, #h, Category::pair, Rep::pair, Type::type}

// Every predefined datatype ARShim recognizes. Optional Fortran / C++ names are guarded: an MPI built without
// them may not define the macro, or define it as MPI_DATATYPE_NULL (MPICH) or as a size-0 placeholder (Open MPI);
// build_type_map() skips those. MPI_REAL16 / MPI_COMPLEX32 / MPI_INTEGER16 / MPI_REAL2 are deliberately absent:
// IEEE quad, 128-bit and half-precision elements have no kernel.
const Known* known_types(size_t* count) {
    static const Known list[] = {
        ARSHIM_DT(MPI_SIGNED_CHAR, c_integer, sint), ARSHIM_DT(MPI_SHORT, c_integer, sint),
        ARSHIM_DT(MPI_INT, c_integer, sint), ARSHIM_DT(MPI_LONG, c_integer, sint),
        ARSHIM_DT(MPI_LONG_LONG_INT, c_integer, sint), ARSHIM_DT(MPI_LONG_LONG, c_integer, sint),
        ARSHIM_DT(MPI_INT8_T, c_integer, sint), ARSHIM_DT(MPI_INT16_T, c_integer, sint),
        ARSHIM_DT(MPI_INT32_T, c_integer, sint), ARSHIM_DT(MPI_INT64_T, c_integer, sint),
        ARSHIM_DT(MPI_UNSIGNED_CHAR, c_integer, uint), ARSHIM_DT(MPI_UNSIGNED_SHORT, c_integer, uint),
        ARSHIM_DT(MPI_UNSIGNED, c_integer, uint), ARSHIM_DT(MPI_UNSIGNED_LONG, c_integer, uint),
        ARSHIM_DT(MPI_UNSIGNED_LONG_LONG, c_integer, uint), ARSHIM_DT(MPI_UINT8_T, c_integer, uint),
        ARSHIM_DT(MPI_UINT16_T, c_integer, uint), ARSHIM_DT(MPI_UINT32_T, c_integer, uint),
        ARSHIM_DT(MPI_UINT64_T, c_integer, uint),
        ARSHIM_DT(MPI_AINT, multi_language, sint), ARSHIM_DT(MPI_OFFSET, multi_language, sint),
        ARSHIM_DT(MPI_COUNT, multi_language, sint),
        ARSHIM_DT(MPI_FLOAT, floating, real), ARSHIM_DT(MPI_DOUBLE, floating, real),
        ARSHIM_DT(MPI_LONG_DOUBLE, floating, real),
        ARSHIM_DT(MPI_C_COMPLEX, complex, cplx), ARSHIM_DT(MPI_C_FLOAT_COMPLEX, complex, cplx),
        ARSHIM_DT(MPI_C_DOUBLE_COMPLEX, complex, cplx), ARSHIM_DT(MPI_C_LONG_DOUBLE_COMPLEX, complex, cplx),
        ARSHIM_DT(MPI_C_BOOL, logical, cbool),
#ifdef MPI_CXX_BOOL
        ARSHIM_DT(MPI_CXX_BOOL, logical, cbool),
        ARSHIM_DT(MPI_CXX_FLOAT_COMPLEX, complex, cplx), ARSHIM_DT(MPI_CXX_DOUBLE_COMPLEX, complex, cplx),
        ARSHIM_DT(MPI_CXX_LONG_DOUBLE_COMPLEX, complex, cplx),
#endif
        ARSHIM_DT(MPI_BYTE, byte, byte),
        // Fortran types, usable from C (mpi4py and C libraries called from Fortran pass them).
        ARSHIM_DT(MPI_INTEGER, fortran_integer, sint), ARSHIM_DT(MPI_REAL, floating, real),
        ARSHIM_DT(MPI_DOUBLE_PRECISION, floating, real), ARSHIM_DT(MPI_COMPLEX, complex, cplx),
        ARSHIM_DT(MPI_DOUBLE_COMPLEX, complex, cplx), ARSHIM_DT(MPI_LOGICAL, logical, flogical),
#ifdef MPI_INTEGER1
        ARSHIM_DT(MPI_INTEGER1, fortran_integer, sint),
#endif
#ifdef MPI_INTEGER2
        ARSHIM_DT(MPI_INTEGER2, fortran_integer, sint),
#endif
#ifdef MPI_INTEGER4
        ARSHIM_DT(MPI_INTEGER4, fortran_integer, sint),
#endif
#ifdef MPI_INTEGER8
        ARSHIM_DT(MPI_INTEGER8, fortran_integer, sint),
#endif
#ifdef MPI_REAL4
        ARSHIM_DT(MPI_REAL4, floating, real),
#endif
#ifdef MPI_REAL8
        ARSHIM_DT(MPI_REAL8, floating, real),
#endif
#ifdef MPI_COMPLEX8
        ARSHIM_DT(MPI_COMPLEX8, complex, cplx),
#endif
#ifdef MPI_COMPLEX16
        ARSHIM_DT(MPI_COMPLEX16, complex, cplx),
#endif
        ARSHIM_PAIR(MPI_FLOAT_INT, float_int), ARSHIM_PAIR(MPI_DOUBLE_INT, double_int),
        ARSHIM_PAIR(MPI_LONG_INT, long_int), ARSHIM_PAIR(MPI_2INT, int_int),
        ARSHIM_PAIR(MPI_SHORT_INT, short_int), ARSHIM_PAIR(MPI_LONG_DOUBLE_INT, long_double_int),
        ARSHIM_PAIR(MPI_2REAL, float_float), ARSHIM_PAIR(MPI_2DOUBLE_PRECISION, double_double),
        ARSHIM_PAIR(MPI_2INTEGER, int_int),
        // Predefined but not reducible by the standard (MPI_CHAR is text, not a C integer type for reductions):
        // known, so that statistics say "unsupported op/type" rather than "derived datatype".
        ARSHIM_DT(MPI_CHAR, none, opaque), ARSHIM_DT(MPI_WCHAR, none, opaque), ARSHIM_DT(MPI_PACKED, none, opaque),
        ARSHIM_DT(MPI_CHARACTER, none, opaque),
    };
    *count = sizeof(list) / sizeof(list[0]);
    return list;
}
#undef ARSHIM_DT
#undef ARSHIM_PAIR

// The kernel type for a representation of `bytes` bytes; Type::count when there is none (then not predefined).
Type kernel_type(const Known& known, long bytes) {
    switch (known.rep) {
    case Rep::sint:
    case Rep::flogical:  // gfortran (and ifx by default with -fpscomp logicals) LOGICAL: integer, .TRUE. = 1
        return bytes == 1 ? Type::i8 : bytes == 2 ? Type::i16 : bytes == 4 ? Type::i32 : bytes == 8 ? Type::i64 : Type::count;
    case Rep::uint:
        return bytes == 1 ? Type::u8 : bytes == 2 ? Type::u16 : bytes == 4 ? Type::u32 : bytes == 8 ? Type::u64 : Type::count;
    case Rep::byte: return bytes == 1 ? Type::u8 : Type::count;
    case Rep::cbool: return bytes == 1 ? Type::boolean : Type::count;
    case Rep::real:
        if (bytes == 4) return Type::f32;
        if (bytes == 8) return Type::f64;
        // Only C long double (MPI_LONG_DOUBLE) may be wider; a Fortran REAL*16 is IEEE quad, never mapped here.
        return bytes == static_cast<long>(sizeof(long double)) && known.handle == MPI_LONG_DOUBLE ? Type::f80 : Type::count;
    case Rep::cplx:
        if (bytes == 8) return Type::c32;
        if (bytes == 16) return Type::c64;
        return bytes == static_cast<long>(2 * sizeof(long double)) &&
                       (known.handle == MPI_C_LONG_DOUBLE_COMPLEX
#ifdef MPI_CXX_BOOL
                        || known.handle == MPI_CXX_LONG_DOUBLE_COMPLEX
#endif
                        )
                   ? Type::c80
                   : Type::count;
    case Rep::pair: return known.pair_type;
    case Rep::opaque:
        return bytes == 1 ? Type::u8 : bytes == 2 ? Type::u16 : bytes == 4 ? Type::u32 : Type::count;
    }
    return Type::count;
}

vocab::DtypeClass class_of(Category category) {
    switch (category) {
    case Category::floating:
    case Category::complex: return vocab::DtypeClass::floating;
    case Category::c_integer:
    case Category::fortran_integer:
    case Category::multi_language:
    case Category::logical:
    case Category::byte: return vocab::DtypeClass::integer;
    default: return vocab::DtypeClass::other;
    }
}

struct TypeEntry {
    TypeInfo info;
    uint16_t ops = 0;       // bit per kernels::Op: legal for the category and implemented by the kernels
    uint16_t bug_ops = 0;   // bit per kernels::Op: the library computes it wrong (policy/library_bugs.h)
    int8_t bug_entry[kernels::kOpCount] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    const char* name = "";
};

struct OpEntry {
    Op op = Op::count;  // Op::count: predefined but not a reduction ARShim computes (MPI_REPLACE, MPI_NO_OP)
    const char* name = "";
};

// At most 1/4 full; keyed by the handle's bits (a handle is its own hash: FixedTable spreads it).
FixedTable<uintptr_t, TypeEntry, 256> g_types;
FixedTable<uintptr_t, OpEntry, 64> g_ops;

// The first insertion of a synonym wins (MPI_LONG_LONG_INT and MPI_LONG_LONG are one handle in some MPIs).
template <typename Table, typename Entry>
void insert_first(Table& table, uintptr_t key, const Entry& entry) {
    bool inserted = false;
    auto* slot = table.find_or_insert(key, key, &inserted);
    if (slot != nullptr && inserted) *slot = entry;
}

const TypeEntry* find_type(MPI_Datatype datatype) {
    const uintptr_t key = handle_bits(datatype);
    return g_types.find(key, key);
}
const OpEntry* find_op(MPI_Op op) {
    const uintptr_t key = handle_bits(op);
    return g_ops.find(key, key);
}

}  // namespace

void build_type_map() {
    size_t count = 0;
    const Known* list = known_types(&count);
    for (size_t i = 0; i < count; ++i) {
        const Known& known = list[i];
        if (known.handle == MPI_DATATYPE_NULL) continue;  // MPICH's "not available in this build"
        MPI_Aint lb = 0, extent = 0;
        if (PMPI_Type_get_extent(known.handle, &lb, &extent) != MPI_SUCCESS || extent <= 0) continue;
        const Type type = kernel_type(known, static_cast<long>(extent));
        // The kernels step through memory by their element size; it must be the datatype's extent
        // (MPI_DOUBLE_INT: size 12, extent 16).
        if (type == Type::count || kernels::type_size(type) != static_cast<size_t>(extent)) continue;
        TypeEntry entry;
        entry.info.predefined = true;
        entry.info.type = type;
        entry.info.size = static_cast<uint32_t>(extent);
        entry.info.dclass = class_of(known.category);
        entry.name = known.name;
        const uint16_t legal = legal_ops(known.category);
        for (size_t op = 0; op < kernels::kOpCount; ++op)
            if ((legal >> op & 1u) && kernels::defined(static_cast<Op>(op), type))
                entry.ops = static_cast<uint16_t>(entry.ops | (1u << op));
        insert_first(g_types, handle_bits(known.handle), entry);
    }

    const MPI_Op reductions[kernels::kOpCount] = {MPI_SUM,  MPI_PROD, MPI_MIN,  MPI_MAX,  MPI_LAND,   MPI_LOR,
                                                  MPI_LXOR, MPI_BAND, MPI_BOR,  MPI_BXOR, MPI_MINLOC, MPI_MAXLOC};
    for (std::size_t i = 0; i < kernels::kOpCount; ++i)
        insert_first(g_ops, handle_bits(reductions[i]), OpEntry{static_cast<Op>(i), vocab::kOpMpiNames[i]});
    insert_first(g_ops, handle_bits(MPI_REPLACE), OpEntry{Op::count, "MPI_REPLACE"});
    insert_first(g_ops, handle_bits(MPI_NO_OP), OpEntry{Op::count, "MPI_NO_OP"});
}

TypeInfo type_info(MPI_Datatype datatype) {
    const TypeEntry* entry = find_type(datatype);
    return entry ? entry->info : TypeInfo{};
}

bool kernel_op(MPI_Op op, kernels::Op* out) {
    const OpEntry* entry = find_op(op);
    if (!entry || entry->op == Op::count) return false;
    if (out) *out = entry->op;
    return true;
}

bool kernel_supports(MPI_Op op, MPI_Datatype datatype) {
    kernels::Op kop{};
    if (!kernel_op(op, &kop)) return false;
    const TypeEntry* entry = find_type(datatype);
    return entry && (entry->ops >> static_cast<unsigned>(kop) & 1u);
}

CallClass classify(MPI_Datatype datatype, MPI_Op op) {
    CallClass c;
    const TypeEntry* type = find_type(datatype);
    if (type != nullptr) c.type = type->info;
    const OpEntry* entry = find_op(op);
    c.user_op = entry == nullptr;
    c.has_kernel_op = entry != nullptr && entry->op != Op::count;
    if (c.has_kernel_op) c.kop = entry->op;
    c.supported = c.has_kernel_op && type != nullptr && (type->ops >> static_cast<unsigned>(c.kop) & 1u);
    if (c.supported && (type->bug_ops >> static_cast<unsigned>(c.kop) & 1u))
        c.library_bug = type->bug_entry[static_cast<std::size_t>(c.kop)];
    return c;
}

bool mark_library_bug(const char* datatype_name, uint32_t ops, int entry) {
    std::size_t count = 0;
    const Known* list = known_types(&count);
    bool found = false;
    for (std::size_t i = 0; i < count; ++i) {
        if (std::strcmp(list[i].name, datatype_name) != 0 || list[i].handle == MPI_DATATYPE_NULL) continue;
        const uintptr_t key = handle_bits(list[i].handle);
        TypeEntry* type = g_types.find(key, key);
        if (type == nullptr) continue;
        for (std::size_t op = 0; op < kernels::kOpCount; ++op)
            if (ops >> op & 1u) {
                type->bug_ops = static_cast<uint16_t>(type->bug_ops | (1u << op));
                type->bug_entry[op] = static_cast<int8_t>(entry);
            }
        found = true;
    }
    return found;
}

const char* datatype_name(MPI_Datatype datatype) {
    const TypeEntry* entry = find_type(datatype);
    return entry ? entry->name : "derived";
}

const char* mpi_op_name(MPI_Op op) {
    const OpEntry* entry = find_op(op);
    return entry ? entry->name : "user";
}

}  // namespace arshim
