// `arshim-policy predict` (predict_cli.cpp): the cost model's predictions for a list of call shapes, as JSON.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace arshim::policy {

struct PredictArgs {
    std::vector<std::string> layouts;  // "NODESxPPN", each with every size of `sizes`
    std::string sizes;                 // "8,64K,4M"
    std::string shapes_file;           // JSON shapes (each may carry its own machine parameters); "-" = stdin
    std::vector<std::string> params;   // "name=value": machine parameters for every shape ([model] key names)
    std::string policy;                // a policy file (default: $ARSHIM_POLICY); its [model] gives the parameters
    std::vector<std::string> flavors;  // the libraries whose algorithms the model costs (default: both)
    std::string decide_as;             // the flavor whose rules decide (default: each costed flavor's own)
};

// Prints {"params_from", "builtin", "policy", "predictions": [...]} on stdout (docs/scale.md "model_us"). Every
// shape gets, per costed flavor, the library's own allreduce, the decision of the built-in table, of the policy file
// when there is one, and of each path as ARSHIM_PATH=<path> forces it, each with its predicted time (null where a
// path has no model). One line on stderr and status 2 on bad input.
int run_predict(const PredictArgs& args);

}  // namespace arshim::policy
