// The fake MPI of the shim's unit tests (test/fake_mpi/fake_mpi.h): MPICH's ABI, a world of forked processes.
#include "fake_mpi.h"

#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <complex>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

extern char** environ;

namespace fake_mpi {

namespace {

constexpr std::size_t kSlotBytes = 64 * 1024;   // one exchange round carries at most this much per rank
constexpr int kMaxCids = 160;                   // communicators made in one world (never reused)
constexpr std::size_t kRingBytes = 1 << 20;     // point-to-point: bytes in flight per (sender, receiver)
constexpr std::size_t kReportBytes = 32 * 1024;

struct alignas(64) Slot {
    std::atomic<uint64_t> seq[2];
    uint64_t total[2];
    uint64_t len[2];
    alignas(64) char data[2][kSlotBytes];
};

struct alignas(64) Ring {
    alignas(64) std::atomic<uint64_t> head;  // bytes written (the sender)
    alignas(64) std::atomic<uint64_t> tail;  // bytes consumed (the receiver)
    alignas(64) char buf[kRingBytes];
};

struct Report {
    uint32_t failures_len, notes_len;
    char failures[kReportBytes];
    char notes[kReportBytes];
};

struct Arena {
    std::atomic<int> next_cid;
    std::atomic<int> aborted;
    Report reports[kMaxRanks];
    Ring rings[kMaxRanks][kMaxRanks];  // [sender][receiver]
    Slot slots[kMaxCids][kMaxRanks];   // [communicator id][communicator rank]
};

Arena* g_arena = nullptr;
int g_world_rank = 0;
int g_world_size = 1;
bool g_initialized = false;
bool g_finalized = false;
int g_thread_level = MPI_THREAD_SINGLE;
Calls g_calls;

[[noreturn]] void die(const char* format, ...) {
    char line[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof line, format, args);
    va_end(args);
    std::fprintf(stderr, "fake MPI, rank %d: %s\n", g_world_rank, line);
    if (g_arena != nullptr) {
        Report& r = g_arena->reports[g_world_rank];
        const std::size_t n = std::min(std::strlen(line), kReportBytes - r.failures_len - 2);
        std::memcpy(r.failures + r.failures_len, line, n);
        r.failures_len += static_cast<uint32_t>(n);
        r.failures[r.failures_len++] = '\n';
        g_arena->aborted.store(1);
    }
    std::fflush(nullptr);
    std::exit(3);
}

void check_aborted() {
    if (g_arena != nullptr && g_arena->aborted.load(std::memory_order_relaxed) != 0) {
        std::fflush(nullptr);
        std::exit(4);
    }
}

// Waiting for another process: spin a little, then yield, then sleep briefly (ranks outnumber cores here).
struct Backoff {
    int n = 0;
    void operator()() {
        ++n;
        if ((n & 1023) == 0) check_aborted();
        if (n < 64) return;
        if (n < 2000) {
            sched_yield();
            return;
        }
        const timespec pause{0, 20000};
        nanosleep(&pause, nullptr);
    }
};

// ---------------------------------------------------------------- handles

struct Comm {
    int cid = 0;
    std::vector<int> world;  // comm rank -> world rank
    int rank = 0;
    uint64_t seq = 0;        // exchanges made on this communicator (the same on every member)
    std::vector<std::pair<int, void*>> attrs;
    MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
    int size() const { return static_cast<int>(world.size()); }
};
std::map<int, std::unique_ptr<Comm>> g_comms;
int g_next_comm = 0;

Comm* comm_of(MPI_Comm handle) {
    auto it = g_comms.find(handle);
    return it == g_comms.end() ? nullptr : it->second.get();
}

std::map<int, std::vector<int>> g_groups;  // group handle -> world ranks
int g_next_group = 0;

struct Keyval {
    MPI_Comm_delete_attr_function* del = nullptr;
    void* extra = nullptr;
};
std::map<int, Keyval> g_keyvals;
int g_next_keyval = 0;

struct UserOp {
    MPI_User_function* fn = nullptr;
    int commute = 1;
};
std::map<int, UserOp> g_ops;
int g_next_op = 0;

enum class Family { none, sint, uint, flt, cplx, boolean, byte, pair };
struct Type {
    Family family = Family::none;
    int size = 0;         // bytes of data
    MPI_Aint extent = 0;
    int combiner = MPI_COMBINER_NAMED;
    std::vector<int> ints;
    MPI_Datatype base = MPI_DATATYPE_NULL;  // derived: the type it is made of
    int base_count = 0;                     // contiguous: elements of base; 0: not reducible
};
std::map<int, Type> g_derived;
int g_next_type = 0;

Family named_family(MPI_Datatype t) {
    static const std::map<int, Family> families = {
        {MPI_CHAR, Family::sint}, {MPI_SIGNED_CHAR, Family::sint}, {MPI_UNSIGNED_CHAR, Family::uint},
        {MPI_BYTE, Family::byte}, {MPI_WCHAR, Family::sint}, {MPI_SHORT, Family::sint},
        {MPI_UNSIGNED_SHORT, Family::uint}, {MPI_INT, Family::sint}, {MPI_UNSIGNED, Family::uint},
        {MPI_LONG, Family::sint}, {MPI_UNSIGNED_LONG, Family::uint}, {MPI_LONG_LONG, Family::sint},
        {MPI_UNSIGNED_LONG_LONG, Family::uint}, {MPI_FLOAT, Family::flt}, {MPI_DOUBLE, Family::flt},
        {MPI_LONG_DOUBLE, Family::flt}, {MPI_INT8_T, Family::sint}, {MPI_INT16_T, Family::sint},
        {MPI_INT32_T, Family::sint}, {MPI_INT64_T, Family::sint}, {MPI_UINT8_T, Family::uint},
        {MPI_UINT16_T, Family::uint}, {MPI_UINT32_T, Family::uint}, {MPI_UINT64_T, Family::uint},
        {MPI_C_BOOL, Family::boolean}, {MPI_C_FLOAT_COMPLEX, Family::cplx}, {MPI_C_DOUBLE_COMPLEX, Family::cplx},
        {MPI_C_LONG_DOUBLE_COMPLEX, Family::cplx}, {MPI_AINT, Family::sint}, {MPI_OFFSET, Family::sint},
        {MPI_COUNT, Family::sint}, {MPI_INTEGER, Family::sint}, {MPI_REAL, Family::flt},
        {MPI_DOUBLE_PRECISION, Family::flt}, {MPI_LOGICAL, Family::boolean}, {MPI_COMPLEX, Family::cplx},
        {MPI_DOUBLE_COMPLEX, Family::cplx}, {MPI_INTEGER1, Family::sint}, {MPI_INTEGER2, Family::sint},
        {MPI_INTEGER4, Family::sint}, {MPI_INTEGER8, Family::sint}, {MPI_REAL4, Family::flt},
        {MPI_REAL8, Family::flt}, {MPI_CXX_BOOL, Family::boolean}, {MPI_CXX_FLOAT_COMPLEX, Family::cplx},
        {MPI_CXX_DOUBLE_COMPLEX, Family::cplx}, {MPI_PACKED, Family::byte}, {MPI_CHARACTER, Family::byte},
        {MPI_2INT, Family::pair}, {MPI_FLOAT_INT, Family::pair}, {MPI_DOUBLE_INT, Family::pair},
        {MPI_LONG_INT, Family::pair}, {MPI_SHORT_INT, Family::pair}, {MPI_LONG_DOUBLE_INT, Family::pair},
    };
    auto it = families.find(t);
    return it == families.end() ? Family::none : it->second;
}

// The type of a handle, or nullptr for one the fake does not know.
const Type* type_of(MPI_Datatype t) {
    static std::map<int, Type> named;
    if (auto it = g_derived.find(t); it != g_derived.end()) return &it->second;
    if (auto it = named.find(t); it != named.end()) return &it->second;
    const Family family = named_family(t);
    if (family == Family::none) return nullptr;
    Type type;
    type.family = family;
    type.base = t;
    type.base_count = 1;
    if (t == MPI_FLOAT_INT) type.size = 8, type.extent = 8;
    else if (t == MPI_DOUBLE_INT) type.size = 12, type.extent = 16;
    else if (t == MPI_LONG_INT) type.size = 12, type.extent = 16;
    else if (t == MPI_SHORT_INT) type.size = 6, type.extent = 8;
    else if (t == MPI_LONG_DOUBLE_INT) type.size = 20, type.extent = 32;
    else type.size = (t >> 8) & 0xff, type.extent = type.size;  // MPICH: a builtin handle carries its size
    return &named.emplace(t, type).first->second;
}

// ---------------------------------------------------------------- reductions

template <typename T>
bool arith(MPI_Op op, const void* in_v, void* inout_v, std::size_t n, bool integral) {
    const T* in = static_cast<const T*>(in_v);
    T* io = static_cast<T*>(inout_v);
    for (std::size_t i = 0; i < n; ++i) {
        const T a = in[i], b = io[i];
        if (op == MPI_SUM) io[i] = a + b;
        else if (op == MPI_PROD) io[i] = a * b;
        else if (op == MPI_MAX) io[i] = a > b ? a : b;
        else if (op == MPI_MIN) io[i] = a < b ? a : b;
        else if (op == MPI_LAND) io[i] = (a != T(0)) && (b != T(0));
        else if (op == MPI_LOR) io[i] = (a != T(0)) || (b != T(0));
        else if (op == MPI_LXOR) io[i] = (a != T(0)) != (b != T(0));
        else if (op == MPI_REPLACE) io[i] = a;
        else if (op == MPI_NO_OP) {
        } else if (!integral) return false;
        else if constexpr (std::is_integral_v<T>) {
            if (op == MPI_BAND) io[i] = a & b;
            else if (op == MPI_BOR) io[i] = a | b;
            else if (op == MPI_BXOR) io[i] = a ^ b;
            else return false;
        } else return false;
    }
    return true;
}

template <typename T>
bool complex_arith(MPI_Op op, const void* in_v, void* inout_v, std::size_t n) {
    const T* in = static_cast<const T*>(in_v);
    T* io = static_cast<T*>(inout_v);
    for (std::size_t i = 0; i < n; ++i) {
        if (op == MPI_SUM) io[i] = in[i] + io[i];
        else if (op == MPI_PROD) io[i] = in[i] * io[i];
        else if (op == MPI_REPLACE) io[i] = in[i];
        else if (op != MPI_NO_OP) return false;
    }
    return true;
}

template <typename V>
bool loc(MPI_Op op, const char* in, char* io, std::size_t n, std::size_t extent) {
    for (std::size_t i = 0; i < n; ++i) {
        V a, b;
        int ia, ib;
        std::memcpy(&a, in + i * extent, sizeof a);
        std::memcpy(&ia, in + i * extent + sizeof(V), sizeof ia);
        std::memcpy(&b, io + i * extent, sizeof b);
        std::memcpy(&ib, io + i * extent + sizeof(V), sizeof ib);
        bool take_a;
        if (op == MPI_MAXLOC) take_a = a > b || (a == b && ia < ib);
        else if (op == MPI_MINLOC) take_a = a < b || (a == b && ia < ib);
        else return false;
        if (take_a) std::memcpy(io + i * extent, in + i * extent, sizeof(V) + sizeof(int));
    }
    return true;
}

// inout = in op inout, `count` elements of `datatype` (MPI's order for a user function: in is the earlier rank).
int combine(const void* in, void* inout, std::size_t count, MPI_Datatype datatype, MPI_Op op) {
    const Type* type = type_of(datatype);
    if (type == nullptr || type->base_count == 0) return MPI_ERR_TYPE;
    if (auto user = g_ops.find(op); user != g_ops.end()) {
        ++g_calls.user_op_calls;
        int n = static_cast<int>(count);
        MPI_Datatype t = datatype;
        user->second.fn(const_cast<void*>(in), inout, &n, &t);
        return MPI_SUCCESS;
    }
    if (type->base != datatype) return combine(in, inout, count * static_cast<std::size_t>(type->base_count),
                                               type->base, op);
    const std::size_t n = count;
    const int size = type->size;
    bool ok = false;
    switch (type->family) {
    case Family::sint:
        if (size == 1) ok = arith<int8_t>(op, in, inout, n, true);
        else if (size == 2) ok = arith<int16_t>(op, in, inout, n, true);
        else if (size == 4) ok = arith<int32_t>(op, in, inout, n, true);
        else if (size == 8) ok = arith<int64_t>(op, in, inout, n, true);
        break;
    case Family::uint:
    case Family::byte:
        if (type->family == Family::byte && op != MPI_BAND && op != MPI_BOR && op != MPI_BXOR && op != MPI_REPLACE &&
            op != MPI_NO_OP)
            return MPI_ERR_OP;
        if (size == 1) ok = arith<uint8_t>(op, in, inout, n, true);
        else if (size == 2) ok = arith<uint16_t>(op, in, inout, n, true);
        else if (size == 4) ok = arith<uint32_t>(op, in, inout, n, true);
        else if (size == 8) ok = arith<uint64_t>(op, in, inout, n, true);
        break;
    case Family::flt:
        if (size == 4) ok = arith<float>(op, in, inout, n, false);
        else if (size == 8) ok = arith<double>(op, in, inout, n, false);
        else if (size == 16) ok = arith<long double>(op, in, inout, n, false);
        break;
    case Family::cplx:
        if (size == 8) ok = complex_arith<std::complex<float>>(op, in, inout, n);
        else if (size == 16) ok = complex_arith<std::complex<double>>(op, in, inout, n);
        else if (size == 32) ok = complex_arith<std::complex<long double>>(op, in, inout, n);
        break;
    case Family::boolean:
        if (op != MPI_LAND && op != MPI_LOR && op != MPI_LXOR && op != MPI_REPLACE && op != MPI_NO_OP)
            return MPI_ERR_OP;
        if (size == 1) ok = arith<uint8_t>(op, in, inout, n, true);
        else if (size == 4) ok = arith<uint32_t>(op, in, inout, n, true);
        break;
    case Family::pair: {
        const auto* a = static_cast<const char*>(in);
        auto* b = static_cast<char*>(inout);
        const std::size_t extent = static_cast<std::size_t>(type->extent);
        if (datatype == MPI_2INT) ok = loc<int>(op, a, b, n, extent);
        else if (datatype == MPI_FLOAT_INT) ok = loc<float>(op, a, b, n, extent);
        else if (datatype == MPI_DOUBLE_INT) ok = loc<double>(op, a, b, n, extent);
        else if (datatype == MPI_LONG_INT) ok = loc<long>(op, a, b, n, extent);
        break;
    }
    default:
        break;
    }
    return ok ? MPI_SUCCESS : MPI_ERR_OP;
}

// ---------------------------------------------------------------- point to point

// A message goes through the ring in fragments of at most kFragmentBytes (the receiver drains the ring while the
// sender waits for room, so a message of any size passes); `last` marks its final fragment.
constexpr std::size_t kFragmentBytes = kRingBytes / 4;
struct Header {
    int cid, src, tag, last;
    uint64_t len;
};
struct Message {
    int cid, src, tag;
    std::vector<char> data;
};
std::deque<Message> g_unexpected;
std::map<int, Message> g_partial;  // sender's world rank -> the message whose fragments are arriving

std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

void ring_copy_out(const Ring& ring, uint64_t at, void* out, std::size_t n) {
    const std::size_t pos = static_cast<std::size_t>(at % kRingBytes);
    const std::size_t first = std::min(n, kRingBytes - pos);
    std::memcpy(out, ring.buf + pos, first);
    std::memcpy(static_cast<char*>(out) + first, ring.buf, n - first);
}
void ring_copy_in(Ring& ring, uint64_t at, const void* in, std::size_t n) {
    const std::size_t pos = static_cast<std::size_t>(at % kRingBytes);
    const std::size_t first = std::min(n, kRingBytes - pos);
    std::memcpy(ring.buf + pos, in, first);
    std::memcpy(ring.buf, static_cast<const char*>(in) + first, n - first);
}

// Moves every message sent to this rank out of the rings into the unexpected queue.
void progress() {
    if (g_arena == nullptr) return;
    for (int s = 0; s < g_world_size; ++s) {
        Ring& ring = g_arena->rings[s][g_world_rank];
        uint64_t tail = ring.tail.load(std::memory_order_relaxed);
        const uint64_t head = ring.head.load(std::memory_order_acquire);
        while (tail < head) {
            Header h;
            ring_copy_out(ring, tail, &h, sizeof h);
            Message& m = g_partial[s];
            m.cid = h.cid;
            m.src = h.src;
            m.tag = h.tag;
            const std::size_t at = m.data.size();
            m.data.resize(at + h.len);
            ring_copy_out(ring, tail + sizeof h, m.data.data() + at, h.len);
            tail += sizeof h + padded(h.len);
            if (h.last) {
                g_unexpected.push_back(std::move(m));
                g_partial.erase(s);
            }
        }
        ring.tail.store(tail, std::memory_order_release);
    }
}

void send_bytes(const Comm& c, int dest, int tag, const void* data, std::size_t len) {
    ++g_calls.sends;
    const int to = c.world.at(static_cast<std::size_t>(dest));
    if (to == g_world_rank) {
        const char* p = static_cast<const char*>(data);
        g_unexpected.push_back({c.cid, c.rank, tag, std::vector<char>(p, p + len)});
        return;
    }
    Ring& ring = g_arena->rings[g_world_rank][to];
    const char* bytes = static_cast<const char*>(data);
    std::size_t sent = 0;
    do {
        const std::size_t piece = std::min(kFragmentBytes, len - sent);
        const std::size_t need = sizeof(Header) + padded(piece);
        const uint64_t head = ring.head.load(std::memory_order_relaxed);
        Backoff wait;
        while (head + need - ring.tail.load(std::memory_order_acquire) > kRingBytes) {
            progress();  // drain what is sent to me meanwhile: two ranks sending to each other both get room
            wait();
        }
        const Header h{c.cid, c.rank, tag, sent + piece == len ? 1 : 0, piece};
        ring_copy_in(ring, head, &h, sizeof h);
        ring_copy_in(ring, head + sizeof h, bytes + sent, piece);
        ring.head.store(head + need, std::memory_order_release);
        sent += piece;
    } while (sent < len);
}

bool matches(const Message& m, int cid, int src, int tag) {
    return m.cid == cid && (src == MPI_ANY_SOURCE || m.src == src) && (tag == MPI_ANY_TAG || m.tag == tag);
}

void set_status(MPI_Status* status, int src, int tag, std::size_t bytes, bool cancelled = false) {
    if (status == MPI_STATUS_IGNORE) return;
    status->MPI_SOURCE = src;
    status->MPI_TAG = tag;
    status->MPI_ERROR = MPI_SUCCESS;
    status->count_lo = static_cast<int>(bytes);
    status->count_hi_and_cancelled = cancelled ? 1 : 0;
}

struct Request {
    bool recv = false;     // a receive not matched yet (else complete)
    bool cancelled = false;
    int cid = 0, src = 0, tag = 0;
    void* buf = nullptr;
    std::size_t capacity = 0;
    int got_src = MPI_ANY_SOURCE, got_tag = MPI_ANY_TAG;
    std::size_t got_bytes = 0;
};
std::map<int, Request> g_requests;
int g_next_request = 0;

MPI_Request new_request(const Request& r) {
    const int handle = static_cast<int>(0xac000000u) | (g_next_request++ & 0xffffff);
    g_requests[handle] = r;
    return handle;
}

// Completes a receive from the unexpected queue if a message matches.
bool try_complete(Request& r) {
    if (!r.recv) return true;
    for (auto it = g_unexpected.begin(); it != g_unexpected.end(); ++it) {
        if (!matches(*it, r.cid, r.src, r.tag)) continue;
        if (it->data.size() > r.capacity) die("a message of %zu bytes for a receive of %zu", it->data.size(), r.capacity);
        std::memcpy(r.buf, it->data.data(), it->data.size());
        r.got_src = it->src;
        r.got_tag = it->tag;
        r.got_bytes = it->data.size();
        r.recv = false;
        g_unexpected.erase(it);
        return true;
    }
    return false;
}

// Test: completes *request when it can (then MPI_REQUEST_NULL); true when complete.
bool test_one(MPI_Request* request, MPI_Status* status) {
    if (*request == MPI_REQUEST_NULL) {
        set_status(status, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
        return true;
    }
    auto it = g_requests.find(*request);
    if (it == g_requests.end()) die("an unknown request %#x", static_cast<unsigned>(*request));
    if (!try_complete(it->second)) return false;
    set_status(status, it->second.got_src, it->second.got_tag, it->second.got_bytes, it->second.cancelled);
    g_requests.erase(it);
    *request = MPI_REQUEST_NULL;
    return true;
}

MPI_Status* status_at(MPI_Status* statuses, int i) {
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : statuses + i;
}

// ---------------------------------------------------------------- collectives

// Every member's `len` bytes, in comm rank order, through the communicator's slots (several rounds when larger
// than a slot). Each round: write my piece into my slot's buffer (round parity), publish the round's sequence number,
// wait for every member's. A rank writes a buffer again two rounds later, when every member has published the round
// in between, i.e. has finished reading this one.
std::vector<std::vector<char>> gather_all(Comm& c, const void* mine, std::size_t len) {
    const int n = c.size();
    std::vector<std::vector<char>> all(static_cast<std::size_t>(n));
    const char* bytes = static_cast<const char*>(mine);
    if (n == 1) {
        all[0].assign(bytes, bytes + len);
        return all;
    }
    if (c.cid >= kMaxCids) die("more than %d communicators in one fake world", kMaxCids);
    std::vector<uint64_t> totals(static_cast<std::size_t>(n), 0);
    std::size_t rounds = 1;
    for (std::size_t round = 0; round < rounds; ++round) {
        const uint64_t seq = ++c.seq;
        const int b = static_cast<int>(seq & 1);
        Slot& me = g_arena->slots[c.cid][c.rank];
        const std::size_t offset = round * kSlotBytes;
        const std::size_t piece = offset < len ? std::min(kSlotBytes, len - offset) : 0;
        std::memcpy(me.data[b], bytes + offset, piece);
        me.len[b] = piece;
        me.total[b] = len;
        me.seq[b].store(seq, std::memory_order_release);
        for (int r = 0; r < n; ++r) {
            Slot& theirs = g_arena->slots[c.cid][r];
            Backoff wait;
            while (theirs.seq[b].load(std::memory_order_acquire) < seq) {
                progress();
                wait();
            }
            if (round == 0) {
                totals[static_cast<std::size_t>(r)] = theirs.total[b];
                all[static_cast<std::size_t>(r)].reserve(theirs.total[b]);
                rounds = std::max<std::size_t>(rounds, (theirs.total[b] + kSlotBytes - 1) / kSlotBytes);
            }
            all[static_cast<std::size_t>(r)].insert(all[static_cast<std::size_t>(r)].end(), theirs.data[b],
                                                    theirs.data[b] + theirs.len[b]);
        }
    }
    return all;
}

std::size_t type_bytes(MPI_Datatype t, MPI_Count count) {
    const Type* type = type_of(t);
    if (type == nullptr) die("an unknown datatype %#x", static_cast<unsigned>(t));
    return static_cast<std::size_t>(count) * static_cast<std::size_t>(type->extent);
}

int allreduce(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    ++g_calls.allreduce;
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    if (type_of(datatype) == nullptr) return MPI_ERR_TYPE;
    if (op == MPI_OP_NULL) return MPI_ERR_OP;
    if (count < 0) return MPI_ERR_COUNT;
    const std::size_t bytes = type_bytes(datatype, count);
    const void* mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    auto all = gather_all(*c, mine, bytes);
    // Predefined ops: rank order, ((rank 0 op rank 1) op rank 2)... (a predefined op's operands commute, bit for bit).
    // A user-defined op may not commute: rank 0 op (rank 1 op (...)), as its function computes inout = in op inout.
    std::vector<char> acc;
    if (g_ops.count(op) == 0) {
        acc = all.front();
        for (int r = 1; r < c->size(); ++r) {
            const int rc = combine(all[static_cast<std::size_t>(r)].data(), acc.data(),
                                   static_cast<std::size_t>(count), datatype, op);
            if (rc != MPI_SUCCESS) return rc;
        }
    } else {
        acc = all.back();
        for (int r = c->size() - 2; r >= 0; --r) {
            const int rc = combine(all[static_cast<std::size_t>(r)].data(), acc.data(),
                                   static_cast<std::size_t>(count), datatype, op);
            if (rc != MPI_SUCCESS) return rc;
        }
    }
    if (bytes > 0) std::memcpy(recvbuf, acc.data(), bytes);
    return MPI_SUCCESS;
}

int split(MPI_Comm parent, int color, int key, MPI_Comm* out) {
    Comm* c = comm_of(parent);
    if (c == nullptr) return MPI_ERR_COMM;
    const int mine[2] = {color, key};
    auto all = gather_all(*c, mine, sizeof mine);
    std::set<int> colors;
    for (const auto& v : all) {
        int col;
        std::memcpy(&col, v.data(), sizeof col);
        if (col != MPI_UNDEFINED) colors.insert(col);
    }
    int base = 0;
    if (c->rank == 0) base = g_arena != nullptr ? g_arena->next_cid.fetch_add(static_cast<int>(colors.size())) : 1;
    auto bases = gather_all(*c, &base, c->rank == 0 ? sizeof base : 0);
    std::memcpy(&base, bases[0].data(), sizeof base);
    if (color == MPI_UNDEFINED) {
        *out = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    std::vector<std::pair<int, int>> members;  // (key, parent rank)
    for (int r = 0; r < c->size(); ++r) {
        int v[2];
        std::memcpy(v, all[static_cast<std::size_t>(r)].data(), sizeof v);
        if (v[0] == color) members.push_back({v[1], r});
    }
    std::stable_sort(members.begin(), members.end());
    auto made = std::make_unique<Comm>();
    made->cid = base + static_cast<int>(std::distance(colors.begin(), colors.find(color)));
    for (std::size_t i = 0; i < members.size(); ++i) {
        made->world.push_back(c->world[static_cast<std::size_t>(members[i].second)]);
        if (members[i].second == c->rank) made->rank = static_cast<int>(i);
    }
    const int handle = static_cast<int>(0x84000000u) | (g_next_comm++ & 0xffffff);
    g_comms[handle] = std::move(made);
    ++g_calls.comms_created;
    *out = handle;
    return MPI_SUCCESS;
}

void delete_attributes(MPI_Comm handle) {
    Comm* c = comm_of(handle);
    if (c == nullptr) return;
    const auto attrs = c->attrs;
    c->attrs.clear();
    for (auto it = attrs.rbegin(); it != attrs.rend(); ++it) {
        auto k = g_keyvals.find(it->first);
        if (k != g_keyvals.end() && k->second.del != nullptr) k->second.del(handle, it->first, it->second, k->second.extra);
    }
}

void make_world(int rank, int size) {
    g_world_rank = rank;
    g_world_size = size;
    auto world = std::make_unique<Comm>();
    world->cid = 0;
    for (int r = 0; r < size; ++r) world->world.push_back(r);
    world->rank = rank;
    g_comms[MPI_COMM_WORLD] = std::move(world);
    auto self = std::make_unique<Comm>();
    self->cid = -1;
    self->world = {rank};
    g_comms[MPI_COMM_SELF] = std::move(self);
}

}  // namespace

// ---------------------------------------------------------------- the launcher

bool Checks::check(bool ok, const std::string& what) {
    if (!ok) {
        ++failed_;
        failures_ += "rank " + std::to_string(rank_) + ": " + what + "\n";
    }
    return ok;
}

const Calls& calls() { return g_calls; }

std::vector<Outcome> run(int ranks, const std::map<std::string, std::string>& env, const Body& body,
                         double timeout_s) {
    if (ranks < 1 || ranks > kMaxRanks) throw std::invalid_argument("fake_mpi::run: 1.." + std::to_string(kMaxRanks) + " ranks");
    void* memory = mmap(nullptr, sizeof(Arena), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error("fake_mpi::run: no shared mapping");
    auto* arena = static_cast<Arena*>(memory);  // zero-filled: every counter starts at 0
    arena->next_cid.store(1);
    std::fflush(nullptr);  // nothing buffered is written twice by the children
    std::vector<pid_t> pids;
    for (int rank = 0; rank < ranks; ++rank) {
        const pid_t pid = fork();
        if (pid < 0) throw std::runtime_error("fake_mpi::run: fork failed");
        if (pid == 0) {
            std::vector<std::string> inherited;
            for (char** e = environ; *e != nullptr; ++e)
                if (std::strncmp(*e, "ARSHIM_", 7) == 0) inherited.emplace_back(*e, std::strchr(*e, '=') - *e);
            for (const std::string& name : inherited) unsetenv(name.c_str());
            for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
            g_arena = arena;
            make_world(rank, ranks);
            Checks checks(rank);
            body(rank, checks);
            Report& r = arena->reports[rank];
            const std::size_t f = std::min(checks.failures().size(), kReportBytes - r.failures_len);
            std::memcpy(r.failures + r.failures_len, checks.failures().data(), f);
            r.failures_len += static_cast<uint32_t>(f);
            const std::size_t n = std::min(checks.notes().size(), kReportBytes);
            std::memcpy(r.notes, checks.notes().data(), n);
            r.notes_len = static_cast<uint32_t>(n);
            std::fflush(nullptr);
            std::exit(0);  // exit, not _exit: the coverage counters are written at exit
        }
        pids.push_back(pid);
    }
    std::vector<Outcome> outcomes(static_cast<std::size_t>(ranks));
    std::vector<bool> done(static_cast<std::size_t>(ranks), false);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int remaining = ranks;
    while (remaining > 0) {
        bool any = false;
        for (int rank = 0; rank < ranks; ++rank) {
            if (done[static_cast<std::size_t>(rank)]) continue;
            int status = 0;
            if (waitpid(pids[static_cast<std::size_t>(rank)], &status, WNOHANG) == pids[static_cast<std::size_t>(rank)]) {
                done[static_cast<std::size_t>(rank)] = true;
                --remaining;
                any = true;
                outcomes[static_cast<std::size_t>(rank)].exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            }
        }
        if (remaining > 0 && std::chrono::steady_clock::now() > deadline) {
            for (int rank = 0; rank < ranks; ++rank) {
                if (done[static_cast<std::size_t>(rank)]) continue;
                kill(pids[static_cast<std::size_t>(rank)], SIGKILL);
                waitpid(pids[static_cast<std::size_t>(rank)], nullptr, 0);
                outcomes[static_cast<std::size_t>(rank)].timed_out = true;
            }
            break;
        }
        if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    for (int rank = 0; rank < ranks; ++rank) {
        const Report& r = arena->reports[rank];
        outcomes[static_cast<std::size_t>(rank)].failures.assign(r.failures, r.failures_len);
        outcomes[static_cast<std::size_t>(rank)].notes.assign(r.notes, r.notes_len);
    }
    munmap(memory, sizeof(Arena));
    return outcomes;
}

std::string summary(const std::vector<Outcome>& outcomes) {
    std::string text;
    for (std::size_t rank = 0; rank < outcomes.size(); ++rank) {
        const Outcome& o = outcomes[rank];
        if (o.timed_out) text += "rank " + std::to_string(rank) + ": timed out\n";
        else if (o.exit_status != 0) text += "rank " + std::to_string(rank) + ": exit status " + std::to_string(o.exit_status) + "\n";
        text += o.failures;
    }
    return text;
}

}  // namespace fake_mpi

// ---------------------------------------------------------------- the MPI functions (MPICH's ABI)

using namespace fake_mpi;

extern "C" {

int PMPI_Init(int*, char***) {
    if (g_initialized) return MPI_ERR_OTHER;
    if (g_comms.empty()) make_world(0, 1);  // not started by fake_mpi::run: a world of one
    g_initialized = true;
    return MPI_SUCCESS;
}
int PMPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
    const int rc = PMPI_Init(argc, argv);
    g_thread_level = std::min(required, MPI_THREAD_MULTIPLE);
    if (provided != nullptr) *provided = g_thread_level;
    return rc;
}
int PMPI_Initialized(int* flag) { *flag = g_initialized ? 1 : 0; return MPI_SUCCESS; }
int PMPI_Finalized(int* flag) { *flag = g_finalized ? 1 : 0; return MPI_SUCCESS; }
int PMPI_Query_thread(int* provided) { *provided = g_thread_level; return MPI_SUCCESS; }
int PMPI_Finalize(void) {
    // As MPICH: MPI_COMM_SELF's attributes are deleted first, while everything still works; then the world's.
    delete_attributes(MPI_COMM_SELF);
    delete_attributes(MPI_COMM_WORLD);
    if (Comm* world = comm_of(MPI_COMM_WORLD)) gather_all(*world, nullptr, 0);
    g_finalized = true;
    return MPI_SUCCESS;
}
int MPI_Finalize(void) { return PMPI_Finalize(); }
int PMPI_Abort(MPI_Comm, int errorcode) { die("MPI_Abort(%d)", errorcode); }
int MPI_Abort(MPI_Comm comm, int errorcode) { return PMPI_Abort(comm, errorcode); }
int PMPI_Pcontrol(const int, ...) { return MPI_SUCCESS; }
double PMPI_Wtime(void) {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
double MPI_Wtime(void) { return PMPI_Wtime(); }
int PMPI_Get_library_version(char* version, int* resultlen) {
    const char* text = std::getenv("FAKE_MPI_LIBRARY_VERSION");
    if (text == nullptr) text = "MPICH Version:\t4.0.2\nMPICH Release date:\tThu May 26 15:51:45 CDT 2022\n"
                                "(the fake MPI of ARShim's unit tests, test/fake_mpi)";
    std::snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING, "%s", text);
    *resultlen = static_cast<int>(std::strlen(version));
    return MPI_SUCCESS;
}
int MPI_Get_library_version(char* version, int* resultlen) { return PMPI_Get_library_version(version, resultlen); }

// --- communicators
int PMPI_Comm_rank(MPI_Comm comm, int* rank) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    *rank = c->rank;
    return MPI_SUCCESS;
}
int MPI_Comm_rank(MPI_Comm comm, int* rank) { return PMPI_Comm_rank(comm, rank); }
int PMPI_Comm_size(MPI_Comm comm, int* size) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    *size = c->size();
    return MPI_SUCCESS;
}
int MPI_Comm_size(MPI_Comm comm, int* size) { return PMPI_Comm_size(comm, size); }
int PMPI_Comm_test_inter(MPI_Comm comm, int* flag) {
    if (comm_of(comm) == nullptr) return MPI_ERR_COMM;
    *flag = 0;
    return MPI_SUCCESS;
}
int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out) { return split(comm, color, key, out); }
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out) { return split(comm, color, key, out); }
int PMPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info, MPI_Comm* out) {
    // Every rank of a fake world shares this machine's memory: one node.
    return split(comm, type == MPI_COMM_TYPE_SHARED ? 0 : MPI_UNDEFINED, key, out);
}
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out) {
    return PMPI_Comm_split_type(comm, type, key, info, out);
}
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* out) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    return split(comm, 0, c->rank, out);
}
int PMPI_Comm_free(MPI_Comm* comm) {
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF || comm_of(*comm) == nullptr) return MPI_ERR_COMM;
    delete_attributes(*comm);
    g_comms.erase(*comm);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}
