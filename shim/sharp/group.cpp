#include "shim/sharp/group.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>

#include "policy/text.h"
#include "shim/base/log.h"
#include "shim/stats/trace.h"
#include "shim/stats/sharp_counts.h"

namespace arshim::sharp {

namespace {

// ---- out-of-band collectives over PMPI on the leader communicator (0 = success) ----
extern "C" int oob_bcast(void* context, void* buffer, int len, int root) {
    auto* oob = static_cast<OobContext*>(context);
    return PMPI_Bcast(buffer, len, MPI_BYTE, root, oob->comm) == MPI_SUCCESS ? 0 : -1;
}
extern "C" int oob_barrier(void* context) {
    auto* oob = static_cast<OobContext*>(context);
    return PMPI_Barrier(oob->comm) == MPI_SUCCESS ? 0 : -1;
}
extern "C" int oob_gather(void* context, int root, void* sbuf, void* rbuf, int len) {
    auto* oob = static_cast<OobContext*>(context);
    return PMPI_Gather(sbuf, len, MPI_BYTE, rbuf, len, MPI_BYTE, root, oob->comm) == MPI_SUCCESS ? 0 : -1;
}

// Stages of creation, for the log (a failure's stage is agreed with MIN of its negated value).
enum Stage : int { kNone = 0, kLibrary = 1, kInit = 2, kCaps = 3, kCommInit = 4, kLocal = 5 };
const char* stage_text(int stage) {
    switch (stage) {
    case kLibrary: return "library not loaded on every rank";
    case kInit: return "sharp_coll_init failed";
    case kCaps: return "sharp_coll_caps_query failed";
    case kCommInit: return "sharp_coll_comm_init failed";
    case kLocal: return "shared-memory setup failed";
    default: return "failed";
    }
}

// Leader agreement of a success flag (MIN over the leader communicator).
bool leaders_agree(MPI_Comm leader_comm, bool ok) {
    int flag = ok ? 1 : 0;
    PMPI_Allreduce(MPI_IN_PLACE, &flag, 1, MPI_INT, MPI_MIN, leader_comm);
    return flag == 1;
}

uint64_t make_job_id(MPI_Comm leader_comm, uint64_t salt) {
    uint64_t id = 0;
    int rank = 0;
    PMPI_Comm_rank(leader_comm, &rank);
    if (rank == 0) {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        uint64_t h = 1469598103934665603ull;
        for (const char* c = host; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
        const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
        id = h ^ (static_cast<uint64_t>(getpid()) << 32) ^ static_cast<uint64_t>(now) ^ salt * 0x9E3779B97F4A7C15ull;
    }
    PMPI_Bcast(&id, 1, MPI_UINT64_T, 0, leader_comm);
    return id;
}

}  // namespace

void create_group(PathContext& ctx, Group& g, const GroupSpec& spec) {
    const Library& lib = library(*ctx.settings);
    g.members = spec.members;
    g.leader = spec.leader;
    g.leader_comm = spec.leader_comm;

    // 1. Every rank has the library (and its own preparations): agreed before any leader calls into it, because
    //    sharp_coll_init is collective over the leaders.
    int first[2] = {lib.api != nullptr ? 1 : 0, spec.local_ok ? 1 : 0};
    PMPI_Allreduce(MPI_IN_PLACE, first, 2, MPI_INT, MPI_MIN, ctx.comm);
    if (first[0] == 0 || first[1] == 0) {
        g.usable = false;
        if (first[0] == 0) {
            if (ctx.rank == 0) {
                const std::string detail = lib.api == nullptr ? printable(lib.error, 300) : "missing on other ranks";
                if (lib.mode == Mode::on)
                    warn_missing(lib, detail.c_str());
                else if (log::first_time("sharp-missing-info"))
                    log::info("SHARP library {} not loaded ({}): sharp-routed calls run native", printable(lib.file, 200),
                              detail);
            }
        } else {
            if (ctx.rank == 0) count(Counter::group_failures);  // group events: once per communicator
            if (ctx.rank == 0 && log::first_time("sharp-group-local")) {
                log::warn("SHARP group ({} leaders) not created: {}; sharp-routed calls on that communicator run "
                          "native", spec.name, stage_text(kLocal));
                trace::event("sharp_warning", {{"problem", "group_not_created"}, {"leaders", spec.name},
                                               {"stage", stage_text(kLocal)}});
            }
        }
        return;
    }

    int stage = kNone;
    int code = 0;
    int reg_code = 0;  // registration failure (not a creation failure: no SAT)
    ::sharp_coll_caps caps{};
    if (spec.leader) {
        const Api& api = *lib.api;
        g.api = lib.api;
        g.oob.comm = spec.leader_comm;
        int leader_rank = 0, leader_size = 0;
        PMPI_Comm_rank(spec.leader_comm, &leader_rank);
        PMPI_Comm_size(spec.leader_comm, &leader_size);
        int thread_level = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&thread_level);

        // 2. Context: its out-of-band world is the leader communicator.
        ::sharp_coll_init_spec init{};
        init.job_id = make_job_id(spec.leader_comm, ctx.stats_id);
        init.world_rank = leader_rank;
        init.world_size = leader_size;
        init.progress_func = nullptr;
        init.group_channel_idx = 0;
        init.config = *api.default_config;
        init.oob_colls.bcast = oob_bcast;
        init.oob_colls.barrier = oob_barrier;
        init.oob_colls.gather = oob_gather;
        init.world_local_rank = spec.local_rank;
        init.enable_thread_support = thread_level == MPI_THREAD_MULTIPLE ? 1 : 0;
        init.oob_ctx = &g.oob;
        int rc = api.init(&init, &g.context);
        if (rc != 0) {
            stage = kInit;
            code = rc;
            g.context = nullptr;
        } else if ((rc = api.caps_query(g.context, &caps)) != 0) {
            stage = kCaps;
            code = rc;
        }
        if (!leaders_agree(spec.leader_comm, stage == kNone)) {
            if (stage == kNone) stage = kInit;  // someone else's failure; ours is only for the log
        }
        // 3. Group over all leaders.
        if (stage == kNone) {
            std::vector<uint32_t> world_ranks(static_cast<std::size_t>(leader_size));
            for (int r = 0; r < leader_size; ++r) world_ranks[static_cast<std::size_t>(r)] = static_cast<uint32_t>(r);
            ::sharp_coll_comm_init_spec group_spec{};
            group_spec.rank = leader_rank;
            group_spec.size = leader_size;
            group_spec.oob_ctx = &g.oob;
            group_spec.group_world_ranks = world_ranks.data();
            rc = api.comm_init(g.context, &group_spec, &g.comm);
            if (rc != 0) {
                stage = kCommInit;
                code = rc;
                g.comm = nullptr;
            }
            if (!leaders_agree(spec.leader_comm, stage == kNone) && stage == kNone) stage = kCommInit;
        }
        // 4. ARShim-owned buffers, registered once. Only streaming aggregation needs registered memory, so a
        //    registration failure takes SAT away from the group (agreed below) and leaves LLT.
        if (stage == kNone) {
            g.cache.attach(g.api, g.context);
            for (const auto& [ptr, bytes] : spec.pins) {
                int rc_reg = 0;
                void* mr = g.cache.owned(ptr, bytes, &rc_reg);
                if (mr == nullptr) {
                    reg_code = rc_reg != 0 ? rc_reg : SHARP_COLL_ERROR;
                    break;
                }
                g.pinned.push_back(mr);
            }
        }
    }

