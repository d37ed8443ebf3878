// The analysis of an audit, exactly as docs/design.md "Analysis: definitions" states it.
//
// For one prompt we look at its successful completions and ask: how many distinct ones came
// back, which one is the reference (the modal completion; ties go to the one seen first at the
// lowest concurrency level), and where do the others leave it. A completion's divergence
// position is the number of leading tokens it shares with the reference, so `first_divergence`
// is the index of the first token where any completion differs. The top-1/top-2 gap of the
// reference at that index says how close the model was to a tie there: a small gap explains a
// flip by rounding; a large one points at something else (a different prompt, cache, or model).
//
// Identity is by token sequence and text when every completion of the prompt carries tokens, by
// text alone otherwise (endpoints without logprobs): two completions with the same text but
// different tokenisations are different completions, because the logits that produced them
// differed; two with the same token strings but different texts are different too.
// A prompt is stable only on evidence (two or more successful completions, no failure, one
// distinct completion); without it, it is inconclusive, never stable.
// Fragility is computed from the reference alone, so it is a prediction that the observed
// instability can confirm or refute: the confusion matrix over prompts whose fragility and
// stability are both known lets each audit validate its own threshold τ. Fragility that cannot be
// computed (no logprobs, text mode, gaps unknown in the window) is unknown, not "not fragile".
#include "core/analysis.hpp"

#include "core/answer_check.hpp"
#include "core/completion_identity.hpp"
#include "core/failure_groups.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace llmrepro::core {

// A prompt's window gaps (window_gaps), read when the prompt is added, so that the flip
// probability, judged once every prompt is in, needs no completion kept in memory. Outside the
// anonymous namespace: AnalysisBuilder::Totals holds them.
struct AnalysisWindowGaps {
  std::optional<std::vector<double>> gaps;
  std::string reason; // why there are none
};

const char* to_string(PromptStatus status) {
  switch (status) {
  case PromptStatus::stable: return "stable";
  case PromptStatus::unstable: return "unstable";
  case PromptStatus::inconclusive: return "inconclusive";
  }
  return "inconclusive";
}

const char* to_string(StabilityTier tier) {
  switch (tier) {
  case StabilityTier::bitwise: return "bitwise";
  case StabilityTier::token: return "token";
  case StabilityTier::unstable: return "unstable";
  case StabilityTier::inconclusive: return "inconclusive";
  }
  return "inconclusive";
}

// Bitwise needs evidence, as stable does: a stable prompt none of whose positions could be
// compared (no logprobs, text mode) is token-stable only.
StabilityTier stability_tier(PromptStatus status, const LogprobDrift& drift) {
  switch (status) {
  case PromptStatus::stable:
    return drift.positions_compared > 0 && !has_drift(drift) ? StabilityTier::bitwise
                                                             : StabilityTier::token;
  case PromptStatus::unstable: return StabilityTier::unstable;
  case PromptStatus::inconclusive: return StabilityTier::inconclusive;
  }
  return StabilityTier::inconclusive;
}

const char* to_string(DivergenceKind kind) {
  return kind == DivergenceKind::length ? "length" : "token";
}

