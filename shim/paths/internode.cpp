// ARShim's own inter-node steps (shim/paths/internode.h).
#include "shim/paths/internode.h"

#include "shim/base/flavor.h"
#include "shim/base/sim_charge.h"

namespace arshim {

namespace {

constexpr int kRingTag = 0x4152;      // the leader communicators are ARShim's own: no user message can match
constexpr int kDoublingTag = 0x4153;  // (a separate tag per step keeps a mix-up between them loud, not silent)
constexpr int kRabenseifnerTag = 0x4154;

// A member count h as pof2 = 2^floor(log2 h) continuing members: the pairs (2i, 2i+1), i < h - pof2, fold into
// the odd one, which continues as number i; members from 2 (h - pof2) on continue as r - (h - pof2) (as MPICH does).
struct Fold {
    int pof2 = 1, rem = 0;
    explicit Fold(int h) {
        while (pof2 * 2 <= h) pof2 *= 2;
        rem = h - pof2;
    }
    bool folded_in(int r) const { return r < 2 * rem && r % 2 == 0; }
    bool folds(int r) const { return r < 2 * rem && r % 2 == 1; }
    int number(int r) const { return r < 2 * rem ? r / 2 : r - rem; }
    int member(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
};

// The vector as it travels whole: `units` of `type` (the same bytes as the call's count elements).
struct Whole {
    int units;
    MPI_Datatype type;
};

// The fold's first half. A folded-in member hands its vector over, sits the exchanges out and gets the result back:
// true, with its return code in *rc. A folding member reduces its partner's vector in, the lower member's first.
bool fold_in(const Fold& fold, int r, char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch,
             Whole whole, int tag, int* rc) {
    if (fold.folded_in(r)) {
        *rc = PMPI_Send(data, whole.units, whole.type, r + 1, tag, comm);
        if (*rc == MPI_SUCCESS) *rc = PMPI_Recv(data, whole.units, whole.type, r + 1, tag, comm, MPI_STATUS_IGNORE);
        return true;
    }
    if (fold.folds(r)) {
        *rc = PMPI_Recv(scratch, whole.units, whole.type, r - 1, tag, comm, MPI_STATUS_IGNORE);
        if (*rc == MPI_SUCCESS) {
            const void* sources[2] = {scratch, data};
            call.nary(data, sources, 2, count);
            charge::reduce(count * call.type.size);  // the SMPI build's (sim_charge.h)
        }
    }
    return false;
}

// The fold's second half: the folding member hands the result back, even after an error in the exchanges (its
// partner would wait for ever otherwise; it then gets this member's partial vector, and the error is this member's).
int fold_out(const Fold& fold, int r, char* data, MPI_Comm comm, Whole whole, int tag, int rc) {
    if (!fold.folds(r)) return rc;
    const int back = PMPI_Send(data, whole.units, whole.type, r - 1, tag, comm);
    return rc == MPI_SUCCESS ? back : rc;
}

}  // namespace

InternodeStep internode_step(InternodeMode mode, int nodes, uint64_t partition_bytes, int leaders) {
    switch (mode) {
    case InternodeMode::library: return InternodeStep::library;
    case InternodeMode::ring: return InternodeStep::ring;
    case InternodeMode::doubling: return InternodeStep::doubling;
    case InternodeMode::rabenseifner: return InternodeStep::rabenseifner;
    case InternodeMode::automatic: break;
    }
    return policy::model::internode_step_auto(static_cast<uint32_t>(nodes > 0 ? nodes : 1), partition_bytes,
                                              static_cast<uint32_t>(leaders > 0 ? leaders : 1), policy_flavor());
}

// A reduce-scatter then an allgather, h-1 steps each, so every node sends and receives 2(h-1)/h of the partition,
// the bandwidth bound, for any h. MPICH 4.0.2's allreduce meets a count of ranks that is not a power of two with a
// step that sends the whole vector to a partner first and returns the result after, so the partner's link carries
// about twice the bound's bytes in sequential phases and that step runs far from the bound where a power of two runs
// near it (docs/cluster.md "Three nodes"). Block b is reduced along the ring in a fixed order and then copied to every
// member, so every rank gets the same bits, call after call.
int ring_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch) {
    int h = 1, r = 0;
    PMPI_Comm_size(comm, &h);
    PMPI_Comm_rank(comm, &r);
    const std::size_t element = call.type.size;
    const auto first = [&](int b) { return count * static_cast<std::size_t>(b) / static_cast<std::size_t>(h); };
    const auto length = [&](int b) { return static_cast<int>(first(b + 1) - first(b)); };
    const int right = (r + 1) % h, left = (r + h - 1) % h;
    MPI_Datatype type = call.args.datatype;
    // Reduce-scatter: at step k, send block r-k (reduced by k+1 members so far), receive block r-k-1 and add ours.
    // After h-1 steps this rank holds block r+1 reduced over every member.
    for (int k = 0; k + 1 < h; ++k) {
        const int send = (r - k + h) % h, recv = (r - k - 1 + 2 * h) % h;
        const int rc = PMPI_Sendrecv(data + first(send) * element, length(send), type, right, kRingTag, scratch,
                                     length(recv), type, left, kRingTag, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        char* block = data + first(recv) * element;
        const void* sources[2] = {block, scratch};
        call.nary(block, sources, 2, static_cast<std::size_t>(length(recv)));
        charge::reduce(static_cast<std::size_t>(length(recv)) * element);  // the SMPI build's (sim_charge.h)
    }
    // Allgather: pass the reduced blocks on around the ring, each received straight into its place.
    for (int k = 0; k + 1 < h; ++k) {
        const int send = (r + 1 - k + h) % h, recv = (r - k + h) % h;
        const int rc = PMPI_Sendrecv(data + first(send) * element, length(send), type, right, kRingTag,
                                     data + first(recv) * element, length(recv), type, left, kRingTag, comm,
                                     MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

// log2 h exchanges of the whole vector where MPICH 4.0.2's blocking allreduce takes reduce-scatter + allgather (2 log2 h
// latencies) from 16 bytes and Open MPI 4.1's takes a reduce then a broadcast (2 log2 h in a row) at 256 ranks and more
// below 4 KiB: for the small vectors this step is given, latency is the cost (docs/scale.md "Small calls at hundreds of
// nodes"). The members' order is the communicator's (the nodes' order), and each exchange joins two contiguous
// blocks of members: reducing the lower block's vector first gives both partners the same bits, so every member ends
// with the same result, the same on every rerun of the same layout.
int doubling_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch) {
    int h = 1, r = 0;
    PMPI_Comm_size(comm, &h);
    PMPI_Comm_rank(comm, &r);
    if (h < 2 || count == 0) return MPI_SUCCESS;
    const std::size_t bytes = count * call.type.size;
    // a latency-path vector or a partition of one chunk: far below 2 GiB
    const Whole whole{static_cast<int>(bytes), MPI_BYTE};
    const Fold fold(h);
    int rc = MPI_SUCCESS;
    if (fold_in(fold, r, data, count, call, comm, scratch, whole, kDoublingTag, &rc)) return rc;
    const int number = fold.number(r);
    for (int distance = 1; distance < fold.pof2 && rc == MPI_SUCCESS; distance *= 2) {
        const int partner_number = number ^ distance;
        const int partner = fold.member(partner_number);
        rc = PMPI_Sendrecv(data, whole.units, MPI_BYTE, partner, kDoublingTag, scratch, whole.units, MPI_BYTE,
                           partner, kDoublingTag, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) break;
        // The lower-numbered partner's vector first: both compute the same bits.
        const bool from_lower = partner_number < number;
        const void* sources[2] = {from_lower ? scratch : data, from_lower ? data : scratch};
        call.nary(data, sources, 2, count);
        charge::reduce(bytes);
    }
    return fold_out(fold, r, data, comm, whole, kDoublingTag, rc);
}

// Reduce-scatter by recursive halving, then allgather by recursive doubling (Rabenseifner, seed 000 Table 1 RSA):
// 2 log2 pof2 exchanges that move 2n(pof2-1)/pof2 in all, where recursive doubling moves n log2 h. The vector is cut
// into pof2 blocks; at each halving step the lower-numbered partner keeps the lower half of the blocks both still
// hold and reduces its own half first, the higher one the upper half with its partner's first, so block b ends up
// reduced over every member in one order fixed by the layout, on member number b alone, and the allgather copies
// it to every member: every rank gets the same bits, call after call. A member count that is not a power of two
// folds pairs first and hands the result back at the end, as the doubling does.
int rabenseifner_allreduce(char* data, std::size_t count, const Call& call, MPI_Comm comm, char* scratch) {
    int h = 1, r = 0;
    PMPI_Comm_size(comm, &h);
    PMPI_Comm_rank(comm, &r);
    if (h < 2 || count == 0) return MPI_SUCCESS;
    const std::size_t element = call.type.size;
    MPI_Datatype type = call.args.datatype;
    const Fold fold(h);
    const Whole whole{static_cast<int>(count), type};  // the call's own count: an int
    int rc = MPI_SUCCESS;
    if (fold_in(fold, r, data, count, call, comm, scratch, whole, kRabenseifnerTag, &rc)) return rc;
    const int number = fold.number(r);
    const std::size_t blocks = static_cast<std::size_t>(fold.pof2);
    const auto first = [&](int b) { return count * static_cast<std::size_t>(b) / blocks; };
    const auto elements = [&](int lo, int hi) { return first(hi) - first(lo); };
    int lo = 0, hi = fold.pof2;  // the blocks this member still holds
    for (int half = fold.pof2 / 2; half >= 1 && rc == MPI_SUCCESS; half /= 2) {
        const bool lower = (number & half) == 0;
        const int partner = fold.member(number ^ half), mid = lo + half;
        const int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
        const int give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
        const std::size_t kept = elements(keep_lo, keep_hi);
        char* block = data + first(keep_lo) * element;
        rc = PMPI_Sendrecv(data + first(give_lo) * element, static_cast<int>(elements(give_lo, give_hi)), type, partner,
                           kRabenseifnerTag, scratch, static_cast<int>(kept), type, partner, kRabenseifnerTag, comm,
                           MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) break;
        const void* sources[2] = {lower ? block : scratch, lower ? scratch : block};
        call.nary(block, sources, 2, kept);
        charge::reduce(kept * element);
        lo = keep_lo, hi = keep_hi;
    }
    // Allgather: each step swaps the blocks held with the partner's adjacent ones, straight into their places.
    for (int span = 1; span < fold.pof2 && rc == MPI_SUCCESS; span *= 2) {
        const bool lower = (number & span) == 0;
        const int partner = fold.member(number ^ span);
        const int their_lo = lower ? hi : lo - span, their_hi = lower ? hi + span : lo;
        rc = PMPI_Sendrecv(data + first(lo) * element, static_cast<int>(elements(lo, hi)), type, partner,
                           kRabenseifnerTag, data + first(their_lo) * element,
                           static_cast<int>(elements(their_lo, their_hi)), type, partner, kRabenseifnerTag, comm,
                           MPI_STATUS_IGNORE);
        lo = lower ? lo : their_lo, hi = lower ? their_hi : hi;
    }
    return fold_out(fold, r, data, comm, whole, kRabenseifnerTag, rc);
}

int run_internode_step(InternodeStep step, char* data, std::size_t count, const Call& call, MPI_Comm comm,
                       char* scratch) {
    switch (step) {
    case InternodeStep::ring: return ring_allreduce(data, count, call, comm, scratch);
    case InternodeStep::doubling: return doubling_allreduce(data, count, call, comm, scratch);
    case InternodeStep::rabenseifner: return rabenseifner_allreduce(data, count, call, comm, scratch);
    case InternodeStep::library: break;
    }
    return PMPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), call.args.datatype, call.library_op, comm);
}

}  // namespace arshim
