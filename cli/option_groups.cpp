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

} // namespace llmrepro::cli
