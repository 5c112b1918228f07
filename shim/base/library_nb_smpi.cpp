// The library's non-blocking allreduce in the SMPI build (library_nb.h), compiled instead of library_nb.cpp.
//
// SimGrid 3.32's MPI_Iallreduce follows none of the algorithms its selectors reimplement for the blocking call: every
// rank sends its whole vector to every other rank (src/smpi/colls/smpi_nbc_impl.cpp), which simulated 3-6x the
// blocking call at 16 x 1 and 15x at 64 x 1 (docs/scale.md), and it computes in-place calls of 64 KiB or more wrong.
// Here the non-blocking allreduce is a point-to-point schedule, as a real library's is, with the algorithms of the
// library the simulation stands for (SMPI's collective selector, base/flavor_smpi.cpp). MPICH 4.0.2: recursive
// doubling (every step exchanges the whole vector) for calls of at most 2 KiB or fewer elements than the largest power
// of two of ranks, else Rabenseifner's (a reduce-scatter by recursive halving, then an allgather by recursive
// doubling). A count of ranks that is not a power of two folds the first 2r ranks in pairs before and hands the result
// back after (r = ranks - the largest power of two below). Open MPI 4.1's libnbc (nbc_iallreduce.c, under the `ompi`
// selector): a binomial reduce to rank 0 and a binomial broadcast back (its allred_sched_diss) below 4 ranks, below
// 64 KiB, or with fewer elements than the largest power of two of ranks; else the same reduce-scatter + allgather.
// (libnbc also takes the binomial tree for in-place calls; ARShim stages in-place segments on Open MPI so that its
// calls are not in place there, docs/paths.md, and the SMPI build does not stage them: the rule here is the staged
// call's.)
//
// A schedule runs on a private split of the communicator (made on the first call on it, kept as an attribute), with a
// tag per call, so it never meets the user's messages or another schedule's. Its steps advance in library_waitall and
// library_waitany: each blocks in MPI_Waitany over the messages of every schedule in flight, and whichever message
// completes moves its schedule on (the next step's messages are posted at once), so the segments of a pipelined call
// overlap as on a real MPI, where the library's progress engine moves every outstanding operation. (MPI_Test is not
// used: SMPI charges 0.1 ms and more of simulated time for each unsuccessful one, smpi/test.) The handle a caller gets
// is a generalized request, completed when its schedule ends.
//
// Reductions go through MPI_Reduce_local with the op the path hands the library, so they are charged as the
// library's own are (shim/base/sim_charge.h: ARShim's op charges when reductions are charged). Each block is reduced
// in the order of its ranks (the lower ranks' values on the left), and every rank ends with the same bits.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "shim/base/flavor.h"
#include "shim/base/library_nb.h"