int MPI_Comm_free(MPI_Comm* comm) { return PMPI_Comm_free(comm); }
int PMPI_Comm_group(MPI_Comm comm, MPI_Group* group) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    const int handle = static_cast<int>(0x88000000u) | (g_next_group++ & 0xffffff);
    g_groups[handle] = c->world;
    *group = handle;
    return MPI_SUCCESS;
}
int PMPI_Group_size(MPI_Group group, int* size) {
    auto it = g_groups.find(group);
    if (it == g_groups.end()) return MPI_ERR_GROUP;
    *size = static_cast<int>(it->second.size());
    return MPI_SUCCESS;
}
int PMPI_Group_translate_ranks(MPI_Group a, int n, const int* ranks, MPI_Group b, int* out) {
    auto ga = g_groups.find(a), gb = g_groups.find(b);
    if (ga == g_groups.end() || gb == g_groups.end()) return MPI_ERR_GROUP;
    for (int i = 0; i < n; ++i) {
        if (ranks[i] == MPI_PROC_NULL) {
            out[i] = MPI_PROC_NULL;
            continue;
        }
        if (ranks[i] < 0 || ranks[i] >= static_cast<int>(ga->second.size())) return MPI_ERR_RANK;
        const int world = ga->second[static_cast<std::size_t>(ranks[i])];
        auto at = std::find(gb->second.begin(), gb->second.end(), world);
        out[i] = at == gb->second.end() ? MPI_UNDEFINED : static_cast<int>(at - gb->second.begin());
    }
    return MPI_SUCCESS;
}
int PMPI_Group_free(MPI_Group* group) {
    g_groups.erase(*group);
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

// --- attributes and error handlers
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function*, MPI_Comm_delete_attr_function* del, int* keyval,
                            void* extra) {
    const int handle = static_cast<int>(0xa4000000u) | (g_next_keyval++ & 0xffffff);
    g_keyvals[handle] = {del, extra};
    *keyval = handle;
    return MPI_SUCCESS;
}
int PMPI_Comm_set_attr(MPI_Comm comm, int keyval, void* value) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    auto k = g_keyvals.find(keyval);
    if (k == g_keyvals.end()) return MPI_ERR_KEYVAL;
    for (auto& [key, old] : c->attrs)
        if (key == keyval) {
            if (k->second.del != nullptr) k->second.del(comm, keyval, old, k->second.extra);
            old = value;
            return MPI_SUCCESS;
        }
    c->attrs.push_back({keyval, value});
    return MPI_SUCCESS;
}
int PMPI_Comm_get_attr(MPI_Comm comm, int keyval, void* value, int* flag) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    *flag = 0;
    for (auto& [key, v] : c->attrs)
        if (key == keyval) {
            *static_cast<void**>(value) = v;
            *flag = 1;
        }
    return MPI_SUCCESS;
}
int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler handler) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    c->errhandler = handler;
    return MPI_SUCCESS;
}
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler handler) { return PMPI_Comm_set_errhandler(comm, handler); }
int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler* handler) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    *handler = c->errhandler;
    return MPI_SUCCESS;
}
int PMPI_Errhandler_free(MPI_Errhandler* handler) {
    *handler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}
