// The router (shim/core/router.h) without MPI: every routing rule, from traits, settings, the policy's decision and the
// key's book to the route, the reason, whether it replays, the candidate tried and verify's check; the rules look_up()
// adds (known library bugs, device memory, reproducible declines) with the questions it asks the communicator; and
// classification (shim/core/classify.h), which makes the traits.
#include "test/support/catch.h"

#include <initializer_list>

#include "shim/core/classify.h"
#include "shim/core/router.h"
#include "shim/modes/schedule.h"

using namespace arshim;
using policy::Decision;
using policy::Path;
using vocab::Reason;

namespace {

route::Traits servable(vocab::DtypeClass dclass = vocab::DtypeClass::integer, kernels::Op op = kernels::Op::sum) {
    route::Traits t;
    t.comm_size = 4;
    t.count = 100;
    t.predefined_type = true;
    t.supported = true;
    t.dclass = dclass;
    t.op = op;
    t.bytes = 400;
    return t;
}

Settings settings(std::initializer_list<std::pair<const char*, const char*>> pairs = {}) {
    static std::vector<std::unique_ptr<Config>> keep;  // Settings point at their Config
    EnvPairs env;
    for (const auto& [k, v] : pairs) env.emplace_back(k, v);
    keep.push_back(std::make_unique<Config>(Config::from_pairs(env, nullptr)));
    return Settings::from(*keep.back());
}

policy::tune::KeyFacts facts(int nodes = 2, int ppn = 2) {
    policy::tune::KeyFacts f;
    f.bytes = 400;
    f.ppn_min = f.ppn_max = ppn;
    f.nodes = nodes;
    return f;
}

Decision multileader(uint32_t leaders) {
    Decision d = policy::decision_for(Path::multileader);
    d.get<policy::MultileaderParams>().leaders = leaders;
    return d;
}

// A communicator as the router's questions see it: fixed answers, and how often each question was asked (the
// device question is a collective call: every rank must ask it on the same calls, at most once per call).
struct Comm final : route::Questions {
    bool device = false;
    bool is_warm = true;
    Decision policy_decision = policy::decision_for(Path::native);
    KeyBook key_book;
    int device_asked = 0, warm_asked = 0, decision_asked = 0, book_asked = 0;
    bool told_library_bug = false, told_reproducible = false;

    bool device_buffers() override {
        ++device_asked;
        return device;
    }
    bool warm() override {
        ++warm_asked;
        return is_warm;
    }
    const Decision& decision(bool library_bug, bool reproducible) override {
        ++decision_asked;
        told_library_bug = library_bug;
        told_reproducible = reproducible;
        return policy_decision;
    }
    KeyBook* book() override {
        ++book_asked;
        return &key_book;
    }
    policy::tune::KeyFacts key_facts() override { return facts(); }
};

route::Traits gpu_job(route::Traits t) {
    t.device_check = true;
    return t;
}

}  // namespace

TEST_CASE("ARSHIM_REPRODUCIBLE counts derived datatypes and user ops as not reproducible", "[router]") {
    route::Traits derived = servable();
    derived.predefined_type = false;
    CHECK(route::unservable(derived, settings()) == Reason::derived_datatype);
    CHECK(route::unservable(derived, settings({{"ARSHIM_REPRODUCIBLE", "layout"}})) == Reason::not_reproducible);
    route::Traits user = servable();
    user.user_op = true;
    user.commutative = false;
    CHECK(route::unservable(user, settings({{"ARSHIM_REPRODUCIBLE", "any-np"}})) == Reason::not_reproducible);
    CHECK(route::unservable(servable(), settings({{"ARSHIM_REPRODUCIBLE", "layout"}})) == vocab::kServed);
}

TEST_CASE("A cold communicator's calls go to the library, counted and never replayed", "[router]") {
    const route::Route r = route::choose(servable(), settings(), false, nullptr, nullptr, facts());
    CHECK(r.library);
    CHECK(r.reason == Reason::cold_communicator);
    CHECK_FALSE(r.replayable);
}

