// E6: when does a reduction-order change flip the argmax? Synthetic decode steps whose top-1 and
// top-2 logits come out of real K = 4096 dot products under two orders (the LM head's split 1
// vs split 4), with the wanted gap imposed by a per-logit fp32 bias added after the reduction.
// Only the two leading candidates are computed: the rest of the vocabulary sits far below and
// cannot take the argmax, so it would cost time and change nothing.
//
// Two perturbation models: `order_only` (the same hidden state, only the LM head's order
// differs: one op's worth of drift) and `hidden_drift` (the hidden state also carries 1-ULP
// changes on 2 % of its elements, as after drift has compounded through earlier layers).
// The gap is the one a user observes in run A, after rounding to the logits' dtype, binned;
// argmax takes the first index on ties.
#include <cmath>
#include <cstdio>
#include <limits>

#include "numerics/reduction.hpp"
#include "core/random.hpp"
#include "gpu/detail/cpu_experiments.hpp"
#include "gpu/drift_metrics.hpp"
#include "gpu/detail/experiment_ops.hpp"

namespace llmrepro::gpu {

namespace {

using core::ProbeParam;
using core::ProbeValue;

constexpr double k_hidden_drift_frac = 0.02;

struct GapBin {
  double low;
  double high;
};

// Observed-gap bins; the first holds exact ties only.
const GapBin k_bins[] = {{0.0, 0.0},  {0.0, 1e-4}, {1e-4, 1e-3}, {1e-3, 1e-2}, {1e-2, 3e-2},
                         {3e-2, 0.1}, {0.1, 0.3},  {0.3, 1.0},   {1.0, 1e9}};
constexpr std::size_t k_bin_count = sizeof k_bins / sizeof k_bins[0];

std::size_t bin_of(double gap) {
  if (gap == 0.0) return 0;
  for (std::size_t b = 1; b < k_bin_count; ++b)
    if (gap > k_bins[b].low && gap <= k_bins[b].high) return b;
  return k_bin_count - 1;
}

struct BinCounts {
  std::int64_t steps = 0;
  std::int64_t flips = 0;
  std::int64_t logits_changed = 0;
  double max_abs = 0.0;
  double max_ulp = 0.0;
  double max_flip_gap = -1.0;
};

// The smallest round threshold strictly above `gap`, for the recommendation.
double threshold_above(double gap) {
  for (const double candidate : {0.01, 0.02, 0.05, 0.1, 0.125, 0.2, 0.25, 0.5, 1.0, 2.0})
    if (candidate > gap) return candidate;
  return gap * 2.0;
}

std::string format_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

} // namespace

core::Result<FlipOutcome> run_flip(const ExperimentConfig& config, ExperimentOps& ops) {
  FlipOutcome outcome;
  core::ProbeExperiment& experiment = outcome.experiment;
  experiment.id = "E6";
  experiment.title = "Argmax flips on synthetic logits vs the observed top-1/top-2 gap";
  const std::size_t k = 4096;
  const int steps = config.quick ? 3000 : 10000;
  experiment.held = {{"K", ProbeValue{static_cast<std::int64_t>(k)}},
                     {"steps", ProbeValue{static_cast<std::int64_t>(steps)}},
                     {"order_a", ProbeValue{std::string("split 1")}},
                     {"order_b", ProbeValue{std::string("split 4")}},
                     {"top_magnitudes", ProbeValue{std::string("4, 12, 24")}},
                     {"hidden_drift_frac", ProbeValue{k_hidden_drift_frac}},
                     {"tie_rule", ProbeValue{std::string("first index")}},
                     {"computed_on", ProbeValue{ops.name()}}};
  experiment.varied = {"logits", "perturbation", "gap_low", "gap_high"};

  const numerics::Precision stored = config.precision;
  const std::string stored_name = std::string(numerics::to_string(stored)) + "_logits";
  struct Variant {
    std::string logits;
    numerics::Precision precision;
    bool drift;
  };
  std::vector<Variant> variants = {{stored_name, stored, false}, {stored_name, stored, true}};
  if (stored != numerics::Precision::fp32) {
    variants.push_back({"fp32_logits", numerics::Precision::fp32, false});
    variants.push_back({"fp32_logits", numerics::Precision::fp32, true});
  }
  const float magnitudes[] = {4.0f, 12.0f, 24.0f};

  // The same steps for every variant: one stream of inputs and gaps, drawn once.
  FlipInputs inputs;
  inputs.k = k;
  inputs.steps = static_cast<std::size_t>(steps);
  inputs.hidden.resize(inputs.steps * k);
  inputs.drifted.resize(inputs.steps * k);
  inputs.weights.resize(inputs.steps * 2 * k);
  inputs.targets.resize(inputs.steps * 2);
  {
    core::SplitMix64 random(config.seed + 500);
    for (std::size_t step = 0; step < inputs.steps; ++step) {
      float* hidden = inputs.hidden.data() + step * k;
      float* drifted = inputs.drifted.data() + step * k;
      float* weights = inputs.weights.data() + step * 2 * k;
      for (std::size_t i = 0; i < k; ++i)
        hidden[i] = numerics::round_to(stored, static_cast<float>(random.uniform() * 2.0 - 1.0));
      for (std::size_t i = 0; i < 2 * k; ++i)
        weights[i] = numerics::round_to(stored, static_cast<float>(random.uniform() * 2.0 - 1.0));
      for (std::size_t i = 0; i < k; ++i) {
        const bool flip_this = random.uniform() < k_hidden_drift_frac;
        const bool upward = (random.next() & 1u) != 0;
        drifted[i] = hidden[i];
        if (flip_this) {
          const float spacing = numerics::ulp_at(stored, hidden[i]);
          drifted[i] = numerics::round_to(stored, hidden[i] + (upward ? spacing : -spacing));
        }
      }
      // Gap mixture: 1 % exact ties, 89 % log-uniform on [1e-4, 1], 10 % uniform on [1, 4].
      const double pick = random.uniform();
      double gap = 0.0;
      if (pick >= 0.01 && pick < 0.90)
        gap = std::pow(10.0, -4.0 + 4.0 * random.uniform());
      else if (pick >= 0.90)
        gap = 1.0 + 3.0 * random.uniform();
      const float top = magnitudes[step % 3];
      const std::size_t winner = random.below(2);
      inputs.targets[2 * step + winner] = top;
      inputs.targets[2 * step + 1 - winner] = static_cast<float>(static_cast<double>(top) - gap);
    }
  }

  double stored_flip_gap = -1.0;
  std::int64_t stored_flips = 0;
  for (const Variant& variant : variants) {
    auto logits = ops.flip_logits(inputs, variant.precision, variant.drift);
    if (!logits) return logits.error();
    std::vector<BinCounts> bins(k_bin_count);
    for (std::size_t step = 0; step < inputs.steps; ++step) {
      const float* logit_a = logits->logit_a.data() + 2 * step;
      const float* logit_b = logits->logit_b.data() + 2 * step;
      const double observed =
          std::fabs(static_cast<double>(logit_a[0]) - static_cast<double>(logit_a[1]));
      BinCounts& bin = bins[bin_of(observed)];
      ++bin.steps;
      for (std::size_t c = 0; c < 2; ++c) {
        if (numerics::float_bits(logit_a[c]) == numerics::float_bits(logit_b[c])) continue;
        ++bin.logits_changed;
        const double difference =
            std::fabs(static_cast<double>(logit_a[c]) - static_cast<double>(logit_b[c]));
        bin.max_abs = std::max(bin.max_abs, difference);
        const float ulp = numerics::ulp_at(variant.precision, logit_a[c]);
        bin.max_ulp = std::max(bin.max_ulp, difference / static_cast<double>(ulp));
      }
      if (logits->argmax_a[step] != logits->argmax_b[step]) {
        ++bin.flips;
        bin.max_flip_gap = std::max(bin.max_flip_gap, observed);
      }
    }
    for (std::size_t b = 0; b < k_bin_count; ++b) {
      const BinCounts& bin = bins[b];
      core::ProbeRow row;
      row.variant = variant.logits + "/" + (variant.drift ? "hidden_drift" : "order_only");
      row.params = {
          {"logits", ProbeValue{variant.logits}},
          {"perturbation", ProbeValue{std::string(variant.drift ? "hidden_drift" : "order_only")}},
          {"gap_low", ProbeValue{k_bins[b].low}},
          {"gap_high", ProbeValue{k_bins[b].high}}};
      row.elements = 2 * bin.steps;
      row.changed_frac = bin.steps == 0 ? 0.0
                                        : static_cast<double>(bin.logits_changed) /
                                              static_cast<double>(2 * bin.steps);
      row.max_abs = bin.max_abs;
      row.max_ulp = bin.max_ulp;
      add_measure(row, "steps", static_cast<double>(bin.steps));
      add_measure(row, "flips", static_cast<double>(bin.flips));
      add_measure(row, "flip_rate",
                  bin.steps == 0 ? 0.0
                                 : static_cast<double>(bin.flips) / static_cast<double>(bin.steps));
      if (bin.flips > 0) add_measure(row, "max_flip_gap", bin.max_flip_gap);
      experiment.rows.push_back(std::move(row));
      if (variant.precision == stored) {
        stored_flips += bin.flips;
        stored_flip_gap = std::max(stored_flip_gap, bin.max_flip_gap);
      }
    }
  }

  core::FlipRecommendation& advice = outcome.recommendation;
  advice.any_flip = stored_flips > 0;
  advice.flip_gap = std::max(stored_flip_gap, 0.0);
  const std::string dtype = numerics::to_string(stored);
  if (!advice.any_flip) {
    advice.text = "No argmax flipped with " + dtype +
                  " logits; the default tau = " + format_number(advice.default_tau) + " stands.";
  } else if (advice.flip_gap < advice.default_tau) {
    advice.text = "With " + dtype + " logits tokens flipped at observed gaps up to " +
                  format_number(advice.flip_gap) +
                  " nats, below the default tau = " + format_number(advice.default_tau) +
                  ": --fragile-gap " + format_number(advice.default_tau) + " covers them.";
  } else {
    advice.text = "With " + dtype + " logits tokens flipped at observed gaps up to " +
                  format_number(advice.flip_gap) +
                  " nats, at or above the default tau = " + format_number(advice.default_tau) +
                  ": use --fragile-gap " + format_number(threshold_above(advice.flip_gap)) +
                  " on this dtype.";
  }
  experiment.notes.push_back(
      "A logit gap equals the logprob gap (both logits share one normaliser), so gaps here are "
      "in nats, the unit of the audit's --fragile-gap. With rounded logits the observed gap is "
      "quantised to the dtype's spacing at the top logit (bf16: 1/32, 1/16, 1/8 at 4, 12, 24).");
  experiment.notes.push_back(advice.text);
  return outcome;
}

FlipOutcome run_flip(const ExperimentConfig& config) {
  CpuOps ops;
  return run_flip(config, ops).value();
}

} // namespace llmrepro::gpu
