#include "probes/proxy_rule.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/text_utf8.hpp"
#include "probes/endpoint_url.hpp"

namespace llmrepro::probes {

namespace {

// The variable's value, or "" when it is unset or empty.
std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// An IP address as 16 bytes (IPv4 as its IPv6-mapped form) and whether it parsed.
struct Address {
  std::array<unsigned char, 16> bytes{};
  bool v4 = false;
};

std::optional<Address> parse_address(const std::string& text) {
  Address address;
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    address.v4 = true;
    address.bytes[10] = 0xFF;
    address.bytes[11] = 0xFF;
    std::memcpy(address.bytes.data() + 12, &v4, 4);
    return address;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(address.bytes.data(), &v6, 16);
    return address;
  }
  return std::nullopt;
}

bool same_prefix(const Address& a, const Address& b, int bits) {
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    const int keep = std::min(bits, 8);
    const auto mask = static_cast<unsigned char>(0xFF << (8 - keep));
    if ((a.bytes[static_cast<std::size_t>(i)] & mask) !=
        (b.bytes[static_cast<std::size_t>(i)] & mask))
      return false;
  }
  return true;
}

// Whether one no_proxy entry names `host` (lowercased, brackets removed).
bool entry_names(std::string entry, const std::string& host) {
  if (entry.size() > 1 && entry.front() == '[') {
    entry.erase(0, 1);
    if (auto close = entry.find(']'); close != std::string::npos) entry.erase(close, 1);
  }
  if (auto host_address = parse_address(host)) {
    std::string network = entry;
    int bits = -1;
    if (auto slash = entry.find('/'); slash != std::string::npos) {
      network = entry.substr(0, slash);
      char* end = nullptr;
      bits = static_cast<int>(std::strtol(entry.c_str() + slash + 1, &end, 10));
      if (end == entry.c_str() + slash + 1 || *end != '\0') return false;
    }
    auto network_address = parse_address(network);
    if (!network_address || network_address->v4 != host_address->v4) return false;
    const int width = host_address->v4 ? 32 : 128;
    if (bits < 0 || bits > width) bits = width;
    return same_prefix(*host_address, *network_address, (host_address->v4 ? 96 : 0) + bits);
  }
  if (!entry.empty() && entry.front() == '.') entry.erase(0, 1);
  if (!entry.empty() && entry.back() == '.') entry.pop_back();
  if (entry.empty()) return false;
  if (host == entry) return true;
  return host.size() > entry.size() &&
         host.compare(host.size() - entry.size(), entry.size(), entry) == 0 &&
         host[host.size() - entry.size() - 1] == '.';
}

bool no_proxy_names(const std::string& list, const std::string& host) {
  std::size_t at = 0;
  while (at <= list.size()) {
    std::size_t end = list.find_first_of(", \t", at);
    if (end == std::string::npos) end = list.size();
    const std::string entry = core::ascii_lowercase(std::string_view(list).substr(at, end - at));
    if (entry == "*") return true;
    if (!entry.empty() && entry_names(entry, host)) return true;
    at = end + 1;
  }
  return false;
}

} // namespace

std::string proxy_without_credentials(const std::string& proxy) {
  const std::size_t scheme = proxy.find("://");
  const std::size_t begin = scheme == std::string::npos ? 0 : scheme + 3;
  const std::size_t end = std::min(proxy.find_first_of("/?#", begin), proxy.size());
  const std::size_t at = proxy.rfind('@', end == 0 ? 0 : end - 1);
  if (at == std::string::npos || at < begin) return proxy;
  return proxy.substr(0, begin) + proxy.substr(at + 1);
}

bool is_loopback_host(std::string_view host_text) {
  std::string host = core::ascii_lowercase(host_text);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (!host.empty() && host.back() == '.') host.pop_back();
  if (host == "localhost") return true;
  constexpr std::string_view k_suffix = ".localhost";
  if (host.size() > k_suffix.size() &&
      host.compare(host.size() - k_suffix.size(), k_suffix.size(), k_suffix) == 0)
    return true;
  auto address = parse_address(host);
  if (!address) return false;
  static const Address k_v4_loopback = *parse_address("127.0.0.0");
  static const Address k_v6_loopback = *parse_address("::1");
  if (same_prefix(*address, k_v4_loopback, 96 + 8)) return true;
  return address->bytes == k_v6_loopback.bytes;
}

std::optional<ProxyChoice> proxy_for(const std::string& url) {
  const std::string scheme =
      core::ascii_lowercase(std::string_view(url).substr(0, url.find("://")));
  const std::string host = url_host(url);
  if (host.empty() || is_loopback_host(host)) return std::nullopt;
  std::string no_proxy = env("no_proxy");
  if (no_proxy.empty()) no_proxy = env("NO_PROXY");
  if (no_proxy_names(no_proxy, host)) return std::nullopt;
  // libcurl reads the http variable in lowercase only (an uppercase HTTP_PROXY can be set by a
  // CGI request header), the others in either case.
  std::vector<const char*> names;
  if (scheme == "http") names = {"http_proxy"};
  if (scheme == "https") names = {"https_proxy", "HTTPS_PROXY"};
  names.push_back("all_proxy");
  names.push_back("ALL_PROXY");
  for (const char* name : names)
    if (std::string value = env(name); !value.empty()) return ProxyChoice{value, name};
  return std::nullopt;
}

std::optional<std::string> proxy_notice(const std::string& url) {
  auto choice = proxy_for(url);
  if (!choice) return std::nullopt;
  return "llmrepro: requests to " + strip_credentials(url) + " go through the proxy " +
         proxy_without_credentials(choice->proxy) + " (from $" + choice->variable + ")";
}

} // namespace llmrepro::probes
