// Fitting the cost model (policy/cost_model.h) to measured timings: `arshim tune` measures a sparse set of shapes and
// paths, recovers the machine parameters from them, and predicts the rest (issue 12; seed 001 §6: the model finds
// the direction of the optimum, measurement its location). Deterministic, no external library.
#pragma once

#include <vector>

#include "policy/cost_model.h"

namespace arshim::policy::model {

// One measured call: the shape, the path and its parameters, the MPI library, and the time (seconds, > 0).
struct Sample {
    Shape shape;
    Decision decision;
    Flavor flavor = Flavor::mpich;
    double seconds = 0;
};

struct FitOptions {
    int max_evaluations = 6000;  // objective evaluations per Nelder-Mead run
    int restarts = 4;            // runs, each restarted from the previous best with a fresh simplex
};

struct FitResult {
    MachineParams params;
    double rms_log_error = 0;  // sqrt(mean((log predicted - log measured)^2)) over the samples used
    int samples_used = 0;      // samples with a model (sharp and reproducible have none) and seconds > 0
    int evaluations = 0;
};

// Minimizes the mean squared log error (relative error, symmetric in over- and under-prediction) over the log of
// every parameter, starting from `start`, with Nelder-Mead. Each parameter stays within a factor 10^4 of its
// start (stream_gain within [1, 256]), so a sample set that cannot pin a parameter leaves it finite.
FitResult fit(const std::vector<Sample>& samples, const MachineParams& start, const FitOptions& options = {});

// Median over the samples of |predicted - measured| / measured; NaN when no sample has a model.
double median_relative_error(const MachineParams& params, const std::vector<Sample>& samples);

}  // namespace arshim::policy::model
