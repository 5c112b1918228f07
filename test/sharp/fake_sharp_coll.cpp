// TEST CODE ONLY. A software stand-in for NVIDIA's libsharp_coll.so, built as build/test/sharp/libsharp_coll.so and
// loaded by ARShim through ARSHIM_SHARP_LIB=<full path>. It implements the declarations ARShim uses
// (shim/sharp/declarations.h) without any network hardware and without MPI: every reduction is computed through
// the out-of-band collectives the caller passed to sharp_coll_init (gather every member's vector to member 0,
// reduce there in member order, broadcast the result), exactly as the real library only ever talks to its peers
// through its own transport.
//
// It enforces the real library's observable rules, so that ARShim's handling of them is exercised:
//   - LLT: one operation carries at most user_data_per_ost x osts_per_group bytes (the caps report both);
//   - SAT: at most 1 GiB per operation, both buffers covered by live memory registrations, one SAT lock per tree
//     (taken per operation by the group's root process; a non-blocking SAT operation holds it until completed);
//   - datatypes and ops: those its capabilities report (no PROD; MINLOC/MAXLOC only on {float,int} and {int,int}
//     with an INT tag); anything else is refused;
//   - registrations: dereg of an unknown handle, registrations still live at finalize, a handle whose memory was
//     unmapped since registration (seen through UCX's memory events when libucm is loaded) are misuse. A stale
//     handle behaves as the hardware would: the result goes to the old pages, i.e. is lost.
// Misuse (a caller bug, not an injected fault) is printed on stderr and counted: fake_sharp_stat("misuse").
//
// Fault injection by environment (docs/sharp.md): FAKE_SHARP_FAIL_INIT, FAKE_SHARP_FAIL_CAPS,
// FAKE_SHARP_FAIL_COMM_INIT, FAKE_SHARP_FAIL_ALLREDUCE_N, FAKE_SHARP_FAIL_RANK, FAKE_SHARP_FAIL_CODE,
// FAKE_SHARP_REFUSE_SAT_LOCK, FAKE_SHARP_REFUSE_SAT_LOCK_COUNT, FAKE_SHARP_DENY_SAT_LOCK, FAKE_SHARP_NO_SAT,
// FAKE_SHARP_NO_LLT, FAKE_SHARP_LLT_PAYLOAD, FAKE_SHARP_OSTS, FAKE_SHARP_FAIL_REG, FAKE_SHARP_FAIL_REG_AFTER,
// FAKE_SHARP_NO_DTYPES, FAKE_SHARP_VERBOSE. A failing member still takes part in the operation's out-of-band
// exchange (the others complete; only its own call reports the error), so faults never hang the job by themselves.
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "shim/sharp/declarations.h"
#include "test/sharp/fake_sharp_reduce.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using fake_sharp::combine_any;
using fake_sharp::dtype_size;

// ---------------------------------------------------------------------------------------------------------------
// Settings

long env_long(const char* name, long fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 0) : fallback;
}

struct Settings {
    bool fail_init, fail_caps, fail_comm_init, fail_reg, refuse_sat_lock, deny_sat_lock, no_sat, no_llt, verbose;
    long fail_allreduce_n, fail_rank, fail_code, refuse_sat_lock_count, llt_payload, osts, fail_reg_after;
    uint64_t no_dtypes;  // bits of enum sharp_datatype removed from the capabilities
};

