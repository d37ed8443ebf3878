// The man page and the bash and zsh completions of llmrepro, rendered from the command
// definitions (cli/help_export.hpp). Each renderer escapes for its target: troff's control
// characters, the shells' quotes, zsh's _arguments brackets and colons.
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/help_export.hpp"

namespace llmrepro::cli {

namespace {

std::string joined(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (const auto& item : items) {
    if (!text.empty()) text += separator;
    text += item;
  }
  return text;
}

// The code point of the UTF-8 sequence at text[i], advancing i past it; the help is UTF-8 (τ).
char32_t next_code_point(const std::string& text, std::size_t& i) {
  const auto lead = static_cast<unsigned char>(text[i++]);
  const int extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  char32_t code = extra == 0 ? char32_t{lead} : char32_t{lead} & (char32_t{0x3F} >> extra);
  for (int k = 0; k < extra && i < text.size(); ++k)
    code = (code << 6) | (char32_t{static_cast<unsigned char>(text[i++])} & char32_t{0x3F});
  return code;
}

// Text on a troff line: backslashes and hyphens escaped (a bare "-" may print as a hyphen, not a
// minus, and break copied flags), a leading "." or "'" protected, which would start a request,
// and anything beyond ASCII written as a \[uXXXX] escape, which troff reads without preconv.
std::string troff(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      char escape[16];
      std::snprintf(escape, sizeof escape, "\\[u%04X]",
                    static_cast<unsigned>(next_code_point(text, i)));
      out += escape;
      continue;
    }
    ++i;
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) out.insert(0, "\\&");
  return out;
}

// "-h, --help" or "--api TEXT", in troff, bold names and an italic value.
std::string troff_option_tag(const OptionHelp& option) {
  std::vector<std::string> names;
  for (const auto& name : option.short_names) names.push_back("\\fB" + troff("-" + name) + "\\fR");
  for (const auto& name : option.long_names) names.push_back("\\fB" + troff("--" + name) + "\\fR");
  if (names.empty()) return "\\fI" + troff(option.positional_name) + "\\fR";
  std::string tag = joined(names, ", ");
  if (!option.value_name.empty()) tag += " \\fI" + troff(option.value_name) + "\\fR";
  if (option.repeatable) tag += " ...";
  return tag;
}

std::string troff_option_text(const OptionHelp& option) {
  std::string text = troff(option.description);
  // The help's descriptions are phrases; the additions below are sentences.
  if (!text.empty() && text.back() != '.') text += '.';
  if (!option.choices.empty()) text += " One of: " + troff(joined(option.choices, ", ")) + ".";
  if (!option.default_value.empty()) text += " Default: " + troff(option.default_value) + ".";
  return text;
}

// The options by help group, each group after a line naming it where the command has more than
// one.
void append_options(std::string& page, const CommandHelp& command) {
  const auto groups = options_by_group(command);
  for (const auto& group : groups) {
    if (groups.size() > 1) page += ".PP\n\\fI" + troff(group.name) + "\\fR\n";
    for (const OptionHelp* option : group.options)
      page += ".TP\n" + troff_option_tag(*option) + "\n" + troff_option_text(*option) + "\n";
  }
}

// Every long option as the shell sees it, "--name".
std::vector<std::string> long_flags(const CommandHelp& command) {
  std::vector<std::string> flags;
  for (const auto& option : command.options)
    for (const auto& name : option.long_names) flags.push_back("--" + name);
  return flags;
}

// A single-quoted shell word: ' becomes '\''.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out + "'";
}

// Text inside an _arguments spec: brackets and colons delimit its fields.
std::string zsh_spec_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

// One _arguments spec for an option: '--api[description]:TEXT:(auto openai-chat ...)'.
std::vector<std::string> zsh_option_specs(const OptionHelp& option) {
  std::vector<std::string> specs;
  const std::string description = "[" + zsh_spec_text(option.description) + "]";
  std::string value;
  if (!option.value_name.empty()) {
    const std::string message = zsh_spec_text(option.value_name);
    // Fixed choices complete as words, text as a file name (most are paths); numbers not at all.
    const std::string action = !option.choices.empty() ? "(" + joined(option.choices, " ") + ")"
                               : option.value_name == "TEXT" ? "_files"
                                                             : " ";
    value = ":" + message + ":" + action;
  }
  if (!option.positional_name.empty()) {
    const std::string position = option.repeatable ? "*" : "";
    specs.push_back(position + ":" + zsh_spec_text(option.positional_name) + " -- " +
                    zsh_spec_text(option.description) + ":_files");
    return specs;
  }
  // --help and --version end the command line; a repeatable option may be given again.
  const std::string prefix = option.ends_parsing ? "(- *)" : option.repeatable ? "*" : "";
  for (const auto& name : option.short_names)
    specs.push_back(prefix + "-" + name + description + value);
  for (const auto& name : option.long_names)
    specs.push_back(prefix + "--" + name + description + value);
  return specs;
}

} // namespace

std::vector<OptionGroupHelp> options_by_group(const CommandHelp& command) {
  std::vector<OptionGroupHelp> groups;
  for (const auto& option : command.options) {
    auto group = groups.begin();
    while (group != groups.end() && group->name != option.group) ++group;
    if (group == groups.end()) group = groups.insert(groups.end(), {option.group, {}});
    group->options.push_back(&option);
  }
  return groups;
}

