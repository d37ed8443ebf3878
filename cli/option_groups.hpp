// The help groups of the subcommands' flags. `--help`, the man page, docs/options.md and the
// tables of a config file (cli/config_file.hpp) all take their names from here.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace llmrepro::cli {

inline constexpr const char* k_group_endpoint = "Endpoint";
inline constexpr const char* k_group_plan = "Plan";
inline constexpr const char* k_group_probes = "Probes";
inline constexpr const char* k_group_judging = "Judging and gates";
inline constexpr const char* k_group_budgets = "Budgets";
inline constexpr const char* k_group_outputs = "Outputs";
inline constexpr const char* k_group_engine = "Engine";

// The name of a group's table in a config file: the group's name in lower case, its spaces as
// "-" ("Judging and gates" is [judging-and-gates]).
std::string config_table_name(const std::string& group);

// The values inside the first "{a,b,c}" of a CLI11 type name such as "TEXT:{auto,cuda,cpu}"
// (what IsMember and value_choices describe); empty when it names none. --help's export and the
// config file's checks both read an option's choices this way.
std::vector<std::string> option_choices(const std::string& type_name);

// While it lives, every option added to `command` is in `group`; the group options were added to
// before it comes back when it ends.
class OptionGroupScope {
public:
  OptionGroupScope(CLI::App& command, const char* group);
  ~OptionGroupScope();
  OptionGroupScope(const OptionGroupScope&) = delete;
  OptionGroupScope& operator=(const OptionGroupScope&) = delete;

private:
  CLI::App& m_command;
  std::string m_previous;
};

} // namespace llmrepro::cli
