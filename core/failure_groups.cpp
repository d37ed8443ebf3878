#include "core/failure_groups.hpp"

#include <algorithm>
#include <cctype>

namespace llmrepro::core {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Where the leading "HTTP <digits>" ends (0 when the reason does not start so).
std::size_t status_end(std::string_view reason) {
  constexpr std::string_view k_http = "HTTP ";
  if (reason.substr(0, k_http.size()) != k_http) return 0;
  std::size_t end = k_http.size();
  while (end < reason.size() && is_digit(reason[end])) ++end;
  return end;
}

// Where the trailing " after <digits> attempt" or " attempts" begins (size() when absent).
std::size_t attempts_begin(std::string_view reason) {
  const std::size_t at = reason.rfind(" after ");
  if (at == std::string_view::npos) return reason.size();
  std::size_t end = at + 7;
  const std::size_t digits = end;
  while (end < reason.size() && is_digit(reason[end])) ++end;
  const std::string_view rest = reason.substr(end);
  if (end == digits || (rest != " attempt" && rest != " attempts")) return reason.size();
  return at;
}

} // namespace

std::string failure_reason(const RequestOutcome& outcome) {
  std::string error = outcome.error.substr(0, outcome.error.find('\n'));
  if (error.size() > 160) error = error.substr(0, 157) + "...";
  if (error.empty()) error = "no error message";
  if (outcome.http_status > 0) {
    const std::string status = "HTTP " + std::to_string(outcome.http_status);
    if (error.find(status) == std::string::npos) error = status + ": " + error;
  }
  return error;
}

std::string failure_cause(std::string_view reason) {
  const std::size_t begin = status_end(reason);
  const std::size_t end = std::max(begin, attempts_begin(reason));
  std::string cause(reason.substr(0, begin));
  for (std::size_t i = begin; i < end; ++i) {
    if (!is_digit(reason[i])) {
      cause.push_back(reason[i]);
    } else if (i == begin || !is_digit(reason[i - 1])) {
      cause.push_back('N');
    }
  }
  cause.append(reason.substr(end));
  return cause;
}

void FailureGroups::add(const RequestOutcome& outcome) {
  std::string reason = failure_reason(outcome);
  Group& group = m_groups[failure_cause(reason)];
  if (group.count == 0) {
    group.first_reason = std::move(reason);
  } else if (group.alike && reason != group.first_reason) {
    group.alike = false;
  }
  ++group.count;
}

std::vector<std::pair<std::string, int>> FailureGroups::sorted() const {
  std::vector<std::pair<std::string, int>> out;
  out.reserve(m_groups.size());
  for (const auto& [cause, group] : m_groups)
    out.emplace_back(group.alike ? group.first_reason : cause, group.count);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

} // namespace llmrepro::core
