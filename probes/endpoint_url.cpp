#include "probes/endpoint_url.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <string_view>

#include "core/redaction.hpp"
#include "core/text_utf8.hpp"

namespace llmrepro::probes {
namespace {

// Where the parts of an absolute URL start: scheme "://" authority path ["?" query] ["#" frag].
struct UrlParts {
  std::size_t authority_begin = std::string::npos; // after "://"
  std::size_t authority_end = 0;                   // first '/', '?' or '#' after it, or size
  std::size_t query_begin = std::string::npos;     // index of '?'
  std::size_t fragment_begin = std::string::npos;  // index of '#'
};

UrlParts split(const std::string& url) {
  UrlParts parts;
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return parts;
  parts.authority_begin = scheme_end + 3;
  parts.authority_end = url.find_first_of("/?#", parts.authority_begin);
  if (parts.authority_end == std::string::npos) parts.authority_end = url.size();
  parts.fragment_begin = url.find('#', parts.authority_end);
  const std::size_t query = url.find('?', parts.authority_end);
  if (query != std::string::npos &&
      (parts.fragment_begin == std::string::npos || query < parts.fragment_begin))
    parts.query_begin = query;
  return parts;
}

std::string strip_query(std::string_view query) {
  std::string kept;
  std::size_t begin = 0;
  while (begin <= query.size()) {
    std::size_t end = query.find('&', begin);
    if (end == std::string_view::npos) end = query.size();
    const std::string_view parameter = query.substr(begin, end - begin);
    const std::string_view name = parameter.substr(0, parameter.find('='));
    if (!parameter.empty() && !core::is_secret_parameter_name(name)) {
      if (!kept.empty()) kept += '&';
      kept += parameter;
    }
    begin = end + 1;
  }
  return kept;
}

// Whether one segment of a base URL's path names version 1 of an API: "v1", "v1beta",
// "v1alpha" or "v1beta1". Such a base is where the provider's OpenAI-compatible routes live
// (https://api.openai.com/v1, https://api.deepinfra.com/v1/openai,
// https://generativelanguage.googleapis.com/v1beta/openai), so "/v1/models" maps to
// "<base>/models". "v10" or "v2" name something else and are left alone.
bool names_api_version_1(std::string_view path) {
  std::size_t begin = 0;
  while (begin < path.size()) {
    std::size_t end = path.find('/', begin);
    if (end == std::string_view::npos) end = path.size();
    std::string_view segment = path.substr(begin, end - begin);
    if (segment.rfind("v1", 0) == 0) {
      segment.remove_prefix(2);
      for (std::string_view stage : {"alpha", "beta"})
        if (segment.rfind(stage, 0) == 0) {
          segment.remove_prefix(stage.size());
          while (!segment.empty() && std::isdigit(static_cast<unsigned char>(segment[0])) != 0)
            segment.remove_prefix(1);
          break;
        }
      if (segment.empty()) return true;
    }
    begin = end + 1;
  }
  return false;
}

} // namespace

std::string strip_credentials(const std::string& url) {
  const UrlParts parts = split(url);
  if (parts.authority_begin == std::string::npos) return url;
  std::string authority =
      url.substr(parts.authority_begin, parts.authority_end - parts.authority_begin);
  const std::size_t at = authority.rfind('@');
  if (at != std::string::npos) authority.erase(0, at + 1);

  std::string out = url.substr(0, parts.authority_begin) + authority;
  const std::size_t path_end = parts.query_begin != std::string::npos      ? parts.query_begin
                               : parts.fragment_begin != std::string::npos ? parts.fragment_begin
                                                                           : url.size();
  out += url.substr(parts.authority_end, path_end - parts.authority_end);
  if (parts.query_begin != std::string::npos) {
    const std::size_t query_end =
        parts.fragment_begin != std::string::npos ? parts.fragment_begin : url.size();
    const std::string kept = strip_query(
        std::string_view(url).substr(parts.query_begin + 1, query_end - parts.query_begin - 1));
    if (!kept.empty()) out += "?" + kept;
  }
  if (parts.fragment_begin != std::string::npos) out += url.substr(parts.fragment_begin);
  return out;
}

core::Result<std::string> validate_base_url(const std::string& url) {
  const auto fail = [&](const std::string& why) {
    return core::make_error(core::ErrorCode::usage,
                            "endpoint '" + strip_credentials(url) + "': " + why);
  };
  if (url.empty()) return fail("empty URL (expected http://host:port or https://host)");
  for (char c : url)
    if (std::isspace(static_cast<unsigned char>(c)) != 0 ||
        std::iscntrl(static_cast<unsigned char>(c)) != 0)
      return fail("contains whitespace or control characters");
  const std::string lowered = core::ascii_lowercase(url);
  if (lowered.rfind("http://", 0) != 0 && lowered.rfind("https://", 0) != 0)
    return fail("only http:// and https:// URLs are supported");
  const UrlParts parts = split(url);
  std::string authority =
      url.substr(parts.authority_begin, parts.authority_end - parts.authority_begin);
  const std::size_t at = authority.rfind('@');
  if (at != std::string::npos) authority.erase(0, at + 1);
  if (authority.empty() || authority[0] == ':') return fail("no host name");
  if (parts.fragment_begin != std::string::npos) return fail("a fragment ('#...') is not allowed");

  // Trailing slashes of the path go, so that join_url never produces "//v1/...".
  const std::size_t path_end =
      parts.query_begin != std::string::npos ? parts.query_begin : url.size();
  std::size_t trimmed_end = path_end;
  while (trimmed_end > parts.authority_end && url[trimmed_end - 1] == '/') --trimmed_end;
  return url.substr(0, trimmed_end) + url.substr(path_end);
}

std::string join_url(const std::string& base_url, const std::string& path) {
  const UrlParts parts = split(base_url);
  std::size_t path_end = base_url.size();
  if (parts.authority_begin != std::string::npos) {
    if (parts.query_begin != std::string::npos)
      path_end = parts.query_begin;
    else if (parts.fragment_begin != std::string::npos)
      path_end = parts.fragment_begin;
  }
  std::string prefix = base_url.substr(0, path_end);
  while (!prefix.empty() && prefix.back() == '/' &&
         (parts.authority_begin == std::string::npos || prefix.size() > parts.authority_end))
    prefix.pop_back();
  std::string tail = path;
  std::string tail_query;
  if (const std::size_t question = tail.find('?'); question != std::string::npos) {
    tail_query = tail.substr(question + 1);
    tail.erase(question);
  }
  const std::size_t path_begin =
      parts.authority_begin != std::string::npos ? std::min(parts.authority_end, prefix.size()) : 0;
  // "/v1beta/..." is Gemini's: a Vertex AI or AI Studio base already names its own version.
  const std::size_t version_length = tail == "/v1" || tail.rfind("/v1/", 0) == 0 ? 3
                                     : tail.rfind("/v1beta/", 0) == 0            ? 7
                                                                                 : 0;
  if (version_length > 0 && names_api_version_1(std::string_view(prefix).substr(path_begin)))
    tail.erase(0, version_length);
  std::string query = base_url.substr(path_end);
  if (!tail_query.empty()) {
    // The path's own parameters (Gemini's "alt=sse") come before the base URL's.
    if (query.empty() || query[0] != '?')
      query = "?" + tail_query + query;
    else
      query = "?" + tail_query + "&" + query.substr(1);
  }
  return prefix + tail + query;
}

std::string url_host(std::string_view url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return "";
  url.remove_prefix(scheme + 3);
  url = url.substr(0, url.find_first_of("/?#"));
  if (auto at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  if (!url.empty() && url.front() == '[') {
    const std::size_t close = url.find(']');
    if (close == std::string_view::npos) return "";
    return core::ascii_lowercase(url.substr(1, close - 1));
  }
  std::string host = core::ascii_lowercase(url.substr(0, url.find(':')));
  if (!host.empty() && host.back() == '.') host.pop_back();
  return host;
}

} // namespace llmrepro::probes
