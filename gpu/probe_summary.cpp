#include "gpu/probe_summary.hpp"

#include <algorithm>
#include <cstdio>

namespace llmrepro::gpu {

std::string probe_summary_text(const core::ProbeResult& result) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "gpu-probe: backend %s (%s)\n", result.backend.c_str(),
                result.backend_reason.c_str());
  out += line;
  std::snprintf(line, sizeof line, "device: %s, %lld SMs%s%s%s%s\n", result.device.name.c_str(),
                static_cast<long long>(result.device.sm_count),
                result.device.driver.empty() ? "" : ", driver ", result.device.driver.c_str(),
                result.device.cuda.empty() ? "" : ", CUDA ", result.device.cuda.c_str());
  out += line;
  std::snprintf(line, sizeof line, "dtype: %s%s\n", result.dtype.c_str(),
                result.quick ? " (quick)" : "");
  out += line;
  for (const auto& experiment : result.experiments) {
    std::size_t drifted = 0;
    double max_changed = 0.0;
    double max_ulp = 0.0;
    for (const auto& row : experiment.rows) {
      if (row.changed_frac > 0.0) ++drifted;
      max_changed = std::max(max_changed, row.changed_frac);
      max_ulp = std::max(max_ulp, row.max_ulp);
    }
    std::snprintf(
        line, sizeof line,
        "  %-3s %-7s %-66s %3zu/%-3zu rows changed, max %.3g%% of outputs, max %.3g ULP\n",
        experiment.id.c_str(), core::to_string(experiment.status), experiment.title.c_str(),
        drifted, experiment.rows.size(), 100.0 * max_changed, max_ulp);
    out += line;
  }
  out += "recommendation: " + result.recommendation.text + "\n";
  return out;
}

bool self_test_passed(const core::ProbeResult& result) {
  for (const auto& experiment : result.experiments)
    if (experiment.id == "E0") return experiment.status == core::ProbeStatus::ok;
  return false;
}

} // namespace llmrepro::gpu
