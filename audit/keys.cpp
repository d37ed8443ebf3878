#include "audit/keys.hpp"

#include <fmt/core.h>

#include <cstdlib>

#include "core/redaction.hpp"
#include "probes/api_key_rule.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/proxy_rule.hpp"

namespace llmrepro::audit {
namespace {

const char* read_environment(const char* name) { return std::getenv(name); }

} // namespace

void register_flag_secrets(const AuditRequest& options) {
  core::Redactor& secrets = core::run_secrets();
  for (const std::string& header : options.headers) secrets.add_header(header);
  for (const std::string& url : options.endpoints) secrets.add_url(url);
  for (const std::string& url : options.compare) secrets.add_url(url);
  if (!options.embeddings.empty()) secrets.add_url(options.embeddings);
  // The restart command may carry a key inline; should its output echo it, it is redacted too.
  if (!options.restart_cmd.empty()) secrets.add_command(options.restart_cmd);
}

core::Result<void> choose_keys(AuditRun& run) {
  const AuditRequest& options = run.request;
  const std::size_t primary = options.endpoints.empty() ? 1 : options.endpoints.size();
  const std::size_t compared = run.urls.size() > primary ? run.urls.size() - primary : 0;
  if (options.compare_api_key_env.size() > compared)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--compare-api-key-env is given {} times for {} compared endpoint{}: give "
                    "one per --compare, in --compare order",
                    options.compare_api_key_env.size(), compared, compared == 1 ? "" : "s"));
  core::Redactor& secrets = core::run_secrets();
  // A proxy's user:password is sent too (Proxy-Authorization), and a proxy may echo it back.
  const auto add_with_proxy = [&](const std::string& url) {
    secrets.add_url(url);
    // libcurl takes a proxy without a scheme ("user:pw@host:3128") as http.
    if (auto proxy = probes::proxy_for(url))
      secrets.add_url(proxy->proxy.find("://") == std::string::npos ? "http://" + proxy->proxy
                                                                    : proxy->proxy);
  };
  for (const std::string& url : run.urls)
    if (!url.empty()) add_with_proxy(url);
  if (!options.embeddings.empty()) add_with_proxy(options.embeddings);
  run.keys.clear();
  for (std::size_t i = 0; i < run.urls.size(); ++i) {
    const std::string& url = run.urls[i];
    // The embedded reference engine takes no key.
    if (url.empty()) {
      run.keys.emplace_back();
      continue;
    }
    const bool is_compared = i >= primary;
    const std::size_t compare_index = i - primary;
    const std::string& named = !is_compared ? options.api_key_env
                               : compare_index < options.compare_api_key_env.size()
                                   ? options.compare_api_key_env[compare_index]
                                   : std::string();
    auto key = probes::choose_api_key(
        url, named, is_compared ? "--compare-api-key-env" : "--api-key-env", read_environment);
    if (!key) return key.error();
    secrets.add_secret(*key);
    run.keys.push_back(std::move(*key));
  }
  run.embeddings_key.clear();
  if (!options.embeddings.empty()) {
    auto key = probes::choose_api_key(options.embeddings, options.embeddings_api_key_env,
                                      "--embeddings-api-key-env", read_environment);
    if (!key) return key.error();
    secrets.add_secret(*key);
    run.embeddings_key = std::move(*key);
  }
  return {};
}

void warn_if_clear_text(const AuditRequest& request, const std::string& url,
                        const std::string& key) {
  if (key.empty() || !probes::key_in_clear_text(url)) return;
  note(request, fmt::format("llmrepro: warning: the API key goes to {} over plain http, readable "
                            "by anyone on the network; use https or a loopback address\n",
                            probes::strip_credentials(url)));
}

} // namespace llmrepro::audit
