// One prompt's analysis (core/prompt_runs.hpp), exactly as docs/design.md "Analysis: definitions"
// states it.
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
#include "core/prompt_runs.hpp"

#include "core/answer_check.hpp"
#include "core/completion_identity.hpp"
#include "core/reasoning.hpp"
#include "core/completion_facts.hpp"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <utility>

namespace llmrepro::core {
namespace {

using detail::code_points_in;
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
// logprobs while the tokens agree, and where it leaves the reference when it differs (by tokens).
void note_reference_agreement(LevelAnalysis& level, const Completion& reference,
                              const Completion& run, const RunComparison& compared) {
  join_logprob_drift(level.drift_from_reference, compared.drift);
  const bool same_tokens =
      compared.shared == reference.tokens.size() && compared.shared == run.tokens.size();
  if (same_tokens && run.text == reference.text) return; // the same completion
  // Equal tokens with different texts: shared_prefix places the divergence by the texts.
  const int shared = same_tokens ? shared_prefix(reference, run, IdentityMode::tokens)
                                 : static_cast<int>(compared.shared);
  if (!level.divergence_from_reference || shared < *level.divergence_from_reference)
    level.divergence_from_reference = shared;
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
  TextAnswers read(prompt.extract, prompt.expect);
  for (const auto* record : by_level(answers)) {
    if (has_checker) ++result.checked_runs;
    run_answers.push_back({record->planned.concurrency, std::nullopt});
    if (!record->outcome.ok) continue;
    const std::string& text = record->outcome.completion.text;
    if (const auto& answer = read.answer(text)) {
      ++answer_counts[*answer];
      run_answers.back().answer = *answer;
    } else {
      ++result.answer_failures;
    }
    if (has_checker && read.passes(text)) ++passes;
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

} // namespace

// `record` as compared (core::compared_records), at `position` in the prompt's recording order.
void PromptRuns::add(const RequestRecord& record, std::size_t position, LevelNoise& noise,
                     const CompletionFacts* read_facts) {
  const int concurrency = record.planned.concurrency;
  LevelAnalysis& level = m_levels[concurrency];
  level.concurrency = concurrency;
  if (!record.outcome.ok) {
    ++m_result.failed;
    ++level.failed;
    return;
  }
  ++m_result.runs;
  ++level.runs;
  const Completion& completion = record.outcome.completion;
  const Completion* kept_copy = nullptr;
  const auto keep = [&]() -> const Completion* {
    if (!m_copies) return &completion;
    if (kept_copy == nullptr) kept_copy = &m_kept.emplace_back(completion);
    return kept_copy;
  };

  const CompletionFacts facts = read_facts != nullptr ? *read_facts : completion_facts(completion);

  // An empty completion (no text, no tokens) is an empty token sequence, not a lack of tokens.
  if (completion.tokens.empty() && !completion.text.empty()) m_all_have_tokens = false;
  if (!completion.has_logprobs) m_all_have_logprobs = false;
  m_result.numbers += completion.numbers;
  m_result.lone_surrogates += completion.lone_surrogates;
  if (facts.token_text_mismatch) ++m_result.token_text_mismatch;
  if (facts.min_candidates &&
      (!m_result.min_candidates || *facts.min_candidates < *m_result.min_candidates))
    m_result.min_candidates = facts.min_candidates;
  if (facts.below_runner_up) ++level.below_runner_up_runs;

  // Every level with a successful run is in the map, sampled or not.
  NoiseSamples& level_noise = noise[concurrency];
  read_run_numbers(completion, m_numbers);
  const bool is_reference = m_drift_reference == nullptr;
  if (is_reference) {
    m_drift_reference = keep();
    read_run_numbers(*m_drift_reference, m_reference_numbers);
  }
  // Walked once against the reference: the drift, the noise samples (none of the reference
  // itself, none without logprobs) and where the two part.
  m_deviations.clear();
  const bool sampled = !is_reference && m_drift_reference->has_logprobs && completion.has_logprobs;
  const RunComparison compared =
      compare_runs(m_reference_numbers, m_numbers, sampled ? &m_deviations : nullptr);
  if (!is_reference) {
    level_noise.leave_out(compared.left_out);
    level_noise.add(m_deviations);
    m_own_noise.try_emplace(concurrency, k_own_noise_capacity).first->second.add(m_deviations);
  }
  // In text mode the divergence from the reference is measured again when the prompt is judged.
  note_reference_agreement(level, *m_drift_reference, completion, compared);
  // The runs come level by level: those before a second level are all the first level's.
  if (!m_prompt_drift && !m_level_drift.empty() && !m_level_drift.contains(concurrency))
    m_prompt_drift = m_level_drift.begin()->second;
  m_level_drift[concurrency].add(m_numbers);
  if (m_prompt_drift) m_prompt_drift->add(m_numbers);

  const std::uint64_t hash = facts.identity;
  std::optional<std::size_t> index;
  for (auto [at, end] = m_class_of.equal_range(hash); at != end && !index; ++at)
    if (same_identity(completion, *m_classes[at->second].first, IdentityMode::tokens))
      index = at->second;
  if (!index) {
    index = m_classes.size();
    m_class_of.emplace(hash, *index);
    Class& added = m_classes.emplace_back();
    added.first = keep();
    added.concurrency = concurrency;
    added.position = position;
  }
  Class& entry = m_classes[*index];
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
  ++m_seen_at_level[concurrency][*index];
}

namespace {

// The distinct completions in the order first seen, by `mode`.
DistinctCompletions
distinct_completions(std::vector<PromptRuns::Class>& classes,
                     const std::map<int, std::map<std::size_t, int>>& seen_at_level,
                     IdentityMode mode) {
  using Class = PromptRuns::Class;
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

} // namespace

PromptAnalysis PromptRuns::finish(const Prompt& prompt,
                                  const std::vector<const RequestRecord*>& answers,
                                  const AnalysisConfig& config) {
  m_result.id = prompt.id;
  m_result.prompt_index = m_prompt_index;
  for (const auto& [concurrency, drift] : m_level_drift)
    m_levels[concurrency].logprob_drift = drift.drift();
  // With one level its runs are the prompt's, and so is its drift.
  if (m_level_drift.size() == 1)
    m_result.logprob_drift = m_levels[m_level_drift.begin()->first].logprob_drift;
  else
    m_result.logprob_drift = m_prompt_drift ? m_prompt_drift->drift() : LogprobDriftTree().drift();
  for (const auto& [concurrency, samples] : m_own_noise)
    m_levels[concurrency].own_noise = samples.distribution();
  m_result.has_logprobs = m_result.runs > 0 && m_all_have_logprobs;

  const IdentityMode mode = m_all_have_tokens ? IdentityMode::tokens : IdentityMode::text;
  DistinctCompletions seen = distinct_completions(m_classes, m_seen_at_level, mode);
  if (mode == IdentityMode::text) {
    // Where each level's runs leave the reference, by text: a class's runs share its text.
    for (auto& [concurrency, level] : m_levels) level.divergence_from_reference.reset();
    for (const auto& [concurrency, counts] : seen.seen_at_level) {
      LevelAnalysis& level = m_levels[concurrency];
      for (const auto& [index, count] : counts) {
        const Completion& run = *seen.distinct[index].first;
        if (same_identity(run, *m_drift_reference, mode)) continue;
        const int shared = shared_prefix(*m_drift_reference, run, mode);
        if (!level.divergence_from_reference || shared < *level.divergence_from_reference)
          level.divergence_from_reference = shared;
      }
    }
  }
  return judge_prompt(std::move(m_result), prompt, std::move(m_levels), std::move(seen), mode,
                      answers, config);
}

std::vector<std::size_t> analysis_order(const std::vector<const RequestRecord*>& records) {
  std::vector<std::size_t> order(records.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const PlannedRequest& x = records[a]->planned;
    const PlannedRequest& y = records[b]->planned;
    return std::pair(x.concurrency, x.repeat) < std::pair(y.concurrency, y.repeat);
  });
  return order;
}

} // namespace llmrepro::core
