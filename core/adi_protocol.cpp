#include "core/adi_protocol.hpp"

#include <algorithm>
#include <cstdio>

namespace llmrepro::core {

namespace {

double median_of(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

// `value` as printf's `format` writes it (one conversion of a double).
std::string number_text(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

} // namespace

std::optional<double> modal_completion_share(const PromptAnalysis& prompt) {
  const int runs = prompt.runs + prompt.failed;
  if (runs == 0) return std::nullopt;
  const int modal = prompt.completions.empty() ? 0 : prompt.completions.front().count;
  return static_cast<double>(modal) / runs;
}

AdiTally::AdiTally(const AuditConfig& config) {
  m_summary.burst = config.plan.levels.empty() ? k_adi_burst : config.plan.levels.back();
  m_summary.serial_runs = config.plan.serial_runs.value_or(config.plan.runs);
  m_summary.serial_spacing_s = config.requests.serial_spacing_s;
}

void AdiTally::add(const PromptAnalysis& prompt) {
  AdiSummary& summary = m_summary;
  const auto share = modal_completion_share(prompt);
  if (!share) return;
  ++summary.cases;
  m_share_total += *share;
  summary.min_modal_share = std::min(summary.min_modal_share.value_or(1.0), *share);
  const bool diverged = prompt.unique_completions > 1;
  if (diverged) ++summary.diverged;
  if (const LevelAnalysis* burst = level_of(prompt, summary.burst)) {
    if (burst->unique_completions > 1) ++summary.burst_diverged;
    if (burst->differs_from_serial) ++summary.burst_differs_from_serial;
  }
  if (const LevelAnalysis* serial = level_of(prompt, 1); serial && serial->unique_completions > 1)
    ++summary.serial_diverged;
  if (prompt.text_divergence) {
    m_bytes.push_back(prompt.text_divergence->bytes);
    m_characters.push_back(prompt.text_divergence->characters);
  }
  if (prompt.fingerprints > 1) {
    ++summary.fingerprint_drift_cases;
    if (diverged) ++summary.diverged_with_fingerprint_drift;
  }
}

AdiSummary AdiTally::finish(const AuditSummary& analysed) const {
  AdiSummary summary = m_summary;
  if (summary.cases > 0) summary.mean_modal_share = m_share_total / summary.cases;
  summary.text_diverged = static_cast<int>(m_bytes.size());
  if (!m_bytes.empty()) {
    summary.min_divergence_bytes = *std::min_element(m_bytes.begin(), m_bytes.end());
    summary.min_divergence_characters = *std::min_element(m_characters.begin(), m_characters.end());
    summary.median_divergence_bytes = median_of(m_bytes);
    summary.median_divergence_characters = median_of(m_characters);
  }
  for (const auto& [fingerprint, count] : analysed.fingerprints_seen)
    if (!fingerprint.empty() && count > 0) ++summary.fingerprints;
  return summary;
}

AdiSummary adi_summary(const AuditAnalysis& analysis, const AuditConfig& config) {
  AdiTally tally(config);
  for (const PromptAnalysis& prompt : analysis.prompts) tally.add(prompt);
  return tally.finish(analysis.summary);
}

std::vector<std::string> adi_lines(const AdiSummary& s) {
  const auto count = [](int n, const char* noun) {
    return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
  };
  std::vector<std::string> lines;
  std::string protocol = count(s.cases, "case") + ", each a burst of " + std::to_string(s.burst) +
                         " concurrent requests and " + std::to_string(s.serial_runs) +
                         " serial requests " + number_text("%g", s.serial_spacing_s) + " s apart";
  if (s.serial_spacing_s < k_adi_serial_spacing_s)
    protocol += " (--serial-spacing; the leaderboard's protocol waits " +
                number_text("%g", k_adi_serial_spacing_s) + " s)";
  lines.push_back(protocol);
  lines.push_back("diverged " + std::to_string(s.diverged) + " of " + std::to_string(s.cases) +
                  ": within the burst " + std::to_string(s.burst_diverged) +
                  ", among the serial requests " + std::to_string(s.serial_diverged) +
                  ", the burst's modal response not the serial one " +
                  std::to_string(s.burst_differs_from_serial));
  if (s.text_diverged == 0)
    lines.push_back("first divergence: no case's texts part");
  else
    lines.push_back("first divergence over the " + count(s.text_diverged, "case") +
                    " whose texts part: byte " + number_text("%g", *s.median_divergence_bytes) +
                    " (median; least " + std::to_string(*s.min_divergence_bytes) + "), character " +
                    number_text("%g", *s.median_divergence_characters) + " (median; least " +
                    std::to_string(*s.min_divergence_characters) + ")");
  if (s.mean_modal_share)
    lines.push_back("modal share " + number_text("%.3f", *s.mean_modal_share) +
                    " (mean over the cases; least " + number_text("%.3f", *s.min_modal_share) +
                    ")");
  if (s.fingerprints == 0)
    lines.push_back("fingerprint drift: not measured (no system_fingerprint came back)");
  else
    lines.push_back("fingerprint drift in " + std::to_string(s.fingerprint_drift_cases) + " of " +
                    count(s.cases, "case") + " (" + count(s.fingerprints, "distinct fingerprint") +
                    " over the audit; " + std::to_string(s.diverged_with_fingerprint_drift) +
                    " of the drifting cases diverged)");
  return lines;
}

std::vector<std::string> adi_lines(const std::vector<AdiSummary>& endpoints) {
  std::vector<std::string> lines;
  for (std::size_t e = 0; e < endpoints.size(); ++e)
    for (const std::string& line : adi_lines(endpoints[e]))
      lines.push_back(endpoints.size() > 1 ? "#" + std::to_string(e) + " " + line : line);
  return lines;
}

} // namespace llmrepro::core
