// The shim's one hash table: open addressing with linear probing over a fixed array. No allocation, no lock, at
// most `Probes` slots looked at per operation, so it can sit on the hot path (per-thread statistics rows and call
// sites, per-communicator decision and classification caches) and in tables built once (MPI handle maps).
// When the probe window of a key is full, find_or_insert() returns nullptr and the caller takes its slow route
// (counts an overflow, computes without caching): the table never grows and never evicts. MPI-free; tested in
// test/shim/test_core.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace arshim {

template <typename Key, typename Value, std::size_t Slots, std::size_t Probes = Slots>
class FixedTable {
    static_assert(Slots >= 2 && (Slots & (Slots - 1)) == 0, "Slots must be a power of two");
    static_assert(Probes >= 1 && Probes <= Slots, "1 <= Probes <= Slots");

public:
    struct Slot {
        Key key{};
        bool used = false;
        Value value{};
    };

    // `hash` is any 64-bit hash of the key; Fibonacci hashing takes the home slot from its product's top bits, so
    // keys that differ only in low bits (MPICH handles) or middle bits (Open MPI's addresses) spread alike.
    static std::size_t home(uint64_t hash) {
        return static_cast<std::size_t>((hash * 0x9E3779B97F4A7C15ull) >> (64 - kLog2Slots));
    }

    Value* find(const Key& key, uint64_t hash) {
        std::size_t i = home(hash);
        for (std::size_t probe = 0; probe < Probes; ++probe, i = (i + 1) & (Slots - 1)) {
            Slot& s = slots_[i];
            if (!s.used) return nullptr;
            if (s.key == key) return &s.value;
        }
        return nullptr;
    }
    const Value* find(const Key& key, uint64_t hash) const { return const_cast<FixedTable*>(this)->find(key, hash); }

    // The key's value, inserted value-initialized when absent (*inserted says so); nullptr when its probe window
    // is full.
    Value* find_or_insert(const Key& key, uint64_t hash, bool* inserted = nullptr) {
        return find_or_emplace(
            hash, [&key](const Key& k) { return k == key; }, [&key](Key& k) { k = key; }, inserted);
    }

    // The same without building a Key for the lookup (large keys on the hot path: call sites): `matches(const Key&)`
    // recognizes the key, `init(Key&)` writes it into a new slot.
    template <typename Matches, typename Init>
    Value* find_or_emplace(uint64_t hash, Matches&& matches, Init&& init, bool* inserted = nullptr) {
        std::size_t i = home(hash);
        for (std::size_t probe = 0; probe < Probes; ++probe, i = (i + 1) & (Slots - 1)) {
            Slot& s = slots_[i];
            if (s.used && matches(s.key)) {
                if (inserted) *inserted = false;
                return &s.value;
            }
            if (!s.used) {
                s.used = true;
                init(s.key);
                ++size_;
                if (inserted) *inserted = true;
                return &s.value;
            }
        }
        return nullptr;
    }

    template <typename Fn>  // fn(const Key&, const Value&) for every entry, in slot order
    void for_each(Fn&& fn) const {
        for (const Slot& s : slots_)
            if (s.used) fn(s.key, s.value);
    }

    std::size_t size() const { return size_; }
    static constexpr std::size_t capacity() { return Slots; }

private:
    static constexpr unsigned log2(std::size_t n) { return n <= 1 ? 0 : 1 + log2(n / 2); }
    static constexpr unsigned kLog2Slots = log2(Slots);

    Slot slots_[Slots];
    std::size_t size_ = 0;
};

}  // namespace arshim
