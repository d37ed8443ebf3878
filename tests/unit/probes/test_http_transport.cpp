#include <doctest/doctest.h>

#include <chrono>

#include "probes/http_transport.hpp"
#include "tests/unit/probes/loopback_server.hpp"

using llmrepro::probes::HttpRequest;
using llmrepro::probes::HttpResponse;
using llmrepro::probes::HttpTransport;
using llmrepro::probes::TransportFailure;
using llmrepro::probes::testing::LoopbackServer;
using llmrepro::probes::testing::unused_port;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

HttpRequest get(const std::string& url) {
  HttpRequest request;
  request.method = HttpRequest::Method::get;
  request.url = url;
  request.timeout_s = 5;
  return request;
}

} // namespace

TEST_CASE("HttpTransport") {
  LoopbackServer server([](httplib::Server& routes) {
    routes.Post("/echo", [](const httplib::Request& request, httplib::Response& response) {
      response.status = 201;
      response.set_content(request.body + "|" + request.get_header_value("Content-Type") + "|" +
                               request.get_header_value("Authorization") + "|" +
                               request.get_header_value("X-Extra"),
                           "text/plain");
    });
    routes.Get("/keys", [](const httplib::Request& request, httplib::Response& response) {
      std::string seen;
      for (const char* name : {"Authorization", "x-goog-api-key"})
        for (std::size_t i = 0; i < request.get_header_value_count(name); ++i)
          seen += std::string(name) + "=" + request.get_header_value(name, i) + ";";
      response.set_content(seen, "text/plain");
    });
    routes.Get("/port", [](const httplib::Request& request, httplib::Response& response) {
      response.set_content(std::to_string(request.remote_port), "text/plain");
    });
    routes.Get("/busy", [](const httplib::Request&, httplib::Response& response) {
      response.status = 429;
      response.set_header("Retry-After", "7");
      response.set_content(R"({"error":"Model is overloaded"})", "application/json");
    });
    routes.Get("/busy-date", [](const httplib::Request&, httplib::Response& response) {
      response.status = 503;
      response.set_header("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT");
    });
    routes.Get("/big", [](const httplib::Request& request, httplib::Response& response) {
      response.set_content(std::string(std::stoul(request.get_param_value("n")), 'x'),
                           "text/plain");
    });
    routes.Get("/slow", [](const httplib::Request&, httplib::Response& response) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      response.set_content("late", "text/plain");
    });
    routes.Get("/cut", [](const httplib::Request&, httplib::Response& response) {
      // Promises 1000 bytes, sends 10, then drops the connection.
      response.set_content_provider(1000, "text/plain",
                                    [](size_t, size_t, httplib::DataSink& sink) {
                                      sink.write("0123456789", 10);
                                      return false;
                                    });
    });
  });
  HttpTransport transport;

  SUBCASE("POST sends body, headers and the bearer token") {
    HttpRequest request;
    request.url = server.url() + "/echo";
    request.body = R"({"a":1})";
    request.headers = {"Content-Type: application/json", "X-Extra: yes"};
    request.api_key = "sk-secret";
    request.timeout_s = 5;
    HttpResponse response = transport.perform(request);
    CHECK(response.failure == TransportFailure::none);
    CHECK(response.http_status == 201);
    CHECK(response.body == R"({"a":1}|application/json|Bearer sk-secret|yes)");
    CHECK(response.error.empty());
  }
  SUBCASE("an explicit header of the key's name replaces the key, whatever its case") {
    HttpRequest request = get(server.url() + "/keys");
    request.api_key = "sk-secret";
    CHECK(transport.perform(request).body == "Authorization=Bearer sk-secret;");
    request.headers = {"authorization: Bearer T"};
    CHECK(transport.perform(request).body == "Authorization=Bearer T;");
    request.headers = {"AUTHORIZATION: Bearer U"};
    CHECK(transport.perform(request).body == "Authorization=Bearer U;");
    // Gemini: only x-goog-api-key counts; an Authorization header goes beside it.
    request.api_key_header = "x-goog-api-key";
    request.headers = {"X-Goog-Api-Key: G"};
    CHECK(transport.perform(request).body == "x-goog-api-key=G;");
    request.headers = {"Authorization: Bearer T"};
    CHECK(transport.perform(request).body == "Authorization=Bearer T;x-goog-api-key=sk-secret;");
  }
  SUBCASE("keeps the connection alive between requests") {
    HttpResponse first = transport.perform(get(server.url() + "/port"));
    HttpResponse second = transport.perform(get(server.url() + "/port"));
    REQUIRE(first.http_status == 200);
    CHECK(first.body == second.body);
  }
  SUBCASE("Retry-After in seconds and as an HTTP date") {
    HttpResponse busy = transport.perform(get(server.url() + "/busy"));
    CHECK(busy.http_status == 429);
    CHECK(busy.failure == TransportFailure::none);
    REQUIRE(busy.retry_after_s.has_value());
    CHECK(*busy.retry_after_s == 7.0);
    HttpResponse dated = transport.perform(get(server.url() + "/busy-date"));
    CHECK(dated.http_status == 503);
    REQUIRE(dated.retry_after_s.has_value());
    CHECK(*dated.retry_after_s == 0.0); // a date in the past: retry now
    HttpResponse plain = transport.perform(get(server.url() + "/port"));
    CHECK_FALSE(plain.retry_after_s.has_value());
  }
  SUBCASE("a body over the cap is aborted and reported, one at the cap is kept") {
    HttpRequest request = get(server.url() + "/big?n=1000000");
    request.max_response_bytes = 65536;
    HttpResponse big = transport.perform(request);
    CHECK(big.failure == TransportFailure::too_large);
    CHECK(big.body.empty());
    CHECK(big.error == "response exceeded the 65536 bytes cap (--max-response-bytes)");
    request.url = server.url() + "/big?n=65536";
    HttpResponse exact = transport.perform(request);
    CHECK(exact.failure == TransportFailure::none);
    CHECK(exact.body.size() == 65536);
    request.url = server.url() + "/big?n=65537";
    request.max_response_bytes = 16u << 20;
    CHECK(transport.perform(request).failure == TransportFailure::none);
    request.max_response_bytes = 65536;
    HttpResponse over = transport.perform(request);
    CHECK(over.failure == TransportFailure::too_large);
    request.max_response_bytes = 1u << 20;
    request.url = server.url() + "/big?n=2000000";
    CHECK(transport.perform(request).error.find("1 MiB cap") != std::string::npos);
  }
  SUBCASE("timeout") {
    HttpRequest request = get(server.url() + "/slow");
    request.timeout_s = 0.1;
    const auto start = std::chrono::steady_clock::now();
    HttpResponse response = transport.perform(request);
    CHECK(seconds_since(start) < 0.28);
    CHECK(response.failure == TransportFailure::timeout);
    CHECK(response.error.find("timed out") != std::string::npos);
  }
  SUBCASE("connection closed mid-response") {
    HttpResponse response = transport.perform(get(server.url() + "/cut"));
    CHECK(response.failure == TransportFailure::closed);
    CHECK_FALSE(response.error.empty());
  }
  SUBCASE("connection refused") {
    HttpResponse response =
        transport.perform(get("http://127.0.0.1:" + std::to_string(unused_port()) + "/"));
    CHECK(response.failure == TransportFailure::connect);
    CHECK(response.http_status == 0);
    CHECK(response.error.find("onnect") != std::string::npos);
  }
  SUBCASE("TLS against a plain HTTP server is a TLS failure") {
    std::string url = server.url() + "/port";
    url.replace(0, 4, "https");
    HttpResponse response = transport.perform(get(url));
    CHECK(response.failure == TransportFailure::tls);
    CHECK(response.http_status == 0);
  }
  SUBCASE("many transfers in flight on one thread") {
    std::vector<HttpTransport::RequestId> ids;
    for (int i = 0; i < 4; ++i) ids.push_back(transport.submit(get(server.url() + "/slow")));
    CHECK(transport.in_flight() == 4);
    const auto start = std::chrono::steady_clock::now();
    std::vector<HttpTransport::RequestId> finished;
    while (transport.in_flight() > 0)
      for (auto& done : transport.poll(0.05)) {
        CHECK(done.response.http_status == 200);
        CHECK(done.response.body == "late");
        finished.push_back(done.id);
      }
    // Four 300 ms answers served together, not one after the other.
    CHECK(seconds_since(start) < 0.9);
    std::sort(finished.begin(), finished.end());
    CHECK(finished == ids);
  }
  SUBCASE("cancel_all drops transfers in flight") {
    transport.submit(get(server.url() + "/slow"));
    transport.cancel_all();
    CHECK(transport.in_flight() == 0);
    CHECK(transport.poll(0.0).empty());
  }
}