const Settings& settings() {
    static const Settings s = [] {
        Settings r{};
        r.fail_init = env_long("FAKE_SHARP_FAIL_INIT", 0) != 0;
        r.fail_caps = env_long("FAKE_SHARP_FAIL_CAPS", 0) != 0;
        r.fail_comm_init = env_long("FAKE_SHARP_FAIL_COMM_INIT", 0) != 0;
        r.fail_reg = env_long("FAKE_SHARP_FAIL_REG", 0) != 0;
        r.fail_reg_after = env_long("FAKE_SHARP_FAIL_REG_AFTER", -1);
        r.refuse_sat_lock = env_long("FAKE_SHARP_REFUSE_SAT_LOCK", 0) != 0;
        r.deny_sat_lock = env_long("FAKE_SHARP_DENY_SAT_LOCK", 0) != 0;
        r.no_sat = env_long("FAKE_SHARP_NO_SAT", 0) != 0;
        r.no_llt = env_long("FAKE_SHARP_NO_LLT", 0) != 0;
        r.verbose = env_long("FAKE_SHARP_VERBOSE", 0) != 0;
        r.fail_allreduce_n = env_long("FAKE_SHARP_FAIL_ALLREDUCE_N", 0);
        r.fail_rank = env_long("FAKE_SHARP_FAIL_RANK", -1);
        r.fail_code = env_long("FAKE_SHARP_FAIL_CODE", SHARP_COLL_ERROR);
        r.refuse_sat_lock_count = env_long("FAKE_SHARP_REFUSE_SAT_LOCK_COUNT", 0);
        r.llt_payload = env_long("FAKE_SHARP_LLT_PAYLOAD", 256);
        r.osts = env_long("FAKE_SHARP_OSTS", 8);
        if (const char* list = std::getenv("FAKE_SHARP_NO_DTYPES")) {  // comma-separated enum sharp_datatype values
            for (const char* p = list; *p;) {
                char* end = nullptr;
                const long v = std::strtol(p, &end, 10);
                if (end == p) break;
                if (v >= 0 && v < 64) r.no_dtypes |= uint64_t{1} << v;
                p = *end == ',' ? end + 1 : end;
            }
        }
        return r;
    }();
    return s;
}

constexpr uint64_t kSatMaxBytes = uint64_t{1} << 30;

// ---------------------------------------------------------------------------------------------------------------
// Statistics (queried by the tests through fake_sharp_stat)

enum Stat { kInits, kComms, kLltOps, kSatOps, kLockRefusals, kInjected, kMisuse, kStaleUses, kRegistrations,
            kLiveRegistrations, kStatCount };
const char* const kStatNames[kStatCount] = {"inits", "comms", "llt_ops", "sat_ops", "lock_refusals", "injected",
                                            "misuse", "stale_uses", "registrations", "live_registrations"};
std::atomic<long long> g_stats[kStatCount];

void bump(Stat s, long long n = 1) { g_stats[s].fetch_add(n, std::memory_order_relaxed); }

void say(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char* fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "fake_sharp[%d]: %s\n", static_cast<int>(getpid()), line);
}

