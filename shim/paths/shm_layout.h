// Arithmetic of the node shared-memory protocol (shim/paths/node_shm.h), MPI-free so that it is unit-tested without
// mpirun (test/shim/test_core.cpp): how a call is cut into chunks, and how a chunk is split among leaders.
// Every result depends only on values identical on every rank, so every node cuts a call alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace arshim::shm {

constexpr std::size_t kCacheLine = 64;
constexpr std::size_t kMinChunk = 4096;

// The smallest power of two >= bytes, at least kMinChunk (capped at 2^40).
constexpr std::size_t pow2_chunk(uint64_t bytes) {
    std::size_t p = kMinChunk;
    while (p < bytes && p < (std::size_t{1} << 40)) p <<= 1;
    return p;
}

// The chunk a call of `bytes` uses: its size rounded up to a power of two, at most the domain's preferred chunk and
// the window's capacity.
constexpr std::size_t call_chunk_bytes(uint64_t bytes, std::size_t preferred_chunk, std::size_t capacity) {
    return std::min({pow2_chunk(bytes), preferred_chunk, capacity});
}

// Partition j of `elements` among `parts`: [*first, *first + *count). Boundaries fall on cache lines where the
// element size allows (no two leaders write one line), the parts cover the chunk exactly once, and the first
// `elements % parts`-ish parts take the extra lines.
inline void partition(std::size_t elements, std::size_t element_size, int parts, int j, std::size_t* first,
                      std::size_t* count) {
    const std::size_t unit = std::max<std::size_t>(1, kCacheLine / element_size);
    const std::size_t units = (elements + unit - 1) / unit;
    const std::size_t per = units / static_cast<std::size_t>(parts);
    const std::size_t extra = units % static_cast<std::size_t>(parts);
    const std::size_t start = static_cast<std::size_t>(j) * per + std::min<std::size_t>(j, extra);
    const std::size_t length = per + (static_cast<std::size_t>(j) < extra ? 1 : 0);
    *first = std::min(elements, start * unit);
    *count = std::min(elements, (start + length) * unit) - *first;
}

}  // namespace arshim::shm