namespace {

using detail::code_points_in;
using detail::identity_hash;
using detail::IdentityMode;
using detail::same_identity;
using detail::shared_prefix;

// How `other` leaves `reference` after `shared` common units: at a unit both have, or where one
// of them ends.
DivergenceKind divergence_kind(const Completion& reference, const Completion& other, int shared,
                               IdentityMode mode) {
  const auto length = [mode](const Completion& c) {
    return mode == IdentityMode::tokens ? c.tokens.size() : code_points_in(c.text);
  };
  const auto at = static_cast<std::size_t>(shared);
  return at >= length(reference) || at >= length(other) ? DivergenceKind::length
                                                        : DivergenceKind::token;
}

// One run of a level against the prompt's drift reference, for the determinism check: its
// logprobs while the tokens agree, and where it leaves the reference when it differs.
void note_reference_agreement(LevelAnalysis& level, const Completion& reference,
                              const Completion& run, IdentityMode mode) {
  add_logprob_drift(level.drift_from_reference, reference, run);
  if (same_identity(run, reference, mode)) return;
  const int shared = shared_prefix(reference, run, mode);
  if (!level.divergence_from_reference || shared < *level.divergence_from_reference)
    level.divergence_from_reference = shared;
}

// vLLM's return_tokens_as_token_ids spells every token "token_id:N": no text to compare.
bool tokens_are_ids(const Completion& completion) {
  return !completion.tokens.empty() &&
         completion.tokens.front().token.view().starts_with("token_id:");
}

struct Distinct {
  const Completion* first = nullptr;
  int count = 0;
  std::map<int, int> count_by_concurrency;
  std::size_t first_seen = 0;
  std::map<std::string, int> finish_reasons;
  std::map<std::string, int> models;
  std::map<std::string, int> fingerprints;
};

PromptStatus status_of(int runs, int failed, int unique) {
  if (unique > 1) return PromptStatus::unstable;
  if (runs < 2 || failed > 0) return PromptStatus::inconclusive;
  return PromptStatus::stable;
}

// The modal entry of `counts` (index -> count), ties to the lowest index (the earliest seen).
std::optional<std::size_t> modal(const std::map<std::size_t, int>& counts) {
  std::optional<std::size_t> best;
  int best_count = 0;
  for (const auto& [index, count] : counts)
    if (count > best_count) {
      best = index;
      best_count = count;
    }
  return best;
}

// Fragility of the reference: true when a known gap within the window is below τ; unknown when
// the window has positions whose gap could not be read and none of the known ones is below τ.
void judge_fragility(PromptAnalysis& result, const Completion& ref, const AnalysisConfig& config) {
  const auto window =
      std::min(ref.tokens.size(), static_cast<std::size_t>(std::max(config.fragile_window, 0)));
  int unknown = 0;
  int too_few_candidates = 0;
  for (std::size_t position = 0; position < window; ++position) {
    const auto& token = ref.tokens[position];
    const auto gap = token.gap();
    if (!gap) {
      ++unknown;
      if (token.top.size() < 2) ++too_few_candidates;
      continue;
    }
    if (!result.min_gap || *gap < *result.min_gap) {
      result.min_gap = gap;
      result.min_gap_position = static_cast<int>(position);
    }
  }
  if (result.min_gap && *result.min_gap < config.fragile_gap) {
    result.fragile = true;
  } else if (window == 0) {
    result.fragility_reason = "the reference completion has no tokens";
  } else if (unknown > 0) {
    const std::string of_window = " of " + std::to_string(window) + " positions";
    const int not_a_number = unknown - too_few_candidates;
    if (not_a_number == 0)
      result.fragility_reason =
          "fewer than two candidates at " + std::to_string(unknown) + of_window;
    else if (too_few_candidates == 0)
      result.fragility_reason =
          "a logprob that was not a number at " + std::to_string(unknown) + of_window;
    else
      result.fragility_reason = "gap unknown at " + std::to_string(unknown) + of_window + " (" +
                                std::to_string(too_few_candidates) +
                                " with fewer than two candidates, " + std::to_string(not_a_number) +
                                " with a logprob that was not a number)";
  } else {
    result.fragile = false;
  }
}

// Lowest level first, recording order within a level: "first seen at the lowest level".
std::vector<const RequestRecord*> by_level(std::vector<const RequestRecord*> in_order) {
  std::stable_sort(in_order.begin(), in_order.end(), [](const auto* a, const auto* b) {
    return a->planned.concurrency < b->planned.concurrency;
  });
  return in_order;
}

// The noise samples of each level (concurrency -> |Δgap|), which a prompt's runs add to.
using LevelNoise = std::map<int, NoiseSamples>;

// The distinct completions of a prompt, in the order first seen (lowest level first, recording
// order within a level), with how each level saw them (level -> index -> count).
struct DistinctCompletions {
  std::vector<Distinct> distinct;
  std::map<int, std::map<std::size_t, int>> seen_at_level;
};

// What the prompt's analysis reads once its runs are counted: the distinct completions, by
// `mode`, and the levels. `answers` are the prompt's records as recorded, in recording order: the
// answer that extraction and checkers read is never the compared part of a reasoning model.
PromptAnalysis judge_prompt(PromptAnalysis result, const Prompt& prompt,
                            std::map<int, LevelAnalysis> levels, DistinctCompletions completions,
                            IdentityMode mode, const std::vector<const RequestRecord*>& answers,
                            const AnalysisConfig& config) {
  std::vector<Distinct>& distinct = completions.distinct;
  auto& seen_at_level = completions.seen_at_level;
  result.text_mode = mode == IdentityMode::text;
  result.unique_completions = static_cast<int>(distinct.size());
  result.status = status_of(result.runs, result.failed, result.unique_completions);
  result.unstable = result.status == PromptStatus::unstable;
  result.tier = stability_tier(result.status, result.logprob_drift);

  std::size_t reference = 0;
  for (std::size_t i = 1; i < distinct.size(); ++i)
    if (distinct[i].count > distinct[reference].count) reference = i; // ties keep the earlier

  std::vector<std::optional<int>> divergence(distinct.size());
  std::vector<std::optional<DivergenceKind>> kinds(distinct.size());
  if (distinct.empty()) {
    result.fragility_reason = "no successful completion";
  } else {
    const Completion& ref = *distinct[reference].first;
    std::optional<std::size_t> earliest;
    for (std::size_t i = 0; i < distinct.size(); ++i) {
      if (i == reference) continue;
      divergence[i] = shared_prefix(ref, *distinct[i].first, mode);
      kinds[i] = divergence_kind(ref, *distinct[i].first, *divergence[i], mode);
      // The earliest divergence; at equal positions a token divergence explains more than a
      // length one.
      if (!earliest || *divergence[i] < *divergence[*earliest] ||
          (*divergence[i] == *divergence[*earliest] && kinds[i] == DivergenceKind::token))
        earliest = i;
    }
    if (earliest) {
      result.first_divergence = divergence[*earliest];
      result.divergence_kind = kinds[*earliest];
    }

    for (const auto& entry : distinct)
      for (const auto& token : entry.first->tokens)
        if (token.greedy() == false) ++result.non_greedy_tokens;

    // Gaps are read off the reference's own candidates.
    if (mode == IdentityMode::text) {
      result.fragility_reason = "text mode: a completion came back without tokens";
    } else if (!result.has_logprobs) {
      result.fragility_reason = "no logprobs";
    } else {
      if (result.first_divergence && result.divergence_kind == DivergenceKind::token &&
          static_cast<std::size_t>(*result.first_divergence) < ref.tokens.size()) {
        const auto& token = ref.tokens[static_cast<std::size_t>(*result.first_divergence)];
        result.gap_at_divergence = token.gap();
        result.candidates_at_divergence = token.top;
      }
      judge_fragility(result, ref, config);
      result.fragile_by_gap = result.fragile;
    }

    std::optional<std::size_t> serial_modal;
    for (auto& [concurrency, level] : levels) {
      const auto& seen = seen_at_level[concurrency];
      level.unique_completions = static_cast<int>(seen.size());
      for (const auto& [index, count] : seen) {
        if (!divergence[index]) continue;
        if (!level.first_divergence || *divergence[index] < *level.first_divergence)
          level.first_divergence = divergence[index];
      }
      // Levels are visited lowest first: the first with a completion is the serial one.
      const auto level_modal = modal(seen);
      if (!serial_modal)
        serial_modal = level_modal;
      else if (level_modal)
        level.differs_from_serial = *level_modal != *serial_modal;
    }
  }
  for (auto& [concurrency, level] : levels) {
    level.status = status_of(level.runs, level.failed, level.unique_completions);
    result.by_concurrency.push_back(level);
  }

  // Answers and checks: every logical request is one run; a failed request never agrees and
  // never passes.
  std::map<std::string, int> answer_counts;
  const bool has_checker = prompt.expect.kind != Expectation::Kind::none;
  int passes = 0;
  std::vector<RunAnswer> run_answers; // every run: distribution mode
  for (const auto* record : by_level(answers)) {
    if (has_checker) ++result.checked_runs;
    run_answers.push_back({record->planned.concurrency, std::nullopt});
    if (!record->outcome.ok) continue;
    const std::string& text = record->outcome.completion.text;
    if (const auto answer = extract_answer(prompt.extract, text)) {
      ++answer_counts[*answer];
      run_answers.back().answer = *answer;
    } else {
      ++result.answer_failures;
    }
    if (has_checker && check_answer(prompt.expect, text).value_or(false)) ++passes;
  }
  for (const auto& entry : answer_counts) result.answers.push_back(entry);
  std::stable_sort(result.answers.begin(), result.answers.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  result.answers_agree =
      result.failed == 0 && result.answer_failures == 0 && result.answers.size() == 1;
  judge_answer_distribution(result, run_answers); // Holm-adjusted once every prompt is in
  if (has_checker) result.passes = passes;

  // Reference first, then the most frequent, then the earliest seen.
  std::vector<std::size_t> order(distinct.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if ((a == reference) != (b == reference)) return a == reference;
    return distinct[a].count > distinct[b].count;
  });
  for (std::size_t index : order) {
    Distinct& entry = distinct[index];
    DistinctCompletion out;
    out.text = entry.first->text;
    out.tokens = entry.first->tokens;
    out.count = entry.count;
    out.count_by_concurrency = entry.count_by_concurrency;
    out.is_reference = index == reference;
    out.divergence = divergence[index];
    out.divergence_kind = kinds[index];
    out.finish_reasons = std::move(entry.finish_reasons);
    out.models = std::move(entry.models);
    out.fingerprints = std::move(entry.fingerprints);
    result.completions.push_back(std::move(out));
  }
  return result;
}

// The reference's gaps within the window, all of them known; otherwise empty and `reason` says
// why, as fragility does.
std::optional<std::vector<double>> window_gaps(const PromptAnalysis& prompt,
                                               const AnalysisConfig& config, std::string& reason) {
  if (prompt.completions.empty()) {
    reason = "no successful completion";
    return std::nullopt;
  }
  if (prompt.text_mode) {
    reason = "text mode: a completion came back without tokens";
    return std::nullopt;
  }
  if (!prompt.has_logprobs) {
    reason = "no logprobs";
    return std::nullopt;
  }
  const auto& tokens = prompt.completions.front().tokens; // the reference comes first
  const auto window =
      std::min(tokens.size(), static_cast<std::size_t>(std::max(config.fragile_window, 0)));
  if (window == 0) {
    reason = "the reference completion has no tokens";
    return std::nullopt;
  }
  // A runner-up at the logprob floor has no probability to flip to: its position adds no chance
  // (measured_gap), where a floor distance of thousands of nats would stand in for a margin.
  std::vector<double> gaps;
  std::size_t unknown = 0;
  for (std::size_t position = 0; position < window; ++position) {
    const auto& token = tokens[position];
    if (const auto gap = measured_gap(token))
      gaps.push_back(*gap);
    else if (!token.gap())
      ++unknown;
  }
  if (unknown > 0) {
    reason = "gap unknown at " + std::to_string(unknown) + " of " + std::to_string(window) +
             " positions";
    return std::nullopt;
  }
  return gaps;
}

// p_flip per level and overall (docs/design.md "Noise and the flip probability").
void judge_flip_probability(PromptAnalysis& prompt, const AnalysisWindowGaps& window,
                            const std::map<int, NoiseDistribution>& noise) {
  if (!window.gaps) {
    prompt.p_flip_reason = window.reason;
    return;
  }
  const std::vector<double>* gaps = &*window.gaps;
  // The lowest level with a run holds the reference's own run, and its noise the reference's.
  const NoiseDistribution* reference_noise = nullptr;
  std::vector<LevelChances> chances;
  bool lowest = true;
  for (LevelAnalysis& level : prompt.by_concurrency) {
    if (level.runs == 0) continue;
    const bool reference_level = std::exchange(lowest, false);
    const auto found = noise.find(level.concurrency);
    if (found == noise.end() || found->second.empty()) {
      if (prompt.p_flip_reason.empty())
        prompt.p_flip_reason =
            "no noise sample at concurrency " + std::to_string(level.concurrency);
      continue;
    }
    level.p_flip = window_flip_probability(found->second, *gaps);
    if (reference_level) reference_noise = &found->second;
    chances.push_back({&found->second, level.runs - (reference_level ? 1 : 0)});
  }
  // Without a run beside the reference nothing can depart from it.
  if (prompt.p_flip_reason.empty())
    prompt.p_flip =
        reference_noise ? audit_flip_probability(*reference_noise, chances, *gaps) : 0.0;
}

// Under --fragile-p, fragility follows the flip probability instead of the gap rule.
void judge_fragility_by_probability(PromptAnalysis& prompt, double fragile_p) {
  if (prompt.p_flip) {
    prompt.fragile = *prompt.p_flip >= fragile_p;
    prompt.fragility_reason.clear();
  } else {
    prompt.fragile.reset();
    prompt.fragility_reason = "flip probability unknown: " + prompt.p_flip_reason;
  }
}

} // namespace

