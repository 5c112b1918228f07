// `arshim-policy tune-table` (tune_table_cli.cpp).
#pragma once
#include <string>

namespace arshim::policy {
// Reads the tuner's measurements (JSON) and prints the tuned table on stdout (the driver writes the file: whole or not
// at all, never through a symlink); with crossovers, prints the fitted parameters and the sizes where the model's or
// the measurements' ranking changes instead. Returns the exit status.
int run_tune_table(const std::string& samples_file, bool crossovers);
}
