// Which proxy a request goes through. libcurl would read http_proxy, https_proxy, ALL_PROXY and
// no_proxy by itself and apply them to any host, loopback included, without a word; the
// transport decides here instead, so that a loopback endpoint (the embedded engine among them)
// is never sent to a proxy and the terminal can name the proxy an endpoint does go through.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "probes/endpoint_url.hpp"

namespace llmrepro::probes {

// True for the hosts that are this machine: "localhost" and names under ".localhost", the
// addresses 127.0.0.0/8 and ::1 (bracketed or not, and ::ffff:127.x.y.z). Case-insensitive;
// a trailing dot is ignored.
bool is_loopback_host(std::string_view host);

struct ProxyChoice {
  std::string proxy;    // the proxy URL as the variable holds it (credentials included)
  std::string variable; // the environment variable it came from ("https_proxy")
};

// The proxy a request to `url` goes through, by libcurl's rules for the environment: for
// http:// the variable http_proxy (lowercase only, as libcurl reads it), for https://
// https_proxy then HTTPS_PROXY, then for either all_proxy then ALL_PROXY; an empty variable is
// unset. None for a loopback host, whatever the variables say, and none for a host no_proxy
// (else NO_PROXY) names: "*" names every host, an entry names its domain and every name under
// it (a leading dot is ignored), an IP address names itself and a CIDR range ("10.0.0.0/8",
// "fd00::/8") its addresses.
std::optional<ProxyChoice> proxy_for(const std::string& url);

// A proxy URL without its user:password@ (scheme, host, port and path kept).
std::string proxy_without_credentials(const std::string& proxy);

// "llmrepro: requests to <url> go through the proxy <proxy> (from $<variable>)", both URLs
// without credentials, when proxy_for(url) names one; nullopt otherwise.
std::optional<std::string> proxy_notice(const std::string& url);

} // namespace llmrepro::probes