int shared_prefix_length(const Completion& a, const Completion& b) {
  const bool tokens = !a.tokens.empty() && !b.tokens.empty();
  return shared_prefix(a, b, tokens ? IdentityMode::tokens : IdentityMode::text);
}

// A prompt's runs as they come, one at a time in analysis order (analysis_order): everything the
// analysis reads of a run's tokens is taken from it as it is added, and the only completions
// kept are those read again when the prompt is judged: the drift reference and the first of
// each distinct completion. They are kept by pointer where the runs outlive the prompt, else as
// copies, so that a prompt streamed from a file holds a few completions, not its runs.
//
// The order the runs come in is the drift's (by level, then repeat), not the recording order
// that decides which of equal completions is "first seen": each distinct completion keeps the
// run of the lowest (level, recorded position), and the distinct completions are numbered by it
// when the prompt is judged. Identity is by tokens while the runs come in (token classes are
// never coarser than text ones); when a run without tokens puts the prompt in text mode, the
// classes with the same text are joined at the end.
struct AnalysisBuilder::OpenPrompt {
  // The runs with one identity by tokens.
  struct Class {
    const Completion* first = nullptr; // of the lowest (level, position) seen
    int concurrency = 0;
    std::size_t position = 0;
    int count = 0;
    std::map<int, int> count_by_concurrency;
    std::map<std::string, int> finish_reasons;
    std::map<std::string, int> models;
    std::map<std::string, int> fingerprints;