void misuse(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void misuse(const char* fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    bump(kMisuse);
    std::fprintf(stderr, "fake_sharp[%d]: MISUSE: %s\n", static_cast<int>(getpid()), line);
}

// ---------------------------------------------------------------------------------------------------------------
// Registrations: a fixed table, so that the unmap callback (any thread, possibly inside malloc) needs no lock and
// no allocation.

constexpr int kMaxRegs = 4096;
struct Registration {
    std::atomic<int> state{0};  // 0 free, 1 live, 2 live but its memory was unmapped since (stale)
    std::atomic<uintptr_t> start{0}, end{0};
    void* owner = nullptr;      // the context
};
Registration g_regs[kMaxRegs];
std::mutex g_reg_mutex;  // reg/dereg only (never the callback)

struct UcmVmEvent {
    void* address;
    std::size_t size;
};
void on_unmap(int, void* event, void*) {
    const auto* vm = static_cast<const UcmVmEvent*>(event);
    const uintptr_t lo = reinterpret_cast<uintptr_t>(vm->address), hi = lo + vm->size;
    for (Registration& r : g_regs) {
        if (r.state.load(std::memory_order_acquire) != 1) continue;
        if (r.start.load(std::memory_order_relaxed) < hi && lo < r.end.load(std::memory_order_relaxed)) {
            int expected = 1;
            r.state.compare_exchange_strong(expected, 2);
        }
    }
}
void watch_unmaps() {
    static std::once_flag once;
    std::call_once(once, [] {
        void* ucm = dlopen("libucm.so.0", RTLD_NOW | RTLD_NOLOAD);
        if (ucm == nullptr) return;
        using Set = int (*)(int, int, void (*)(int, void*, void*), void*);
        auto set = reinterpret_cast<Set>(dlsym(ucm, "ucm_set_event_handler"));
        if (set != nullptr) set(1 << 17 /* UCM_EVENT_VM_UNMAPPED */, 1001, on_unmap, nullptr);
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Objects

struct Context {
    uint64_t job_id = 0;
    int world_rank = 0, world_size = 0;
    sharp_coll_out_of_band_colls oob{};
    void* oob_ctx = nullptr;
    int comms = 0;
};

std::atomic<bool> g_tree_locked{false};  // "one SAT lock per tree": the trees this process is the root of

struct Comm {
    Context* ctx = nullptr;
    int rank = 0, size = 0;
    void* oob_ctx = nullptr;
    long ops = 0;             // allreduce operations of this group (the same count on every member)
    long sat_locks = 0;       // SAT lock requests of this group
    int outstanding = 0;      // requests not yet completed
};

struct Request {
    Comm* comm;
    int status;
    bool holds_lock;
};

bool has_bit(uint64_t mask, int bit) { return bit >= 0 && bit < 64 && ((mask >> bit) & 1u); }

uint64_t caps_dtypes() {
    uint64_t m = 0;
    for (int t : {SHARP_DTYPE_UNSIGNED, SHARP_DTYPE_INT, SHARP_DTYPE_UNSIGNED_LONG, SHARP_DTYPE_LONG,
                  SHARP_DTYPE_FLOAT, SHARP_DTYPE_DOUBLE, SHARP_DTYPE_UNSIGNED_SHORT, SHARP_DTYPE_SHORT,
                  SHARP_DTYPE_UINT8, SHARP_DTYPE_INT8})
        m |= uint64_t{1} << t;
    return m & ~settings().no_dtypes;
}
uint64_t caps_ops() {
    uint64_t m = 0;
    for (int o : {SHARP_OP_MAX, SHARP_OP_MIN, SHARP_OP_SUM, SHARP_OP_LAND, SHARP_OP_BAND, SHARP_OP_LOR, SHARP_OP_BOR,
                  SHARP_OP_LXOR, SHARP_OP_BXOR, SHARP_OP_MAXLOC, SHARP_OP_MINLOC})
        m |= uint64_t{1} << o;
    return m;
}
uint64_t llt_max_bytes() {
    const Settings& s = settings();
    return static_cast<uint64_t>(s.llt_payload > 0 ? s.llt_payload : 1) * static_cast<uint64_t>(s.osts > 0 ? s.osts : 1);
}

// ---------------------------------------------------------------------------------------------------------------
// One allreduce operation

// A handle covering [ptr, ptr + bytes): 1 ok, 0 invalid (misuse), 2 stale (memory unmapped since registration).
int check_handle(void* handle, const void* ptr, std::size_t bytes, const char* which) {
    if (handle == nullptr) {
        misuse("SAT %s buffer %p without a memory handle", which, ptr);  // only asked for SAT
        return 0;
    }
    auto* r = static_cast<Registration*>(handle);
    if (r < g_regs || r >= g_regs + kMaxRegs) {
        misuse("%s memory handle %p is not a registration", which, handle);
        return 0;
    }
    const int state = r->state.load(std::memory_order_acquire);
    const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    if (state == 0) {
        misuse("%s memory handle %p was deregistered", which, handle);
        return 0;
    }
    if (p < r->start.load() || p + bytes > r->end.load()) {
        misuse("%s buffer [%p, +%zu) outside its registration [%#lx, %#lx)", which, ptr, bytes,
               static_cast<unsigned long>(r->start.load()), static_cast<unsigned long>(r->end.load()));
        return 0;
    }
    return state == 2 ? 2 : 1;
}

struct Header {
    int32_t status;      // decided by member 0
    int32_t fail_member; // member whose own call fails (-1: none, -2: all)
};

// Validates the request locally (identical arguments on every member give the same answer), then exchanges and
// reduces. Returns the member's status; `holds_lock` reports a SAT lock this member (the root) keeps for a
// non-blocking operation.
int allreduce(Comm* comm, sharp_coll_reduce_spec* spec, bool nonblocking, bool* holds_lock) {
    *holds_lock = false;
    const Settings& s = settings();
    if (comm == nullptr || spec == nullptr) {
        misuse("allreduce without a group or spec");
        return SHARP_COLL_EINVAL;
    }
    const int dtype = spec->dtype, op = spec->op;
    const bool loc = op == SHARP_OP_MINLOC || op == SHARP_OP_MAXLOC;
    const std::size_t esize = loc ? 8 : dtype_size(dtype);
    const std::size_t bytes = spec->length * esize;
    int local = SHARP_COLL_SUCCESS;
    bool sat = spec->aggr_mode == SHARP_AGGREGATION_STREAMING;
    if (spec->aggr_mode == SHARP_AGGREGATION_NONE) sat = !s.no_sat && bytes >= 16384;
    if (esize == 0 || !has_bit(caps_dtypes(), dtype) || !has_bit(caps_ops(), op) ||
        (loc && (spec->tag_dtype != SHARP_DTYPE_INT || (dtype != SHARP_DTYPE_FLOAT && dtype != SHARP_DTYPE_INT))) ||
        ((dtype == SHARP_DTYPE_FLOAT || dtype == SHARP_DTYPE_DOUBLE) && !loc &&
         (op == SHARP_OP_BAND || op == SHARP_OP_BOR || op == SHARP_OP_BXOR || op == SHARP_OP_LAND ||
          op == SHARP_OP_LOR || op == SHARP_OP_LXOR))) {
        misuse("unsupported datatype %d / op %d / tag %d", dtype, op, spec->tag_dtype);
        local = SHARP_COLL_ENOT_SUPP;
    } else if (spec->sbuf_desc.type != SHARP_DATA_BUFFER || spec->rbuf_desc.type != SHARP_DATA_BUFFER ||
               spec->sbuf_desc.mem_type != SHARP_MEM_TYPE_HOST || spec->rbuf_desc.mem_type != SHARP_MEM_TYPE_HOST ||
               spec->sbuf_desc.buffer.length < bytes || spec->rbuf_desc.buffer.length < bytes ||
               spec->length == 0) {
        misuse("bad buffer descriptors (length %zu elements, %zu / %zu bytes)", spec->length,
               spec->sbuf_desc.buffer.length, spec->rbuf_desc.buffer.length);
        local = SHARP_COLL_EINVAL;
    } else if (!sat && (s.no_llt || bytes > llt_max_bytes())) {
        if (!s.no_llt) misuse("LLT operation of %zu bytes exceeds the payload limit %llu", bytes,
                              static_cast<unsigned long long>(llt_max_bytes()));
        local = s.no_llt ? SHARP_COLL_ENOT_SUPP : SHARP_COLL_EINVAL;
    } else if (sat && (s.no_sat || bytes > kSatMaxBytes)) {
        if (!s.no_sat) misuse("SAT operation of %zu bytes exceeds %llu", bytes,
                              static_cast<unsigned long long>(kSatMaxBytes));
        else misuse("SAT operation on a group without SAT");
        local = s.no_sat ? SHARP_COLL_ENOT_SUPP : SHARP_COLL_EINVAL;
    }
    int stale = 0;
    // SAT needs both buffers registered; LLT copies through the library's buffers, so a handle is optional there,
    // but one that is given must be valid.
    void* s_handle = spec->sbuf_desc.buffer.mem_handle;
    void* r_handle = spec->rbuf_desc.buffer.mem_handle;
    if (local == SHARP_COLL_SUCCESS && (sat || s_handle != nullptr || r_handle != nullptr)) {
        const int a = sat || s_handle ? check_handle(s_handle, spec->sbuf_desc.buffer.ptr, bytes, "source") : 1;
        const int b = sat || r_handle ? check_handle(r_handle, spec->rbuf_desc.buffer.ptr, bytes, "result") : 1;
        if (a == 0 || b == 0) local = SHARP_COLL_EINVAL;
        if (b == 2) stale = 1;
        if (a == 2 || b == 2) {
            bump(kStaleUses);
            say("STALE memory handle used: its memory was unmapped after registration (result lost)");
        }
    }
    const long op_number = ++comm->ops;

    // Out-of-band exchange: every member sends {its local status, its vector} to member 0.
    const std::size_t payload = sizeof(int32_t) + (local == SHARP_COLL_SUCCESS ? bytes : 0);
    // All members must send the same length: agree on it through the arguments (identical by contract).
    const std::size_t wire = sizeof(int32_t) + bytes;
    (void)payload;
    std::vector<char> mine(wire, 0);
    int32_t local32 = local;
    std::memcpy(mine.data(), &local32, sizeof local32);
    if (local == SHARP_COLL_SUCCESS) std::memcpy(mine.data() + sizeof(int32_t), spec->sbuf_desc.buffer.ptr, bytes);
    std::vector<char> all(comm->rank == 0 ? wire * static_cast<std::size_t>(comm->size) : 0);
    sharp_coll_out_of_band_colls& oob = comm->ctx->oob;
    if (oob.gather(comm->oob_ctx, 0, mine.data(), all.data(), static_cast<int>(wire)) != 0) return SHARP_COLL_EOOB;

    std::vector<char> reply(sizeof(Header) + bytes, 0);
    Header header{SHARP_COLL_SUCCESS, -1};
    if (comm->rank == 0) {
        // Decisions of the root, the same for every member.
        bool any_local = false;
        for (int m = 0; m < comm->size; ++m) {
            int32_t st = 0;
            std::memcpy(&st, all.data() + wire * static_cast<std::size_t>(m), sizeof st);
            if (st != 0) any_local = true;
        }
        if (sat) {
            ++comm->sat_locks;
            bool expected = false;
            if (s.deny_sat_lock) {
                header.status = SHARP_COLL_ELOCK_DENIED;
            } else if (s.refuse_sat_lock || comm->sat_locks <= s.refuse_sat_lock_count ||
                       !g_tree_locked.compare_exchange_strong(expected, true)) {
                header.status = SHARP_COLL_ELOCK_FAILED;
                bump(kLockRefusals);
            } else if (!nonblocking) {
                g_tree_locked.store(false);
            } else {
                *holds_lock = true;
            }
        }
        if (header.status == SHARP_COLL_SUCCESS && s.fail_allreduce_n > 0 && op_number == s.fail_allreduce_n) {
            header.fail_member = s.fail_rank >= 0 ? static_cast<int32_t>(s.fail_rank) : -2;
        }
        if (header.status == SHARP_COLL_SUCCESS && !any_local) {
            char* acc = reply.data() + sizeof(Header);
            std::memcpy(acc, all.data() + sizeof(int32_t), bytes);
            for (int m = 1; m < comm->size; ++m)
                combine_any(dtype, op, acc, all.data() + wire * static_cast<std::size_t>(m) + sizeof(int32_t),
                            spec->length);
        }
        if (any_local && header.status == SHARP_COLL_SUCCESS) header.status = SHARP_COLL_ERROR;
        if (*holds_lock && header.status != SHARP_COLL_SUCCESS) {
            g_tree_locked.store(false);
            *holds_lock = false;
        }
        std::memcpy(reply.data(), &header, sizeof header);
    }
    if (oob.bcast(comm->oob_ctx, reply.data(), static_cast<int>(reply.size()), 0) != 0) return SHARP_COLL_EOOB;
    std::memcpy(&header, reply.data(), sizeof header);

    if (local != SHARP_COLL_SUCCESS) return local;
    if (header.status == SHARP_COLL_ERROR) return SHARP_COLL_ERROR;  // another member's bad request
    if (header.status != SHARP_COLL_SUCCESS) return header.status;  // lock refused / denied: nothing written
    sat ? bump(kSatOps) : bump(kLltOps);
    const bool i_fail = header.fail_member == -2 || header.fail_member == comm->rank;
    if (i_fail) {
        bump(kInjected);
        std::memset(spec->rbuf_desc.buffer.ptr, 0xA5, bytes / 2);  // a partial, wrong write
        if (s.verbose) say("injected failure of allreduce %ld (member %d)", op_number, comm->rank);
        return static_cast<int>(s.fail_code);
    }
    if (!stale) std::memcpy(spec->rbuf_desc.buffer.ptr, reply.data() + sizeof(Header), bytes);
    if (s.verbose)
        say("allreduce %ld: %s, %zu x dtype %d op %d, member %d of %d", op_number, sat ? "SAT" : "LLT", spec->length,
            dtype, op, comm->rank, comm->size);
    return SHARP_COLL_SUCCESS;
}

bool fails_here(bool flag, int rank) {
    const Settings& s = settings();
    return flag && (s.fail_rank < 0 || s.fail_rank == rank);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// The API

FAKE_EXPORT const struct sharp_coll_config sharp_coll_default_config = {nullptr, 9999, -1, 0, {0, 0, 0}};

FAKE_EXPORT int sharp_coll_init(sharp_coll_init_spec* spec, sharp_coll_context** out) {
    if (spec == nullptr || out == nullptr || spec->oob_colls.bcast == nullptr || spec->oob_colls.barrier == nullptr ||
        spec->oob_colls.gather == nullptr || spec->world_size <= 0 || spec->world_rank < 0 ||
        spec->world_rank >= spec->world_size) {
        misuse("sharp_coll_init with an incomplete spec");
        return SHARP_COLL_EINVAL;
    }
    *out = nullptr;
    // The out-of-band exchange of a real job creation: every process must be there, with the same job id.
    if (spec->oob_colls.barrier(spec->oob_ctx) != 0) return SHARP_COLL_EOOB;
    std::vector<uint64_t> ids(static_cast<std::size_t>(spec->world_size));
    uint64_t mine = spec->job_id;
    if (spec->oob_colls.gather(spec->oob_ctx, 0, &mine, ids.data(), sizeof mine) != 0) return SHARP_COLL_EOOB;
    int consistent = 1;
    if (spec->world_rank == 0)
        for (uint64_t id : ids) consistent &= id == spec->job_id ? 1 : 0;
    if (spec->oob_colls.bcast(spec->oob_ctx, &consistent, sizeof consistent, 0) != 0) return SHARP_COLL_EOOB;
    if (!consistent) {
        misuse("sharp_coll_init: processes passed different job ids");
        return SHARP_COLL_EINVAL;
    }
    if (fails_here(settings().fail_init, spec->world_rank)) {
        bump(kInjected);
        return static_cast<int>(settings().fail_code);
    }
    auto* ctx = new Context;
    ctx->job_id = spec->job_id;
    ctx->world_rank = spec->world_rank;
    ctx->world_size = spec->world_size;
    ctx->oob = spec->oob_colls;
    ctx->oob_ctx = spec->oob_ctx;
    bump(kInits);
    *out = reinterpret_cast<sharp_coll_context*>(ctx);
    return SHARP_COLL_SUCCESS;
}

FAKE_EXPORT int sharp_coll_finalize(sharp_coll_context* context) {
    auto* ctx = reinterpret_cast<Context*>(context);
    if (ctx == nullptr) return SHARP_COLL_EINVAL;
    if (ctx->comms != 0) misuse("sharp_coll_finalize with %d groups not destroyed", ctx->comms);
    int live = 0;
    for (Registration& r : g_regs)
        if (r.owner == ctx && r.state.load() != 0) ++live;
    if (live != 0) misuse("sharp_coll_finalize with %d memory registrations still live", live);
    delete ctx;
    return SHARP_COLL_SUCCESS;
}

FAKE_EXPORT int sharp_coll_caps_query(sharp_coll_context* context, sharp_coll_caps* caps) {
    auto* ctx = reinterpret_cast<Context*>(context);
    if (ctx == nullptr || caps == nullptr) return SHARP_COLL_EINVAL;
    if (fails_here(settings().fail_caps, ctx->world_rank)) {
        bump(kInjected);
        return static_cast<int>(settings().fail_code);
    }
    std::memset(caps, 0, sizeof *caps);
    caps->sharp_pkt_version = 3;
    caps->support_mask.dtypes = caps_dtypes();
    caps->support_mask.tag_dtypes = uint64_t{1} << SHARP_DTYPE_INT;
    caps->support_mask.reduce_ops = caps_ops();
    caps->support_mask.feature_mask = (settings().no_llt ? 0 : SHARP_FEATURE_LLT) |
                                      (settings().no_sat ? 0 : SHARP_FEATURE_SAT | SHARP_FEATURE_SAT_EXCLUSIVE_LOCK);
    caps->resources.max_osts = 64;
    caps->resources.user_data_per_ost = static_cast<int>(settings().llt_payload);
    caps->resources.max_groups = 16;
    caps->resources.max_group_channels = 1;
    caps->resources.osts_per_group = static_cast<int>(settings().osts);
    return SHARP_COLL_SUCCESS;
}

FAKE_EXPORT int sharp_coll_comm_init(sharp_coll_context* context, sharp_coll_comm_init_spec* spec,
                                     sharp_coll_comm** out) {
    auto* ctx = reinterpret_cast<Context*>(context);
    if (ctx == nullptr || spec == nullptr || out == nullptr || spec->size <= 0 || spec->rank < 0 ||
        spec->rank >= spec->size || spec->group_world_ranks == nullptr) {
        misuse("sharp_coll_comm_init with an incomplete spec");
        return SHARP_COLL_EINVAL;
    }
    *out = nullptr;
    // Every member reports its world rank; member 0 checks them against the list.
    std::vector<int32_t> ranks(static_cast<std::size_t>(spec->size));
    int32_t mine = ctx->world_rank;
    if (ctx->oob.gather(spec->oob_ctx, 0, &mine, ranks.data(), sizeof mine) != 0) return SHARP_COLL_EOOB;
    int consistent = 1;
    if (spec->rank == 0)
        for (int m = 0; m < spec->size; ++m)
            consistent &= static_cast<uint32_t>(ranks[static_cast<std::size_t>(m)]) == spec->group_world_ranks[m] ? 1 : 0;
    if (ctx->oob.bcast(spec->oob_ctx, &consistent, sizeof consistent, 0) != 0) return SHARP_COLL_EOOB;
    if (!consistent) {
        misuse("sharp_coll_comm_init: group_world_ranks does not match the members' world ranks");
        return SHARP_COLL_EINVAL;
    }
    if (fails_here(settings().fail_comm_init, spec->rank)) {
        bump(kInjected);
        return static_cast<int>(settings().fail_code);
    }
    auto* comm = new Comm;
    comm->ctx = ctx;
    comm->rank = spec->rank;
    comm->size = spec->size;
    comm->oob_ctx = spec->oob_ctx;
    ++ctx->comms;
    bump(kComms);
    *out = reinterpret_cast<sharp_coll_comm*>(comm);
    return SHARP_COLL_SUCCESS;
}

FAKE_EXPORT int sharp_coll_comm_destroy(sharp_coll_comm* handle) {
    auto* comm = reinterpret_cast<Comm*>(handle);
    if (comm == nullptr) return SHARP_COLL_EINVAL;
    if (comm->outstanding != 0) misuse("sharp_coll_comm_destroy with %d requests outstanding", comm->outstanding);
    --comm->ctx->comms;
    delete comm;
    return SHARP_COLL_SUCCESS;
}

FAKE_EXPORT int sharp_coll_reg_mr(sharp_coll_context* context, void* buf, size_t size, void** mr) {
    if (context == nullptr || mr == nullptr || buf == nullptr || size == 0) {
        misuse("sharp_coll_reg_mr with bad arguments");
        return SHARP_COLL_EINVAL;
    }
    // FAIL_REG: every registration fails; FAIL_REG_AFTER=k: all after the first k of this process (so a caller's
    // own buffers registered at start succeed and the user buffers of later calls do not).
    static std::atomic<long> attempts{0};
    const long attempt = ++attempts;
    const long after = settings().fail_reg_after;
    if (settings().fail_reg || (after >= 0 && attempt > after)) {
        bump(kInjected);
        return SHARP_COLL_ENOMEM;
    }
    watch_unmaps();
    std::lock_guard<std::mutex> lock(g_reg_mutex);
    for (Registration& r : g_regs) {
        if (r.state.load() != 0) continue;
        r.owner = context;
        r.start.store(reinterpret_cast<uintptr_t>(buf));
        r.end.store(reinterpret_cast<uintptr_t>(buf) + size);
        r.state.store(1, std::memory_order_release);
        bump(kRegistrations);
        bump(kLiveRegistrations);
        *mr = &r;
        return SHARP_COLL_SUCCESS;
    }
    return SHARP_COLL_ENOMEM;
}

FAKE_EXPORT int sharp_coll_dereg_mr(sharp_coll_context* context, void* mr) {
    auto* r = static_cast<Registration*>(mr);
    std::lock_guard<std::mutex> lock(g_reg_mutex);
    if (r < g_regs || r >= g_regs + kMaxRegs || r->state.load() == 0 || r->owner != context) {
        misuse("sharp_coll_dereg_mr of an unknown handle %p", mr);
        return SHARP_COLL_EINVAL;
    }
    r->state.store(0, std::memory_order_release);
    r->owner = nullptr;
    bump(kLiveRegistrations, -1);
    return SHARP_COLL_SUCCESS;
}

FAKE_EXPORT int sharp_coll_do_allreduce(sharp_coll_comm* handle, sharp_coll_reduce_spec* spec) {
    bool holds = false;
    return allreduce(reinterpret_cast<Comm*>(handle), spec, false, &holds);
}

FAKE_EXPORT int sharp_coll_do_allreduce_nb(sharp_coll_comm* handle, sharp_coll_reduce_spec* spec, void** request) {
    if (request == nullptr) return SHARP_COLL_EINVAL;
    *request = nullptr;
    auto* comm = reinterpret_cast<Comm*>(handle);
    bool holds = false;
    const int rc = allreduce(comm, spec, true, &holds);
    if (rc == SHARP_COLL_ELOCK_FAILED || rc == SHARP_COLL_ELOCK_DENIED || rc == SHARP_COLL_EINVAL ||
        rc == SHARP_COLL_ENOT_SUPP || rc == SHARP_COLL_EOOB)
        return rc;  // refused at post time: no request
    // Completed already (the exchange is synchronous); the status is reported by the request, as a completion error.
    ++comm->outstanding;
    *request = new Request{comm, rc, holds};
    return SHARP_COLL_SUCCESS;
}

namespace {
int finish(void* handle) {
    auto* request = static_cast<Request*>(handle);
    if (request == nullptr) {
        misuse("request NULL");
        return SHARP_COLL_EINVAL;
    }
    const int status = request->status;
    if (request->holds_lock) g_tree_locked.store(false);
    --request->comm->outstanding;
    delete request;
    return status;
}
}  // namespace

FAKE_EXPORT int sharp_coll_req_test(void* handle) { return handle != nullptr ? 1 : 0; }
FAKE_EXPORT int sharp_coll_req_wait(void* handle) { return finish(handle); }
FAKE_EXPORT int sharp_coll_req_free(void* handle) {
    finish(handle);
    return SHARP_COLL_SUCCESS;
}

FAKE_EXPORT const char* sharp_coll_strerror(int error) {
    switch (error) {
    case SHARP_COLL_SUCCESS: return "Success";
    case SHARP_COLL_ERROR: return "Error (fake_sharp)";
    case SHARP_COLL_ENOT_SUPP: return "Not supported (fake_sharp)";
    case SHARP_COLL_ENOMEM: return "No memory (fake_sharp)";
    case SHARP_COLL_EINVAL: return "Invalid value (fake_sharp)";
    case SHARP_COLL_EOOB: return "Out-of-band collective error (fake_sharp)";
    case SHARP_COLL_ELOCK_FAILED: return "SAT lock failed (fake_sharp)";
    case SHARP_COLL_ELOCK_DENIED: return "SAT lock denied (fake_sharp)";
    case SHARP_COLL_ENO_RESOURCE: return "Resource not available (fake_sharp)";
    default: return "SHARP error (fake_sharp)";
    }
}

// Test-only query: the counters above by name ("llt_ops", "sat_ops", "misuse", ...); -1 for an unknown name.
FAKE_EXPORT long long fake_sharp_stat(const char* name) {
    for (int i = 0; i < kStatCount; ++i)
        if (name != nullptr && std::strcmp(name, kStatNames[i]) == 0) return g_stats[i].load();
    return -1;
}