TEST_CASE("Reproducible calls take the reproducible path, cold or warm, whatever the policy", "[router]") {
    const Settings s = settings({{"ARSHIM_REPRODUCIBLE", "layout"}});
    const route::Traits sum = servable(vocab::DtypeClass::floating, kernels::Op::sum);
    const route::Route cold = route::choose(sum, s, false, nullptr, nullptr, facts());
    CHECK_FALSE(cold.library);
    CHECK(cold.decision.path() == Path::reproducible);
    CHECK(cold.decision.get<policy::ReproducibleParams>().algorithm == policy::ReproAlgorithm::automatic);
    CHECK_FALSE(cold.replayable);

    const Decision ml = multileader(2);
    const route::Route warm = route::choose(sum, s, true, &ml, nullptr, facts());
    CHECK(warm.decision.path() == Path::reproducible);

    Decision rule = policy::decision_for(Path::reproducible);
    rule.get<policy::ReproducibleParams>().algorithm = policy::ReproAlgorithm::gather;
    const route::Route kept = route::choose(sum, s, true, &rule, nullptr, facts());
    CHECK(kept.decision.get<policy::ReproducibleParams>().algorithm == policy::ReproAlgorithm::gather);

    // An integer sum or a float max is the same in any order: the policy decides.
    const route::Route integer = route::choose(servable(), s, true, &ml, nullptr, facts());
    CHECK(integer.decision.path() == Path::multileader);
    const route::Route max = route::choose(servable(vocab::DtypeClass::floating, kernels::Op::max), s, true, &ml,
                                           nullptr, facts());
    CHECK(max.decision.path() == Path::multileader);
}

TEST_CASE("The policy's choice: the library (reason policy) or a path, both replayable", "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE", "off"}});
    const Decision native = policy::decision_for(Path::native);
    const route::Route lib = route::choose(servable(), s, true, &native, nullptr, facts());
    CHECK(lib.library);
    CHECK(lib.reason == Reason::policy);
    CHECK(lib.replayable);
    const Decision ml = multileader(2);
    const route::Route path = route::choose(servable(), s, true, &ml, nullptr, facts());
    CHECK_FALSE(path.library);
    CHECK(policy::same_action(path.decision, ml));
    CHECK(path.replayable);
    CHECK(path.candidate < 0);

    route::Traits bug = servable();
    bug.library_bug = true;
    CHECK_FALSE(route::choose(bug, s, true, &ml, nullptr, facts()).replayable);
}

TEST_CASE("A key runs the policy's choice, never replayed, until its ARSHIM_TUNE_AFTER-th call explores", "[router]") {
    const Decision ml = multileader(2);
    for (const uint32_t after : {32u, 2u}) {
        const Settings s = after == 32 ? settings() : settings({{"ARSHIM_TUNE_AFTER", "2"}});  // default: 32
        REQUIRE(s.tune_after == after);
        KeyBook book;
        for (uint32_t call = 1; call < after; ++call) {
            const route::Route r = route::choose(servable(), s, true, &ml, &book, facts());
            CHECK(r.candidate < 0);
            CHECK_FALSE(r.library);
            CHECK(policy::same_action(r.decision, ml));
            CHECK_FALSE(r.replayable);  // a replayed call would not be counted: the key would never explore
            CHECK(book.tuning.status == tune::KeyTuning::waiting);
        }
        const route::Route explores = route::choose(servable(), s, true, &ml, &book, facts());
        CHECK(explores.candidate == 0);  // the policy's choice is candidate 0
        CHECK(book.tuning.status == tune::KeyTuning::exploring);
    }
    // A key with nothing to explore (a float sum under guard keeps the policy's order) is settled at its first call,
    // and replays from there.
    KeyBook float_book;
    const route::Route sum = route::choose(servable(vocab::DtypeClass::floating), settings(), true, &ml, &float_book, facts());
    CHECK(sum.replayable);
    CHECK(float_book.tuning.status == tune::KeyTuning::decided);
}

