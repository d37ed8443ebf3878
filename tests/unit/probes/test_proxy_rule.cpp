#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probes/http_transport.hpp"
#include "probes/proxy_rule.hpp"
#include "tests/unit/probes/loopback_server.hpp"

using llmrepro::probes::describe_redirect;
using llmrepro::probes::HttpRequest;
using llmrepro::probes::HttpTransport;
using llmrepro::probes::is_loopback_host;
using llmrepro::probes::proxy_for;
using llmrepro::probes::proxy_notice;
using llmrepro::probes::TransportFailure;
using llmrepro::probes::url_host;
using llmrepro::probes::testing::LoopbackServer;
using llmrepro::probes::testing::unused_port;

namespace {

using Vars = std::map<std::string, std::string>;

const std::vector<std::string> k_proxy_variables{"http_proxy", "https_proxy", "HTTPS_PROXY",
                                                 "all_proxy",  "ALL_PROXY",   "no_proxy",
                                                 "NO_PROXY",   "HTTP_PROXY"};

// Sets the proxy variables for one case and puts back what was there before.
class ProxyEnvironment {
public:
  explicit ProxyEnvironment(const std::map<std::string, std::string>& values) {
    for (const auto& name : k_proxy_variables) {
      if (const char* old = std::getenv(name.c_str())) m_saved[name] = old;
      unsetenv(name.c_str());
    }
    for (const auto& [name, value] : values) setenv(name.c_str(), value.c_str(), 1);
  }
  ~ProxyEnvironment() {
    for (const auto& name : k_proxy_variables) unsetenv(name.c_str());
    for (const auto& [name, value] : m_saved) setenv(name.c_str(), value.c_str(), 1);
  }
  ProxyEnvironment(const ProxyEnvironment&) = delete;
  ProxyEnvironment& operator=(const ProxyEnvironment&) = delete;

private:
  std::map<std::string, std::string> m_saved;
};

std::string proxy_of(const std::string& url) {
  auto choice = proxy_for(url);
  return choice ? choice->proxy + " from " + choice->variable : "none";
}

} // namespace

