// The diff of two audits. Prompts pair by id; a prompt without a successful completion on
// either side has nothing to compare and is left out of every statistic (it is still listed).
// Overall figures use paired tests (McNemar for "stable"/"fragile", a paired bootstrap for
// means) and the exact stratified test for the pooled agreement; per-prompt figures compare two
// independent samples of runs with one-sided Fisher exact tests, corrected over the prompts that
// could reach significance (Tarone) by Benjamini-Hochberg. See statistics.cpp for the tests.
#include "core/audit_diff.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <type_traits>

namespace llmrepro::core {
namespace {

PromptSide side_of(const AuditReport& report, const PromptAnalysis& prompt,
                   const PassCountSource& pass_counts) {
  PromptSide side;
  side.runs = prompt.runs;
  side.failed = prompt.failed;
  side.unique_completions = prompt.unique_completions;
  for (const DistinctCompletion& completion : prompt.completions) {
    if (completion.is_reference) side.reference_count = completion.count;
  }
  side.unstable = prompt.unstable;
  side.fragile = prompt.fragile.value_or(false);
  side.fragility_known = prompt.fragile.has_value();
  side.tier = to_string(prompt.tier);
  side.logprob_drift = prompt.logprob_drift.max_abs;
  side.drift_positions = prompt.logprob_drift.positions_compared;
  side.has_logprobs = prompt.has_logprobs;
  side.first_divergence = prompt.first_divergence;
  side.min_gap = prompt.min_gap;
  if (pass_counts) side.pass = pass_counts(report, prompt);
  side.answers = answer_counts(prompt);
  side.modal = prompt.modal;
  return side;
}

AuditSide audit_side(const AuditReport& report) {
  AuditSide side;
  side.prompts = static_cast<int>(report.analysis.prompts.size());
  side.verdict = to_string(report.verdict.status);
  for (const PromptAnalysis& prompt : report.analysis.prompts) {
    side.requests += prompt.runs + prompt.failed;
    side.failed_requests += prompt.failed;
    side.dead_prompts += prompt.runs == 0 ? 1 : 0;
  }
  if (report.data == nullptr) return side;
  side.audit_id = report.data->info.id;
  side.runs = report.data->config.plan.runs;
  side.max_failed_rate = report.data->config.gates.max_failed_rate;
  const auto endpoint = static_cast<std::size_t>(report.analysis.endpoint_index);
  if (endpoint < report.data->endpoints.size()) {
    const EndpointInfo& info = report.data->endpoints[endpoint];
    side.endpoint = info.url;
    side.model = info.model;
    side.fingerprints = info.fingerprints;
    side.server = info.server;
  }
  return side;
}

std::string agreement_change(const PromptSide& a, const PromptSide& b) {
  if (a.runs == 0 || b.runs == 0) return "no completions";
  if (a.unstable == b.unstable) return a.unstable ? "unstable" : "stable";
  return b.unstable ? "newly unstable" : "newly stable";
}

// A tier's rank towards unstable; -1 for inconclusive (not compared).
int tier_rank(const std::string& tier) {
  if (tier == "bitwise") return 0;
  if (tier == "token") return 1;
  if (tier == "unstable") return 2;
  return -1;
}

void compare_tiers(PromptDiff& p) {
  const int a = tier_rank(p.a.tier);
  const int b = tier_rank(p.b.tier);
  if (a < 0 || b < 0 || p.a.runs == 0 || p.b.runs == 0) {
    p.tier_change = "inconclusive";
    return;
  }
  p.tier_change = a == b ? p.a.tier : p.a.tier + " -> " + p.b.tier;
  p.tier_worsened = b > a;
}

void judge(MetricDiff& metric, double alpha) {
  metric.beyond_noise = metric.p_value < alpha;
  if (metric.sign_test_p && !(*metric.sign_test_p < alpha)) metric.beyond_noise = false;
  const bool better = metric.higher_is_better ? metric.delta > 0.0 : metric.delta < 0.0;
  const bool worse = metric.higher_is_better ? metric.delta < 0.0 : metric.delta > 0.0;
  metric.regression = metric.beyond_noise && worse;
  metric.improvement = metric.beyond_noise && better;
}

// A rate over paired prompts ("the event held"), tested with McNemar.
MetricDiff paired_rate(std::string name, std::string description, bool higher_is_better,
                       const std::vector<std::pair<bool, bool>>& events, double alpha) {
  MetricDiff metric;
  metric.name = std::move(name);
  metric.description = std::move(description);
  metric.higher_is_better = higher_is_better;
  metric.test = "mcnemar_exact";
  metric.pairs = static_cast<int>(events.size());
  int in_a = 0;
  int in_b = 0;
  int only_a = 0;
  int only_b = 0;
  for (const auto& [event_a, event_b] : events) {
    in_a += event_a ? 1 : 0;
    in_b += event_b ? 1 : 0;
    only_a += event_a && !event_b ? 1 : 0;
    only_b += event_b && !event_a ? 1 : 0;
  }
  if (metric.pairs > 0) {
    metric.a = static_cast<double>(in_a) / metric.pairs;
    metric.b = static_cast<double>(in_b) / metric.pairs;
  }
  metric.delta = metric.b - metric.a;
  metric.a_interval = wilson_interval(in_a, metric.pairs, alpha);
  metric.b_interval = wilson_interval(in_b, metric.pairs, alpha);
  metric.only_a = only_a;
  metric.only_b = only_b;
  metric.p_value = mcnemar_exact_p(only_a, only_b);
  judge(metric, alpha);
  return metric;
}

// A mean over paired prompts, tested with the paired bootstrap (and the sign test as a guard).
MetricDiff paired_mean(std::string name, std::string description, bool higher_is_better,
                       const std::vector<std::pair<double, double>>& values,
                       const DiffConfig& config) {
  MetricDiff metric;
  metric.name = std::move(name);
  metric.description = std::move(description);
  metric.higher_is_better = higher_is_better;
  metric.test = "paired_bootstrap";
  metric.pairs = static_cast<int>(values.size());
  std::vector<double> differences;
  double sum_a = 0.0;
  double sum_b = 0.0;
  for (const auto& [a, b] : values) {
    sum_a += a;
    sum_b += b;
    differences.push_back(b - a);
  }
  if (metric.pairs > 0) {
    metric.a = sum_a / metric.pairs;
    metric.b = sum_b / metric.pairs;
  }
  const BootstrapResult boot =
      paired_bootstrap_mean(differences, config.bootstrap_resamples, config.seed, config.alpha);
  metric.delta = boot.mean;
  metric.delta_interval = boot.interval;
  metric.p_value = boot.p_value;
  metric.sign_test_p = sign_test_p(differences);
  judge(metric, config.alpha);
  return metric;
}

// Runs agreeing with their prompt's modal completion, pooled over the prompts, tested with the
// exact stratified test (a prompt a stratum) in the direction B moved: a regression spread thin
// over a few prompts that no single prompt's test can show at the suite's size.
MetricDiff agreement_shift(const std::vector<PromptDiff>& prompts, double alpha) {
  MetricDiff metric;
  metric.name = "pooled_agreement";
  metric.description = "share of all runs returning their prompt's modal completion (pooled)";
  metric.higher_is_better = true;
  metric.test = "stratified_exact";
  std::vector<Stratum> worse;
  std::vector<Stratum> better;
  int agree_a = 0;
  int runs_a = 0;
  int agree_b = 0;
  int runs_b = 0;
  for (const PromptDiff& p : prompts) {
    if (p.a.runs == 0 || p.b.runs == 0) continue;
    ++metric.pairs;
    worse.push_back({p.a.reference_count, p.a.runs, p.b.reference_count, p.b.runs});
    better.push_back({p.b.reference_count, p.b.runs, p.a.reference_count, p.a.runs});
    agree_a += p.a.reference_count;
    runs_a += p.a.runs;
    agree_b += p.b.reference_count;
    runs_b += p.b.runs;
  }
  if (runs_a > 0) metric.a = static_cast<double>(agree_a) / runs_a;
  if (runs_b > 0) metric.b = static_cast<double>(agree_b) / runs_b;
  metric.delta = metric.b - metric.a;
  metric.a_interval = wilson_interval(agree_a, runs_a, alpha);
  metric.b_interval = wilson_interval(agree_b, runs_b, alpha);
  metric.p_value =
      metric.delta < 0 ? stratified_one_sided_p(worse) : stratified_one_sided_p(better);
  judge(metric, alpha);
  return metric;
}

double rate(const PassCount& pass) {
  return pass.runs > 0 ? static_cast<double>(pass.passed) / pass.runs : 0.0;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : "; ") + item;
  return out;
}

std::string number_text(double value, const char* format) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

// An audit's own failures: an ERROR verdict, or a failed share above its own --max-failed-rate
// (0 by default: any request that failed after its retries).
void audit_losses(const std::string& name, const AuditReport& report, const AuditSide& side,
                  std::vector<std::string>& lost) {
  const std::string audit = name + " (" + side.audit_id + ")";
  if (report.verdict.status == VerdictStatus::error) {
    lost.push_back(audit + " is ERROR: " + joined(report.verdict.errors));
  }
  if (side.requests > 0 &&
      static_cast<double>(side.failed_requests) / side.requests > side.max_failed_rate) {
    lost.push_back(audit + ": " + std::to_string(side.failed_requests) + " of " +
                   std::to_string(side.requests) + " requests failed (" +
                   number_text(100.0 * side.failed_requests / side.requests, "%.1f") +
                   "%), above its --max-failed-rate " + number_text(side.max_failed_rate, "%g") +
                   "; " + std::to_string(side.dead_prompts) + " of " +
                   std::to_string(side.prompts) + " prompts have no successful run");
  }
}

// Prompts dead (no successful run) on one side only: the comparison would silently drop them.
void one_sided_dead(AuditDiff& diff) {
  std::vector<std::string> dead_in_a;
  std::vector<std::string> dead_in_b;
  for (const PromptDiff& p : diff.prompts) {
    if (p.a.runs == 0 && p.b.runs > 0) dead_in_a.push_back(p.id);
    if (p.b.runs == 0 && p.a.runs > 0) dead_in_b.push_back(p.id);
  }
  const auto add = [&diff](const std::string& side, const AuditSide& audit,
                           const std::string& other, const std::vector<std::string>& ids) {
    if (ids.empty()) return;
    std::string named;
    for (std::size_t i = 0; i < ids.size() && i < 5; ++i) named += (i == 0 ? "" : ", ") + ids[i];
    if (ids.size() > 5) named += ", ...";
    diff.lost_evidence.push_back(side + " (" + audit.audit_id + "): " + std::to_string(ids.size()) +
                                 " prompts have no successful run where " + other +
                                 " has some: " + named);
  };
  add("A", diff.a, "B", dead_in_a);
  add("B", diff.b, "A", dead_in_b);
}

std::string levels_text(const std::vector<int>& levels) {
  std::string out;
  for (const int level : levels) out += (out.empty() ? "" : ",") + std::to_string(level);
  return out;
}

std::string probes_text(const std::vector<ProbeKind>& probes) {
  std::string out;
  for (const ProbeKind kind : probes)
    out += (out.empty() ? "" : ",") + std::string(to_string(kind));
  return out;
}

std::string on_off(bool value) { return value ? "on" : "off"; }

template <typename T>
std::string optional_text(const std::optional<T>& value, const char* format = "%g") {
  if (!value) return "none";
  if constexpr (std::is_floating_point_v<T>)
    return number_text(*value, format);
  else
    return std::to_string(*value);
}

} // namespace