TEST_CASE("Guard explores an integer sum, then keeps its decision; a float sum keeps the policy's order", "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE_AFTER", "1"}});  // ARSHIM_TUNE=guard, exploring from the first call
    const Decision ml = multileader(2);
    REQUIRE(route::needs_book(s, ml));
    KeyBook book;
    const route::Route first = route::choose(servable(), s, true, &ml, &book, facts());
    CHECK(first.candidate >= 0);
    CHECK_FALSE(first.replayable);
    CHECK(book.tuning.status == tune::KeyTuning::exploring);
    // Candidates: the policy's, the library's, half the leaders across nodes.
    CHECK(book.tuning.exploration.candidates == 3);

    // Same job, same bits (issue 41): a float sum under guard has no candidate with the policy's fold order.
    KeyBook float_book;
    const route::Route sum = route::choose(servable(vocab::DtypeClass::floating), s, true, &ml, &float_book, facts());
    CHECK(sum.candidate < 0);
    CHECK(policy::same_action(sum.decision, ml));
    CHECK(float_book.tuning.status == tune::KeyTuning::decided);
    CHECK(sum.replayable);

    // Online explores it (documented: its bits then depend on the timings).
    KeyBook online_book;
    const route::Route online =
        route::choose(servable(vocab::DtypeClass::floating), settings({{"ARSHIM_TUNE", "online"}, {"ARSHIM_TUNE_AFTER", "1"}}),
                      true, &ml, &online_book, facts());
    CHECK(online.candidate >= 0);
}

TEST_CASE("On two ranks guard explores a float sum too: two values sum to the same bits in either order", "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE_AFTER", "1"}});
    const Decision ml = multileader(2);
    auto two_ranks = [](kernels::Op op, bool complex_type) {
        route::Traits t = servable(vocab::DtypeClass::floating, op);
        t.comm_size = 2;
        t.complex_type = complex_type;
        return t;
    };
    for (const kernels::Op op : {kernels::Op::sum, kernels::Op::prod}) {
        KeyBook book;
        const route::Route r = route::choose(two_ranks(op, false), s, true, &ml, &book, facts(1, 2));
        CHECK(r.candidate >= 0);
        CHECK(book.tuning.status == tune::KeyTuning::exploring);
        CHECK(book.tuning.exploration.candidates == 2);  // the policy's choice and the library's
    }
    KeyBook complex_sum;
    CHECK(route::choose(two_ranks(kernels::Op::sum, true), s, true, &ml, &complex_sum, facts(1, 2)).candidate >= 0);
    // A complex product's formula may differ between the library's op and ARShim's kernel: the policy's order stays.
    KeyBook complex_prod;
    const route::Route prod = route::choose(two_ranks(kernels::Op::prod, true), s, true, &ml, &complex_prod, facts(1, 2));
    CHECK(prod.candidate < 0);
    CHECK(complex_prod.tuning.status == tune::KeyTuning::decided);
    // Three ranks: the order matters again.
    route::Traits three = two_ranks(kernels::Op::sum, false);
    three.comm_size = 3;
    KeyBook three_book;
    CHECK(route::choose(three, s, true, &ml, &three_book, facts(1, 3)).candidate < 0);
    CHECK(route::order_sensitive(three));
    CHECK_FALSE(route::order_sensitive(two_ranks(kernels::Op::sum, false)));
}

TEST_CASE("Floating MIN/MAX and MINLOC/MAXLOC are order-sensitive at every size; integer ops never", "[router]") {
    // max(-0, +0), min(+0, -0) and a NaN against a number give the operand looked at first (issue 56 item 1).
    const Settings s = settings({{"ARSHIM_TUNE_AFTER", "1"}});
    const Decision ml = multileader(2);
    for (const kernels::Op op : {kernels::Op::min, kernels::Op::max}) {
        for (const int ranks : {2, 3, 64}) {
            route::Traits t = servable(vocab::DtypeClass::floating, op);
            t.comm_size = ranks;
            t.floating_values = true;
            CHECK(route::order_sensitive(t));
            KeyBook book;
            CHECK(route::choose(t, s, true, &ml, &book, facts(1, ranks)).candidate < 0);  // guard keeps the policy's
            route::Traits integer = t;
            integer.dclass = vocab::DtypeClass::integer;
            integer.floating_values = false;
            CHECK_FALSE(route::order_sensitive(integer));
        }
    }
    // A MINLOC/MAXLOC pair with a floating value (MPI_DOUBLE_INT: class "other") is order-sensitive too; an integer
    // pair (MPI_2INT) is not.
    route::Traits pair = servable(vocab::DtypeClass::other, kernels::Op::minloc);
    pair.dclass = vocab::DtypeClass::other;
    pair.floating_values = true;
    CHECK(route::order_sensitive(pair));
    pair.floating_values = false;
    CHECK_FALSE(route::order_sensitive(pair));
    CHECK(vocab::has_floating_values(kernels::Type::double_int));
    CHECK_FALSE(vocab::has_floating_values(kernels::Type::int_int));
}

