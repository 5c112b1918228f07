#include "shim/modes/arg_check.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "policy/routing_words.h"
#include "policy/config.h"
#include "shim/base/flavor.h"
#include "shim/base/log.h"
#include "shim/base/mpi_types.h"
#include "shim/base/mpi_util.h"
#include "shim/paths/paths.h"
#include "shim/stats/callsites.h"
#include "shim/stats/trace.h"

namespace arshim::argcheck {

namespace {

// A basic element of a type map: the kernel type of a predefined datatype ARShim knows, else its size (codes from
// 1000 on), so that two handles of the same representation count as one (MPI_INT and MPI_INT32_T).
using Signature = std::map<uint64_t, uint64_t>;  // basic element code -> how many

constexpr int kMaxDepth = 32;

uint64_t basic_code(MPI_Datatype datatype) {
    const TypeInfo info = type_info(datatype);
    if (info.predefined) return static_cast<uint64_t>(info.type);
    int size = 0;
    PMPI_Type_size(datatype, &size);
    return 1000 + static_cast<uint64_t>(size < 0 ? 0 : size);
}

bool is_named(MPI_Datatype datatype) {
    int ints = 0, addresses = 0, types = 0, combiner = MPI_COMBINER_NAMED;
    PMPI_Type_get_envelope(datatype, &ints, &addresses, &types, &combiner);
    return combiner == MPI_COMBINER_NAMED;
}

// Adds `times` copies of `datatype`'s basic elements to `out`. A derived datatype with one inner datatype holds
// size(outer) / size(inner) copies of it, whatever its combiner (contiguous, vector, indexed, subarray, darray,
// resized, dup): only MPI_COMBINER_STRUCT needs its block lengths. False when it cannot be decoded.
bool add_elements(MPI_Datatype datatype, uint64_t times, int depth, Signature& out) {
    if (times == 0) return true;
    int ints = 0, addresses = 0, types = 0, combiner = MPI_COMBINER_NAMED;
    if (depth > kMaxDepth || PMPI_Type_get_envelope(datatype, &ints, &addresses, &types, &combiner) != MPI_SUCCESS)
        return false;
    if (combiner == MPI_COMBINER_NAMED) {
        out[basic_code(datatype)] += times;
        return true;
    }
    std::vector<int> int_args(static_cast<std::size_t>(std::max(ints, 1)));
    std::vector<MPI_Aint> address_args(static_cast<std::size_t>(std::max(addresses, 1)));
    std::vector<MPI_Datatype> inner(static_cast<std::size_t>(std::max(types, 1)));
    if (PMPI_Type_get_contents(datatype, ints, addresses, types, int_args.data(), address_args.data(),
                               inner.data()) != MPI_SUCCESS)
        return false;
    bool ok = types > 0;
    if (combiner == MPI_COMBINER_STRUCT) {
        // ints: count, then one block length per inner datatype
        for (int i = 0; ok && i < types && i + 1 < ints; ++i)
            ok = add_elements(inner[static_cast<std::size_t>(i)],
                              times * static_cast<uint64_t>(std::max(int_args[static_cast<std::size_t>(i) + 1], 0)),
                              depth + 1, out);
    } else if (ok) {
        int outer_size = 0, inner_size = 0;
        PMPI_Type_size(datatype, &outer_size);
        PMPI_Type_size(inner[0], &inner_size);
        if (inner_size > 0)
            ok = add_elements(inner[0], times * static_cast<uint64_t>(outer_size / inner_size), depth + 1, out);
    }
    for (int i = 0; i < types; ++i)
        if (!is_named(inner[static_cast<std::size_t>(i)])) PMPI_Type_free(&inner[static_cast<std::size_t>(i)]);
    return ok;
}

// What one rank passed, as the ranks compare and exchange it.
struct Passed {
    long long count = 0;
    long long elements = 0;        // basic elements in one element of the datatype
    long long signature = 0;       // digest of the basic-element multiset
    long long op_and_place = 0;    // op code * 2 + in-place
};

long long op_code(MPI_Op op, bool* user) {
    kernels::Op kop{};
    *user = false;
    if (kernel_op(op, &kop)) return static_cast<long long>(kop);
    if (op == MPI_REPLACE) return vocab::kOpCount;
    if (op == MPI_NO_OP) return vocab::kOpCount + 1;
    *user = true;  // a user op: its function pointer differs across processes; only its commutativity compares
    int commute = 0;
    PMPI_Op_commutative(op, &commute);
    return vocab::kOpCount + 2 + (commute ? 1 : 0);
}

Passed describe_call(const CallArgs& args) {
    Passed p;
    p.count = static_cast<long long>(args.count);
    vocab::Fnv1a hash;
    const TypeInfo info = type_info(args.datatype);
    if (info.predefined) {  // the common case, without decoding: one basic element
        hash.number(static_cast<long long>(info.type)).number(1);
        p.elements = 1;
    } else {
        Signature signature;
        if (add_elements(args.datatype, 1, 0, signature)) {
            for (const auto& [code, times] : signature) {
                hash.number(static_cast<long long>(code)).number(static_cast<long long>(times));
                p.elements += static_cast<long long>(times);
            }
        } else {  // too deep to decode: compared by size only (never a false alarm, handles differ per process)
            int size = 0;
            PMPI_Type_size(args.datatype, &size);
            hash.text("undecoded").number(size);
        }
    }
    p.signature = static_cast<long long>(hash.value() >> 1);
    bool user = false;
    p.op_and_place = op_code(args.op, &user) * 2 + (args.sendbuf == MPI_IN_PLACE ? 1 : 0);
    return p;
}

long long digest(const Passed& p) {
    vocab::Fnv1a hash;
    hash.number(p.count).number(p.signature).number(p.op_and_place);
    return static_cast<long long>(hash.value() >> 1);  // non-negative: ~digest is negative, both fit MAX
}

std::string op_text(long long op_and_place) {
    const long long code = op_and_place / 2;
    std::string op = code < static_cast<long long>(vocab::kOpCount) ? vocab::kOpMpiNames[code]
                     : code == static_cast<long long>(vocab::kOpCount)     ? "MPI_REPLACE"
                     : code == static_cast<long long>(vocab::kOpCount) + 1 ? "MPI_NO_OP"
                     : code == static_cast<long long>(vocab::kOpCount) + 2 ? "a non-commutative user op"
                                                                           : "a commutative user op";
    return op + ((op_and_place & 1) ? ", MPI_IN_PLACE" : "");
}

std::string passed_text(const Passed& p) {
    return "count " + std::to_string(p.count) + " of a datatype of " + std::to_string(p.elements) +
           " basic element" + (p.elements == 1 ? "" : "s") + ", " + op_text(p.op_and_place);
}

// "1, 3, 5..7 and 12 more": the ranks in `ranks` (sorted), at most a few ranges.
std::string rank_list(const std::vector<int>& ranks) {
    std::string out;
    std::size_t shown = 0, i = 0;
    for (; i < ranks.size() && shown < 6; ++shown) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (!out.empty()) out += ", ";
        out += std::to_string(ranks[i]);
        if (j > i) out += ".." + std::to_string(ranks[j]);
        i = j + 1;
    }
    if (i < ranks.size()) out += " and " + std::to_string(ranks.size() - i) + " more";
    return out;
}

// On a mismatch: every rank learns what every rank passed, rank 0 names the groups, every rank that differs from
// rank 0 names its own arguments.
void report(const CallArgs& args, const Passed& mine, int rank, int size) {
    std::vector<Passed> all(static_cast<std::size_t>(size));
    PMPI_Allgather(&mine, 4, MPI_LONG_LONG, all.data(), 4, MPI_LONG_LONG, args.comm);
    const Passed& first = all[0];
    auto same = [](const Passed& a, const Passed& b) {
        return a.count == b.count && a.signature == b.signature && a.op_and_place == b.op_and_place;
    };
    if (rank == 0) {
        std::vector<int> differ;
        for (int r = 1; r < size; ++r)
            if (!same(all[static_cast<std::size_t>(r)], first)) differ.push_back(r);
        const Passed& other = differ.empty() ? first : all[static_cast<std::size_t>(differ.front())];
        std::vector<std::string> what;
        if (other.count != first.count) what.push_back("count");
        if (other.signature != first.signature) what.push_back("datatype");
        if (other.op_and_place / 2 != first.op_and_place / 2) what.push_back("op");
        if ((other.op_and_place & 1) != (first.op_and_place & 1)) what.push_back("MPI_IN_PLACE");
        std::string differs;
        for (const std::string& w : what) differs += (differs.empty() ? "" : ", ") + w;
        log::error("MPI_Allreduce arguments differ across the {} ranks of a communicator at {}: rank 0 passed {} "
                   "({}), rank(s) {} passed another {} (rank {}: {}); returning MPI_ERR_ARG on every rank "
                   "(ARSHIM_CHECK_ARGS)",
                   size, callsites::describe_address(args.caller), passed_text(first), datatype_name(args.datatype),
                   rank_list(differ), differs.empty() ? "argument" : differs, differ.empty() ? 0 : differ.front(),
                   passed_text(other));
    } else if (!same(mine, first)) {
        log::error("MPI_Allreduce at {} passed {} ({}) where rank 0 of the communicator passed {}; returning "
                   "MPI_ERR_ARG (ARSHIM_CHECK_ARGS)",
                   callsites::describe_address(args.caller), passed_text(mine), datatype_name(args.datatype),
                   passed_text(first));
    }
}

// MAX over the ranks of `ctx`, in place, of two long longs. Under MPICH through the node's shared memory (the
// multi-leader path, one leader) once the communicator's layout is known: there the check costs less than through
// MPICH's own allreduce. Open MPI's own 16-byte allreduce is faster than that path, so it keeps the library's
// (docs/verify.md "The argument check"). Through the library too before the layout is known, or when the path
// declines (on every rank alike: its decline depends only on agreed outcomes).
inline bool check_through_node_memory() { return library() != Library::openmpi; }  // shim/base/flavor.h

int max_of_pair(long long* values, PathContext& ctx, bool laid_out) {
    static const policy::Decision kOneLeader = policy::decision_for(policy::Path::multileader);  // one leader
    // ppn_max, not node_size: the route must be the same on every rank, and a rank alone on its node (2 + 1 ranks)
    // still takes part in the node protocol (found by tools/checks/mpich_coll_tests.sh: it hung).
    if (check_through_node_memory() && laid_out && ctx.ppn_max > 1) {
        const TypeInfo type = type_info(MPI_LONG_LONG);
        const kernels::KernelTable& kernels = kernels::active();
        const auto max = static_cast<std::size_t>(kernels::Op::max);
        const CallArgs pair{MPI_IN_PLACE, values, 2, MPI_LONG_LONG, MPI_MAX, ctx.comm, false, nullptr};
        const Call call{pair, ctx, type, kernels::Op::max, 2 * uint64_t{type.size}, vocab::bucket_of(2 * type.size),
                        kernels.binary[max][static_cast<std::size_t>(type.type)],
                        kernels.nary[max][static_cast<std::size_t>(type.type)], MPI_MAX, kOneLeader};
        if (type.predefined && call.nary != nullptr) {
            const PathOutcome outcome = serve_multileader(call);
            if (outcome.served) return outcome.rc;
        }
    }
    return PMPI_Allreduce(MPI_IN_PLACE, values, 2, MPI_LONG_LONG, MPI_MAX, ctx.comm);
}

}  // namespace