    // Whether the run at `level` and `at` was recorded before this class's first.
    bool comes_after(int level, std::size_t at) const {
      return std::pair(level, at) < std::pair(concurrency, position);
    }
    void join(const Class& other) {
      if (comes_after(other.concurrency, other.position)) {
        first = other.first;
        concurrency = other.concurrency;
        position = other.position;
      }
      count += other.count;
      for (const auto& [level, n] : other.count_by_concurrency) count_by_concurrency[level] += n;
      for (const auto& [value, n] : other.finish_reasons) finish_reasons[value] += n;
      for (const auto& [value, n] : other.models) models[value] += n;
      for (const auto& [value, n] : other.fingerprints) fingerprints[value] += n;
    }
  };

  OpenPrompt(int index, bool copy_kept) : prompt_index(index), copies(copy_kept) {}

  int prompt_index;
  bool copies; // the runs do not outlive add(): keep copies
  PromptAnalysis result;
  bool all_have_tokens = true;
  bool all_have_logprobs = true;
  std::map<int, LevelAnalysis> levels;
  std::vector<Class> classes;                                   // in the order first added
  std::unordered_multimap<std::uint64_t, std::size_t> class_of; // by identity_hash
  std::map<int, std::map<std::size_t, int>> seen_at_level;      // level -> class -> runs
  // The references of logprob drift: the successful run of the lowest repeat at the lowest
  // level, and at each level. By repeat, not by recording order, so that a merged or resumed
  // audit measures what the uninterrupted one does.
  const Completion* drift_reference = nullptr;
  // Drift spans every pair of agreeing runs (the prompt's, each level's), not the reference's
  // pairs alone: two runs moved ±d from it differ by 2d.
  std::map<int, LogprobDriftTree> level_drift;
  std::optional<LogprobDriftTree> prompt_drift; // once a second level comes
  std::map<int, NoiseSamples> own_noise;
  std::deque<Completion> kept; // the copies

  void add(const RequestRecord& record, std::size_t position, LevelNoise& noise);
  PromptAnalysis finish(const Prompt& prompt, const std::vector<const RequestRecord*>& answers,
                        const AnalysisConfig& config);

private:
  // The distinct completions in the order first seen, by `mode`.
  DistinctCompletions distinct_completions(IdentityMode mode);
};

