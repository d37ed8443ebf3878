// The result of `llmrepro gpu-probe`: pure data shared by the probe (gpu/), which fills it, and
// the renderers (report/), which draw it. Schema "llmrepro.gpu-probe.v1"; field meanings follow
// docs/gpu-probe.md §7.2.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/analysis_config.hpp"

namespace llmrepro::core {

inline constexpr const char* k_probe_schema = "llmrepro.gpu-probe.v1";

// A parameter value: an integer (M, K, split count), a real (a gap) or a name (a policy).
using ProbeValue = std::variant<std::int64_t, double, std::string>;

struct ProbeParam {
  std::string name;
  ProbeValue value;
};

// Shorthands the experiments (CPU and CUDA alike) use to name a row's parameters.
inline ProbeParam param(const char* name, std::int64_t value) { return {name, ProbeValue{value}}; }
inline ProbeParam param(const char* name, int value) {
  return {name, ProbeValue{static_cast<std::int64_t>(value)}};
}
inline ProbeParam param(const char* name, const char* value) {
  return {name, ProbeValue{std::string(value)}};
}

// An experiment-specific measurement beside the common drift metrics (distinct digests,
// microseconds, flip counts...).
struct ProbeMeasure {
  std::string name;
  double value = 0.0;
};

// One compared case: an output (test) against its reference (same op, other batch or order).
struct ProbeRow {
  std::string variant;
  std::vector<ProbeParam> params; // the varied parameters' values for this row
  std::int64_t elements = 0;      // outputs compared
  double changed_frac = 0.0;      // fraction of outputs whose stored bits differ
  double max_abs = 0.0;           // max |y - y0|
  double max_ulp = 0.0;           // max |y - y0| / ulp(|y0|) in the output dtype
  // Outputs whose distance is 0, 1, 2, 3-7 and >= 8 ULP.
  std::array<std::int64_t, 5> ulp_histogram{};
  std::optional<double> fp32_changed_frac; // pre-rounding fp32 values that changed, where known
  std::vector<ProbeMeasure> measures;
  // SHA-256 (hex) of the test output's bits where a row checks repeatability (E0, E3); empty
  // elsewhere.
  std::string sha256;
};

enum class ProbeStatus { ok, failed, skipped };

struct ProbeExperiment {
  std::string id;    // "E0" ... "E7"
  std::string title; // one line for people
  ProbeStatus status = ProbeStatus::ok;
  std::vector<ProbeParam> held;    // parameters fixed for every row
  std::vector<std::string> varied; // names of the parameters that rows vary
  std::vector<ProbeRow> rows;
  std::vector<std::string> notes; // what the rows show, caveats, why skipped
};

// The flip experiment's conclusion: the largest observed top-1/top-2 gap at which the argmax
// flipped, next to the audit's default τ.
struct FlipRecommendation {
  bool any_flip = false;
  double flip_gap = 0.0; // largest observed gap (logit units = nats) with a flip
  double default_tau = k_default_fragile_gap;
  std::string text;
};

struct ProbeDevice {
  std::string name;
  std::int64_t sm_count = 0; // real SMs on a GPU; the emulated count on the CPU backend
  std::string driver;        // empty where not applicable (CPU)
  std::string cuda;
  std::string cublas;
};

struct ProbeResult {
  std::string schema = k_probe_schema;
  std::string backend;        // "cuda" or "cpu"
  std::string backend_reason; // why auto chose it, or "requested"
  std::string dtype;          // "bf16", "fp16" or "fp32"
  bool quick = false;
  ProbeDevice device;
  std::vector<ProbeExperiment> experiments;
  FlipRecommendation recommendation;
};

inline const char* to_string(ProbeStatus status) {
  switch (status) {
  case ProbeStatus::ok: return "ok";
  case ProbeStatus::failed: return "failed";
  case ProbeStatus::skipped: return "skipped";
  }
  return "failed";
}

} // namespace llmrepro::core