TEST_CASE("is_loopback_host") {
  for (const char* host : {"localhost", "LOCALHOST", "localhost.", "api.localhost", "127.0.0.1",
                           "127.1.2.3", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"}) {
    CAPTURE(host);
    CHECK(is_loopback_host(host));
  }
  for (const char* host : {"example.com", "localhost.example.com", "128.0.0.1", "10.0.0.1", "::2",
                           "", "mylocalhost"}) {
    CAPTURE(host);
    CHECK_FALSE(is_loopback_host(host));
  }
}

TEST_CASE("url_host") {
  CHECK(url_host("http://user:pw@Example.COM:8000/v1?x=1") == "example.com");
  CHECK(url_host("https://[::1]:8443/v1") == "::1");
  CHECK(url_host("http://host./") == "host");
  CHECK(url_host("no-scheme") == "");
}

TEST_CASE("proxy_for: libcurl's variables, never for loopback") {
  SUBCASE("http reads http_proxy only in lowercase, then all_proxy") {
    ProxyEnvironment env(Vars{{"HTTP_PROXY", "http://upper:1"}, {"ALL_PROXY", "http://all:2"}});
    CHECK(proxy_of("http://api.example.com") == "http://all:2 from ALL_PROXY");
    ProxyEnvironment lower(Vars{{"http_proxy", "http://lower:3"}, {"all_proxy", "http://all:2"}});
    CHECK(proxy_of("http://api.example.com") == "http://lower:3 from http_proxy");
  }
  SUBCASE("https reads https_proxy, then HTTPS_PROXY") {
    ProxyEnvironment env(Vars{{"HTTPS_PROXY", "http://upper:1"}, {"http_proxy", "http://plain:2"}});
    CHECK(proxy_of("https://api.example.com") == "http://upper:1 from HTTPS_PROXY");
    CHECK(proxy_of("http://api.example.com") == "http://plain:2 from http_proxy");
  }
  SUBCASE("loopback hosts never go through a proxy") {
    ProxyEnvironment env(Vars{{"http_proxy", "http://p:1"}, {"all_proxy", "http://p:1"}});
    for (const char* url : {"http://127.0.0.1:8000", "http://localhost:1/v1", "http://[::1]:80",
                            "http://127.9.9.9", "http://x.localhost"}) {
      CAPTURE(url);
      CHECK(proxy_of(url) == "none");
      CHECK_FALSE(proxy_notice(url).has_value());
    }
  }
  SUBCASE("no_proxy as libcurl reads it") {
    ProxyEnvironment env(
        Vars{{"http_proxy", "http://p:1"},
             {"no_proxy", "internal.example, .corp.example ,10.0.0.0/8,fd00::/8"}});
    CHECK(proxy_of("http://internal.example") == "none");
    CHECK(proxy_of("http://a.internal.example:8000") == "none");
    CHECK(proxy_of("http://corp.example") == "none");
    CHECK(proxy_of("http://x.corp.example") == "none");
    CHECK(proxy_of("http://10.1.2.3") == "none");
    CHECK(proxy_of("http://[fd00::5]") == "none");
    CHECK(proxy_of("http://notinternal.example") == "http://p:1 from http_proxy");
    CHECK(proxy_of("http://11.0.0.1") == "http://p:1 from http_proxy");
  }
  SUBCASE("NO_PROXY when no_proxy is unset; * names every host") {
    ProxyEnvironment env(Vars{{"http_proxy", "http://p:1"}, {"NO_PROXY", "*"}});
    CHECK(proxy_of("http://api.example.com") == "none");
  }
  SUBCASE("the notice names the proxy without its credentials") {
    ProxyEnvironment env(Vars{{"https_proxy", "http://user:secret@proxy.example:3128"}});
    CHECK(proxy_notice("https://k:v@api.example.com/v1") ==
          "llmrepro: requests to https://api.example.com/v1 go through the proxy "
          "http://proxy.example:3128 (from $https_proxy)");
  }
}

TEST_CASE("HttpTransport: a loopback request ignores http_proxy") {
  LoopbackServer server([](httplib::Server& routes) {
    routes.Get("/hello", [](const httplib::Request&, httplib::Response& response) {
      response.set_content("direct", "text/plain");
    });
  });
  // The proxy is a port nothing listens on: going through it would fail to connect.
  ProxyEnvironment env(Vars{{"http_proxy", "http://127.0.0.1:" + std::to_string(unused_port())},
                            {"all_proxy", "http://127.0.0.1:" + std::to_string(unused_port())}});
  HttpTransport transport;
  HttpRequest request;
  request.method = HttpRequest::Method::get;
  request.url = server.url() + "/hello";
  request.timeout_s = 5;
  auto response = transport.perform(request);
  CHECK(response.failure == TransportFailure::none);
  CHECK(response.body == "direct");
}

TEST_CASE("HttpTransport: a redirect is not followed and names its Location") {
  LoopbackServer server([](httplib::Server& routes) {
    routes.Get("/old", [](const httplib::Request&, httplib::Response& response) {
      response.status = 302;
      response.set_header("Location", "https://user:pw@new.example/v1?api_key=s3cret&x=1");
    });
  });
  HttpTransport transport;
  HttpRequest request;
  request.method = HttpRequest::Method::get;
  request.url = server.url() + "/old";
  request.timeout_s = 5;
  auto response = transport.perform(request);
  CHECK(response.failure == TransportFailure::none);
  CHECK(response.http_status == 302);
  CHECK(response.redirect_url == "https://user:pw@new.example/v1?api_key=s3cret&x=1");
  CHECK(describe_redirect(302, response.redirect_url) ==
        "HTTP 302 redirect to https://new.example/v1?x=1 refused: llmrepro does not follow "
        "redirects; use the final URL as --endpoint");
  CHECK(describe_redirect(301, "") ==
        "HTTP 301 redirect to (no Location) refused: llmrepro does not follow redirects; use "
        "the final URL as --endpoint");
}

TEST_CASE("HttpTransport: a connection that fails names its address") {
  const int port = unused_port();
  HttpTransport transport;
  HttpRequest request;
  request.method = HttpRequest::Method::get;
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/v1/models";
  request.timeout_s = 5;
  auto response = transport.perform(request);
  CHECK(response.failure == TransportFailure::connect);
  const std::string expected = "(address 127.0.0.1:" + std::to_string(port) + ", IP 127.0.0.1)";
  CHECK(response.error.size() > expected.size());
  CHECK(response.error.substr(response.error.size() - expected.size()) == expected);
}

TEST_CASE("HttpTransport: running out of file descriptors is a local limit") {
  HttpTransport transport; // its own descriptors are opened before the limit is lowered
  const int port = unused_port();
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
  // Every descriptor below the limit is taken, so the socket cannot be opened.
  std::vector<int> held;
  rlimit lowered = saved;
  lowered.rlim_cur = 64;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  for (int fd = dup(0); fd >= 0; fd = dup(0)) held.push_back(fd);
  HttpRequest request;
  request.method = HttpRequest::Method::get;
  request.url = "http://127.0.0.1:" + std::to_string(port) + "/";
  request.timeout_s = 5;
  auto response = transport.perform(request);
  for (int fd : held) close(fd);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &saved) == 0);
  CHECK(response.failure == TransportFailure::local_limit);
  CHECK(response.error.rfind("local limit: this process hit its open-file limit (EMFILE, "
                             "ulimit -n 64)",
                             0) == 0);
}
