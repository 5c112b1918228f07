#include "shim/core/router.h"

#include "shim/modes/schedule.h"

namespace arshim::route {

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

}  // namespace arshim::route
