// `llmrepro help-export`: reads the CLI11 app back as data (describe_app) and prints the man page
// or a completion script rendered from it (cli/help_formats.cpp), or the option reference
// docs/options.md (cli/help_markdown.cpp). The command is hidden: the
// build runs it, users read what it wrote.
#include "cli/help_export.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/build_info.hpp"
#include "cli/commands.hpp"
#include "cli/option_groups.hpp"
#include "cli/report_outputs.hpp"

namespace llmrepro::cli {

namespace {

constexpr const char* k_help_export_name = "help-export";

// The bare type ("TEXT" of "TEXT:{auto,cuda,cpu}"), which the man page prints beside the flag.
std::string bare_type(const std::string& type_name) {
  return type_name.substr(0, type_name.find(':'));
}

OptionHelp describe_option(const CLI::Option& option, bool ends_parsing) {
  OptionHelp help;
  help.long_names = option.get_lnames();
  help.short_names = option.get_snames();
  if (option.get_positional() && !option.nonpositional()) help.positional_name = option.get_name();
  help.description = option.get_description();
  help.group = option.get_group();
  if (option.get_type_size() != 0) {
    help.value_name = bare_type(option.get_type_name());
    help.default_value = option.get_default_str();
    help.choices = option_choices(option.get_type_name());
    help.repeatable = option.get_expected_max() > 1 || option.get_items_expected_max() > 1;
  }
  help.ends_parsing = ends_parsing;
  return help;
}

CommandHelp describe_command(const CLI::App& command) {
  CommandHelp help;
  help.name = command.get_name();
  help.description = command.get_description();
  const CLI::Option* help_flag = command.get_help_ptr();
  const CLI::Option* version_flag = command.get_version_ptr();
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_group().empty()) continue; // hidden
    help.options.push_back(describe_option(*option, option == help_flag || option == version_flag));
    if (option->check_lname("config")) help.has_config = true;
  }
  return help;
}

struct HelpExportOptions {
  std::string format;
  std::string output;
};

int run_help_export(const CLI::App& app, const HelpExportOptions& options) {
  const AppHelp help = describe_app(app, LLMREPRO_VERSION);
  std::string text;
  if (options.format == "man")
    text = render_man_page(help);
  else if (options.format == "markdown")
    text = render_markdown_reference(help);
  else if (options.format == "bash")
    text = render_bash_completion(help);
  else
    text = render_zsh_completion(help); // CLI11 has checked the format
  if (options.output.empty()) {
    std::fputs(text.c_str(), stdout);
    return k_exit_pass;
  }
  if (auto checked = store::check_output_paths({{"--output", options.output}}, {}); !checked)
    return report_error(checked.error());
  if (auto written = write_file_atomically(options.output, text); !written)
    return report_error(written.error());
  return k_exit_pass;
}

} // namespace

AppHelp describe_app(const CLI::App& app, const std::string& version) {
  AppHelp help;
  help.top = describe_command(app);
  help.top.name = "llmrepro";
  help.version = version;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App* sub) {
         return !sub->get_group().empty() && sub->get_name() != k_help_export_name;
       }))
    help.commands.push_back(describe_command(*command));
  return help;
}

std::vector<ExitStatusHelp> exit_statuses() {
  return {
      {k_exit_pass, "Success: the audit passed its gates (or asked for none), or the command did "
                    "what it was asked."},
      {k_exit_gate_failed, "A gate failed (--fail-on, --max-unique, --min-tara, ...), or the "
                           "gpu-probe's self-test failed."},
      {k_exit_usage, "Usage or input error: a bad flag or value, an unreadable suite or database. "
                     "Nothing was sent."},
      {k_exit_endpoint, "Endpoint or environment error, or an audit that could not be judged."},
      {k_exit_internal, "Internal error."},
      {k_exit_interrupted, "Interrupted (Ctrl-C): the audit is stored as partial and can be "
                           "resumed with --resume."},
  };
}

CLI::Validator value_choices(const std::vector<std::string>& choices) {
  std::string description = "{";
  for (const auto& choice : choices) {
    if (description.size() > 1) description += ',';
    description += choice;
  }
  return CLI::Validator(description + "}");
}

void register_help_export_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<HelpExportOptions>();
  CLI::App* command = app.add_subcommand(
      k_help_export_name, "Print the man page or a shell completion script of llmrepro");
  command->group(""); // hidden: the build runs it
  command->add_option("--format", options->format, "man, bash, zsh or markdown (docs/options.md)")
      ->required()
      ->check(CLI::IsMember({"man", "bash", "zsh", "markdown"}));
  command->add_option("--output", options->output, "Write here instead of to stdout");
  const CLI::App* whole_app = &app;
  command->callback(
      [whole_app, options, &result] { result.exit_code = run_help_export(*whole_app, *options); });
}

} // namespace llmrepro::cli