int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    if (c->errhandler == MPI_ERRORS_ARE_FATAL) die("error %d on a communicator with MPI_ERRORS_ARE_FATAL", errorcode);
    return MPI_SUCCESS;
}

// --- datatypes and ops
int PMPI_Type_size(MPI_Datatype datatype, int* size) {
    const Type* t = type_of(datatype);
    if (t == nullptr) return MPI_ERR_TYPE;
    *size = t->size;
    return MPI_SUCCESS;
}
int MPI_Type_size(MPI_Datatype datatype, int* size) { return PMPI_Type_size(datatype, size); }
int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint* lb, MPI_Aint* extent) {
    const Type* t = type_of(datatype);
    if (t == nullptr) return MPI_ERR_TYPE;
    *lb = 0;
    *extent = t->extent;
    return MPI_SUCCESS;
}
int PMPI_Type_get_envelope(MPI_Datatype datatype, int* ints, int* addresses, int* types, int* combiner) {
    const Type* t = type_of(datatype);
    if (t == nullptr) return MPI_ERR_TYPE;
    *combiner = t->combiner;
    *ints = t->combiner == MPI_COMBINER_NAMED ? 0 : static_cast<int>(t->ints.size());
    *addresses = 0;
    *types = t->combiner == MPI_COMBINER_NAMED ? 0 : 1;
    return MPI_SUCCESS;
}
int PMPI_Type_get_contents(MPI_Datatype datatype, int max_ints, int, int max_types, int* ints, MPI_Aint*,
                           MPI_Datatype* types) {
    const Type* t = type_of(datatype);
    if (t == nullptr || t->combiner == MPI_COMBINER_NAMED) return MPI_ERR_TYPE;
    if (max_ints < static_cast<int>(t->ints.size()) || max_types < 1) return MPI_ERR_ARG;
    std::copy(t->ints.begin(), t->ints.end(), ints);
    types[0] = t->base;
    return MPI_SUCCESS;
}
int MPI_Type_contiguous(int count, MPI_Datatype old, MPI_Datatype* out) {
    const Type* base = type_of(old);
    if (base == nullptr || count < 0) return MPI_ERR_TYPE;
    Type t;
    t.family = base->family;
    t.size = count * base->size;
    t.extent = count * base->extent;
    t.combiner = MPI_COMBINER_CONTIGUOUS;
    t.ints = {count};
    t.base = old;
    t.base_count = base->base_count == 0 ? 0 : count;
    const int handle = static_cast<int>(0x8c100000u) | (g_next_type++ & 0xfffff);
    g_derived[handle] = t;
    *out = handle;
    return MPI_SUCCESS;
}
int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype old, MPI_Datatype* out) {
    const Type* base = type_of(old);
    if (base == nullptr || count < 1 || blocklength < 0) return MPI_ERR_TYPE;
    Type t;
    t.family = base->family;
    t.size = count * blocklength * base->size;
    t.extent = ((count - 1) * static_cast<MPI_Aint>(stride) + blocklength) * base->extent;
    t.combiner = MPI_COMBINER_VECTOR;
    t.ints = {count, blocklength, stride};
    t.base = old;
    if (base->base_count == 0) stride = -1;
    t.base_count = stride == blocklength ? count * blocklength : 0;  // reduced by the fake where contiguous
    const int handle = static_cast<int>(0x8c100000u) | (g_next_type++ & 0xfffff);
    g_derived[handle] = t;
    *out = handle;
    return MPI_SUCCESS;
}
int MPI_Type_commit(MPI_Datatype*) { return MPI_SUCCESS; }
int PMPI_Type_free(MPI_Datatype* datatype) {
    if (g_derived.erase(*datatype) == 0) return MPI_ERR_TYPE;
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}
int MPI_Type_free(MPI_Datatype* datatype) { return PMPI_Type_free(datatype); }
int PMPI_Op_create(MPI_User_function* fn, int commute, MPI_Op* op) {
    const int handle = static_cast<int>(0x98000000u) | (g_next_op++ & 0xffffff);
    g_ops[handle] = {fn, commute};
    *op = handle;
    return MPI_SUCCESS;
}
int MPI_Op_create(MPI_User_function* fn, int commute, MPI_Op* op) { return PMPI_Op_create(fn, commute, op); }
int PMPI_Op_free(MPI_Op* op) {
    g_ops.erase(*op);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}
