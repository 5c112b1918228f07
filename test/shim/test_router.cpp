// The router (shim/core/router.h) without MPI: every routing rule, from traits, settings, the policy's decision and the
// key's book to the route, the reason, whether it replays, the candidate tried and verify's check.
#include "test/support/catch.h"

#include <initializer_list>

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
