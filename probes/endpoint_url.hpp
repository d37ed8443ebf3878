// Endpoint URLs: validating what the user passed, joining API paths onto it, and removing the
// credentials a URL may carry before it is stored in a database or printed in a report.
#pragma once

#include <string>

#include "core/result.hpp"

namespace llmrepro::probes {

// Checks that `url` is an absolute http:// or https:// URL with a host and no fragment, and
// returns it with trailing slashes of the path removed (so API paths can be appended).
// Any other scheme, a missing host, whitespace or a fragment is an ErrorCode::usage error
// that quotes the URL without its credentials.
core::Result<std::string> validate_base_url(const std::string& url);

// Returns `url` without user:password@ and without query parameters whose name looks like a
// secret (key, token, api_key, api-key, access_token, sig, and any name containing "key",
// "token", "secret", "password", "signature" or "auth", compared case-insensitively).
// Everything else, including the order of the remaining parameters, is kept.
std::string strip_credentials(const std::string& url);

// Appends an API `path` ("/v1/models") to a base URL, before any query string. A base that
// already ends in "/v1" (as OpenAI's documented base URL does) does not get a second "/v1".
std::string join_url(const std::string& base_url, const std::string& path);

} // namespace llmrepro::probes