// `record` as compared (core::compared_records), at `position` in the prompt's recording order.
void AnalysisBuilder::OpenPrompt::add(const RequestRecord& record, std::size_t position,
                                      LevelNoise& noise) {
  const int concurrency = record.planned.concurrency;
  LevelAnalysis& level = levels[concurrency];
  level.concurrency = concurrency;
  if (!record.outcome.ok) {
    ++result.failed;
    ++level.failed;
    return;
  }
  ++result.runs;
  ++level.runs;
  const Completion& completion = record.outcome.completion;
  const Completion* kept_copy = nullptr;
  const auto keep = [&]() -> const Completion* {
    if (!copies) return &completion;
    if (kept_copy == nullptr) kept_copy = &kept.emplace_back(completion);
    return kept_copy;
  };

  // An empty completion (no text, no tokens) is an empty token sequence, not a lack of tokens.
  if (completion.tokens.empty() && !completion.text.empty()) all_have_tokens = false;
  if (!completion.has_logprobs) all_have_logprobs = false;
  result.numbers += completion.numbers;
  result.lone_surrogates += completion.lone_surrogates;
  // A reasoning model's compared text is a parsed part, whose markers and stripped whitespace
  // its tokens keep: only a raw completion's tokens must spell its text.
  if (completion.reasoning_split == ReasoningSplit::none && !completion.tokens.empty() &&
      !tokens_are_ids(completion) && !tokens_match_text(completion))
    ++result.token_text_mismatch;
  if (completion.has_logprobs)
    for (const auto& token : completion.tokens) {
      const int candidates = static_cast<int>(token.top.size());
      if (!result.min_candidates || candidates < *result.min_candidates)
        result.min_candidates = candidates;
    }
  if (chose_below_runner_up(completion)) ++level.below_runner_up_runs;

  // Every level with a successful run is in the map, sampled or not.
  NoiseSamples& level_noise = noise[concurrency];
  if (drift_reference == nullptr) {
    drift_reference = keep();
  } else {
    std::vector<double> deviations;
    level_noise.leave_out(add_gap_noise(deviations, *drift_reference, completion));
    NoiseSamples& own = own_noise.try_emplace(concurrency, k_own_noise_capacity).first->second;
    for (double deviation : deviations) {
      level_noise.add(deviation);
      own.add(deviation);
    }
  }
  // In text mode the divergence from the reference is measured again when the prompt is judged.
  note_reference_agreement(level, *drift_reference, completion, IdentityMode::tokens);
  // The runs come level by level: those before a second level are all the first level's.
  if (!prompt_drift && !level_drift.empty() && !level_drift.contains(concurrency))
    prompt_drift = level_drift.begin()->second;
  level_drift[concurrency].add(completion);
  if (prompt_drift) prompt_drift->add(completion);

  const std::uint64_t hash = identity_hash(completion, IdentityMode::tokens);
  std::optional<std::size_t> index;
  for (auto [at, end] = class_of.equal_range(hash); at != end && !index; ++at)
    if (same_identity(completion, *classes[at->second].first, IdentityMode::tokens))
      index = at->second;
  if (!index) {
    index = classes.size();
    class_of.emplace(hash, *index);
    Class& added = classes.emplace_back();
    added.first = keep();
    added.concurrency = concurrency;
    added.position = position;
  }
  Class& entry = classes[*index];
  if (entry.comes_after(concurrency, position)) {
    entry.first = keep();
    entry.concurrency = concurrency;
    entry.position = position;
  }
  ++entry.count;
  ++entry.count_by_concurrency[concurrency];
  ++entry.finish_reasons[completion.finish_reason];
  ++entry.models[completion.model];
  ++entry.fingerprints[completion.system_fingerprint];
  ++seen_at_level[concurrency][*index];
}

DistinctCompletions AnalysisBuilder::OpenPrompt::distinct_completions(IdentityMode mode) {
  // Text mode: the token classes of one text are one completion.
  std::vector<std::size_t> joined_into(classes.size());
  std::vector<Class> joined;
  if (mode == IdentityMode::text) {
    std::unordered_map<std::string_view, std::size_t> by_text;
    for (std::size_t i = 0; i < classes.size(); ++i) {
      const auto [at, added] = by_text.try_emplace(classes[i].first->text, joined.size());
      if (added)
        joined.push_back(std::move(classes[i]));
      else
        joined[at->second].join(classes[i]);
      joined_into[i] = at->second;
    }
  } else {
    for (std::size_t i = 0; i < classes.size(); ++i) joined_into[i] = i;
    joined = std::move(classes);
  }
  // Numbered by the run each was first seen in.
  std::vector<std::size_t> order(joined.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return joined[b].comes_after(joined[a].concurrency, joined[a].position);
  });
  std::vector<std::size_t> number(joined.size());
  DistinctCompletions out;
  for (std::size_t n = 0; n < order.size(); ++n) {
    Class& entry = joined[order[n]];
    number[order[n]] = n;
    out.distinct.push_back(Distinct{entry.first, entry.count, std::move(entry.count_by_concurrency),
                                    n, std::move(entry.finish_reasons), std::move(entry.models),
                                    std::move(entry.fingerprints)});
  }
  for (const auto& [concurrency, seen] : seen_at_level)
    for (const auto& [index, count] : seen)
      out.seen_at_level[concurrency][number[joined_into[index]]] += count;
  return out;
}

