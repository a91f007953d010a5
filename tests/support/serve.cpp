#include "tests/support/serve.hpp"

namespace cs::test {

serving::ServingResults serve(const serving::ServingScenario& s, const serving::ServingRunOptions& options) {
  return report::serving_results(s, serving::simulate_serving(s, options));
}

serving::ServingResults serve(const serving::ServingScenario& s, bool record_trace) {
  serving::ServingRunOptions options;
  options.record_trace = record_trace;
  return serve(s, options);
}

}  // namespace cs::test
