// The config file reader: TOML (toml++) mapped onto the subcommand's CLI11 options. Values are
// handed to the options as the strings a command line would give, so that one conversion and one
// set of validators read both. Checked here, where the file's line is known: the key, the TOML
// type, the named choices, and that no literal secret is in the file.
#include "cli/config_file.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cli/option_groups.hpp"
#include "core/redaction.hpp"

namespace llmrepro::cli {

namespace {

// One key of the file, where it was written.
struct ConfigEntry {
  std::string key;    // as written, "plan.runs" inside a table
  std::string name;   // the flag's name, "_" read as "-"
  std::uint32_t line; // of the key
  const toml::node* value;
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

core::Error error_at(const std::string& path, std::uint32_t line, const std::string& key,
                     const std::string& message) {
  return core::Error{core::ErrorCode::usage,
                     fmt::format("{}:{}: {}: {}", path, line, key, message)};
}

// Whether a header line "Name: value" carries a credential by its name.
bool is_credential_header(std::string_view line) {
  static const std::set<std::string> names{"authorization", "proxy-authorization", "x-api-key",
                                           "api-key", "x-goog-api-key"};
  const auto colon = line.find(':');
  return colon != std::string_view::npos && names.count(lower(trimmed(line.substr(0, colon)))) > 0;
}

// Whether `text` is a URL holding a credential: user information in its authority
// ("https://user:pw@host"), or a query parameter that redaction takes for a secret ("?key=...").
bool is_url_with_credentials(std::string_view text) {
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string_view::npos) return false;
  const auto authority = text.substr(scheme_end + 3);
  if (authority.substr(0, authority.find_first_of("/?#")).find('@') != std::string_view::npos)
    return true;
  const auto query_start = text.find('?');
  if (query_start == std::string_view::npos) return false;
  auto query = text.substr(query_start + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const auto parameter = query.substr(0, query.find('&'));
    const auto equals = parameter.find('=');
    if (equals != std::string_view::npos && equals + 1 < parameter.size() &&
        core::is_secret_parameter_name(parameter.substr(0, equals)))
      return true;
    query = parameter.size() < query.size() ? query.substr(parameter.size() + 1) : "";
  }
  return false;
}

// The value's strings as the command line would give them, or an error naming the expected type.
// `type` is the option's CLI11 type name without its validators ("INT", "FLOAT", "TEXT", ...).
core::Result<std::string> scalar_text(const toml::node& value, const std::string& type) {
  if (type == "INT" || type == "UINT") {
    if (const auto number = value.value_exact<std::int64_t>()) return std::to_string(*number);
    return core::make_error(core::ErrorCode::usage, "expected an integer");
  }
  if (type == "FLOAT") {
    if (const auto number = value.value_exact<std::int64_t>()) return std::to_string(*number);
    if (const auto number = value.value_exact<double>()) return fmt::format("{}", *number);
    return core::make_error(core::ErrorCode::usage, "expected a number");
  }
  if (const auto text = value.value_exact<std::string>()) return *text;
  return core::make_error(core::ErrorCode::usage, "expected a string");
}

// The strings an option receives from `entry`, its type checked; flags take a boolean.
core::Result<std::vector<std::string>> option_values(const CLI::Option& option,
                                                     const ConfigEntry& entry) {
  const toml::node& value = *entry.value;
  if (option.get_items_expected_max() == 0) { // a flag
    if (const auto flag = value.value_exact<bool>())
      return std::vector<std::string>{*flag ? "true" : "false"};
    return core::make_error(core::ErrorCode::usage, "expected true or false");
  }
  const std::string type = option.get_type_name().substr(0, option.get_type_name().find(':'));
  const bool repeatable = option.get_expected_max() > 1 || option.get_items_expected_max() > 1;
  std::vector<std::string> texts;
  if (const toml::array* items = value.as_array()) {
    if (!repeatable)
      return core::make_error(core::ErrorCode::usage, "takes one value, not an array");
    for (const toml::node& item : *items) {
      auto text = scalar_text(item, type);
      if (!text)
        return core::make_error(
            core::ErrorCode::usage,
            fmt::format("{} in every element of the array", text.error().message));
      texts.push_back(std::move(*text));
    }
    if (texts.empty()) return core::make_error(core::ErrorCode::usage, "the array is empty");
    return texts;
  }
  auto text = scalar_text(value, type);
  if (!text) return text.error();
  texts.push_back(std::move(*text));
  return texts;
}

// Each comma-separated part of each value is one of the option's named values. The domain
// parsers check them again later, but only here is the file's line known.
core::Result<void> check_choices(const CLI::Option& option, const std::vector<std::string>& texts) {
  const auto choices = option_choices(option.get_type_name());
  if (choices.empty()) return {};
  for (const auto& text : texts) {
    std::size_t start = 0;
    while (start <= text.size()) {
      const auto end = std::min(text.find(',', start), text.size());
      const std::string part = trimmed(std::string_view(text).substr(start, end - start));
      if (std::find(choices.begin(), choices.end(), part) == choices.end())
        return core::make_error(core::ErrorCode::usage, fmt::format("'{}' is not one of {}", part,
                                                                    fmt::join(choices, ", ")));
      start = end + 1;
    }
  }
  return {};
}

// Where each flag the file set was written, "FILE:LINE" by flag name, for config_origins_in.
std::vector<std::pair<std::string, std::string>>& applied_origins() {
  static std::vector<std::pair<std::string, std::string>> origins;
  return origins;
}

// A literal secret in a value: refused, so that keys stay in the environment, never in a file
// that is checked in or printed by CI.
core::Result<void> check_no_secret(const ConfigEntry& entry,
                                   const std::vector<std::string>& texts) {
  for (const auto& text : texts) {
    if (entry.name == "header" && is_credential_header(text))
      return core::make_error(core::ErrorCode::usage,
                              "holds a credential header; a config file may not hold a secret: "
                              "put the key in an environment variable and name it with "
                              "api-key-env (--api-key-env)");
    if (is_url_with_credentials(text))
      return core::make_error(core::ErrorCode::usage,
                              "holds a URL with credentials; a config file may not hold a "
                              "secret: put the key in an environment variable and name it with "
                              "api-key-env (--api-key-env)");
  }
  return {};
}

// The entries of the file: its top-level keys and those of its group tables.
core::Result<std::vector<ConfigEntry>>
config_entries(const CLI::App& command, const toml::table& root, const std::string& path) {
  std::set<std::string> tables;
  for (const auto& group : command.get_groups())
    if (!group.empty()) tables.insert(config_table_name(group));
  std::vector<ConfigEntry> entries;
  const auto add = [&entries](std::string key, const toml::key& written, const toml::node& value) {
    std::string name(written.str());
    std::replace(name.begin(), name.end(), '_', '-');
    entries.push_back({std::move(key), std::move(name), written.source().begin.line, &value});
  };
  for (const auto& [key, value] : root) {
    const toml::table* table = value.as_table();
    if (table == nullptr) {
      add(std::string(key.str()), key, value);
      continue;
    }
    std::string table_name(key.str());
    std::replace(table_name.begin(), table_name.end(), '_', '-');
    if (tables.count(table_name) == 0)
      return error_at(
          path, key.source().begin.line, std::string(key.str()),
          "unknown table (the tables are the help's groups, " +
              fmt::format("in lower case with - for spaces: {})", fmt::join(tables, ", ")));
    for (const auto& [inner, inner_value] : *table)
      add(fmt::format("{}.{}", key.str(), inner.str()), inner, inner_value);
  }
  // A table's keys come back sorted by name; errors are met in the order of the file.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const ConfigEntry& a, const ConfigEntry& b) { return a.line < b.line; });
  return entries;
}

} // namespace

CLI::Option* add_config_option(CLI::App& command, std::string& path) {
  return command.add_option("--config", path,
                            "TOML file of flags, one key per long flag (docs/options.md); flags "
                            "given on the command line win");
}

core::Result<void> apply_config_file(CLI::App& command, const std::string& path) {
  applied_origins().clear(); // they name the lines of this file only
  if (path.empty()) return {};
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    // A file that cannot be read has no line to name.
    const auto line = error.source().begin.line;
    return core::make_error(core::ErrorCode::usage,
                            line == 0 ? fmt::format("{}: {}", path, error.description())
                                      : fmt::format("{}:{}: {}", path, line, error.description()));
  }
  std::vector<ConfigEntry> entries;
  LLMREPRO_TRY_ASSIGN(entries, config_entries(command, root, path));
  std::set<std::string> seen;
  for (const ConfigEntry& entry : entries) {
    CLI::Option* option = command.get_option_no_throw("--" + entry.name);
    if (option == nullptr || entry.name == "help" || entry.name == "config" ||
        option->get_group().empty())
      return error_at(path, entry.line, entry.key,
                      fmt::format("unknown key (no flag --{} in `llmrepro {}`)", entry.name,
                                  command.get_name()));
    if (!seen.insert(entry.name).second)
      return error_at(path, entry.line, entry.key, "given twice");
    if (const auto dot = entry.key.find('.'); dot != std::string::npos) {
      const std::string table = config_table_name(option->get_group());
      std::string written = entry.key.substr(0, dot);
      std::replace(written.begin(), written.end(), '_', '-');
      if (written != table)
        return error_at(path, entry.line, entry.key,
                        fmt::format("--{} belongs in [{}] or at the top level", entry.name, table));
    }
    auto texts = option_values(*option, entry);
    if (!texts) return error_at(path, entry.line, entry.key, texts.error().message);
    if (auto clean = check_no_secret(entry, *texts); !clean)
      return error_at(path, entry.line, entry.key, clean.error().message);
    if (auto valid = check_choices(*option, *texts); !valid)
      return error_at(path, entry.line, entry.key, valid.error().message);
    if (option->count() > 0) continue; // the command line wins
    applied_origins().emplace_back(entry.name, fmt::format("{}:{}", path, entry.line));
    try {
      option->add_result(*texts);
      option->run_callback();
    } catch (const CLI::Error& error) {
      return error_at(path, entry.line, entry.key, error.what());
    }
  }
  return {};
}

std::string config_origins_in(const std::string& message) {
  std::string origins;
  for (const auto& [name, origin] : applied_origins()) {
    const std::string flag = "--" + name;
    // "--max-tokens" must not be read in "--max-tokens-total".
    for (auto at = message.find(flag); at != std::string::npos; at = message.find(flag, at + 1)) {
      const auto after = at + flag.size();
      if (after < message.size() &&
          (std::isalnum(static_cast<unsigned char>(message[after])) || message[after] == '-'))
        continue;
      origins += fmt::format("{}{} from {}", origins.empty() ? " (" : ", ", flag, origin);
      break;
    }
  }
  return origins.empty() ? origins : origins + ")";
}

} // namespace llmrepro::cli