std::vector<DiffPlanDifference> diff_plan_differences(const AuditConfig& a, const AuditConfig& b) {
  std::vector<DiffPlanDifference> out;
  const auto add = [&out](const char* flag, const std::string& in_a, const std::string& in_b) {
    if (in_a != in_b) out.push_back({flag, in_a, in_b});
  };
  add("--runs", std::to_string(a.plan.runs), std::to_string(b.plan.runs));
  add("--concurrency", levels_text(a.plan.levels), levels_text(b.plan.levels));
  add("--adaptive", on_off(a.adaptive.enabled), on_off(b.adaptive.enabled));
  if (a.adaptive.enabled && b.adaptive.enabled) {
    add("--adaptive-initial", std::to_string(a.adaptive.initial),
        std::to_string(b.adaptive.initial));
    add("--adaptive-epsilon", number_text(a.adaptive.epsilon, "%g"),
        number_text(b.adaptive.epsilon, "%g"));
    add("--adaptive-assume", to_string(a.adaptive.assume), to_string(b.adaptive.assume));
  }
  add("--probe", probes_text(a.plan.probes), probes_text(b.plan.probes));
  add("--profile", to_string(a.plan.profile), to_string(b.plan.profile));
  add("--max-tokens", std::to_string(a.plan.max_tokens), std::to_string(b.plan.max_tokens));
  add("--top-logprobs", std::to_string(a.plan.top_logprobs), std::to_string(b.plan.top_logprobs));
  add("--stream", on_off(a.plan.stream), on_off(b.plan.stream));
  add("--logprobs-form", a.plan.logprobs_form, b.plan.logprobs_form);
  add("--temperature", to_string(a.plan.temperature), to_string(b.plan.temperature));
  add("--stop-after", optional_text(a.plan.stop_after), optional_text(b.plan.stop_after));
  add("--shard", std::to_string(a.plan.shard_index) + "/" + std::to_string(a.plan.shard_count),
      std::to_string(b.plan.shard_index) + "/" + std::to_string(b.plan.shard_count));
  add("--fragile-gap", number_text(a.analysis.fragile_gap, "%g"),
      number_text(b.analysis.fragile_gap, "%g"));
  add("--fragile-window", std::to_string(a.analysis.fragile_window),
      std::to_string(b.analysis.fragile_window));
  add("--fragile-p", optional_text(a.analysis.fragile_p), optional_text(b.analysis.fragile_p));
  add("--compare-on", to_string(a.analysis.compare_on), to_string(b.analysis.compare_on));
  return out;
}