bool agree(const CallArgs& args, PathContext* ctx, bool laid_out, int* rc) {
    // Erroneous handles are the library's to report; intercommunicators compare across groups (not checked).
    if (args.comm == MPI_COMM_NULL || args.datatype == MPI_DATATYPE_NULL || args.op == MPI_OP_NULL || args.count < 0)
        return true;
    if (ctx == nullptr || ctx->inter || ctx->size == 1) return true;

    const Passed mine = describe_call(args);
    const long long d = digest(mine);
    long long extremes[2] = {d, ~d};  // MAX of both: the largest and (complemented) the smallest digest
    max_of_pair(extremes, *ctx, laid_out);
    g_checked.fetch_add(1, std::memory_order_relaxed);
    if (extremes[0] == ~extremes[1]) return true;

    g_mismatched.fetch_add(1, std::memory_order_relaxed);
    if (trace::on())
        trace::event("argument_mismatch", {{"communicator", ctx->stats_id}, {"count", mine.count},
                                           {"datatype", datatype_name(args.datatype)}, {"op", mpi_op_name(args.op)},
                                           {"in_place", args.sendbuf == MPI_IN_PLACE}});
    report(args, mine, ctx->rank, ctx->size);
    if (ctx->settings->strict) abort_after_logging(args.comm);
    // A fatal handler ends the job from the first rank that calls it, and the launcher drops lines it has not
    // forwarded yet: every rank logs first, then the handler runs.
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(args.comm, &handler);
    const bool fatal = handler == MPI_ERRORS_ARE_FATAL
#ifdef MPI_ERRORS_ABORT
                       || handler == MPI_ERRORS_ABORT
#endif
        ;
    if (handler != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&handler);
    if (fatal) wait_for_forwarding(args.comm);
    PMPI_Comm_call_errhandler(args.comm, MPI_ERR_ARG);
    *rc = MPI_ERR_ARG;
    return false;
}

}  // namespace arshim::argcheck
