#include "gpu/cuda/device_checks.hpp"

#include <string>

#include "gpu/drift_metrics.hpp"
#include "gpu/split_policy.hpp"

namespace llmrepro::gpu::cuda {

namespace {

using core::param;

core::ProbeRow same_bits(const std::string& op, std::vector<core::ProbeParam> params,
                         const std::vector<float>& host, const std::vector<float>& device) {
  params.insert(params.begin(), param("check", "cpu_vs_gpu"));
  if (host.size() != device.size()) {
    core::ProbeRow row;
    row.variant = op + "_device_vs_cpu";
    row.params = std::move(params);
    row.changed_frac = 1.0;
    return row;
  }
  return compare_outputs(op + "_device_vs_cpu", std::move(params), host.data(), device.data(),
                         host.size(), numerics::Precision::fp32);
}

std::vector<float> as_floats(const std::vector<std::uint8_t>& flags) {
  return std::vector<float>(flags.begin(), flags.end());
}

} // namespace

core::Result<std::vector<core::ProbeRow>> device_vs_host_rows(const ExperimentConfig& config,
                                                              ExperimentOps& device) {
  CpuOps host;
  std::vector<core::ProbeRow> rows;
  const numerics::Precision precision = config.precision;

  const std::size_t k = 4096;
  const std::size_t outputs = 256;
  const auto x = random_values(k, config.seed + 101, precision);
  const auto w = random_values(outputs * k, config.seed + 102, precision);
  for (const int splits : {1, 3, 8})
    for (const auto scheme :
         {numerics::PartialScheme::compute_type, numerics::PartialScheme::output_type,
          numerics::PartialScheme::inplace}) {
      auto on_host = host.split_k(x.data(), w.data(), outputs, k, splits, scheme, precision);
      auto on_device = device.split_k(x.data(), w.data(), outputs, k, splits, scheme, precision);
      if (!on_device) return on_device.error();
      std::vector<core::ProbeParam> params = {param("split", splits),
                                              param("scheme", numerics::to_string(scheme))};
      rows.push_back(same_bits("split_k", params, on_host->out, on_device->out));
      rows.push_back(same_bits("split_k_fp32", params, on_host->out_fp32, on_device->out_fp32));
    }

  const std::size_t norm_rows = 8;
  const std::size_t hidden = 4096;
  const auto nx = random_values(norm_rows * hidden, config.seed + 103, precision, 4.0f);
  const auto nr = random_values(norm_rows * hidden, config.seed + 104, precision, 4.0f);
  const auto nw = random_values(hidden, config.seed + 105, precision, 2.0f);
  for (const numerics::RowReduction order :
       {numerics::RowReduction{1024, 1}, numerics::RowReduction{256, 1},
        numerics::RowReduction{256, 4}, numerics::RowReduction{32, 3}}) {
    auto on_host =
        host.rmsnorm(nx.data(), nr.data(), nw.data(), norm_rows, hidden, order, 1e-6f, precision);
    auto on_device =
        device.rmsnorm(nx.data(), nr.data(), nw.data(), norm_rows, hidden, order, 1e-6f, precision);
    if (!on_device) return on_device.error();
    std::vector<core::ProbeParam> params = {param("lanes", order.lanes),
                                            param("row_splits", order.row_splits)};
    rows.push_back(same_bits("rmsnorm", params, on_host->out, on_device->out));
    rows.push_back(same_bits("rmsnorm_inv_rms", params, on_host->inv_rms, on_device->inv_rms));
  }

  const std::size_t length = 1000;
  const std::size_t head_dim = 128;
  const auto q = random_values(8 * head_dim, config.seed + 106, precision);
  const auto keys = random_values(2 * length * head_dim, config.seed + 107, precision);
  const auto values = random_values(2 * length * head_dim, config.seed + 108, precision);
  const AttentionInputs inputs{q.data(), keys.data(), values.data(), 8,
                               2,        length,      head_dim,      1.0f / 11.3137085f};
  const std::pair<const char*, std::vector<std::size_t>> bound_sets[] = {
      {"no_split", {0, length}},
      {"blocks_3", block_split_bounds(length, 3)},
      {"fixed_256", fixed_size_bounds(length, 256)}};
  for (const auto& [name, bounds] : bound_sets) {
    auto on_host = host.attention(inputs, bounds);
    auto on_device = device.attention(inputs, bounds);
    if (!on_device) return on_device.error();
    rows.push_back(same_bits("attention", {param("bounds", name)}, on_host->out, on_device->out));
    rows.push_back(
        same_bits("attention_lse", {param("bounds", name)}, on_host->lse, on_device->lse));
  }

  FlipInputs flip;
  flip.k = 4096;
  flip.steps = 64;
  flip.hidden = random_values(flip.steps * flip.k, config.seed + 109, precision);
  flip.drifted = flip.hidden;
  for (std::size_t i = 0; i < flip.drifted.size(); i += 37)
    flip.drifted[i] = numerics::round_to(precision, flip.drifted[i] * 1.01f);
  flip.weights = random_values(2 * flip.steps * flip.k, config.seed + 110, precision);
  flip.targets = random_values(2 * flip.steps, config.seed + 111, numerics::Precision::fp32, 8.0f);
  for (const numerics::Precision logits : {precision, numerics::Precision::fp32})
    for (const bool drift : {false, true}) {
      auto on_host = host.flip_logits(flip, logits, drift);
      auto on_device = device.flip_logits(flip, logits, drift);
      if (!on_device) return on_device.error();
      std::vector<core::ProbeParam> params = {param("logits", numerics::to_string(logits)),
                                              param("drift", drift ? "yes" : "no")};
      rows.push_back(same_bits("flip_logit_a", params, on_host->logit_a, on_device->logit_a));
      rows.push_back(same_bits("flip_logit_b", params, on_host->logit_b, on_device->logit_b));
      rows.push_back(same_bits("flip_argmax", params, as_floats(on_host->argmax_a),
                               as_floats(on_device->argmax_a)));
      rows.push_back(same_bits("flip_argmax_b", params, as_floats(on_host->argmax_b),
                               as_floats(on_device->argmax_b)));
    }
  return rows;
}

} // namespace llmrepro::gpu::cuda
