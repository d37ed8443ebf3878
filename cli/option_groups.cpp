#include "cli/option_groups.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>

namespace llmrepro::cli {

std::string config_table_name(const std::string& group) {
  std::string name = group;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
    return c == ' ' ? '-' : static_cast<char>(std::tolower(c));
  });
  return name;
}

OptionGroupScope::OptionGroupScope(CLI::App& command, const char* group)
    : m_command(command), m_previous(command.option_defaults()->get_group()) {
  m_command.option_defaults()->group(group);
}

OptionGroupScope::~OptionGroupScope() { m_command.option_defaults()->group(m_previous); }

std::vector<std::string> option_choices(const std::string& type_name) {
  const auto open = type_name.find('{');
  const auto close = type_name.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> choices;
  std::string item;
  for (std::size_t i = open + 1; i <= close; ++i) {
    if (type_name[i] == ',' || i == close) {
      if (!item.empty()) choices.push_back(item);
      item.clear();
    } else {
      item += type_name[i];
    }
  }
  return choices;
}

} // namespace llmrepro::cli