namespace arshim {

namespace {

constexpr int kTagBase = 0x4e42;   // on the private communicator only
constexpr uint32_t kTagSpan = 1u << 14;
constexpr int kShortBytes = 2048;  // MPICH's MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE
constexpr std::size_t kLibnbcTreeBelow = 65536;  // libnbc: the binomial tree below 64 KiB

// One step: send part of the vector to `peer` and receive from it, then fold what came in (reduce) or keep it.
struct Step {
    int peer = MPI_PROC_NULL;
    int send_first = 0, send_count = 0;
    int recv_first = 0, recv_count = 0;
    bool reduce = false;  // received into scratch and folded into the vector; else received into the vector itself
    bool peer_lower = false;  // the peer's ranks come before mine: their values on the left of the op
};

struct Schedule {
    MPI_Request handle = MPI_REQUEST_NULL;  // the caller's (generalized) request
    char* buffer = nullptr;
    int count = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Aint extent = 0;
    int tag = 0;
    std::vector<Step> steps;
    std::size_t next = 0;  // the step in flight (steps.size(): done)
    std::vector<char> scratch;
    MPI_Request pending[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc = MPI_SUCCESS;
    bool done = false;
};

// The schedules in flight on this rank (every rank has its own copy of ARShim under SMPI).
std::vector<std::unique_ptr<Schedule>> g_active;

// The private communicator of a communicator and its count of calls (an attribute of the communicator).
struct CommState {
    MPI_Comm priv = MPI_COMM_NULL;
    uint32_t calls = 0;
};
int g_keyval = MPI_KEYVAL_INVALID;

int delete_state(MPI_Comm, int, void* value, void*) {
    auto* state = static_cast<CommState*>(value);
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (state->priv != MPI_COMM_NULL && !finalized) PMPI_Comm_free(&state->priv);
    delete state;
    return MPI_SUCCESS;
}

// The communicator's state, made on its first call (collective: every rank of `comm` makes the same call).
CommState* comm_state(MPI_Comm comm, int* rc) {
    if (g_keyval == MPI_KEYVAL_INVALID &&
        (*rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state, &g_keyval, nullptr)) != MPI_SUCCESS)
        return nullptr;
    void* value = nullptr;
    int found = 0;
    if ((*rc = PMPI_Comm_get_attr(comm, g_keyval, &value, &found)) != MPI_SUCCESS) return nullptr;
    if (found) return static_cast<CommState*>(value);
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    auto state = std::make_unique<CommState>();
    if ((*rc = PMPI_Comm_split(comm, 0, rank, &state->priv)) != MPI_SUCCESS) return nullptr;
    if ((*rc = PMPI_Comm_set_attr(comm, g_keyval, state.get())) != MPI_SUCCESS) {
        PMPI_Comm_free(&state->priv);
        return nullptr;
    }
    return state.release();
}

int query_status(void*, MPI_Status* status) {
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    status->MPI_ERROR = MPI_SUCCESS;
    return MPI_SUCCESS;
}
int free_nothing(void*) { return MPI_SUCCESS; }
int cancel_nothing(void*, int) { return MPI_SUCCESS; }

// libnbc's binomial tree (Open MPI 4.1 allred_sched_diss): every rank folds in its subtree's vectors (the lower
// ranks' on the left) and sends the fold to its parent; rank 0 then holds the result and it comes back down the same
// tree, each rank receiving it from its parent and sending it to its children, nearest last.
std::vector<Step> plan_binomial(int rank, int size, int count) {
    std::vector<Step> steps;
    int mask = 1;
    for (; mask < size; mask <<= 1) {
        Step s;
        if (rank & mask) {  // my subtree is folded: to the parent
            s.peer = rank - mask;
            s.send_count = count;
            steps.push_back(s);
            break;
        }
        if (rank + mask < size) {  // a child's subtree, ranks above mine: on the right
            s.peer = rank + mask;
            s.recv_count = count;
            s.reduce = true;
            steps.push_back(s);
        }
    }
    if (rank != 0) {  // the result from the parent (the same peer as the reduce phase's last step)
        Step down;
        down.peer = rank - mask;
        down.recv_count = count;
        steps.push_back(down);
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (rank + mask >= size) continue;
        Step s;
        s.peer = rank + mask;
        s.send_count = count;
        steps.push_back(s);
    }
    return steps;
}

// The steps of this rank (`rank` of `size`) for `count` elements: under Open MPI's selector libnbc's binomial tree
// where it takes it, else MPICH's recursive doubling or Rabenseifner (which libnbc's reduce-scatter + allgather is).
std::vector<Step> plan(int rank, int size, int count, std::size_t type_size, bool libnbc) {
    std::vector<Step> steps;
    int pof2 = 1;
    while (pof2 * 2 <= size) pof2 *= 2;
    if (libnbc && (size < 4 || static_cast<std::size_t>(count) * type_size < kLibnbcTreeBelow || count < pof2))
        return plan_binomial(rank, size, count);
    const int rem = size - pof2;
    // The first 2 rem ranks fold in pairs: the even one sends its vector to the odd one and waits for the result.
    int newrank = rank - rem;
    if (rank < 2 * rem) {
        Step in;
        in.peer = rank % 2 == 0 ? rank + 1 : rank - 1;
        if (rank % 2 == 0) {
            in.send_count = count;
            newrank = -1;
        } else {
            in.recv_count = count;
            in.reduce = true;
            in.peer_lower = true;
            newrank = rank / 2;
        }
        steps.push_back(in);
    }
    const auto real_rank = [rem](int nr) { return nr < rem ? nr * 2 + 1 : nr + rem; };
    if (newrank >= 0) {
        const bool rabenseifner = static_cast<std::size_t>(count) * type_size > kShortBytes && count >= pof2;
        if (!rabenseifner) {
            for (int mask = 1; mask < pof2; mask <<= 1) {
                const int newdst = newrank ^ mask;
                Step s;
                s.peer = real_rank(newdst);
                s.send_count = s.recv_count = count;
                s.reduce = true;
                s.peer_lower = newdst < newrank;
                steps.push_back(s);
            }
        } else {
            // Blocks of count / pof2 elements (the last takes the rest); disps[b] is block b's first element.
            std::vector<int> disps(static_cast<std::size_t>(pof2) + 1);
            for (int b = 0; b < pof2; ++b) disps[b] = b * (count / pof2);
            disps[pof2] = count;
            const auto range = [&](Step& s, bool send, int from, int to) {
                (send ? s.send_first : s.recv_first) = disps[from];
                (send ? s.send_count : s.recv_count) = disps[to] - disps[from];
            };
            int send_idx = 0, recv_idx = 0, last_idx = pof2, mask = 1;
            while (mask < pof2) {  // reduce-scatter by recursive halving
                const int newdst = newrank ^ mask;
                Step s;
                s.peer = real_rank(newdst);
                s.reduce = true;
                s.peer_lower = newdst < newrank;
                if (newrank < newdst) {
                    send_idx = recv_idx + pof2 / (mask * 2);
                    range(s, true, send_idx, last_idx);
                    range(s, false, recv_idx, send_idx);
                } else {
                    recv_idx = send_idx + pof2 / (mask * 2);
                    range(s, true, send_idx, recv_idx);
                    range(s, false, recv_idx, last_idx);
                }
                steps.push_back(s);
                send_idx = recv_idx;
                mask <<= 1;
                if (mask < pof2) last_idx = recv_idx + pof2 / mask;
            }
            mask >>= 1;
            while (mask > 0) {  // allgather by recursive doubling
                const int newdst = newrank ^ mask;
                Step s;
                s.peer = real_rank(newdst);
                if (newrank < newdst) {
                    if (mask != pof2 / 2) last_idx = last_idx + pof2 / (mask * 2);
                    recv_idx = send_idx + pof2 / (mask * 2);
                    range(s, true, send_idx, recv_idx);
                    range(s, false, recv_idx, last_idx);
                } else {
                    recv_idx = send_idx - pof2 / (mask * 2);
                    range(s, true, send_idx, last_idx);
                    range(s, false, recv_idx, send_idx);
                }
                steps.push_back(s);
                if (newrank > newdst) send_idx = recv_idx;
                mask >>= 1;
            }
        }
    }
    if (rank < 2 * rem) {  // the folded pairs: the odd rank hands the result back
        Step out;
        out.peer = rank % 2 == 0 ? rank + 1 : rank - 1;
        if (rank % 2 == 0) out.recv_count = count;
        else out.send_count = count;
        steps.push_back(out);
    }
    return steps;
}

void finish(Schedule& s, int rc) {
    if (s.rc == MPI_SUCCESS) s.rc = rc;
    s.done = true;
    PMPI_Grequest_complete(s.handle);
}

// Posts the step in flight's messages; ends the schedule after its last step.
void post(Schedule& s) {
    while (s.next < s.steps.size()) {
        const Step& step = s.steps[s.next];
        int rc = MPI_SUCCESS;
        if (step.recv_count > 0) {
            char* into = step.reduce ? s.scratch.data() : s.buffer;
            rc = PMPI_Irecv(into + step.recv_first * s.extent, step.recv_count, s.type, step.peer, s.tag, s.comm,
                            &s.pending[0]);
        }
        if (rc == MPI_SUCCESS && step.send_count > 0)
            rc = PMPI_Isend(s.buffer + step.send_first * s.extent, step.send_count, s.type, step.peer, s.tag, s.comm,
                            &s.pending[1]);
        if (rc != MPI_SUCCESS) {
            PMPI_Waitall(2, s.pending, MPI_STATUSES_IGNORE);
            return finish(s, rc);
        }
        if (s.pending[0] != MPI_REQUEST_NULL || s.pending[1] != MPI_REQUEST_NULL) return;
        ++s.next;  // nothing to exchange with this peer (no elements)
    }
    finish(s, MPI_SUCCESS);
}

// The step in flight's messages are both complete: fold what came in, go on.
void step_done(Schedule& s) {
    const Step& step = s.steps[s.next];
    if (step.reduce && step.recv_count > 0) {
        char* mine = s.buffer + step.recv_first * s.extent;
        char* theirs = s.scratch.data() + step.recv_first * s.extent;
        int rc;
        if (step.peer_lower) {
            rc = PMPI_Reduce_local(theirs, mine, step.recv_count, s.type, s.op);  // theirs op mine, into mine
        } else {
            rc = PMPI_Reduce_local(mine, theirs, step.recv_count, s.type, s.op);  // mine op theirs, then mine
            std::memcpy(mine, theirs, static_cast<std::size_t>(step.recv_count) * static_cast<std::size_t>(s.extent));
        }
        if (rc != MPI_SUCCESS) return finish(s, rc);
    }
    ++s.next;
    post(s);
}

// Blocks until some message of a schedule in flight completes and moves that schedule on. False when none is in
// flight.
bool progress_one() {
    std::vector<MPI_Request> waiting;
    std::vector<std::pair<Schedule*, int>> owner;
    for (const auto& s : g_active)
        if (!s->done)
            for (int k = 0; k < 2; ++k)
                if (s->pending[k] != MPI_REQUEST_NULL) {
                    waiting.push_back(s->pending[k]);
                    owner.emplace_back(s.get(), k);
                }
    if (waiting.empty()) return false;
    int index = MPI_UNDEFINED;
    const int rc = PMPI_Waitany(static_cast<int>(waiting.size()), waiting.data(), &index, MPI_STATUS_IGNORE);
    if (index == MPI_UNDEFINED || index < 0) {
        // An error with no request named: every schedule in flight ends with it (nobody waits forever).
        for (const auto& s : g_active)
            if (!s->done) {
                PMPI_Waitall(2, s->pending, MPI_STATUSES_IGNORE);
                finish(*s, rc != MPI_SUCCESS ? rc : MPI_ERR_INTERN);
            }
        return true;
    }
    Schedule& s = *owner[static_cast<std::size_t>(index)].first;
    s.pending[owner[static_cast<std::size_t>(index)].second] = MPI_REQUEST_NULL;
    if (rc != MPI_SUCCESS) {
        PMPI_Waitall(2, s.pending, MPI_STATUSES_IGNORE);
        finish(s, rc);
    } else if (s.pending[0] == MPI_REQUEST_NULL && s.pending[1] == MPI_REQUEST_NULL) {
        step_done(s);
    }
    return true;
}

Schedule* schedule_of(MPI_Request handle) {
    for (const auto& s : g_active)
        if (s->handle == handle) return s.get();
    return nullptr;
}

// Completes a request whose schedule is done (or that is no schedule's): frees its handle and its schedule.
int complete(MPI_Request* request) {
    int rc = MPI_SUCCESS;
    const auto it = std::find_if(g_active.begin(), g_active.end(),
                                 [&](const std::unique_ptr<Schedule>& s) { return s->handle == *request; });
    if (it != g_active.end()) {
        rc = (*it)->rc;
        g_active.erase(it);
    }
    const int wait_rc = PMPI_Wait(request, MPI_STATUS_IGNORE);
    return rc != MPI_SUCCESS ? rc : wait_rc;
}

}  // namespace

int library_iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Request* request) {
    *request = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    CommState* const state = comm_state(comm, &rc);
    if (state == nullptr) return rc;
    auto s = std::make_unique<Schedule>();
    MPI_Aint lb = 0;
    if ((rc = PMPI_Type_get_extent(datatype, &lb, &s->extent)) != MPI_SUCCESS) return rc;
    int size = 1, rank = 0, type_size = 0;
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    PMPI_Type_size(datatype, &type_size);
    s->buffer = static_cast<char*>(recvbuf);
    s->count = count;
    s->type = datatype;
    s->op = op;
    s->comm = state->priv;
    s->tag = kTagBase + static_cast<int>(state->calls++ % kTagSpan);
    const std::size_t bytes = static_cast<std::size_t>(count) * static_cast<std::size_t>(s->extent);
    if (sendbuf != MPI_IN_PLACE && count > 0) std::memcpy(recvbuf, sendbuf, bytes);
    if (count > 0 && size > 1) {
        static const bool libnbc = std::strcmp(smpi_selector_flavor(), "openmpi") == 0;
        s->steps = plan(rank, size, count, static_cast<std::size_t>(type_size), libnbc);
        s->scratch.resize(bytes);
    }
    if ((rc = PMPI_Grequest_start(query_status, free_nothing, cancel_nothing, nullptr, &s->handle)) != MPI_SUCCESS)
        return rc;
    *request = s->handle;
    Schedule& mine = *s;
    g_active.push_back(std::move(s));
    post(mine);
    return mine.done ? mine.rc : MPI_SUCCESS;
}

int library_waitall(int count, MPI_Request* requests) {
    int rc = MPI_SUCCESS;
    for (int i = 0; i < count; ++i) {
        if (requests[i] == MPI_REQUEST_NULL) continue;
        for (Schedule* s = schedule_of(requests[i]); s != nullptr && !s->done;)
            if (!progress_one()) break;
        const int one = complete(&requests[i]);
        if (rc == MPI_SUCCESS) rc = one;
    }
    return rc;
}

int library_waitany(int count, MPI_Request* requests, int* index) {
    *index = MPI_UNDEFINED;
    for (;;) {
        bool any = false;
        for (int i = 0; i < count; ++i) {
            if (requests[i] == MPI_REQUEST_NULL) continue;
            any = true;
            const Schedule* s = schedule_of(requests[i]);
            if (s == nullptr || s->done) {
                *index = i;
                return complete(&requests[i]);
            }
        }
        if (!any || !progress_one()) return MPI_SUCCESS;
    }
}

}  // namespace arshim