std::string to_string(const DiffPlanDifference& difference) {
  return difference.flag + " " + difference.a + " (A) vs " + difference.b + " (B)";
}

std::optional<PassCount> checker_pass_count(const AuditReport&, const PromptAnalysis& prompt) {
  if (!prompt.passes) return std::nullopt;
  return PassCount{*prompt.passes, prompt.checked_runs};
}

double PromptSide::agreement() const {
  return runs > 0 ? static_cast<double>(reference_count) / runs : 0.0;
}

bool AuditDiff::regression() const {
  if (evidence_lost()) return false;
  for (const MetricDiff& metric : metrics) {
    if (metric.regression) return true;
  }
  for (const PromptDiff& prompt : prompts) {
    if (prompt.regression) return true;
  }
  return false;
}

bool AuditDiff::improvement() const {
  if (evidence_lost()) return false;
  for (const MetricDiff& metric : metrics) {
    if (metric.improvement) return true;
  }
  for (const PromptDiff& prompt : prompts) {
    if (prompt.improvement) return true;
  }
  return false;
}

std::vector<LevelSpeed> level_speeds(const AuditSummary& a, const AuditSummary& b) {
  const auto ratio = [](double over, double under) {
    return under > 0.0 ? std::optional<double>(over / under) : std::nullopt;
  };
  std::vector<LevelSpeed> speeds;
  for (const LevelSummary& in_a : a.by_concurrency)
    for (const LevelSummary& in_b : b.by_concurrency) {
      if (in_a.concurrency != in_b.concurrency || in_a.runs == 0 || in_b.runs == 0) continue;
      speeds.push_back({in_a.concurrency, in_a.tokens_per_second, in_b.tokens_per_second,
                        in_a.mean_latency_ms, in_b.mean_latency_ms, in_a.p95_latency_ms,
                        in_b.p95_latency_ms, ratio(in_b.tokens_per_second, in_a.tokens_per_second),
                        ratio(in_b.mean_latency_ms, in_a.mean_latency_ms)});
    }
  return speeds;
}