PromptAnalysis AnalysisBuilder::OpenPrompt::finish(const Prompt& prompt,
                                                   const std::vector<const RequestRecord*>& answers,
                                                   const AnalysisConfig& config) {
  result.id = prompt.id;
  result.prompt_index = prompt_index;
  for (const auto& [concurrency, drift] : level_drift)
    levels[concurrency].logprob_drift = drift.drift();
  // With one level its runs are the prompt's, and so is its drift.
  if (level_drift.size() == 1)
    result.logprob_drift = levels[level_drift.begin()->first].logprob_drift;
  else
    result.logprob_drift = prompt_drift ? prompt_drift->drift() : LogprobDriftTree().drift();
  for (const auto& [concurrency, samples] : own_noise)
    levels[concurrency].own_noise = samples.distribution();
  result.has_logprobs = result.runs > 0 && all_have_logprobs;

  const IdentityMode mode = all_have_tokens ? IdentityMode::tokens : IdentityMode::text;
  DistinctCompletions seen = distinct_completions(mode);
  if (mode == IdentityMode::text) {
    // Where each level's runs leave the reference, by text: a class's runs share its text.
    for (auto& [concurrency, level] : levels) level.divergence_from_reference.reset();
    for (const auto& [concurrency, counts] : seen.seen_at_level) {
      LevelAnalysis& level = levels[concurrency];
      for (const auto& [index, count] : counts) {
        const Completion& run = *seen.distinct[index].first;
        if (same_identity(run, *drift_reference, mode)) continue;
        const int shared = shared_prefix(*drift_reference, run, mode);
        if (!level.divergence_from_reference || shared < *level.divergence_from_reference)
          level.divergence_from_reference = shared;
      }
    }
  }
  return judge_prompt(std::move(result), prompt, std::move(levels), std::move(seen), mode, answers,
                      config);
}

// The builder's running totals: everything the summary needs that is not in the kept prompts.
struct AnalysisBuilder::Totals {
  int agreeing = 0;
  int answers_agreeing = 0;
  // Checkers: per run (concurrency, repeat), and prompts that passed at least once / every time.
  int prompts_checked = 0;
  std::map<std::pair<int, int>, RunAccuracy> runs;
  int best = 0;
  int worst = 0;
  // Usage and time per level, from the raw records.
  std::map<int, LevelAccount> levels;
  std::vector<AnalysisWindowGaps> windows; // of each prompt kept, in its order
  FailureGroups failure_reasons;
  LevelNoise noise;
};

AnalysisBuilder::AnalysisBuilder(const Suite& suite, const AnalysisConfig& config,
                                 int endpoint_index, std::optional<ProbeKind> probe)
    : m_suite(&suite), m_config(config), m_probe(probe), m_totals(std::make_unique<Totals>()) {
  m_analysis.endpoint_index = endpoint_index;
  m_analysis.summary.reasoning.compare_on = config.compare_on;
}

AnalysisBuilder::AnalysisBuilder(AnalysisBuilder&&) noexcept = default;
AnalysisBuilder& AnalysisBuilder::operator=(AnalysisBuilder&&) noexcept = default;
AnalysisBuilder::~AnalysisBuilder() = default;

namespace {

template <typename Records, typename Read>
std::vector<std::size_t> order_for_analysis(const Records& records, Read read) {
  std::vector<std::size_t> order(records.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PlannedRequest& x = read(records[a]);
    const PlannedRequest& y = read(records[b]);
    return std::pair(x.concurrency, x.repeat) < std::pair(y.concurrency, y.repeat);
  });
  return order;
}

} // namespace

std::vector<std::size_t> analysis_order(const std::vector<const RequestRecord*>& records) {
  return order_for_analysis(
      records, [](const RequestRecord* r) -> const PlannedRequest& { return r->planned; });
}

std::vector<std::size_t> analysis_order(const std::vector<RequestRecord>& records) {
  return order_for_analysis(
      records, [](const RequestRecord& r) -> const PlannedRequest& { return r.planned; });
}

bool AnalysisBuilder::counts(const RequestRecord& record, int prompt_index) const {
  return record.planned.endpoint_index == m_analysis.endpoint_index &&
         (!m_probe || record.planned.probe == *m_probe) &&
         record.planned.prompt_index == prompt_index;
}

PromptAnalysis* AnalysisBuilder::add_prompt(int prompt_index,
                                            const std::vector<const RequestRecord*>& records) {
  const auto index = static_cast<std::size_t>(prompt_index);
  if (prompt_index < 0 || index >= m_suite->prompts.size()) return nullptr;
  std::vector<const RequestRecord*> mine;
  for (const auto* record : records)
    if (counts(*record, prompt_index)) mine.push_back(record);
  if (mine.empty()) return nullptr;
  // The records outlive the prompt's analysis: it keeps pointers, not copies.
  std::vector<RequestRecord> compared_copies;
  const auto compared = compared_records(mine, m_config.compare_on, compared_copies);
  m_open = std::make_unique<OpenPrompt>(prompt_index, false);
  for (std::size_t i : analysis_order(mine)) add_counted_run(*mine[i], *compared[i], i);
  return close_prompt(mine);
}

void AnalysisBuilder::begin_prompt(int prompt_index) {
  m_open.reset();
  const auto index = static_cast<std::size_t>(prompt_index);
  if (prompt_index < 0 || index >= m_suite->prompts.size()) return;
  m_open = std::make_unique<OpenPrompt>(prompt_index, true);
}

