// E4 and E5 on the CPU: the row reductions of RMSNorm and the split-KV reductions of decode
// attention, each with the policy that picks the order from the batch and its fixed alternative.
#include <map>

#include "numerics/float_format.hpp"
#include "numerics/reduction_schemes.hpp"
#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/drift_metrics.hpp"
#include "gpu/detail/experiment_ops.hpp"
#include "gpu/split_policy.hpp"

namespace llmrepro::gpu {

namespace {

using core::ProbeParam;
using core::ProbeValue;

using core::param;

// The RMSNorm block-reduction order a policy picks for a batch of `tokens` rows.
numerics::RowReduction norm_order(const std::string& policy, std::int64_t tokens) {
  if (policy == "adaptive_block") return {tokens < 256 ? 1024 : 256, 1};
  if (policy == "split_row") return {256, tokens < 64 ? 4 : 1};
  return {256, 1};
}

} // namespace

core::Result<core::ProbeExperiment> run_rmsnorm(const ExperimentConfig& config,
                                                ExperimentOps& ops) {
  core::ProbeExperiment experiment;
  experiment.id = "E4";
  experiment.title = "RMSNorm with fused residual add: block size and split-row policies";
  const std::size_t anchors = config.quick ? 32 : 128;
  experiment.held = {param("anchor_rows", static_cast<std::int64_t>(anchors)),
                     param("fused_residual", "yes"),
                     param("computed_on", ops.name().c_str()),
                     {"eps", ProbeValue{1e-6}},
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"hidden", "tokens", "variant"};
  const std::vector<std::size_t> hiddens =
      config.quick ? std::vector<std::size_t>{4096} : std::vector<std::size_t>{4096, 5120, 8192};
  const float eps = 1e-6f;
  for (const std::size_t hidden : hiddens) {
    const auto x =
        random_values(anchors * hidden, config.seed + 60 + hidden, config.precision, 4.0f);
    const auto residual =
        random_values(anchors * hidden, config.seed + 70 + hidden, config.precision, 4.0f);
    const auto weight = random_values(hidden, config.seed + 80 + hidden, config.precision, 2.0f);
    const auto run = [&](numerics::RowReduction order) {
      return ops.rmsnorm(x.data(), residual.data(), weight.data(), anchors, hidden, order, eps,
                         config.precision);
    };
    for (const char* policy : {"adaptive_block", "split_row", "fixed_block"}) {
      auto reference_run = run(norm_order(policy, 1));
      if (!reference_run) return reference_run.error();
      const std::vector<float>& reference_fp32 = reference_run->out;
      const std::vector<float>& reference_inv = reference_run->inv_rms;
      const auto reference = numerics::round_each_to(config.precision, reference_fp32);
      for (const std::int64_t tokens : {255, 256, 2048}) {
        const numerics::RowReduction order = norm_order(policy, tokens);
        auto test_run = run(order);
        if (!test_run) return test_run.error();
        const std::vector<float>& test_fp32 = test_run->out;
        const std::vector<float>& test_inv = test_run->inv_rms;
        const auto test = numerics::round_each_to(config.precision, test_fp32);
        auto row = compare_outputs(policy,
                                   {param("hidden", static_cast<std::int64_t>(hidden)),
                                    param("tokens", tokens), param("lanes", order.lanes),
                                    param("row_splits", order.row_splits)},
                                   reference.data(), test.data(), reference.size(),
                                   config.precision, reference_fp32.data(), test_fp32.data());
        std::int64_t inv_changed = 0;
        for (std::size_t a = 0; a < anchors; ++a)
          if (numerics::float_bits(reference_inv[a]) != numerics::float_bits(test_inv[a]))
            ++inv_changed;
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

core::ProbeExperiment run_rmsnorm(const ExperimentConfig& config) {
  CpuOps ops;
  return run_rmsnorm(config, ops).value();
}

core::Result<core::ProbeExperiment> run_attention(const ExperimentConfig& config,
                                                  ExperimentOps& ops) {
  core::ProbeExperiment experiment;
  experiment.id = "E5";
  experiment.title = "Decode attention: split-KV policies over batch size";
  const std::size_t head_dim = 128;
  const std::size_t query_heads = 32;
  const std::size_t kv_heads = 8;
  experiment.held = {param("query_heads", static_cast<std::int64_t>(query_heads)),
                     param("kv_heads", static_cast<std::int64_t>(kv_heads)),
                     param("head_dim", static_cast<std::int64_t>(head_dim)),
                     param(ops.name() == "cpu" ? "emulated_sms" : "sm_count", ops.sm_count()),
                     param("computed_on", ops.name().c_str()),
                     {"dtype", ProbeValue{std::string(numerics::to_string(config.precision))}}};
  experiment.varied = {"L", "B", "variant"};
  const std::vector<std::size_t> lengths = config.quick
                                               ? std::vector<std::size_t>{1024, 4096}
                                               : std::vector<std::size_t>{1024, 4096, 16384, 32768};
  const std::vector<std::int64_t> batches = {1, 2, 4, 8, 16, 24, 32, 64};
  const float scale = 1.0f / 11.3137085f; // 1/sqrt(128), rounded once
  for (const std::size_t length : lengths) {
    const auto q =
        random_values(query_heads * head_dim, config.seed + 90 + length, config.precision);
    const auto keys =
        random_values(kv_heads * length * head_dim, config.seed + 91 + length, config.precision);
    const auto values =
        random_values(kv_heads * length * head_dim, config.seed + 92 + length, config.precision);
    // The anchor sequence's output (fp32) and LSE per head, for one set of split bounds.
    const AttentionInputs inputs{q.data(), keys.data(), values.data(), query_heads,
                                 kv_heads, length,      head_dim,      scale};
    std::map<std::vector<std::size_t>, AttentionOutputs> cache;
    const auto compute =
        [&](const std::vector<std::size_t>& bounds) -> core::Result<const AttentionOutputs*> {
      auto found = cache.find(bounds);
      if (found != cache.end()) return &found->second;
      auto result = ops.attention(inputs, bounds);
      if (!result) return result.error();
      return &cache.emplace(bounds, std::move(*result)).first->second;
    };
    for (const char* policy :
         {"fa2_heuristic", "fixed_split_256", "fixed_split_2048", "no_split"}) {
      const std::string name = policy;
      const auto bounds_for = [&](std::int64_t batch) {
        if (name == "fa2_heuristic")
          return block_split_bounds(length,
                                    fa2_decode_splits(batch, static_cast<std::int64_t>(kv_heads),
                                                      length, ops.sm_count()));
        if (name == "fixed_split_256") return fixed_size_bounds(length, 256);
        if (name == "fixed_split_2048") return fixed_size_bounds(length, 2048);
        return std::vector<std::size_t>{0, length};
      };
      auto reference_found = compute(bounds_for(1));
      if (!reference_found) return reference_found.error();
      const AttentionOutputs reference_output = **reference_found;
      const auto reference = numerics::round_each_to(config.precision, reference_output.out);
      for (const auto batch : batches) {
        const auto bounds = bounds_for(batch);
        auto test_found = compute(bounds);
        if (!test_found) return test_found.error();
        const AttentionOutputs& test_output = **test_found;
        const auto test = numerics::round_each_to(config.precision, test_output.out);
        auto row =
            compare_outputs(policy,
                            {param("L", static_cast<std::int64_t>(length)), param("B", batch),
                             param("splits", static_cast<std::int64_t>(bounds.size() - 1))},
                            reference.data(), test.data(), reference.size(), config.precision,
                            reference_output.out.data(), test_output.out.data());
        std::int64_t lse_changed = 0;
        for (std::size_t h = 0; h < query_heads; ++h)
          if (numerics::float_bits(reference_output.lse[h]) !=
              numerics::float_bits(test_output.lse[h]))
            ++lse_changed;
        add_measure(row, "lse_changed_frac",
                    static_cast<double>(lse_changed) / static_cast<double>(query_heads));
        experiment.rows.push_back(std::move(row));
      }
    }
  }
  experiment.notes.push_back(
      "Reference: the anchor sequence decoded alone (B = 1) under the same policy. fa2_heuristic "
      "re-derives the split count from B (FlashAttention-2's num_splits_heuristic with 2 x SMs "
      "slots and 128-key blocks); fixed split sizes put boundaries at absolute KV positions and "
      "never change with B. Outputs near zero (values that nearly cancel) can move by many ULP "
      "of their own tiny magnitude: see the histogram's last bins.");
  return experiment;
}

core::ProbeExperiment run_attention(const ExperimentConfig& config) {
  CpuOps ops;
  return run_attention(config, ops).value();
}

} // namespace llmrepro::gpu