AuditDiff diff_audits(const AuditReport& a, const AuditReport& b, const DiffConfig& config) {
  AuditDiff diff;
  diff.a = audit_side(a);
  diff.b = audit_side(b);
  diff.server_changes = server_changes(diff.a.server, diff.b.server);
  diff.speeds = level_speeds(a.analysis.summary, b.analysis.summary);
  diff.alpha = config.alpha;
  diff.bootstrap_resamples = config.bootstrap_resamples;
  diff.seed = config.seed;

  std::map<std::string, const PromptAnalysis*> in_b;
  for (const PromptAnalysis& prompt : b.analysis.prompts) in_b.emplace(prompt.id, &prompt);
  std::map<std::string, bool> seen_in_a;
  for (const PromptAnalysis& prompt : a.analysis.prompts) {
    seen_in_a[prompt.id] = true;
    const auto found = in_b.find(prompt.id);
    if (found == in_b.end()) {
      diff.only_in_a.push_back(prompt.id);
      continue;
    }
    PromptDiff prompt_diff;
    prompt_diff.id = prompt.id;
    prompt_diff.a = side_of(a, prompt, config.pass_counts);
    prompt_diff.b = side_of(b, *found->second, config.pass_counts);
    prompt_diff.agreement_change = agreement_change(prompt_diff.a, prompt_diff.b);
    compare_tiers(prompt_diff);
    diff.prompts.push_back(std::move(prompt_diff));
  }
  for (const PromptAnalysis& prompt : b.analysis.prompts) {
    if (!seen_in_a.contains(prompt.id)) diff.only_in_b.push_back(prompt.id);
  }
  audit_losses("A", a, diff.a, diff.lost_evidence);
  audit_losses("B", b, diff.b, diff.lost_evidence);
  one_sided_dead(diff);

  // Per prompt: one-sided Fisher tests of agreement and of pass counts, in each direction its
  // own family (a false regression and a false improvement each at most alpha), corrected over
  // the prompts with Tarone's rule and Benjamini-Hochberg (statistics.hpp).
  const std::size_t n = diff.prompts.size();
  struct Direction {
    std::vector<double> p, min_p, adjusted;
  };
  const auto test = [&](auto counts) {
    Direction worse;
    Direction better;
    for (const PromptDiff& p : diff.prompts) {
      const auto [a_ok, a_n, b_ok, b_n] = counts(p);
      worse.p.push_back(fisher_one_sided_p(a_ok, a_n, b_ok, b_n));
      worse.min_p.push_back(fisher_one_sided_min_p(a_ok, a_n, b_ok, b_n));
      better.p.push_back(fisher_one_sided_p(b_ok, b_n, a_ok, a_n));
      better.min_p.push_back(fisher_one_sided_min_p(b_ok, b_n, a_ok, a_n));
    }
    worse.adjusted = tarone_bh_adjust(worse.p, worse.min_p, config.alpha);
    better.adjusted = tarone_bh_adjust(better.p, better.min_p, config.alpha);
    return std::pair{worse, better};
  };
  const auto [agree_worse, agree_better] = test([](const PromptDiff& p) {
    return std::array{p.a.reference_count, p.a.runs, p.b.reference_count, p.b.runs};
  });
  const auto [pass_worse, pass_better] = test([](const PromptDiff& p) {
    if (!p.a.pass || !p.b.pass) return std::array{0, 0, 0, 0};
    return std::array{p.a.pass->passed, p.a.pass->runs, p.b.pass->passed, p.b.pass->runs};
  });
  for (std::size_t i = 0; i < n; ++i) {
    PromptDiff& p = diff.prompts[i];
    // The p values reported are those of the direction B moved in.
    const bool lower = p.b.agreement() < p.a.agreement();
    p.agreement_p = lower ? agree_worse.p[i] : agree_better.p[i];
    p.agreement_p_adjusted = lower ? agree_worse.adjusted[i] : agree_better.adjusted[i];
    bool worse = agree_worse.adjusted[i] < config.alpha;
    bool better = agree_better.adjusted[i] < config.alpha;
    if (p.a.pass && p.b.pass) {
      const bool pass_lower = rate(*p.b.pass) < rate(*p.a.pass);
      p.pass_p = pass_lower ? pass_worse.p[i] : pass_better.p[i];
      p.pass_p_adjusted = pass_lower ? pass_worse.adjusted[i] : pass_better.adjusted[i];
      worse = worse || pass_worse.adjusted[i] < config.alpha;
      better = better || pass_better.adjusted[i] < config.alpha;
    }
    p.beyond_noise = worse || better;
    p.regression = worse;
    p.improvement = better;
  }

  // Distribution mode: each prompt's answers in A against B's, one family (Holm) over the tests
  // that can reject at all.
  const auto sampled_audit = [](const AuditReport& report) {
    return report.data != nullptr &&
           temperature_in_effect(*report.data) == TemperatureMode::provider_default;
  };
  const bool sampled = sampled_audit(a) || sampled_audit(b);
  std::vector<PromptDiff*> shift_tested;
  std::vector<double> shift_p;
  for (PromptDiff& p : diff.prompts) {
    ShiftTest shift = shift_test(p.a.answers, p.b.answers);
    if (shift.a_answers == 0 || shift.b_answers == 0) continue;
    p.answer_shift = shift;
    if (!shift_can_reject(shift)) continue;
    shift_tested.push_back(&p);
    shift_p.push_back(shift.p);
  }
  const std::vector<double> shift_adjusted = holm_adjust(shift_p);
  for (std::size_t i = 0; i < shift_tested.size(); ++i) {
    shift_tested[i]->answer_shift_p_adjusted = shift_adjusted[i];
    shift_tested[i]->answers_shifted = shift_adjusted[i] < config.alpha;
    // Where either audit sampled (distribution mode), answers that changed beyond chance are
    // what a regression gate exists to catch, whichever way the modal share moved; under greedy
    // decoding the agreement tests above judge the change and the shift only informs.
    if (shift_tested[i]->answers_shifted && sampled) {
      shift_tested[i]->beyond_noise = true;
      shift_tested[i]->regression = true;
    }
  }

  // Overall, over the prompts with completions on both sides.
  std::vector<std::pair<bool, bool>> stable;
  std::vector<std::pair<bool, bool>> fragile;
  std::vector<std::pair<bool, bool>> bitwise;
  std::vector<std::pair<bool, bool>> fragility_known;
  bool any_fragility_known = false;
  std::vector<std::pair<double, double>> drift;
  std::vector<std::pair<double, double>> unique;
  std::vector<std::pair<double, double>> agreement;
  std::vector<std::pair<double, double>> pass_rates;
  int passed_a = 0;
  int runs_a = 0;
  int passed_b = 0;
  int runs_b = 0;
  for (const PromptDiff& p : diff.prompts) {
    if (p.a.runs == 0 || p.b.runs == 0) continue;
    stable.emplace_back(!p.a.unstable, !p.b.unstable);
    // Unknown fragility is no evidence either way: the fragile share counts prompts known on
    // both sides, and losing the knowledge is a metric of its own (never an improvement).
    if (p.a.fragility_known && p.b.fragility_known) fragile.emplace_back(p.a.fragile, p.b.fragile);
    fragility_known.emplace_back(p.a.fragility_known, p.b.fragility_known);
    any_fragility_known = any_fragility_known || p.a.fragility_known || p.b.fragility_known;
    if (p.tier_change != "inconclusive")
      bitwise.emplace_back(p.a.tier == "bitwise", p.b.tier == "bitwise");
    if (p.a.drift_positions > 0 && p.b.drift_positions > 0)
      drift.emplace_back(p.a.logprob_drift, p.b.logprob_drift);
    unique.emplace_back(p.a.unique_completions, p.b.unique_completions);
    agreement.emplace_back(p.a.agreement(), p.b.agreement());
    if (p.a.pass && p.b.pass && p.a.pass->runs > 0 && p.b.pass->runs > 0) {
      pass_rates.emplace_back(rate(*p.a.pass), rate(*p.b.pass));
      passed_a += p.a.pass->passed;
      runs_a += p.a.pass->runs;
      passed_b += p.b.pass->passed;
      runs_b += p.b.pass->runs;
    }
  }
  diff.paired_prompts = static_cast<int>(stable.size());
  if (diff.paired_prompts == 0) return diff;

  diff.metrics.push_back(paired_rate("tarr",
                                     "share of prompts whose runs were all identical (TARr@N)",
                                     true, stable, config.alpha));
  if (!bitwise.empty()) {
    diff.metrics.push_back(paired_rate(
        "bitwise_rate", "share of prompts in the bitwise tier (identical tokens and logprobs)",
        true, bitwise, config.alpha));
  }
  if (!fragile.empty()) {
    diff.metrics.push_back(paired_rate(
        "fragile_rate", "share of prompts with a near-tie (min gap below the threshold)", false,
        fragile, config.alpha));
  }
  if (any_fragility_known) {
    diff.metrics.push_back(paired_rate("fragility_known_rate",
                                       "share of prompts whose fragility could be computed", true,
                                       fragility_known, config.alpha));
  }
  diff.metrics.push_back(paired_mean(
      "mean_unique_completions", "distinct completions per prompt, mean", false, unique, config));
  diff.metrics.push_back(paired_mean("mean_agreement",
                                     "share of runs returning the prompt's modal completion, mean",
                                     true, agreement, config));
  diff.metrics.push_back(agreement_shift(diff.prompts, config.alpha));
  if (!drift.empty()) {
    diff.metrics.push_back(paired_mean("mean_logprob_drift",
                                       "largest logprob drift between agreeing runs (nats), mean",
                                       false, drift, config));
  }
  if (!pass_rates.empty()) {
    MetricDiff pass =
        paired_mean("pass_rate", "share of runs the checker accepted", true, pass_rates, config);
    // The rates are means over prompts (what the bootstrap resamples); the Wilson intervals
    // are over pooled runs. The two coincide when every prompt ran equally often, as planned.
    pass.a_interval = wilson_interval(passed_a, runs_a, config.alpha);
    pass.b_interval = wilson_interval(passed_b, runs_b, config.alpha);
    diff.metrics.push_back(std::move(pass));
  }
  return diff;
}

} // namespace llmrepro::core