void AnalysisBuilder::add_run(const RequestRecord& record, std::size_t position) {
  if (!m_open || !counts(record, m_open->prompt_index)) return;
  if (compares_part(record, m_config.compare_on))
    add_counted_run(record, compared_record(record, m_config.compare_on), position);
  else
    add_counted_run(record, record, position);
}

PromptAnalysis* AnalysisBuilder::end_prompt(const std::vector<const RequestRecord*>& records) {
  if (!m_open) return nullptr;
  std::vector<const RequestRecord*> mine;
  for (const auto* record : records)
    if (counts(*record, m_open->prompt_index)) mine.push_back(record);
  if (mine.empty()) {
    m_open.reset();
    return nullptr;
  }
  return close_prompt(mine);
}

// What is read of a run's tokens is read here, while the run has them.
void AnalysisBuilder::add_counted_run(const RequestRecord& record, const RequestRecord& compared,
                                      std::size_t position) {
  Totals& totals = *m_totals;
  m_open->add(compared, position, totals.noise);
  if (record.outcome.ok) m_analysis.summary.reasoning.add(record.outcome.completion);
  totals.levels[record.planned.concurrency].add(record);
}

PromptAnalysis* AnalysisBuilder::close_prompt(const std::vector<const RequestRecord*>& mine) {
  const int prompt_index = m_open->prompt_index;
  const Prompt& suite_prompt = m_suite->prompts[static_cast<std::size_t>(prompt_index)];
  Totals& totals = *m_totals;
  PromptAnalysis prompt = m_open->finish(suite_prompt, mine, m_config);
  m_open.reset();
  if (m_config.compare_on == CompareOn::tool_calls && !prompt.completions.empty())
    prompt.tool_call_divergence = first_tool_call_divergence(prompt.completions[0].text, mine);
  judge_text_divergence(prompt);
  AnalysisWindowGaps& window = totals.windows.emplace_back();
  window.gaps = window_gaps(prompt, m_config, window.reason);
  AuditSummary& summary = m_analysis.summary;
  if (prompt.fingerprints > 1) ++summary.fingerprint_drift_prompts;
  ++summary.prompts;
  summary.requests += prompt.runs + prompt.failed;
  summary.failed_requests += prompt.failed;
  switch (prompt.status) {
  case PromptStatus::stable: ++summary.stable_prompts; break;
  case PromptStatus::unstable: ++summary.unstable_prompts; break;
  case PromptStatus::inconclusive: ++summary.inconclusive_prompts; break;
  }
  if (prompt.tier == StabilityTier::bitwise) ++summary.bitwise_stable_prompts;
  if (prompt.status != PromptStatus::inconclusive && prompt.logprob_drift.positions_compared > 0)
    summary.max_logprob_drift =
        std::max(summary.max_logprob_drift.value_or(0.0), prompt.logprob_drift.max_abs);
  if (prompt.runs >= 2) ++summary.prompts_with_two_completions;
  if (prompt.runs > 0 && !prompt.has_logprobs) ++summary.prompts_without_logprobs;
  if (prompt.non_greedy_tokens > 0) ++summary.non_greedy_prompts;
  if (prompt.token_text_mismatch > 0) ++summary.token_text_mismatch_prompts;
  if (prompt.min_candidates &&
      (!summary.min_candidates || *prompt.min_candidates < *summary.min_candidates))
    summary.min_candidates = prompt.min_candidates;
  summary.numbers += prompt.numbers;
  summary.lone_surrogates += prompt.lone_surrogates;
  if (prompt.status == PromptStatus::stable) ++totals.agreeing;
  if (prompt.answers_agree) ++totals.answers_agreeing;

  // Checkers: per-run accuracy, and the best/worst-possible accuracy over prompts.
  if (suite_prompt.expect.kind != Expectation::Kind::none) {
    ++totals.prompts_checked;
    int passed_runs = 0;
    for (const auto* record : mine) {
      const bool passed =
          record->outcome.ok &&
          check_answer(suite_prompt.expect, record->outcome.completion.text).value_or(false);
      RunAccuracy& run = totals.runs[{record->planned.concurrency, record->planned.repeat}];
      run.concurrency = record->planned.concurrency;
      run.repeat = record->planned.repeat;
      ++run.checked;
      if (passed) {
        ++run.passed;
        ++passed_runs;
      }
    }
    if (passed_runs > 0) ++totals.best;
    if (passed_runs == static_cast<int>(mine.size())) ++totals.worst;
  }

  for (const auto* record : mine) {
    if (record->outcome.ok) {
      ++summary.models_seen[record->outcome.completion.model];
      ++summary.fingerprints_seen[record->outcome.completion.system_fingerprint];
    } else {
      totals.failure_reasons.add(record->outcome);
    }
  }
  return &m_analysis.prompts.emplace_back(std::move(prompt));
}

