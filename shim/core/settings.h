// The settings module: the one place in shim/ that reads the environment's ARSHIM_* options and makes the settings
// every component reads (policy/settings.h: ProcessSettings per process, Settings per communicator). Nothing else in
// shim/ names an option id or builds a Config (test/unit/check_settings.py keeps it so).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "policy/settings.h"

namespace arshim::settings {

// This rank's own ARSHIM_* environment, as settings (no communication; problems are not collected: the agreed
// settings report them).
ProcessSettings own();

// World rank 0's ARSHIM_* environment, broadcast over MPI_COMM_WORLD when `collective` (else this rank's own), made
// into the process's settings on every rank. Every problem (an unknown variable, a bad value) is one line in
// `problems`; the option keeps its default.
ProcessSettings agreed_at_init(bool collective, int world_rank, std::vector<std::string>* problems);

// When MPI_Init was not intercepted each rank read its own environment: the ranks of `comm` compare their settings
// and policy text (`*policy_text`, `*have_policy_file`: this rank's, replaced by rank 0's when they differ). Returns
// rank 0's settings, made on every rank, when they differ, else nullptr. Collective over `comm`.
std::unique_ptr<ProcessSettings> agree_over(const ProcessSettings& mine, std::string* policy_text,
                                            bool* have_policy_file, MPI_Comm comm);

}  // namespace arshim::settings
