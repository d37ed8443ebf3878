// `--config FILE`: a TOML file holding a subcommand's flags, one key per long flag, so that CI
// need not put every flag on one command line. The file's values go through the flags' own
// CLI11 options (their conversions and validators), and a flag given on the command line wins.
#pragma once

#include <string>

#include "core/result.hpp"

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace llmrepro::cli {

// Adds --config FILE to `command`, its path stored in `path`.
CLI::Option* add_config_option(CLI::App& command, std::string& path);

// Applies the TOML file at `path` to the options of the parsed `command`. Each key is a long
// flag's name without "--" ("_" read as "-"), at the top level or in the table of the flag's
// help group (config_table_name); a value is a boolean for a flag, a string or number for an
// option, an array for a repeatable one. A key whose flag was given on the command line is left
// out. A usage error "FILE:LINE: KEY: ..." for a TOML syntax error, an unknown key or table, a
// key given twice, a value of the wrong type, a value the flag's validator refuses, and a
// literal secret: a credential header (Authorization, x-api-key, api-key, x-goog-api-key,
// Proxy-Authorization) or a URL holding user:password or a secret query parameter (?key=...). An
// empty `path` applies nothing.
core::Result<void> apply_config_file(CLI::App& command, const std::string& path);

// For an error message naming flags that the last config file applied set, " (--runs from
// FILE:LINE, ...)": a value the domain rules refuse after the file was read is still traced to its
// line. Empty when the message names none.
std::string config_origins_in(const std::string& message);

} // namespace llmrepro::cli
