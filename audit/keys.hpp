// The API keys of an audit: which variable each endpoint's key comes from (probes/api_key_rule.hpp
// holds the rule), and every secret of the flags registered with core::run_secrets() before
// anything is printed or sent.
#pragma once

#include <string>

#include "audit/request.hpp"
#include "audit/run.hpp"
#include "core/result.hpp"

namespace llmrepro::audit {

// Registers the values of --header, the credentials of every --endpoint, --compare and
// --embeddings URL, as secrets of the run.
void register_flag_secrets(const AuditRequest& options);

// Chooses one key per entry of run.urls, and the --embeddings key: the --endpoint(s) (on
// --resume without them, the first stored endpoint) take --api-key-env, the --compare
// endpoints (on --resume, the stored endpoints after the first) each their
// --compare-api-key-env in order, --embeddings its --embeddings-api-key-env; where none is
// named, the conventional rule. A named variable that is unset or empty, or more
// --compare-api-key-env than compared endpoints, is a usage error. Every key is registered as
// a secret. Keys are never stored, so --resume chooses them again the same way.
core::Result<void> choose_keys(AuditRun& run);

// One warning line (notified) when `key` would go to `url` in clear text (plain http to a host
// that is not loopback), naming the endpoint without its credentials and never the key.
void warn_if_clear_text(const AuditRequest& request, const std::string& url,
                        const std::string& key);

} // namespace llmrepro::audit
