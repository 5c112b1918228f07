// The table of known library bugs as data: version strings parsed, version ranges matched (a fixed version is not
// penalised), every entry well formed.
#include "test/support/catch.h"

#include <set>
#include <string>

#include "policy/library_bugs.h"

using namespace arshim::policy;

TEST_CASE("Library version strings are parsed", "[library_bugs]") {
    LibraryVersion m = parse_library_version("MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022");
    CHECK(m.library == "mpich");
    CHECK(m.text() == "4.0.2");
    LibraryVersion o = parse_library_version("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4");
    CHECK(o.library == "openmpi");
    CHECK(o.text() == "4.1.4");
    CHECK(parse_library_version("Open MPI v5.0.0rc12, package: Open MPI").text() == "5.0.0");
    CHECK(parse_library_version("MPICH Version:\t4.1").text() == "4.1.0");
    CHECK(parse_library_version("Intel(R) MPI Library 2021.6").library.empty());  // unknown: nothing matches
    CHECK(parse_library_version("MPICH Version: unknown").library.empty());
    CHECK(parse_library_version("").library.empty());
}

TEST_CASE("Entries match only the affected library and versions", "[library_bugs]") {
    auto active = [](const char* version_text) {
        std::set<std::string> ids;
        const LibraryVersion v = parse_library_version(version_text);
        for (const LibraryBug& bug : library_bugs())
            if (affects(bug, v)) ids.insert(bug.id);
        return ids;
    };
    CHECK(active("MPICH Version:\t4.0.2") == std::set<std::string>{"mpich-6083-unsigned-minmax"});
    CHECK(active("MPICH Version:\t4.1.1").empty());   // outside the reported series
    CHECK(active("MPICH Version:\t3.4.3").empty());
    CHECK(active("Open MPI v4.1.4, package: x") ==
          std::set<std::string>{"ompi-8045-avx-small-int-sum", "ompi-10525-unsigned-long-minmax",
                                "ompi-avx-offset-minmax"});
    CHECK(active("Open MPI v4.1.5, package: x") ==  // #10525 fixed by then
          std::set<std::string>{"ompi-8045-avx-small-int-sum", "ompi-avx-offset-minmax"});
    CHECK(active("Open MPI v4.1.1, package: x").count("ompi-10525-unsigned-long-minmax") == 0);  // before it
    CHECK(active("Open MPI v4.0.7, package: x").empty());  // no op/avx before 4.1
    // Open MPI 5.0.7, measured (Debian 13): the small-integer SUM and MPI_OFFSET MIN/MAX, not #10525.
    const std::set<std::string> ompi5{"ompi-8045-avx-small-int-sum", "ompi-avx-offset-minmax"};
    CHECK(active("Open MPI v5.0.7, package: Debian OpenMPI") == ompi5);
    CHECK(active("Open MPI v5.0.3, package: x") == ompi5);  // between measured releases: in the entries' ranges
    // Newer than any measured release: the newest measured release's entries, until measured.
    CHECK(active("Open MPI v5.0.8, package: x") == ompi5);
    CHECK(active("Open MPI v6.0.0rc1, package: x") == ompi5);
    // MPICH 4.2.1 (Debian 13) and 5.0.2 (forky) measured right; a newer MPICH keeps 5.0.2's (none).
    CHECK(active("MPICH Version:\t4.2.1").empty());
    CHECK(active("MPICH Version:\t5.0.2").empty());
    CHECK(active("MPICH Version:\t5.1.0").empty());
}

TEST_CASE("A release newer than every measured one is named, with the newest measured", "[library_bugs]") {
    const auto newer = [](const char* text) {
        const LibraryVersion* newest = newer_than_measured(parse_library_version(text));
        return newest ? newest->text() : std::string("-");
    };
    CHECK(newer("Open MPI v5.0.8, package: x") == "5.0.7");
    CHECK(newer("Open MPI v5.0.7, package: x") == "-");
    CHECK(newer("Open MPI v4.1.6, package: x") == "-");  // older than the newest measured
    CHECK(newer("MPICH Version:\t5.0.3") == "5.0.2");
    CHECK(newer("MPICH Version:\t4.2.1") == "-");
    CHECK(newer("Intel(R) MPI Library 2021.6") == "-");  // unrecognized: nothing assumed
}

TEST_CASE("Every entry is well formed", "[library_bugs]") {
    std::set<std::string> ids;
    for (const LibraryBug& bug : library_bugs()) {
        INFO(bug.id);
        CHECK(ids.insert(bug.id).second);
        CHECK((std::string(bug.library) == "mpich" || std::string(bug.library) == "openmpi"));
        CHECK_FALSE(bug.last < bug.first);
        CHECK(bug.ops != 0);
        CHECK_FALSE(bug_datatypes(bug).empty());
        for (const std::string& name : bug_datatypes(bug)) CHECK(name.rfind("MPI_", 0) == 0);
        CHECK(std::string(bug.reference).size() > 0);
    }
    CHECK(library_bugs().size() <= 8);  // shim/base/library_bugs.h kMaxEntries
}
