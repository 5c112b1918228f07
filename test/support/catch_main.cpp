// main() of the Catch2 2 unit tests, compiled once into a static library (test/meson.build). Catch2 3 brings its
// own main() (catch2-with-main), so this file is not built there.
#define CATCH_CONFIG_MAIN
#include "test/support/catch.h"
