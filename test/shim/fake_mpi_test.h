// What the shim's tests on the fake MPI share (test/fake_mpi/fake_mpi.h): the query API of shim/entry/query.cpp, and
// a world run that fails the Catch2 test with every rank's findings.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "fake_mpi.h"
#include "test/support/catch.h"

extern "C" {
long long arshim_path_calls(const char* path);
long long arshim_reason_calls(const char* reason);
double arshim_startup_seconds(const char* stage);
const char* arshim_version(void);
const char* arshim_mpi_flavor(void);
int arshim_stats_set_timed(int on);
int arshim_stats_set_callsites(int on);
int arshim_stats_set_sample(int n);
long long arshim_sharp_calls(const char* kind);
void mpi_init_f08_(MPI_Fint* ierr);
void mpi_init_thread_f08_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr);
}

// Runs `body` on `ranks` fake ranks with `env` and checks that every rank ended well and found nothing wrong.
inline void run_world(int ranks, const std::map<std::string, std::string>& env, const fake_mpi::Body& body,
                      double timeout_s = 60) {
    const auto outcomes = fake_mpi::run(ranks, env, body, timeout_s);
    if (std::getenv("FAKE_MPI_NOTES") != nullptr)  // the ranks' notes, when debugging a test
        for (const fake_mpi::Outcome& o : outcomes) std::fputs(o.notes.c_str(), stderr);
    INFO(fake_mpi::summary(outcomes));
    CHECK(fake_mpi::summary(outcomes).empty());
}

// A test's files: a fresh private directory (mkdtemp: mode 0700, a new name), removed at the end, and whole-file
// reads and writes.
inline std::string temp_dir() {
    char dir[] = "/tmp/arshim-fake-mpi-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    return dir;
}
inline void remove_dir(const std::string& dir) {
    std::error_code error;
    std::filesystem::remove_all(dir, error);
    REQUIRE(!error);
}
inline std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}
inline void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
