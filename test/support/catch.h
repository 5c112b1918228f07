// The one Catch2 include of the C++ unit tests, for Catch2 2 (Debian 12: the single header <catch2/catch.hpp>) and
// Catch2 3 (Debian 13: separate headers, a compiled library, main() in catch2-with-main). test/meson.build finds the
// version and defines ARSHIM_CATCH2_MAJOR; main() comes from test/support/catch_main.cpp (Catch2 2) or the
// library (Catch2 3), never from a test source. Tests write Catch2 3's spellings (Catch::Approx, Catch::Session);
// this header provides them under Catch2 2.
#pragma once

#if !defined(ARSHIM_CATCH2_MAJOR)
#error "ARSHIM_CATCH2_MAJOR is not defined: build the tests with meson (test/meson.build) or -DARSHIM_CATCH2_MAJOR=2|3"
#elif ARSHIM_CATCH2_MAJOR == 2
#include <catch2/catch.hpp>
namespace Catch {
using Detail::Approx;  // Catch2 3 has Catch::Approx only; Catch2 2 has it as Catch::Detail::Approx and ::Approx
}  // namespace Catch
#elif ARSHIM_CATCH2_MAJOR == 3
#include <catch2/catch_approx.hpp>
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#else
#error "ARSHIM_CATCH2_MAJOR must be 2 or 3"
#endif