TEST_CASE("A forced path is never tuned", "[router]") {
    const Settings s = settings({{"ARSHIM_PATH", "multileader"}});
    CHECK(s.tune == policy::tune::Mode::off);
    const Decision ml = multileader(1);
    CHECK_FALSE(route::needs_book(s, ml));
    const route::Route r = route::choose(servable(), s, true, &ml, nullptr, facts());
    CHECK(r.candidate < 0);
    CHECK(r.replayable);
}

TEST_CASE("Verify mode checks a key's first N served calls and replays nothing", "[router]") {
    const Settings s = settings({{"ARSHIM_VERIFY", "2"}, {"ARSHIM_TUNE", "off"}});
    CHECK(s.check_args);  // verify mode includes the argument check
    const Decision ml = multileader(1);
    REQUIRE(route::needs_book(s, ml));
    KeyBook book;
    CHECK(route::choose(servable(), s, true, &ml, &book, facts()).verify);
    CHECK(route::choose(servable(), s, true, &ml, &book, facts()).verify);
    const route::Route third = route::choose(servable(), s, true, &ml, &book, facts());
    CHECK_FALSE(third.verify);
    CHECK_FALSE(third.replayable);
    const Decision native = policy::decision_for(Path::native);
    CHECK_FALSE(route::choose(servable(), s, true, &native, &book, facts()).verify);  // the library's result
}

// ---- look_up: the rules around choose() ----------------------------------------------------------------------------

TEST_CASE("look_up asks the communicator only what a rule needs: a cold one's calls never reach the policy",
          "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE", "off"}});
    Comm cold;
    cold.is_warm = false;
    const route::Route r = route::look_up(servable(), s, cold);
    CHECK(r.library);
    CHECK(r.reason == Reason::cold_communicator);
    CHECK(cold.warm_asked == 1);
    CHECK(cold.decision_asked == 0);
    CHECK(cold.book_asked == 0);
    CHECK(cold.device_asked == 0);

    Comm warm;
    warm.policy_decision = multileader(2);
    const route::Route served = route::look_up(servable(), s, warm);
    CHECK_FALSE(served.library);
    CHECK(served.replayable);
    CHECK(warm.decision_asked == 1);
    CHECK(warm.book_asked == 0);  // neither tuning nor verify mode

    // An unservable call asks nothing: its reason is fixed by its traits.
    Comm any;
    route::Traits derived = servable();
    derived.predefined_type = false;
    CHECK(route::look_up(derived, s, any).reason == Reason::derived_datatype);
    CHECK(any.warm_asked + any.decision_asked + any.book_asked + any.device_asked == 0);
}

TEST_CASE("A known library bug: the library reduces with ARShim's op on every route, and the policy is told",
          "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE", "off"}});
    route::Traits bug = servable();
    bug.library_bug = true;
    Comm native;
    const route::Route lib = route::look_up(bug, s, native);
    CHECK(lib.library);
    CHECK(lib.reason == Reason::policy);
    CHECK(lib.library_bug);
    CHECK_FALSE(lib.replayable);  // a replay would hand the library the user's op
    CHECK(native.told_library_bug);
    CHECK(native.device_asked == 0);

    Comm ml;
    ml.policy_decision = multileader(2);
    const route::Route path = route::look_up(bug, s, ml);
    CHECK_FALSE(path.library);
    CHECK(path.library_bug);  // the path's own library calls get ARShim's op too

    route::Traits empty = bug;  // unservable: still ARShim's op, wherever the library reduces
    empty.count = 0;
    Comm any;
    const route::Route zero = route::look_up(empty, s, any);
    CHECK(zero.reason == Reason::zero_count);
    CHECK(zero.library_bug);
    CHECK_FALSE(zero.replayable);

    route::Traits fine = servable();
    Comm plain;
    CHECK_FALSE(route::look_up(fine, s, plain).library_bug);
    CHECK_FALSE(plain.told_library_bug);
}

