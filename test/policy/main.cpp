// Catch2 main for the policy tests (compiled once, separate from the test sources).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
