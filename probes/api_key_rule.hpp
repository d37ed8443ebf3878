// Which API key goes to which endpoint. A provider's conventional variable (OPENAI_API_KEY, ...)
// is read by default only for that provider's own host, over https; any other host gets a key
// only from a variable the user names. So a key in the environment never reaches a server it
// was not issued for, nor crosses a network in clear text unasked.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/proxy_rule.hpp"

namespace llmrepro::probes {

// One row of the table: a provider's conventional variable and the host it was issued for.
struct ConventionalKey {
  std::string_view variable;
  std::string_view host;
};

// The table, in the order it is consulted (for a host with two variables the first set one
// wins: GEMINI_API_KEY before GOOGLE_API_KEY).
const std::vector<ConventionalKey>& conventional_keys();

// A URL's host (url_host, probes/endpoint_url.hpp) and whether it is this machine
// (is_loopback_host, probes/proxy_rule.hpp): one reading of a host for the key rule, the proxy
// rule and the dialects alike.

// Whether a key sent to `url` would cross a network in clear text: plain http:// to a host that
// is not loopback.
bool key_in_clear_text(std::string_view url);

// Reads an environment variable; null when unset. std::getenv in the CLI, a map in tests.
using EnvLookup = std::function<const char*(const char*)>;

// The key for `url`. `named` (the variable the user named with `flag`, e.g. "--api-key-env"):
// its value, and a usage error naming `flag` and the variable when it is unset or empty. Not
// named: the first set, non-empty conventional variable of url's host when the URL is https,
// else no key (""). Nothing is read for any other host.
core::Result<std::string> choose_api_key(std::string_view url, const std::string& named,
                                         std::string_view flag, const EnvLookup& env);

} // namespace llmrepro::probes
