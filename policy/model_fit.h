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

// Parameters measured directly (arshim-tune-probe --params), in MachineParams field order: the fit starts from them
// and keeps them near what was measured. A quiet ping-pong or memcpy is the best case: inside a collective, latencies
// grow (contention, scheduling on a busy node: up to 30x) and bandwidths shrink (sharing: down to 1/4), while neither
// gets much better (latency 1/2, bandwidth 1.5x).
enum ParamBit : unsigned {
    kCopyBw = 1u << 0,
    kIntraLatency = 1u << 1,
    kGamma = 1u << 2,
    kAlpha = 1u << 3,
    kNetBw = 1u << 4,
    kStreamGain = 1u << 5,
};

struct FitOptions {
    int max_evaluations = 6000;  // objective evaluations per Nelder-Mead run
    int restarts = 4;            // runs, each restarted from the previous best with a fresh simplex
    unsigned probed = 0;         // ParamBit set: which fields of fit()'s `start` were measured directly
};

struct FitResult {
    MachineParams params;
    double rms_log_error = 0;  // sqrt(mean((log predicted - log measured)^2)) over the samples used
    int samples_used = 0;      // samples with a model (sharp and reproducible have none) and seconds > 0
    int evaluations = 0;
};

// Minimizes the mean squared log error (relative error, symmetric in over- and under-prediction) over the log of
// every parameter, starting from `start`, with Nelder-Mead. Each parameter stays within a factor 10^4 of its
// start (stream_gain within [1, 256]), so a sample set that cannot pin a parameter leaves it finite; a probed one
// (options.probed) within the bounds given at ParamBit.
FitResult fit(const std::vector<Sample>& samples, const MachineParams& start, const FitOptions& options = {});

// Median over the samples of |predicted - measured| / measured; NaN when no sample has a model.
double median_relative_error(const MachineParams& params, const std::vector<Sample>& samples);

}  // namespace arshim::policy::model
