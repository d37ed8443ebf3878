#include "core/server_description.hpp"

#include <algorithm>

#include "core/redaction.hpp"
#include "core/text_utf8.hpp"

namespace llmrepro::core {
namespace {

std::string side_text(const ServerDescription& description) {
  if (!description.known()) return "unknown";
  return description.version.empty() ? description.kind
                                     : description.kind + " " + description.version;
}

const ServerFact* find_fact(const ServerDescription& description, const std::string& name) {
  const auto found = std::find_if(description.facts.begin(), description.facts.end(),
                                  [&](const ServerFact& fact) { return fact.name == name; });
  return found == description.facts.end() ? nullptr : &*found;
}

} // namespace

std::string server_text(std::string_view text) {
  // The run's secrets out first, before the cut could leave part of one: a server may echo a key
  // it was sent into what it says of itself.
  std::string cleaned = sanitize_utf8(redact(text));
  // Control characters (a newline, an escape sequence) would break a terminal line or a
  // Markdown table row: a server's text is never trusted to be printable.
  for (char& c : cleaned)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return truncate_utf8(cleaned, k_server_text_max);
}

std::vector<std::string> server_changes(const ServerDescription& a, const ServerDescription& b) {
  std::vector<std::string> changes;
  if (!a.known() && !b.known()) return changes;
  if (a.kind != b.kind || a.version != b.version)
    changes.push_back(a.kind == b.kind ? a.kind + " " + (a.version.empty() ? "(none)" : a.version) +
                                             " -> " + (b.version.empty() ? "(none)" : b.version)
                                       : side_text(a) + " -> " + side_text(b));
  // A's facts in A's order, then those only B has, in B's.
  std::vector<std::string> names;
  for (const ServerFact& fact : a.facts) names.push_back(fact.name);
  for (const ServerFact& fact : b.facts)
    if (find_fact(a, fact.name) == nullptr) names.push_back(fact.name);
  for (const std::string& name : names) {
    const ServerFact* in_a = find_fact(a, name);
    const ServerFact* in_b = find_fact(b, name);
    const std::string value_a = in_a != nullptr ? in_a->value : "(none)";
    const std::string value_b = in_b != nullptr ? in_b->value : "(none)";
    if (value_a != value_b) changes.push_back(name + " " + value_a + " -> " + value_b);
  }
  return changes;
}

std::string server_change_line(const std::vector<std::string>& changes) {
  if (changes.empty()) return "";
  std::string line = "serving stack changed: ";
  for (std::size_t i = 0; i < changes.size(); ++i) line += (i > 0 ? "; " : "") + changes[i];
  return line;
}

} // namespace llmrepro::core
