// HttpTransport: many HTTP requests in flight on one thread, through one libcurl multi handle.
// The scheduler drives it as an event loop: submit, then poll for finished transfers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llmrepro::probes {

struct HttpRequest {
  enum class Method { get, post };
  Method method = Method::post;
  std::string url;
  std::vector<std::string> headers; // "Name: value" lines, sent as given
  std::string body;                 // POST only
  // Sent as "Authorization: Bearer <api_key>" when not empty, or as "<api_key_header>:
  // <api_key>" where that names a header (Gemini's x-goog-api-key). Never logged or echoed.
  std::string api_key;
  std::string api_key_header;
  double timeout_s = 120;                     // whole transfer, connect included
  std::size_t max_response_bytes = 16u << 20; // the body is never buffered past this
  bool insecure = false;                      // skip TLS certificate and host verification
};

// Why a transfer produced no complete response. `none` means an HTTP response (of any status)
// arrived whole.
enum class TransportFailure {
  none,
  connect,   // nothing listening, host not resolved: the endpoint is not reachable at all
  tls,       // TLS handshake or certificate verification failed
  timeout,   // the request's timeout passed
  closed,    // the connection closed or broke before the response was complete
  too_large, // the body passed max_response_bytes; the transfer was aborted
  // A limit of this machine, not of the endpoint: no socket could be opened because the process
  // or the system ran out of file descriptors (EMFILE, ENFILE).
  local_limit,
  other, // any other transport error
};

const char* to_string(TransportFailure failure);

struct HttpResponse {
  int http_status = 0; // 0 when no status line arrived
  std::string body;    // what arrived (empty when too_large: an oversize body is dropped)
  // Retry-After in seconds (delta-seconds or an HTTP date), when the response carried it.
  std::optional<double> retry_after_s;
  // Where a 3xx response pointed (its Location, made absolute), which is never followed.
  std::string redirect_url;
  TransportFailure failure = TransportFailure::none;
  // A one-line transport error when failure != none. A connection that failed names the
  // host:port it was for and, where one was tried, the IP address.
  std::string error;
};

// "HTTP 302 redirect to <location> refused: llmrepro does not follow redirects; use the final
// URL as --endpoint", the location without its credentials (or "(no Location)").
std::string describe_redirect(int http_status, const std::string& redirect_url);

// One multi handle, connections kept alive and reused between requests; TLS verified unless a
// request says insecure. Each request goes through the proxy proxy_for() names for its URL
// (proxy_rule.hpp), never through one to a loopback host. Not thread-safe: use it from one
// thread.
class HttpTransport {
public:
  using RequestId = std::uint64_t;

  struct Finished {
    RequestId id = 0;
    HttpResponse response;
  };

  HttpTransport();
  ~HttpTransport(); // aborts whatever is still in flight
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Starts a request; it makes progress only inside poll(). Ids are unique per transport.
  RequestId submit(const HttpRequest& request);

  // Drives the transfers, waiting at most `max_wait_s` for network activity, and returns the
  // transfers that finished (possibly none). Returns at once when something already finished.
  std::vector<Finished> poll(double max_wait_s);

  // Aborts every transfer in flight; their ids are never returned by poll().
  void cancel_all();

  std::size_t in_flight() const;

  // Closes every connection kept open for reuse; nothing may be in flight. Before a server is
  // restarted: a kept connection would hold the old process in its graceful shutdown.
  void close_connections();

  // Runs one request to completion (a submit/poll loop); for one-off calls such as detection.
  HttpResponse perform(const HttpRequest& request);

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace llmrepro::probes