AuditAnalysis AnalysisBuilder::finish() {
  AuditAnalysis analysis = std::move(m_analysis);
  const Totals& totals = *m_totals;
  AuditSummary& summary = analysis.summary;
  summary.tarr = summary.prompts > 0 ? static_cast<double>(totals.agreeing) / summary.prompts : 0.0;
  summary.tara =
      summary.prompts > 0 ? static_cast<double>(totals.answers_agreeing) / summary.prompts : 0.0;
  if (totals.prompts_checked > 0) {
    CheckerSummary checks;
    checks.prompts_checked = totals.prompts_checked;
    double total = 0.0;
    for (auto run : totals.runs) {
      run.second.accuracy = static_cast<double>(run.second.passed) / run.second.checked;
      total += run.second.accuracy;
      checks.per_run.push_back(run.second);
    }
    checks.mean_accuracy =
        totals.runs.empty() ? 0.0 : total / static_cast<double>(totals.runs.size());
    checks.best_possible = static_cast<double>(totals.best) / checks.prompts_checked;
    checks.worst_possible = static_cast<double>(totals.worst) / checks.prompts_checked;
    checks.spread = checks.best_possible - checks.worst_possible;
    summary.checks = std::move(checks);
  }
  summary.failure_reasons = totals.failure_reasons.sorted();
  // The flip probability needs every level's noise, so it is judged once all prompts are in; so
  // are fragility's counts, which follow it under --fragile-p.
  std::map<int, NoiseDistribution> noise;
  std::vector<const NoiseDistribution*> levels_noise;
  for (const auto& [concurrency, samples] : totals.noise)
    levels_noise.push_back(&noise.emplace(concurrency, samples.distribution()).first->second);
  judge_shifts(analysis);
  ConfusionMatrix& m = summary.predictor;
  std::vector<double> predicted;
  std::vector<double> gap_rule;
  std::vector<bool> observed;
  for (std::size_t i = 0; i < analysis.prompts.size(); ++i) {
    PromptAnalysis& prompt = analysis.prompts[i];
    judge_flip_probability(prompt, totals.windows[i], noise);
    if (m_config.fragile_p) judge_fragility_by_probability(prompt, *m_config.fragile_p);
    if (prompt.fragile == true) ++summary.fragile_prompts;
    if (!prompt.fragile) ++summary.fragility_unknown_prompts;
    if (prompt.status == PromptStatus::inconclusive) continue;
    // Only prompts whose fragility and stability are both known take part in the predictor.
    if (prompt.fragile) {
      if (*prompt.fragile && prompt.unstable)
        ++m.true_positive;
      else if (*prompt.fragile)
        ++m.false_positive;
      else if (prompt.unstable)
        ++m.false_negative;
      else
        ++m.true_negative;
    }
    if (prompt.p_flip && prompt.fragile_by_gap) {
      predicted.push_back(*prompt.p_flip);
      gap_rule.push_back(*prompt.fragile_by_gap ? 1.0 : 0.0);
      observed.push_back(prompt.unstable);
    }
  }
  FlipCalibration& calibration = summary.flip_calibration;
  calibration.prompts = static_cast<int>(observed.size());
  calibration.unstable = static_cast<int>(std::count(observed.begin(), observed.end(), true));
  calibration.p_flip = score_predictor(predicted, observed);
  calibration.gap_rule = score_predictor(gap_rule, observed);
  calibration.reliability = reliability_bins(predicted, observed);
  calibration.recommended_tau = recommended_tau(levels_noise);
  if (m.true_positive + m.false_positive > 0)
    m.precision = static_cast<double>(m.true_positive) / (m.true_positive + m.false_positive);
  if (m.true_positive + m.false_negative > 0)
    m.recall = static_cast<double>(m.true_positive) / (m.true_positive + m.false_negative);

  // Per level: stability from the prompt analyses, cost from the raw records.
  std::map<int, LevelSummary> levels;
  for (const auto& prompt : analysis.prompts) {
    for (const auto& level : prompt.by_concurrency) {
      LevelSummary& out = levels[level.concurrency];
      out.concurrency = level.concurrency;
      out.runs += level.runs;
      out.failed += level.failed;
      out.unique_completions += level.unique_completions;
      if (level.status == PromptStatus::unstable) ++out.unstable_prompts;
      if (level.status == PromptStatus::inconclusive) ++out.inconclusive_prompts;
      if (level.differs_from_serial) ++out.differs_from_serial_prompts;
      if (level.status != PromptStatus::inconclusive) {
        out.logprob_drift.max_abs =
            std::max(out.logprob_drift.max_abs, level.logprob_drift.max_abs);
        out.logprob_drift.max_abs_gap =
            std::max(out.logprob_drift.max_abs_gap, level.logprob_drift.max_abs_gap);
        out.logprob_drift.positions_compared += level.logprob_drift.positions_compared;
      }
    }
  }
  for (auto& [concurrency, level] : levels) {
    if (const auto level_noise = totals.noise.find(concurrency); level_noise != totals.noise.end())
      level.noise = level_noise->second.estimate(noise.at(concurrency));
    if (const auto found = totals.levels.find(concurrency); found != totals.levels.end()) {
      level.tokens_per_second = found->second.tokens_per_second();
      level.mean_latency_ms = found->second.mean_latency_ms();
      level.median_latency_ms = found->second.latency_quantile_ms(0.5);
      level.p95_latency_ms = found->second.latency_quantile_ms(0.95);
      level.usage = found->second.usage.priced(m_config.price);
    }
    summary.by_concurrency.push_back(level);
  }
  for (const auto& [concurrency, account] : totals.levels) summary.usage += account.usage;
  summary.usage = summary.usage.priced(m_config.price);
  analysis.noise = std::move(noise);
  return analysis;
}

} // namespace llmrepro::core