int MPI_Op_free(MPI_Op* op) { return PMPI_Op_free(op); }
int PMPI_Op_commutative(MPI_Op op, int* commute) {
    auto it = g_ops.find(op);
    *commute = it == g_ops.end() ? 1 : it->second.commute;
    return MPI_SUCCESS;
}
int PMPI_Reduce_local(const void* in, void* inout, int count, MPI_Datatype datatype, MPI_Op op) {
    return combine(in, inout, static_cast<std::size_t>(count), datatype, op);
}

// --- collectives
int PMPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    return allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}
int PMPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                     MPI_Comm comm) {
    return allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}
int PMPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                    MPI_Request* request) {
    ++g_calls.iallreduce;
    --g_calls.allreduce;
    const int rc = allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    *request = new_request(Request{});
    return rc;
}
int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request* request) {
    return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}
int PMPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    const std::size_t bytes = type_bytes(datatype, count);
    std::vector<char> result(bytes);
    const void* mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    const int rc = allreduce(mine, result.data(), count, datatype, op, comm);
    if (rc == MPI_SUCCESS && c->rank == root && bytes > 0) std::memcpy(recvbuf, result.data(), bytes);
    return rc;
}
int PMPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    const std::size_t bytes = type_bytes(datatype, count);
    auto all = gather_all(*c, buffer, c->rank == root ? bytes : 0);
    if (c->rank != root && bytes > 0) std::memcpy(buffer, all[static_cast<std::size_t>(root)].data(), bytes);
    return MPI_SUCCESS;
}
int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    return PMPI_Bcast(buffer, count, datatype, root, comm);
}
int PMPI_Barrier(MPI_Comm comm) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    gather_all(*c, nullptr, 0);
    return MPI_SUCCESS;
}
int MPI_Barrier(MPI_Comm comm) { return PMPI_Barrier(comm); }
int PMPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    const std::size_t block = type_bytes(recvtype, recvcount);
    char* out = static_cast<char*>(recvbuf);
    const void* mine = sendbuf == MPI_IN_PLACE ? out + block * static_cast<std::size_t>(c->rank) : sendbuf;
    auto all = gather_all(*c, mine, sendbuf == MPI_IN_PLACE ? block : type_bytes(sendtype, sendcount));
    for (int r = 0; r < c->size(); ++r)
        std::memcpy(out + block * static_cast<std::size_t>(r), all[static_cast<std::size_t>(r)].data(),
                    std::min(block, all[static_cast<std::size_t>(r)].size()));
    return MPI_SUCCESS;
}
int PMPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                    const int* displs, MPI_Datatype recvtype, MPI_Comm comm) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    const std::size_t extent = type_bytes(recvtype, 1);
    char* out = static_cast<char*>(recvbuf);
    const void* mine = sendbuf == MPI_IN_PLACE ? out + extent * static_cast<std::size_t>(displs[c->rank]) : sendbuf;
    const std::size_t bytes = sendbuf == MPI_IN_PLACE ? extent * static_cast<std::size_t>(recvcounts[c->rank])
                                                      : type_bytes(sendtype, sendcount);
    auto all = gather_all(*c, mine, bytes);
    for (int r = 0; r < c->size(); ++r)
        std::memcpy(out + extent * static_cast<std::size_t>(displs[r]), all[static_cast<std::size_t>(r)].data(),
                    std::min(extent * static_cast<std::size_t>(recvcounts[r]), all[static_cast<std::size_t>(r)].size()));
    return MPI_SUCCESS;
}
int PMPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    const std::size_t block = type_bytes(recvtype, recvcount);
    char* out = static_cast<char*>(recvbuf);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    const void* mine = in_place ? out + block * static_cast<std::size_t>(c->rank) : sendbuf;
    auto all = gather_all(*c, mine, in_place ? block : type_bytes(sendtype, sendcount));
    if (c->rank == root)
        for (int r = 0; r < c->size(); ++r)
            std::memcpy(out + block * static_cast<std::size_t>(r), all[static_cast<std::size_t>(r)].data(),
                        std::min(block, all[static_cast<std::size_t>(r)].size()));
    return MPI_SUCCESS;
}
int PMPI_Alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype,
                   void* recvbuf, const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, MPI_Comm comm) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    const int n = c->size();
    const std::size_t sext = type_bytes(sendtype, 1), rext = type_bytes(recvtype, 1);
    // Mine: n block lengths, then the blocks.
    std::vector<char> packed(sizeof(uint64_t) * static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        const uint64_t len = sext * static_cast<std::size_t>(sendcounts[r]);
        std::memcpy(packed.data() + sizeof len * static_cast<std::size_t>(r), &len, sizeof len);
        const char* from = static_cast<const char*>(sendbuf) + sext * static_cast<std::size_t>(sdispls[r]);
        packed.insert(packed.end(), from, from + len);
    }
    auto all = gather_all(*c, packed.data(), packed.size());
    for (int s = 0; s < n; ++s) {
        const auto& theirs = all[static_cast<std::size_t>(s)];
        std::size_t at = sizeof(uint64_t) * static_cast<std::size_t>(n);
        for (int r = 0; r < n; ++r) {
            uint64_t len;
            std::memcpy(&len, theirs.data() + sizeof len * static_cast<std::size_t>(r), sizeof len);
            if (r == c->rank)
                std::memcpy(static_cast<char*>(recvbuf) + rext * static_cast<std::size_t>(rdispls[s]), theirs.data() + at,
                            std::min<std::size_t>(len, rext * static_cast<std::size_t>(recvcounts[s])));
            at += len;
        }
    }
    return MPI_SUCCESS;
}

