// One SHARP group: the SHARP context and communicator ARShim creates over one set of leaders (node leaders, socket
// leaders, or every rank when each rank is alone on its node) of one ARShim communicator context, with its agreed
// capabilities, registrations, and the SHARP reductions the SHARP path runs on it.
//
// Creation is collective over the user's communicator and its outcome is agreed: every rank of the communicator
// learns the same `usable` and the same capabilities (AND of the members' masks, MIN of their limits), so every rank
// keeps taking the same path. Steps: agree that every rank loaded the library; leaders: sharp_coll_init (out-of-band
// collectives = PMPI_* on the leader communicator) and sharp_coll_caps_query, agree among leaders;
// sharp_coll_comm_init, agree among leaders; register ARShim-owned buffers; final agreement over the communicator.
// A leader whose step succeeded while another's failed undoes its own. A SHARP context per group (as NCCL's SHARP
// plugin has one per communicator): the out-of-band "world" of the context is the leader communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shim/paths/path_context.h"
#include "shim/sharp/lib.h"
#include "shim/sharp/regcache.h"

namespace arshim::sharp {

// Out-of-band collectives' context: the leader communicator.
struct OobContext {
    MPI_Comm comm = MPI_COMM_NULL;
};

struct GroupSpec {
    MPI_Comm leader_comm = MPI_COMM_NULL;  // this rank's leader communicator (MPI_COMM_NULL on non-leaders)
    bool leader = false;
    int local_rank = 0;                    // rank among this group's members on the same host
    int members = 0;                       // leaders in all (identical on every rank)
    bool local_ok = true;                  // the caller's own preparations succeeded on this rank
    std::vector<std::pair<const void*, std::size_t>> pins;  // ARShim-owned memory to register (leaders)
    const char* name = "node";             // "node", "socket", "rank": for the log
};

struct Group {
    // --- identical on every rank of the communicator ---
    bool usable = false;
    int members = 0;
    uint64_t dtypes = 0, tag_dtypes = 0, ops = 0, features = 0;  // agreed capabilities (bit per enum value)
    uint64_t llt_max_bytes = 0;                                  // payload of one LLT operation
    // --- identical on the leaders (they change them only on agreed outcomes) ---
    bool sat_denied = false;      // the SAT lock was denied: no SAT on this group any more
    int lock_failed_calls = 0;    // consecutive calls whose SAT lock failed after the retries
    uint32_t sat_skip = 0;        // SAT-sized calls still to run on the host (back-off after lock failures)
    // --- leaders only ---
    bool leader = false;
    MPI_Comm leader_comm = MPI_COMM_NULL;  // not owned
    const Api* api = nullptr;
    ::sharp_coll_context* context = nullptr;
    ::sharp_coll_comm* comm = nullptr;
    OobContext oob;
    RegCache cache;
    std::vector<void*> pinned;  // handles of GroupSpec::pins, same order

    bool has(uint64_t mask, int bit) const { return (mask >> bit) & 1u; }
    // Handle of the registered ARShim-owned memory (GroupSpec::pins[0]); nullptr when it could not be registered
    // (then the group has no SAT, the only aggregation that needs it).
    void* pinned_mr() const { return pinned.empty() ? nullptr : pinned.front(); }
};

// Creates `group` (collective over ctx.comm; see above). Logs once why creation failed, naming the SHARP error.
void create_group(PathContext& ctx, Group& group, const GroupSpec& spec);
// Releases the group's SHARP resources (leaders; local: no collective). Idempotent.
void destroy_group(Group& group);

// ---- reductions ----

enum class Aggregation : uint8_t { llt, sat };

// Outcome of a set of SHARP operations, worst first when agreed: ok < lock (SAT lock not obtained, may retry) <
// denied (SAT lock not permitted) < error.
enum class Status : int { ok = 0, lock = 1, denied = 2, error = 3 };

struct Outcome {
    Status status = Status::ok;
    int rc = 0;  // the SHARP return code behind a failure (the most negative when agreed)
};

struct Element {
    ::sharp_datatype dtype;
    ::sharp_datatype tag;
    ::sharp_reduce_op op;
    std::size_t size;  // bytes per element (the MPI extent)
};

// One side of a reduction: memory, and whether it is the user's (registered through the cache) or ARShim's
// (`mr` already registered).
struct Buffer {
    const void* ptr;
    void* mr;       // ARShim-owned: its handle; user memory: nullptr
    bool user;
};

// Reduces `count` elements from `in` into `out` (they may be the same memory) on the group, as operations of at
// most the aggregation's limit: LLT pieces non-blocking, a few in flight; SAT pieces one at a time (a group has one
// streaming operation outstanding). Every leader posts the same operations whatever happens locally (a failed
// piece does not stop the others: all members must keep taking part), so the outcome is only this rank's: agree()
// it. `bounce` (ARShim-owned, `bounce_bytes`, registered) carries a SAT piece whose user memory cannot be
// registered.
Outcome reduce(Group& group, Aggregation aggregation, const Element& element, Buffer in, Buffer out,
               std::size_t count, const Buffer* bounce, std::size_t bounce_bytes);

// Agrees an outcome among the leaders (PMPI_Allreduce MAX on the leader communicator): the worst status, and the
// SHARP code behind it.
Outcome agree(const Group& group, Outcome mine);

// Largest elements per operation for the aggregation (identical on the leaders).
std::size_t piece_elements(const Group& group, Aggregation aggregation, std::size_t element_size,
                           std::size_t cap_bytes);

}  // namespace arshim::sharp
