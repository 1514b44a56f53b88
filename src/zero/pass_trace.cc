// pass_trace (see pass_trace.h).
#include "zero/pass_trace.h"

#include <string>

namespace zerotrain::zero {

std::vector<TraceStep> pass_trace(const model::Module& m) {
  const int G = m.num_groups();
  std::vector<TraceStep> t;
  auto name = [&](const char* pass, int s) {
    return std::string(pass) + " stage " + std::to_string(s) + " (" +
           m.layout().groups()[static_cast<size_t>(s)].name + ")";
  };
  for (int s = 0; s < G; ++s)
    t.push_back({m.param_groups_read(s, model::Pass::kForward), name("forward", s)});
  for (int s = G - 1; s >= 0; --s)
    t.push_back({m.param_groups_read(s, model::Pass::kBackward), name("backward", s)});
  return t;
}

}  // namespace zerotrain::zero