// --- point to point
int PMPI_Isend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request* request) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    if (dest != MPI_PROC_NULL) send_bytes(*c, dest, tag, buf, type_bytes(datatype, count));
    *request = new_request(Request{});
    return MPI_SUCCESS;
}
int PMPI_Issend(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request* request) {
    return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
}
int PMPI_Irecv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request* request) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    Request r;
    if (source != MPI_PROC_NULL) {
        r.recv = true;
        r.cid = c->cid;
        r.src = source;
        r.tag = tag;
        r.buf = buf;
        r.capacity = type_bytes(datatype, count);
    } else {
        r.got_src = MPI_PROC_NULL;
    }
    *request = new_request(r);
    return MPI_SUCCESS;
}
int PMPI_Wait(MPI_Request* request, MPI_Status* status) {
    Backoff wait;
    for (;;) {
        progress();
        if (test_one(request, status)) return MPI_SUCCESS;
        wait();
    }
}
int PMPI_Recv(void* buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status* status) {
    MPI_Request request;
    const int rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, &request);
    return rc != MPI_SUCCESS ? rc : PMPI_Wait(&request, status);
}
int PMPI_Send(const void* buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    MPI_Request request;
    const int rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, &request);
    return rc != MPI_SUCCESS ? rc : PMPI_Wait(&request, MPI_STATUS_IGNORE);
}
int PMPI_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
    MPI_Request send;
    int rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &send);
    if (rc == MPI_SUCCESS) rc = PMPI_Recv(recvbuf, recvcount, recvtype, source, recvtag, comm, status);
    PMPI_Wait(&send, MPI_STATUS_IGNORE);
    return rc;
}
int PMPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
    progress();
    *flag = test_one(request, status) ? 1 : 0;
    return MPI_SUCCESS;
}
int PMPI_Waitall(int count, MPI_Request* requests, MPI_Status* statuses) {
    for (int i = 0; i < count; ++i) PMPI_Wait(&requests[i], status_at(statuses, i));
    return MPI_SUCCESS;
}
int MPI_Waitall(int count, MPI_Request* requests, MPI_Status* statuses) { return PMPI_Waitall(count, requests, statuses); }
int PMPI_Testall(int count, MPI_Request* requests, int* flag, MPI_Status* statuses) {
    progress();
    bool all = true;
    for (int i = 0; i < count; ++i) {
        if (requests[i] == MPI_REQUEST_NULL) continue;
        auto it = g_requests.find(requests[i]);
        if (it == g_requests.end() || !try_complete(it->second)) all = false;
    }
    if (all)
        for (int i = 0; i < count; ++i) test_one(&requests[i], status_at(statuses, i));
    *flag = all ? 1 : 0;
    return MPI_SUCCESS;
}
int PMPI_Waitany(int count, MPI_Request* requests, int* index, MPI_Status* status) {
    Backoff wait;
    for (;;) {
        progress();
        bool any_active = false;
        for (int i = 0; i < count; ++i) {
            if (requests[i] == MPI_REQUEST_NULL) continue;
            any_active = true;
            if (test_one(&requests[i], status)) {
                *index = i;
                return MPI_SUCCESS;
            }
        }
        if (!any_active) {
            *index = MPI_UNDEFINED;
            set_status(status, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
            return MPI_SUCCESS;
        }
        wait();
    }
}
int MPI_Waitany(int count, MPI_Request* requests, int* index, MPI_Status* status) {
    return PMPI_Waitany(count, requests, index, status);
}
int PMPI_Request_free(MPI_Request* request) {
    g_requests.erase(*request);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}
int PMPI_Cancel(MPI_Request* request) {
    auto it = g_requests.find(*request);
    if (it != g_requests.end() && it->second.recv) {
        it->second.recv = false;
        it->second.cancelled = true;
    }
    return MPI_SUCCESS;
}
int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
    Comm* c = comm_of(comm);
    if (c == nullptr) return MPI_ERR_COMM;
    progress();
    *flag = 0;
    for (const Message& m : g_unexpected)
        if (matches(m, c->cid, source, tag)) {
            *flag = 1;
            set_status(status, m.src, m.tag, m.data.size());
            break;
        }
    return MPI_SUCCESS;
}

}  // extern "C"
