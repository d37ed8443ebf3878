// The command definitions as plain data, and the man page and shell completions rendered from
// them: `llmrepro help-export --format man|bash|zsh` prints one, and the build installs what it
// prints, so that the documentation and completions never drift from the CLI11 app.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class Validator;
} // namespace CLI

namespace llmrepro::cli {

// One option or positional argument of a command, as CLI11 knows it.
struct OptionHelp {
  std::vector<std::string> long_names;  // without the leading "--"
  std::vector<std::string> short_names; // without the leading "-"
  std::string positional_name;          // a positional argument's name, else empty
  std::string description;
  std::string group;         // the help group ("Endpoint", "Plan", ...; cli/option_groups.hpp)
  std::string value_name;    // TEXT, INT, FLOAT... ; empty for a flag
  std::string default_value; // the captured default, or empty
  std::vector<std::string> choices; // the values it takes, where the app names them
  bool repeatable = false;          // takes any number of values
  bool ends_parsing = false;        // --help and --version: nothing else is read after them
};

// One subcommand, or the app itself.
struct CommandHelp {
  std::string name;
  std::string description;
  std::vector<OptionHelp> options; // in the order they were added
  bool has_config = false;         // takes --config FILE (cli/config_file.hpp)
};

// The whole command line: the app's own flags and every visible subcommand.
struct AppHelp {
  CommandHelp top;
  std::vector<CommandHelp> commands;
  std::string version;
};

// What each documented exit code means (docs/audit.md "Exit codes").
struct ExitStatusHelp {
  int code;
  std::string meaning;
};

// Reads the definitions of `app` and its visible subcommands; a hidden subcommand or option
// (empty CLI11 group) is left out, and so is the help export itself.
AppHelp describe_app(const CLI::App& app, const std::string& version);

// One help group of a command and its options, in the order they were added.
struct OptionGroupHelp {
  std::string name;
  std::vector<const OptionHelp*> options;
};

// The help groups of `command` in the order of their first option, as `--help` lists them.
std::vector<OptionGroupHelp> options_by_group(const CommandHelp& command);

// The documented exit codes, in increasing order.
std::vector<ExitStatusHelp> exit_statuses();

// A man page in troff (man(7) macros): NAME, SYNOPSIS, DESCRIPTION, COMMANDS, EXIT STATUS,
// FILES, SEE ALSO.
std::string render_man_page(const AppHelp& help);

// A bash completion script: subcommands, every long option of each, and the values of options
// with fixed choices; files elsewhere.
std::string render_bash_completion(const AppHelp& help);

// The option reference, docs/options.md: every visible command and its options by help group,
// with their values, defaults, choices and the table each group has in a --config file.
std::string render_markdown_reference(const AppHelp& help);

// A zsh completion function (#compdef llmrepro) with the same coverage and option descriptions.
std::string render_zsh_completion(const AppHelp& help);

// A validator that names an option's values for the help, the man page and the completions
// without checking them: the domain parser checks them and names the flag in its error. Its
// description is "{a,b,c}", the form CLI11's IsMember uses, so that both are read alike.
CLI::Validator value_choices(const std::vector<std::string>& choices);

} // namespace llmrepro::cli
