// `arshim-policy tune-table` (tune_table_cli.cpp).
#pragma once
#include <string>

namespace arshim::policy {
// Reads the tuner's measurements (JSON), writes the tuned table to out_file (stdout when empty); with crossovers,
// prints the fitted parameters and the sizes where the model's ranking changes instead. Returns the exit status.
int run_tune_table(const std::string& samples_file, const std::string& out_file, bool crossovers);
}