std::string render_man_page(const AppHelp& help) {
  std::string page;
  page += ".\\\" Generated by `llmrepro help-export --format man` from the command definitions.\n";
  page += ".TH LLMREPRO 1 \"\" \"llmrepro " + troff(help.version) + "\" \"User Commands\"\n";
  page += ".SH NAME\nllmrepro \\- " +
          troff(help.top.description.substr(help.top.description.find(": ") == std::string::npos
                                                ? 0
                                                : help.top.description.find(": ") + 2)) +
          "\n";
  page += ".SH SYNOPSIS\n";
  for (const auto& command : help.commands) {
    page += ".B llmrepro " + troff(command.name) + "\n[\\fIoptions\\fR]";
    for (const auto& option : command.options)
      if (!option.positional_name.empty())
        page +=
            " \\fI" + troff(option.positional_name) + "\\fR" + (option.repeatable ? " ..." : "");
    page += "\n.br\n";
  }
  page += ".B llmrepro \\-\\-version\n";
  page += ".SH DESCRIPTION\n";
  page += "\\fBllmrepro\\fR audits how reproducible an LLM inference endpoint is at temperature 0. "
          "It sends each prompt of a suite several times at several concurrency levels, records "
          "every token with its top logprobs, counts the distinct completions, finds where they "
          "diverge, flags the prompts whose top two tokens are nearly tied, and gates on the "
          "result.\n";
  page += ".PP\nOptions of the program itself:\n";
  append_options(page, help.top);
  page += ".SH COMMANDS\n";
  for (const auto& command : help.commands) {
    page += ".SS \"llmrepro " + troff(command.name) + "\"\n" + troff(command.description) + "\n";
    append_options(page, command);
  }
  page += ".SH EXIT STATUS\n";
  for (const auto& status : exit_statuses())
    page += ".TP\n.B " + std::to_string(status.code) + "\n" + troff(status.meaning) + "\n";
  page += ".SH FILES\n.TP\n.I share/llmrepro/schemas/*.json\n"
          "The JSON Schemas of the reports and results llmrepro writes, under the installation "
          "prefix (/usr for the Debian package).\n";
  page += ".TP\n.I llmrepro\\-gpu\\-cuda\n"
          "The CUDA helper of \\fBgpu\\-probe\\fR, where it was built: looked for beside the "
          "llmrepro executable.\n";
  page += ".SH SEE ALSO\nThe README and the manual under docs/ of the llmrepro sources: "
          "docs/verdict.md for the verdict and the gates, docs/design.md for every figure of the "
          "reports.\n";
  return page;
}

std::string render_bash_completion(const AppHelp& help) {
  std::vector<std::string> command_names;
  for (const auto& command : help.commands) command_names.push_back(command.name);
  std::string script;
  script += "# bash completion for llmrepro.\n"
            "# Generated by `llmrepro help-export --format bash` from the command definitions.\n";
  script += "_llmrepro() {\n";
  script += "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n";
  script += "  local command='' i\n";
  script += "  for ((i = 1; i < COMP_CWORD; i++)); do\n";
  script += "    case ${COMP_WORDS[i]} in\n";
  script += "      " + joined(command_names, "|") + ") command=${COMP_WORDS[i]}; break ;;\n";
  script += "    esac\n  done\n";
  script += "  COMPREPLY=()\n";
  script += "  case $command in\n";
  script += "    '') COMPREPLY=($(compgen -W " +
            shell_quoted(joined(command_names, " ") + " " + joined(long_flags(help.top), " ")) +
            " -- \"$cur\")) ;;\n";
  for (const auto& command : help.commands) {
    script += "    " + command.name + ")\n";
    script += "      case $prev in\n";
    // Fixed choices complete as words; any other value is left to readline (files).
    std::vector<std::string> free_values;
    for (const auto& option : command.options) {
      if (option.value_name.empty() || option.long_names.empty()) continue;
      std::vector<std::string> names;
      for (const auto& name : option.long_names) names.push_back("--" + name);
      if (option.choices.empty()) {
        free_values.insert(free_values.end(), names.begin(), names.end());
        continue;
      }
      script += "        " + joined(names, "|") + ") COMPREPLY=($(compgen -W " +
                shell_quoted(joined(option.choices, " ")) + " -- \"$cur\")); return ;;\n";
    }
    if (!free_values.empty()) script += "        " + joined(free_values, "|") + ") return ;;\n";
    script += "      esac\n";
    script += "      [[ $cur == -* ]] && COMPREPLY=($(compgen -W " +
              shell_quoted(joined(long_flags(command), " ")) + " -- \"$cur\")) ;;\n";
  }
  script += "  esac\n}\n";
  script += "complete -o default -F _llmrepro llmrepro\n";
  return script;
}

std::string render_zsh_completion(const AppHelp& help) {
  std::string script;
  script += "#compdef llmrepro\n"
            "# Generated by `llmrepro help-export --format zsh` from the command definitions.\n";
  script += "_llmrepro() {\n  local context state state_descr line\n  typeset -A opt_args\n";
  script += "  local -a commands\n  commands=(\n";
  for (const auto& command : help.commands)
    script += "    " + shell_quoted(command.name + ":" + command.description) + "\n";
  script += "  )\n  _arguments -C \\\n";
  for (const auto& option : help.top.options)
    for (const auto& spec : zsh_option_specs(option))
      script += "    " + shell_quoted(spec) + " \\\n";
  script += "    '1: :->command' \\\n    '*:: :->argument' && return\n";
  script += "  case $state in\n";
  script += "    command) _describe -t commands 'llmrepro command' commands ;;\n";
  script += "    argument)\n      case $words[1] in\n";
  for (const auto& command : help.commands) {
    script += "        " + command.name + ")\n          _arguments \\\n";
    for (const auto& option : command.options)
      for (const auto& spec : zsh_option_specs(option))
        script += "            " + shell_quoted(spec) + " \\\n";
    script += "            && return ;;\n";
  }
  script += "      esac ;;\n  esac\n}\n";
  script += "_llmrepro \"$@\"\n";
  return script;
}

} // namespace llmrepro::cli
