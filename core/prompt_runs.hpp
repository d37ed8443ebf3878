// One prompt's analysis, taken one run at a time: the accumulator behind core::AnalysisBuilder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/analysis.hpp"
#include "core/flip_probability.hpp"
#include "core/logprob_drift.hpp"
#include "core/completion_facts.hpp"
#include "core/run_numbers.hpp"

namespace llmrepro::core {

// The noise samples of each level (concurrency -> |Δgap|), which a prompt's runs add to.
using LevelNoise = std::map<int, NoiseSamples>;

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
class PromptRuns {
public:
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

  // `copy_kept`: the runs added do not outlive add(), so what is kept of them is copied.
  PromptRuns(int prompt_index, bool copy_kept)
      : m_prompt_index(prompt_index), m_copies(copy_kept) {}

  int prompt_index() const { return m_prompt_index; }

  // `record` as compared (core::compared_records), at `position` in the prompt's records in
  // recording order; the records come in analysis_order. Adds the run's noise samples to
  // `noise`. `facts`: completion_facts of the record, where they were computed as it was read.
  void add(const RequestRecord& record, std::size_t position, LevelNoise& noise,
           const CompletionFacts* facts = nullptr);
  // The prompt's analysis; `answers` are its records as recorded, in recording order (their
  // tokens are not read). The runs are spent.
  PromptAnalysis finish(const Prompt& prompt, const std::vector<const RequestRecord*>& answers,
                        const AnalysisConfig& config);

private:
  int m_prompt_index;
  bool m_copies;
  PromptAnalysis m_result;
  bool m_all_have_tokens = true;
  bool m_all_have_logprobs = true;
  std::map<int, LevelAnalysis> m_levels;
  std::vector<Class> m_classes;                                   // in the order first added
  std::unordered_multimap<std::uint64_t, std::size_t> m_class_of; // by identity_hash
  std::map<int, std::map<std::size_t, int>> m_seen_at_level;      // level -> class -> runs
  // The references of logprob drift: the successful run of the lowest repeat at the lowest
  // level, and at each level. By repeat, not by recording order, so that a merged or resumed
  // audit measures what the uninterrupted one does.
  const Completion* m_drift_reference = nullptr;
  // Drift spans every pair of agreeing runs (the prompt's, each level's), not the reference's
  // pairs alone: two runs moved ±d from it differ by 2d.
  std::map<int, LogprobDriftTree> m_level_drift;
  std::optional<LogprobDriftTree> m_prompt_drift; // once a second level comes
  std::map<int, NoiseSamples> m_own_noise;
  std::vector<double> m_deviations; // one run's noise samples, the buffer reused run after run
  std::vector<PositionNumbers> m_reference_numbers; // of m_drift_reference
  std::vector<PositionNumbers> m_numbers;           // of the run being added, reused
  std::deque<Completion> m_kept;                    // the copies
};

} // namespace llmrepro::core