    // 5. Final agreement over the communicator: outcome and capabilities (non-leaders contribute neutral values).
    long long mins[5] = {stage == kNone ? 1 : 0, code, -stage, LLONG_MAX, reg_code};
    unsigned long long masks[4] = {~0ull, ~0ull, ~0ull, ~0ull};
    if (spec.leader && stage == kNone) {
        masks[0] = caps.support_mask.dtypes;
        masks[1] = caps.support_mask.tag_dtypes;
        masks[2] = caps.support_mask.reduce_ops;
        masks[3] = caps.support_mask.feature_mask;
        if (reg_code != 0) masks[3] &= ~static_cast<unsigned long long>(SHARP_FEATURE_SAT);
        const long long per_ost = caps.resources.user_data_per_ost > 0 ? caps.resources.user_data_per_ost
                                                                        : static_cast<long long>(kLltDefaultBytes);
        mins[3] = per_ost * std::max(1, caps.resources.osts_per_group);
    }
    PMPI_Allreduce(MPI_IN_PLACE, mins, 5, MPI_LONG_LONG, MPI_MIN, ctx.comm);
    PMPI_Allreduce(MPI_IN_PLACE, masks, 4, MPI_UNSIGNED_LONG_LONG, MPI_BAND, ctx.comm);
    if (mins[0] != 1) {
        destroy_group(g);
        g.usable = false;
        if (ctx.rank == 0) count(Counter::group_failures);
        if (ctx.rank == 0 && log::first_time("sharp-group-failed")) {
            const std::string why = mins[1] != 0 && lib.api != nullptr
                                        ? lib.api->describe(static_cast<int>(mins[1]))
                                        : std::string("no SHARP error code");
            const auto line = fmt::format("SHARP group ({} leaders, {} members) not created: {}: {}; sharp-routed "
                                          "calls on that communicator run native",
                                          spec.name, spec.members, stage_text(static_cast<int>(-mins[2])), why);
            if (lib.mode == Mode::on) {
                log::warn("{}", line);
                trace::event("sharp_warning", {{"problem", "group_not_created"}, {"leaders", spec.name},
                                               {"stage", stage_text(static_cast<int>(-mins[2]))}, {"error", why}});
            } else {
                log::info("{}", line);
            }
        }
        return;
    }
    if (mins[4] != 0) {
        if (ctx.rank == 0) count(Counter::reg_failures);
        if (ctx.rank == 0 && log::first_time("sharp-register-failed")) {
            const auto line = fmt::format("SHARP memory registration failed on a {} leader: {}; streaming "
                                          "aggregation (SAT) is off on that communicator, large calls take the "
                                          "host path",
                                          spec.name, lib.api->describe(static_cast<int>(mins[4])));
            if (lib.mode == Mode::on) {
                log::warn("{}", line);
                trace::event("sharp_warning", {{"problem", "registration_failed"}, {"leaders", spec.name}});
            } else {
                log::info("{}", line);
            }
        }
    }
    g.usable = true;
    g.dtypes = masks[0];
    g.tag_dtypes = masks[1];
    g.ops = masks[2];
    g.features = masks[3];
    g.llt_max_bytes = static_cast<uint64_t>(mins[3]);
    if (ctx.rank == 0) count(Counter::groups);
    if (ctx.rank == 0 && log::enabled(log::Level::debug))
        log::debug("SHARP group: {} {} leaders, LLT {} B per operation{}, SAT {}", spec.members, spec.name,
                   g.llt_max_bytes, (g.features & SHARP_FEATURE_LLT) ? "" : " (no LLT)",
                   (g.features & SHARP_FEATURE_SAT) ? "yes" : "no");
}

void destroy_group(Group& g) {
    if (g.api != nullptr) {
        g.cache.clear();
        if (g.comm != nullptr) g.api->comm_destroy(g.comm);
        if (g.context != nullptr) g.api->finalize(g.context);
    }
    g.pinned.clear();
    g.comm = nullptr;
    g.context = nullptr;
    g.api = nullptr;
    g.usable = false;
}

std::size_t piece_elements(const Group& g, Aggregation aggregation, std::size_t element_size, std::size_t cap_bytes) {
    const uint64_t limit = aggregation == Aggregation::llt ? g.llt_max_bytes : std::min<uint64_t>(kSatMaxBytes, cap_bytes);
    return static_cast<std::size_t>(limit / element_size);
}

namespace {

::sharp_coll_data_desc describe(const void* ptr, std::size_t bytes, void* mr) {
    ::sharp_coll_data_desc d{};
    d.type = SHARP_DATA_BUFFER;
    d.mem_type = SHARP_MEM_TYPE_HOST;
    d.buffer.ptr = const_cast<void*>(ptr);
    d.buffer.length = bytes;
    d.buffer.mem_handle = mr;
    return d;
}

Status classify(int rc) {
    if (rc == 0) return Status::ok;
    if (rc == SHARP_COLL_ELOCK_FAILED) return Status::lock;
    if (rc == SHARP_COLL_ELOCK_DENIED) return Status::denied;
    return Status::error;
}

void note(Outcome& out, int rc) {
    const Status s = classify(rc);
    if (static_cast<int>(s) > static_cast<int>(out.status)) {
        out.status = s;
        out.rc = rc;
    }
}

constexpr int kLltWindow = 4;  // LLT operations in flight

}  // namespace

Outcome reduce(Group& g, Aggregation aggregation, const Element& element, Buffer in, Buffer out, std::size_t count,
               const Buffer* bounce, std::size_t bounce_bytes) {
    Outcome outcome;
    const Api& api = *g.api;
    const std::size_t per = std::max<std::size_t>(1, piece_elements(g, aggregation, element.size,
                                                                    bounce != nullptr ? bounce_bytes : kSatMaxBytes));
    const char* src = static_cast<const char*>(in.ptr);
    char* dst = static_cast<char*>(const_cast<void*>(out.ptr));

    ::sharp_coll_reduce_spec spec{};
    spec.root = 0;
    spec.dtype = element.dtype;
    spec.tag_dtype = element.tag;
    spec.op = element.op;

    if (aggregation == Aggregation::llt) {
        // LLT copies through the library's own buffers: no memory handles (as UCC passes none for buffers below its
        // registration threshold). Handing one buffer's handle and not the other's is not a combination callers use.
        // A small window of operations in flight.
        spec.aggr_mode = SHARP_AGGREGATION_DATAGRAM;
        void* requests[kLltWindow] = {};
        int head = 0, live = 0;
        for (std::size_t first = 0; first < count; first += per) {
            const std::size_t n = std::min(per, count - first);
            const std::size_t bytes = n * element.size;
            if (live == kLltWindow) {
                note(outcome, api.req_wait(requests[head]));
                head = (head + 1) % kLltWindow;
                --live;
            }
            spec.sbuf_desc = describe(src + first * element.size, bytes, nullptr);
            spec.rbuf_desc = describe(dst + first * element.size, bytes, nullptr);
            spec.length = n;
            void* request = nullptr;
            const int rc = api.do_allreduce_nb(g.comm, &spec, &request);
            sharp::count(Counter::ops);
            if (rc != 0 || request == nullptr) {
                note(outcome, rc != 0 ? rc : SHARP_COLL_ERROR);
                continue;
            }
            requests[(head + live) % kLltWindow] = request;
            ++live;
        }
        for (; live > 0; --live, head = (head + 1) % kLltWindow) note(outcome, api.req_wait(requests[head]));
        return outcome;
    }

    // SAT: registered memory, one operation at a time.
    spec.aggr_mode = SHARP_AGGREGATION_STREAMING;
    for (std::size_t first = 0; first < count; first += per) {
        const std::size_t n = std::min(per, count - first);
        const std::size_t bytes = n * element.size;
        const char* s = src + first * element.size;
        char* d = dst + first * element.size;
        int reg_rc = 0;
        void* s_mr = in.user ? g.cache.user(s, bytes, &reg_rc) : in.mr;
        void* d_mr = s_mr != nullptr ? (out.user ? g.cache.user(d, bytes, &reg_rc) : out.mr) : nullptr;
        const bool bounced = (s_mr == nullptr || d_mr == nullptr) && bounce != nullptr && bytes <= bounce_bytes;
        char* b = bounced ? static_cast<char*>(const_cast<void*>(bounce->ptr)) : nullptr;
        if (bounced) {
            sharp::count(Counter::reg_bounced);
            // Unregistrable user memory: through ARShim's registered buffer, so this rank still takes part.
            std::memcpy(b, s, bytes);
            spec.sbuf_desc = describe(b, bytes, bounce->mr);
            spec.rbuf_desc = describe(b, bytes, bounce->mr);
        } else {
            spec.sbuf_desc = describe(s, bytes, s_mr);
            spec.rbuf_desc = describe(d, bytes, d_mr);
        }
        spec.length = n;
        const int rc = api.do_allreduce(g.comm, &spec);
        sharp::count(Counter::ops);
        note(outcome, rc);
        if (rc == 0 && bounced) std::memcpy(d, b, bytes);
    }
    g.cache.end_call();
    return outcome;
}

Outcome agree(const Group& g, Outcome mine) {
    // status * 64 + |code|: MAX gives the worst status, and the most negative code among those.
    int value = static_cast<int>(mine.status) * 64 + std::min(63, -std::min(0, mine.rc));
    PMPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, g.leader_comm);
    return {static_cast<Status>(value / 64), -(value % 64)};
}

}  // namespace arshim::sharp
