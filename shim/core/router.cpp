#include "shim/core/router.h"

#include "shim/modes/schedule.h"

namespace arshim::route {

namespace {

// A route to the library with `why`, with ARShim's op where the traits say the library computes the call wrong.
Route to_library(vocab::Reason why, bool replayable, const Traits& t) {
    Route r;
    r.reason = why;
    r.replayable = replayable;
    r.library_bug = t.library_bug;
    return r;
}

}  // namespace

vocab::Reason unservable(const Traits& t, const Settings& s) {
    using vocab::Reason;
    const Reason why = unservable(t);
    const bool uncovered = why == Reason::derived_datatype || why == Reason::user_op || why == Reason::noncommutative_op;
    return s.reproducible != ReproducibleMode::off && uncovered ? Reason::not_reproducible : why;
}

bool needs_book(const Settings& s, const policy::Decision& policy_decision) {
    return s.verify_calls > 0 || tune::eligible(s.tune, policy_decision);
}

Route choose(const Traits& t, const Settings& s, bool warm, const policy::Decision* policy_decision, KeyBook* book,
             const policy::tune::KeyFacts& facts) {
    Route r;
    r.replayable = replayable(t);
    const bool reproducible = in_rank_order(t, s);
    if (!warm && !reproducible) {
        // Every call of a cold communicator must be counted (it warms at its ARSHIM_CONTEXT_AFTER-th): never replayed.
        r.reason = vocab::Reason::cold_communicator;
        r.replayable = false;
        return r;
    }
    if (reproducible) {
        // Summed in rank order whatever the policy says: its reproducible rule's algorithm when it has one, else auto.
        // Never replayed, never tuned: the decision is fixed, and every call must pass the path's own checks.
        r.decision = policy_decision != nullptr ? *policy_decision : policy::Decision{};
        policy::set_path(r.decision, policy::Path::reproducible);
        r.library = false;
        r.replayable = false;
    } else {
        const policy::Decision& chosen = *policy_decision;
        tune::Pick pick{&chosen, -1};
        if (book != nullptr && tune::eligible(s.tune, chosen)) {
            policy::tune::KeyFacts key = facts;
            key.order_sensitive = order_sensitive(t);  // the same-bits rule is the router's, whatever the caller says
            pick = tune::pick(book->tuning, book->overflow, chosen, key, s.tune, s.tune_after);
        }
        r.decision = *pick.decision;  // a copy: reporting the call may end the stage and replace the candidates
        r.candidate = pick.candidate;
        // The key's next call may try another candidate, or (still counting its calls) start exploring.
        if (r.candidate >= 0 || !pick.settled) r.replayable = false;
        if (r.decision.path() == policy::Path::native) {
            // The policy's choice, or the tuner's (measured faster, or being tried).
            r.reason = chosen.path() == policy::Path::native ? vocab::Reason::policy : vocab::Reason::tuned;
            return r;
        }
        r.library = false;
    }
    // Verify mode: a key's first ARSHIM_VERIFY served calls are computed by the library too (shim/modes/verify.h).
    if (s.verify_calls > 0) {
        r.replayable = false;
        if (book != nullptr && book->verified < s.verify_calls) {
            ++book->verified;
            r.verify = true;
        }
    }
    return r;
}

Route look_up(const Traits& given, const Settings& s, Questions& ask) {
    Traits t = given;  // t.library_bug becomes whether the library gets ARShim's op
    // Asked at most once per call (a collective agreement), and only in a GPU job where a rule needs the answer.
    int device = -1;
    auto device_buffers = [&] {
        if (device < 0) device = ask.device_buffers() ? 1 : 0;
        return device == 1;
    };
    if (t.library_bug && t.device_check && (t.intercommunicator || device_buffers())) {
        t.library_bug = false;  // ARShim's op is host code: the user's op
        if (!t.intercommunicator) return to_library(vocab::Reason::device_memory, false, t);
    }
    if (const vocab::Reason why = unservable(t, s); why != vocab::kServed) return to_library(why, replayable(t), t);

    const bool warm = ask.warm();
    const bool rank_order = in_rank_order(t, s);
    const policy::Decision* policy_decision = warm ? &ask.decision(t.library_bug, rank_order) : nullptr;
    KeyBook* book = policy_decision != nullptr && needs_book(s, *policy_decision) ? ask.book() : nullptr;
    Route r = choose(t, s, warm, policy_decision, book, book != nullptr ? ask.key_facts() : policy::tune::KeyFacts{});
    r.library_bug = t.library_bug;
    r.in_rank_order = rank_order;
    if (!t.device_check) return r;
    // A GPU job. A call with device buffers is no sample of the key's candidates: its time says nothing of the key's
    // host calls, and a candidate declined for it would be excluded for good (a key whose first calls carried device
    // buffers was decided native and stayed so for its host calls). It goes to the library; the exploration waits.
    if (r.candidate >= 0 && device_buffers()) return to_library(vocab::Reason::device_memory, r.replayable, t);
    if (r.library) return r;
    // ARShim's paths never touch device memory. Served routes are then never replayed, so that every served call is
    // classified (its buffers may change from call to call).
    r.replayable = false;
    if (device_buffers()) return to_library(vocab::Reason::device_memory, false, t);
    return r;
}

}  // namespace arshim::route
