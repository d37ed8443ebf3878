// E4 and E5 on the CPU: the row reductions of RMSNorm and the split-KV reductions of decode
// attention, each with the policy that picks the order from the batch and its fixed alternative.
#include <map>

#include "core/probe_reduction.hpp"
#include "gpu/cpu_experiments.hpp"
#include "gpu/drift_metrics.hpp"
#include "gpu/split_policy.hpp"

namespace llmrepro::gpu {

namespace {

using core::ProbeParam;
using core::ProbeValue;

using core::param;

std::vector<float> rounded(core::Precision precision, const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = core::round_to(precision, values[i]);
  return out;
}

// The RMSNorm block-reduction order a policy picks for a batch of `tokens` rows.
core::RowReduction norm_order(const std::string& policy, std::int64_t tokens) {
  if (policy == "adaptive_block") return {tokens < 256 ? 1024 : 256, 1};
  if (policy == "split_row") return {256, tokens < 64 ? 4 : 1};
  return {256, 1};
}

} // namespace

core::ProbeExperiment run_rmsnorm(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E4";
  experiment.title = "RMSNorm with fused residual add: block size and split-row policies";
  const std::size_t anchors = config.quick ? 32 : 128;
  experiment.held = {param("anchor_rows", static_cast<std::int64_t>(anchors)),
                     param("fused_residual", "yes"),
                     {"eps", ProbeValue{1e-6}},
                     {"dtype", ProbeValue{std::string(core::to_string(config.precision))}}};
  experiment.varied = {"hidden", "tokens", "variant"};
  const std::vector<std::size_t> hiddens =
      config.quick ? std::vector<std::size_t>{4096} : std::vector<std::size_t>{4096, 5120, 8192};
  const float eps = 1e-6f;
  for (const std::size_t hidden : hiddens) {
    const auto x = random_values(anchors * hidden, config.seed + 60 + hidden, config.precision,
                                 4.0f);
    const auto residual =
        random_values(anchors * hidden, config.seed + 70 + hidden, config.precision, 4.0f);
    const auto weight = random_values(hidden, config.seed + 80 + hidden, config.precision, 2.0f);
    std::vector<float> summed(anchors * hidden);
    for (std::size_t i = 0; i < summed.size(); ++i)
      summed[i] = core::round_to(config.precision, x[i] + residual[i]);
    // fp32 outputs and inv_rms for every anchor row under one reduction order.
    const auto run = [&](core::RowReduction order, std::vector<float>& inv_rms) {
      std::vector<float> out(anchors * hidden);
      inv_rms.assign(anchors, 0.0f);
      for (std::size_t a = 0; a < anchors; ++a)
        inv_rms[a] = core::rmsnorm_row(summed.data() + a * hidden, weight.data(), hidden, order,
                                       eps, core::Precision::fp32, out.data() + a * hidden);
      return out;
    };
    for (const char* policy : {"adaptive_block", "split_row", "fixed_block"}) {
      std::vector<float> reference_inv;
      const auto reference_fp32 = run(norm_order(policy, 1), reference_inv);
      const auto reference = rounded(config.precision, reference_fp32);
      for (const std::int64_t tokens : {255, 256, 2048}) {
        const core::RowReduction order = norm_order(policy, tokens);
        std::vector<float> test_inv;
        const auto test_fp32 = run(order, test_inv);
        const auto test = rounded(config.precision, test_fp32);
        auto row = compare_outputs(policy,
                                   {param("hidden", static_cast<std::int64_t>(hidden)),
                                    param("tokens", tokens), param("lanes", order.lanes),
                                    param("row_splits", order.row_splits)},
                                   reference.data(), test.data(), reference.size(),
                                   config.precision, reference_fp32.data(), test_fp32.data());
        std::int64_t inv_changed = 0;
        for (std::size_t a = 0; a < anchors; ++a)
          if (core::float_bits(reference_inv[a]) != core::float_bits(test_inv[a])) ++inv_changed;
        add_measure(row, "inv_rms_changed_frac",
                    static_cast<double>(inv_changed) / static_cast<double>(anchors));
        experiment.rows.push_back(std::move(row));
      }
    }
  }
  experiment.notes.push_back(
      "Reference: the same rows normalised in a batch of 1 token. adaptive_block uses 1024 "
      "lanes below 256 tokens and 256 from there (as vLLM's kernel does); split_row shares a row "
      "between 4 CTAs below 64 tokens; fixed_block never changes. inv_rms_changed_frac is the "
      "root cause: how often 1/rms itself changed bits.");
  return experiment;
}

core::ProbeExperiment run_attention(const ExperimentConfig& config) {
  core::ProbeExperiment experiment;
  experiment.id = "E5";
  experiment.title = "Decode attention: split-KV policies over batch size";
  const std::size_t head_dim = 128;
  const std::size_t query_heads = 32;
  const std::size_t kv_heads = 8;
  experiment.held = {param("query_heads", static_cast<std::int64_t>(query_heads)),
                     param("kv_heads", static_cast<std::int64_t>(kv_heads)),
                     param("head_dim", static_cast<std::int64_t>(head_dim)),
                     param("emulated_sms", k_emulated_sm_count),
                     {"dtype", ProbeValue{std::string(core::to_string(config.precision))}}};
  experiment.varied = {"L", "B", "variant"};
  const std::vector<std::size_t> lengths =
      config.quick ? std::vector<std::size_t>{1024, 4096}
                   : std::vector<std::size_t>{1024, 4096, 16384, 32768};
  const std::vector<std::int64_t> batches = {1, 2, 4, 8, 16, 24, 32, 64};
  const float scale = 1.0f / 11.3137085f; // 1/sqrt(128), rounded once
  for (const std::size_t length : lengths) {
    const auto q = random_values(query_heads * head_dim, config.seed + 90 + length,
                                 config.precision);
    const auto keys =
        random_values(kv_heads * length * head_dim, config.seed + 91 + length, config.precision);
    const auto values =
        random_values(kv_heads * length * head_dim, config.seed + 92 + length, config.precision);
    // The anchor sequence's output (fp32) and LSE per head, for one set of split bounds.
    struct Output {
      std::vector<float> out;
      std::vector<float> lse;
    };
    std::map<std::vector<std::size_t>, Output> cache;
    const auto compute = [&](const std::vector<std::size_t>& bounds) -> const Output& {
      auto found = cache.find(bounds);
      if (found != cache.end()) return found->second;
      Output result{std::vector<float>(query_heads * head_dim), std::vector<float>(query_heads)};
      for (std::size_t h = 0; h < query_heads; ++h) {
        const std::size_t kv = h / (query_heads / kv_heads);
        result.lse[h] = core::attention_decode(
            q.data() + h * head_dim, keys.data() + kv * length * head_dim,
            values.data() + kv * length * head_dim, length, head_dim, bounds, scale,
            core::Precision::fp32, result.out.data() + h * head_dim);
      }
      return cache.emplace(bounds, std::move(result)).first->second;
    };
    for (const char* policy : {"fa2_heuristic", "fixed_split_256", "fixed_split_2048", "no_split"}) {
      const std::string name = policy;
      const auto bounds_for = [&](std::int64_t batch) {
        if (name == "fa2_heuristic")
          return block_split_bounds(
              length, fa2_decode_splits(batch, static_cast<std::int64_t>(kv_heads), length,
                                        k_emulated_sm_count));
        if (name == "fixed_split_256") return fixed_size_bounds(length, 256);
        if (name == "fixed_split_2048") return fixed_size_bounds(length, 2048);
        return std::vector<std::size_t>{0, length};
      };
      const Output reference_output = compute(bounds_for(1));
      const auto reference = rounded(config.precision, reference_output.out);
      for (const auto batch : batches) {
        const auto bounds = bounds_for(batch);
        const Output& test_output = compute(bounds);
        const auto test = rounded(config.precision, test_output.out);
        auto row = compare_outputs(
            policy,
            {param("L", static_cast<std::int64_t>(length)), param("B", batch),
             param("splits", static_cast<std::int64_t>(bounds.size() - 1))},
            reference.data(), test.data(), reference.size(), config.precision,
            reference_output.out.data(), test_output.out.data());
        std::int64_t lse_changed = 0;
        for (std::size_t h = 0; h < query_heads; ++h)
          if (core::float_bits(reference_output.lse[h]) != core::float_bits(test_output.lse[h]))
            ++lse_changed;
        add_measure(row, "lse_changed_frac",
                    static_cast<double>(lse_changed) / static_cast<double>(query_heads));
        experiment.rows.push_back(std::move(row));
      }
    }
  }
  experiment.notes.push_back(
      "Reference: the anchor sequence decoded alone (B = 1) under the same policy. fa2_heuristic "
      "re-derives the split count from B (FlashAttention-2's num_splits_heuristic with 2 x 132 "
      "slots and 128-key blocks); fixed split sizes put boundaries at absolute KV positions and "
      "never change with B. Outputs near zero (values that nearly cancel) can move by many ULP "
      "of their own tiny magnitude: see the histogram's last bins.");
  return experiment;
}

} // namespace llmrepro::gpu
