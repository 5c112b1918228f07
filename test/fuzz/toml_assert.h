// Force-included (-include) into the fuzz build, which compiles toml++ header-only so the fuzzer instruments it.
//
// toml++ 3.3's internal assertions are debug-only preconditions, and some do not hold on malformed input although
// the code after them reports a normal parse_error: parse_key() on headers such as "[)" or "[[[1]]]"
// (marzer/tomlplusplus#301, fixed after 3.3) and parse_value() on "a = [1, }]". The shim links Debian's release
// build of libtomlplusplus, built by gcc with NDEBUG, where they are compiled out and those inputs give parse
// errors (checked). So the fuzz build compiles them out the same way; ASan and UBSan still check every access.
// (Defining NDEBUG instead would turn them into __builtin_assume under clang: undefined behaviour on such input.)
#pragma once

#define TOML_ASSERT(expr) static_cast<void>(0)
