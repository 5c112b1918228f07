// ARShim's kernels as MPI ops: one PMPI_Op_create (commute = 1) per predefined reduction, whose function looks up
// the datatype (one hash probe) and calls the active kernel table.
//
// Contract for callers of simd_op() / simd_op_for(): pass the returned op only with a datatype for which
// kernel_supports(predefined op, datatype) is true. An MPI user function has no way to hand an element type it
// cannot handle back to the library (and calling MPI from inside it is not safe in every MPI), so an unsupported
// datatype reaching one of these functions is an ARShim bug: it is reported and the job aborted rather than
// returning a silently wrong result.
#include "shim/core/simd_ops.h"

#include <cstdio>

#include "shim/base/mpi_types.h"
#include "shim/base/sim_charge.h"

namespace arshim {

namespace {

MPI_Op g_simd_ops[kernels::kOpCount];
bool g_created = false;

[[noreturn]] void unsupported(kernels::Op op, MPI_Datatype* datatype) {
    std::fprintf(stderr, "arshim: internal error: SIMD op %s called with datatype %s, which it cannot reduce\n",
                 kernels::op_name(op), datatype ? datatype_name(*datatype) : "(null)");
    PMPI_Abort(MPI_COMM_WORLD, 1);
    __builtin_trap();
}

template <kernels::Op O> void reduce(void* in, void* inout, int* len, MPI_Datatype* datatype) {
    const TypeInfo type = type_info(*datatype);
    kernels::BinaryFn fn = nullptr;
    if (type.predefined)
        fn = kernels::active().binary[static_cast<size_t>(O)][static_cast<size_t>(type.type)];
    if (!fn) unsupported(O, datatype);
    if (*len <= 0) return;
    // The SMPI build: the simulated time of the bytes reduced, charged within the library's call (sim_charge.h).
    charge::reduce_in_mpi(static_cast<size_t>(*len) * type.size);
    fn(in, inout, static_cast<size_t>(*len));
}

MPI_User_function* const kFunctions[kernels::kOpCount] = {
    reduce<kernels::Op::sum>,  reduce<kernels::Op::prod>, reduce<kernels::Op::min>,    reduce<kernels::Op::max>,
    reduce<kernels::Op::land>, reduce<kernels::Op::lor>,  reduce<kernels::Op::lxor>,   reduce<kernels::Op::band>,
    reduce<kernels::Op::bor>,  reduce<kernels::Op::bxor>, reduce<kernels::Op::minloc>, reduce<kernels::Op::maxloc>,
};

}  // namespace

void create_simd_ops() {
    if (g_created) return;
    for (size_t i = 0; i < kernels::kOpCount; ++i) {
        g_simd_ops[i] = MPI_OP_NULL;
        if (PMPI_Op_create(kFunctions[i], 1, &g_simd_ops[i]) != MPI_SUCCESS) g_simd_ops[i] = MPI_OP_NULL;
    }
    g_created = true;
}

void free_simd_ops() {
    if (!g_created) return;
    for (MPI_Op& op : g_simd_ops)
        if (op != MPI_OP_NULL) PMPI_Op_free(&op);
    g_created = false;
}

MPI_Op simd_op(kernels::Op op) {
    return g_created && op < kernels::Op::count ? g_simd_ops[static_cast<size_t>(op)] : MPI_OP_NULL;
}

MPI_Op simd_op_for(MPI_Op op) {
    kernels::Op kop{};
    return kernel_op(op, &kop) ? simd_op(kop) : MPI_OP_NULL;
}

#if defined(ARSHIM_FLAVOR_SMPI)
MPI_Op charged_library_op(MPI_Op op, MPI_Datatype datatype) {
    if (!charge::reductions_charged()) return op;
    kernels::Op kop{};
    if (!kernel_op(op, &kop)) return op;  // a user's op, or ARShim's already
    const TypeInfo type = type_info(datatype);
    if (!type.predefined || kernels::active().binary[static_cast<size_t>(kop)][static_cast<size_t>(type.type)] == nullptr)
        return op;
    const MPI_Op simd = simd_op(kop);
    return simd != MPI_OP_NULL ? simd : op;
}
#endif

}  // namespace arshim