TEST_CASE("In a GPU job a library bug's call with device buffers keeps the user's op and goes to the library",
          "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE", "off"}});
    route::Traits bug = gpu_job(servable());
    bug.library_bug = true;
    Comm device;
    device.device = true;
    const route::Route r = route::look_up(bug, s, device);
    CHECK(r.library);
    CHECK(r.reason == Reason::device_memory);
    CHECK_FALSE(r.library_bug);  // ARShim's op is host code
    CHECK_FALSE(r.replayable);
    CHECK(device.device_asked == 1);
    CHECK(device.warm_asked == 0);

    // Host buffers: ARShim's op, and the one agreement serves the served route's rule too.
    Comm host;
    host.policy_decision = multileader(2);
    const route::Route served = route::look_up(bug, s, host);
    CHECK_FALSE(served.library);
    CHECK(served.library_bug);
    CHECK_FALSE(served.replayable);
    CHECK(host.device_asked == 1);

    // An intercommunicator's groups cannot agree with one allreduce: the user's op, nothing asked.
    route::Traits inter = bug;
    inter.intercommunicator = true;
    Comm any;
    const route::Route i = route::look_up(inter, s, any);
    CHECK(i.reason == Reason::intercommunicator);
    CHECK_FALSE(i.library_bug);
    CHECK(i.replayable);
    CHECK(any.device_asked == 0);
}

TEST_CASE("In a GPU job served calls agree on device buffers and never replay; library routes ask nothing",
          "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE", "off"}});
    for (const bool on_device : {false, true}) {
        Comm c;
        c.device = on_device;
        c.policy_decision = multileader(2);
        const route::Route r = route::look_up(gpu_job(servable()), s, c);
        CHECK(r.library == on_device);
        if (on_device) CHECK(r.reason == Reason::device_memory);
        CHECK_FALSE(r.replayable);  // a key's next call may carry other buffers
        CHECK(c.device_asked == 1);
    }
    Comm native;
    native.device = true;
    const route::Route lib = route::look_up(gpu_job(servable()), s, native);
    CHECK(lib.reason == Reason::policy);
    CHECK(lib.replayable);
    CHECK(native.device_asked == 0);  // calls the policy sends to the library pay nothing extra

    Comm cold;
    cold.is_warm = false;
    CHECK(route::look_up(gpu_job(servable()), s, cold).reason == Reason::cold_communicator);
    CHECK(cold.device_asked == 0);

    // Without a GPU runtime on any rank nothing is asked.
    Comm host;
    host.device = true;
    host.policy_decision = multileader(2);
    CHECK_FALSE(route::look_up(servable(), s, host).library);
    CHECK(host.device_asked == 0);
}

TEST_CASE("In a GPU job a tuning candidate with device buffers goes to the library, not tried", "[router]") {
    const Settings s = settings({{"ARSHIM_TUNE_AFTER", "1"}});  // guard, exploring from the first call
    Comm device;
    device.device = true;
    device.policy_decision = multileader(2);
    const route::Route r = route::look_up(gpu_job(servable()), s, device);
    CHECK(r.library);
    CHECK(r.reason == Reason::device_memory);
    CHECK(r.candidate < 0);  // no time to report: the exploration waits for a host call
    CHECK_FALSE(r.replayable);
    CHECK(device.device_asked == 1);
    CHECK(device.book_asked == 1);

    Comm host;
    host.policy_decision = multileader(2);
    const route::Route tried = route::look_up(gpu_job(servable()), s, host);
    CHECK(tried.candidate >= 0);
    CHECK(host.device_asked == 1);  // once, for both the candidate's rule and the served route's
}

