// Endpoint URLs: validating what the user passed, joining API paths onto it, and removing the
// credentials a URL may carry before it is stored in a database or printed in a report.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace llmrepro::probes {

// Checks that `url` is an absolute http:// or https:// URL with a host and no fragment, and
// returns it with trailing slashes of the path removed (so API paths can be appended).
// Any other scheme, a missing host, whitespace or a fragment is an ErrorCode::usage error
// that quotes the URL without its credentials.
core::Result<std::string> validate_base_url(const std::string& url);

// Returns `url` without user:password@ and without query parameters whose name looks like a
// secret (core::is_secret_parameter_name: key, token, api_key, sig, and any name containing "key",
// "token", "secret", "password", "signature" or "auth", compared case-insensitively).
// Everything else, including the order of the remaining parameters, is kept.
std::string strip_credentials(const std::string& url);

// Appends an API `path` ("/v1/models") to a base URL, before any query string. The URL a
// user copies from a provider's documentation is the base whatever its path: where a segment
// of that path names API version 1 ("v1", "v1beta", "v1alpha", "v1beta1", as in
// https://api.openai.com/v1, https://api.deepinfra.com/v1/openai or
// https://generativelanguage.googleapis.com/v1beta/openai), the OpenAI paths lose their own
// "/v1" ("<base>/chat/completions"), and Gemini's paths their "/v1beta" (a Vertex AI base
// ".../v1/projects/P/locations/L/publishers/google" gets "/models/M:generateContent"). Other
// paths ("/health", "/completion") and other bases are appended as they are. A query in
// `path` ("?alt=sse") comes before the base URL's own parameters, joined with "&".
std::string join_url(const std::string& base_url, const std::string& path);

// The lowercased host of an absolute URL, without user:password@, port or the brackets of an
// IPv6 literal, and without a trailing dot ("api.openai.com." is "api.openai.com"); "" when
// the URL has no scheme or its IPv6 literal is not closed.
std::string url_host(std::string_view url);

} // namespace llmrepro::probes
