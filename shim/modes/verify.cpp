#include "shim/modes/verify.h"

#include <climits>
#include <cstring>
#include <vector>

#include "kernels/compare.h"
#include "policy/config.h"
#include "shim/base/log.h"
#include "shim/base/mpi_types.h"
#include "shim/base/mpi_util.h"
#include "shim/stats/trace.h"
#include "shim/paths/path_context.h"
#include "shim/stats/callsites.h"

namespace arshim::verify {

namespace {

// Scratch memory of this thread's checks: grown on demand, only while some key is still being verified.
struct Scratch {
    std::vector<char> input, reference, magnitudes, magnitude_sums;
};
thread_local Scratch t_scratch;

char* room(std::vector<char>& buffer, std::size_t bytes) {
    if (buffer.size() < bytes) buffer.resize(bytes);
    return buffer.data();
}

MPI_Datatype real_handle(kernels::Type type) {
    switch (type) {
    case kernels::Type::f32: return MPI_FLOAT;
    case kernels::Type::f64: return MPI_DOUBLE;
    case kernels::Type::f80: return MPI_LONG_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

void raise_worst(double relative) {
    uint64_t bits = 0;
    std::memcpy(&bits, &relative, sizeof bits);
    uint64_t seen = g_worst_relative_bits.load(std::memory_order_relaxed);
    while (bits > seen && !g_worst_relative_bits.compare_exchange_weak(seen, bits, std::memory_order_relaxed)) {
    }
}

// Calls beyond int counts are not checked (the magnitude reduction of a complex sum doubles the count).
bool checkable(const Call& call) { return static_cast<uint64_t>(call.args.count) <= INT_MAX / 2; }

}  // namespace


Check::Check(const Call& call) {
    if (!checkable(call)) return;
    const std::size_t bytes = static_cast<std::size_t>(call.bytes);
    if (call.args.sendbuf == MPI_IN_PLACE) {
        input_ = std::memcpy(room(t_scratch.input, bytes), call.args.recvbuf, bytes);
    } else {
        input_ = call.args.sendbuf;
    }
}

void Check::finish(const Call& call, int rc, KeyBook& book, bool library_bug) {
    // Every rank takes the same branches up to the agreement below: `rc` may differ between ranks only when the
    // library failed, and then the job is in the error handler's hands anyway.
    if (input_ == nullptr || rc != MPI_SUCCESS) return;
    const CallArgs& args = call.args;
    const std::size_t count = static_cast<std::size_t>(args.count);
    const std::size_t bytes = static_cast<std::size_t>(call.bytes);

    // The library's result for the same input, with the user's op, into scratch memory.
    CallArgs reference = args;
    reference.sendbuf = input_;
    reference.recvbuf = room(t_scratch.reference, bytes);
    if (run_native(reference) != MPI_SUCCESS) return;

    // Floating-point sums: the per-element sum of magnitudes, the scale of the reassociation bound.
    kernels::Type magnitude_type = kernels::Type::count;
    std::size_t per_element = 0;
    const void* magnitude_sums = nullptr;
    if (compare::needs_magnitudes(call.kop, call.type.type, &magnitude_type, &per_element)) {
        const std::size_t values = count * per_element;
        const std::size_t magnitude_bytes = values * kernels::type_size(magnitude_type);
        void* magnitudes = room(t_scratch.magnitudes, magnitude_bytes);
        void* sums = room(t_scratch.magnitude_sums, magnitude_bytes);
        compare::magnitudes(call.type.type, input_, magnitudes, count);
        if (PMPI_Allreduce(magnitudes, sums, static_cast<int>(values), real_handle(magnitude_type), MPI_SUM,
                           args.comm) != MPI_SUCCESS)
            return;
        magnitude_sums = sums;
    }

    const compare::Verdict verdict = compare::compare(call.kop, call.type.type, args.recvbuf,
                                                      reference.recvbuf, magnitude_sums, count, call.ctx.size);
    const bool differs = !verdict.same();
    // Agree: the lowest and highest rank whose result differs, the worst relative difference and bound share.
    double agreed[4] = {differs ? static_cast<double>(call.ctx.size - call.ctx.rank) : 0.0,
                        differs ? static_cast<double>(call.ctx.rank + 1) : 0.0, verdict.worst_relative,
                        verdict.worst_bound_share};
    PMPI_Allreduce(MPI_IN_PLACE, agreed, 4, MPI_DOUBLE, MPI_MAX, args.comm);
    const int lowest = agreed[0] > 0 ? call.ctx.size - static_cast<int>(agreed[0]) : -1;
    const int highest = static_cast<int>(agreed[1]) - 1;

    g_calls.fetch_add(1, std::memory_order_relaxed);
    if (library_bug) g_library_bug_calls.fetch_add(1, std::memory_order_relaxed);
    if (verdict.unordered) g_unordered.fetch_add(verdict.unordered, std::memory_order_relaxed);
    raise_worst(verdict.worst_relative);
    if (differs) (library_bug ? g_library_bug_differences : g_mismatches).fetch_add(1, std::memory_order_relaxed);
    if (lowest >= 0 && trace::on())
        trace::event("verify_difference",
                     {{"communicator", call.ctx.stats_id}, {"datatype", datatype_name(args.datatype)},
                      {"op", mpi_op_name(args.op)}, {"count", count}, {"path", vocab::path_name(call.decision.path())},
                      {"differs_here", differs}, {"first_element", differs ? static_cast<int64_t>(verdict.first) : -1},
                      {"lowest_rank", lowest}, {"highest_rank", highest}, {"library_bug", library_bug},
                      {"strict_abort", lowest >= 0 && !library_bug && call.ctx.settings->strict}});
    if (lowest < 0) return;

    const bool first_for_key = !book.mismatch_reported;
    book.mismatch_reported = true;
    if (first_for_key && call.ctx.rank == lowest) {
        const std::string where = callsites::describe_address(args.caller);
        const std::string what = std::string(datatype_name(args.datatype)) + " " + mpi_op_name(args.op) + ", " +
                                 std::to_string(count) + " elements (" + std::to_string(call.bytes) +
                                 " B), communicator of " + std::to_string(call.ctx.size) + " ranks, at " + where;
        const std::size_t i = verdict.first;
        const std::string values = "rank " + std::to_string(call.ctx.rank) + " element " + std::to_string(i) +
                                   ": " + vocab::path_name(call.decision.path()) + " path " +
                                   compare::element_text(call.type.type, args.recvbuf, i) + ", library " +
                                   compare::element_text(call.type.type, reference.recvbuf, i) +
                                   " (ranks " + std::to_string(lowest) + ".." + std::to_string(highest) + " differ)";
        if (library_bug)
            log::info("verify: the library's own result differs from ARShim's on {}: {}, as a known library bug "
                      "predicts (docs/library-bugs.md)", what, values);
        else
            log::error("verify: MISMATCH on {}: {}{}", what, values,
                       call.ctx.settings->strict ? " (ARSHIM_STRICT=1: aborting)" : "");
    }
    if (!library_bug && call.ctx.settings->strict) abort_after_logging(args.comm);
}

}  // namespace arshim::verify