TEST_CASE("Under ARSHIM_REPRODUCIBLE a declined path counts as not reproducible, and the policy is told", "[router]") {
    const Settings s = settings({{"ARSHIM_REPRODUCIBLE", "layout"}});
    Comm c;
    const route::Route sum = route::look_up(servable(vocab::DtypeClass::floating, kernels::Op::sum), s, c);
    CHECK(sum.decision.path() == Path::reproducible);
    CHECK(sum.in_rank_order);
    CHECK(c.told_reproducible);
    CHECK(route::declined(sum, Reason::path_unavailable) == Reason::not_reproducible);

    Comm integer_comm;
    integer_comm.policy_decision = multileader(2);
    const route::Route integer = route::look_up(servable(), s, integer_comm);
    CHECK_FALSE(integer.in_rank_order);
    CHECK_FALSE(integer_comm.told_reproducible);
    CHECK(route::declined(integer, Reason::path_unavailable) == Reason::path_unavailable);

    route::Traits user = servable();
    user.user_op = true;
    Comm any;
    CHECK(route::look_up(user, s, any).reason == Reason::not_reproducible);
}

// ---- classification ------------------------------------------------------------------------------------------------

namespace {

classifier::Facts doubles(int64_t count) {
    classifier::Facts f;
    f.comm_size = 4;
    f.comm_id = 42;
    f.count = count;
    f.predefined_type = true;
    f.type = kernels::Type::f64;
    f.element_size = 8;
    f.dclass = vocab::DtypeClass::floating;
    f.kernel_op = true;
    f.op = kernels::Op::sum;
    f.supported = true;
    return f;
}

}  // namespace

TEST_CASE("Classification: a predefined call's traits and row", "[classify]") {
    const classifier::Classified c = classifier::classify(doubles(100));
    CHECK(c.row.bytes == 800);
    CHECK(c.row.bucket == vocab::bucket_of(800));
    CHECK(c.row.comm_id == 42);
    CHECK(c.row.dtype == vocab::DtypeClass::floating);
    CHECK(c.row.op == static_cast<uint8_t>(kernels::Op::sum));
    CHECK(c.row.element_size == 8);
    CHECK(c.traits.bytes == 800);
    CHECK(c.traits.floating_values);
    CHECK_FALSE(c.traits.complex_type);
    CHECK(route::unservable(c.traits) == vocab::kServed);
    CHECK(route::replayable(c.traits));

    classifier::Facts complex = doubles(100);
    complex.type = kernels::Type::c64;
    complex.element_size = 16;
    CHECK(classifier::classify(complex).traits.complex_type);

    classifier::Facts facts = doubles(100);
    facts.library_bug = true;
    facts.device_check = true;
    const classifier::Classified bug = classifier::classify(facts);
    CHECK(bug.traits.library_bug);
    CHECK(bug.traits.device_check);
}

TEST_CASE("Classification: derived datatypes and user ops count under their own row", "[classify]") {
    classifier::Facts derived = doubles(10);
    derived.predefined_type = false;
    derived.derived_bytes = 1234;
    const classifier::Classified d = classifier::classify(derived);
    CHECK(d.row.bytes == 1234);  // the library's size, not count * element size
    CHECK(d.row.dtype == vocab::DtypeClass::derived);
    CHECK_FALSE(d.traits.floating_values);
    CHECK(route::unservable(d.traits) == Reason::derived_datatype);

    classifier::Facts user = doubles(10);
    user.kernel_op = false;
    user.user_op = true;
    user.supported = false;
    CHECK(classifier::classify(user).row.op == vocab::kRowOpUser);
    classifier::Facts other = doubles(10);  // MPI_REPLACE, MPI_NO_OP
    other.kernel_op = false;
    other.supported = false;
    CHECK(classifier::classify(other).row.op == vocab::kRowOpOther);
}

TEST_CASE("Classification asks whether a user op commutes only where that decides the reason", "[classify]") {
    classifier::Facts user = doubles(10);
    user.kernel_op = false;
    user.user_op = true;
    CHECK(classifier::asks_commutative(user));
    user.commutative = false;
    CHECK(route::unservable(classifier::classify(user).traits) == Reason::noncommutative_op);

    CHECK_FALSE(classifier::asks_commutative(doubles(10)));  // a predefined op
    for (auto change : {+[](classifier::Facts& f) { f.intercommunicator = true; },
                        +[](classifier::Facts& f) { f.comm_size = 1; }, +[](classifier::Facts& f) { f.count = 0; },
                        +[](classifier::Facts& f) { f.predefined_type = false; }}) {
        classifier::Facts f = user;
        change(f);
        CHECK_FALSE(classifier::asks_commutative(f));  // an earlier reason decides
    }
}
