#include "probes/http_transport.hpp"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "core/text_utf8.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/proxy_rule.hpp"

namespace llmrepro::probes {
namespace {

// Whether one of `headers` ("Name: value") is named `name`, compared case-insensitively.
bool names_header(const std::vector<std::string>& headers, std::string_view name) {
  return std::any_of(headers.begin(), headers.end(), [&](const std::string& header) {
    const std::size_t colon = header.find(':');
    if (colon == std::string::npos) return false;
    std::string_view given(header.data(), colon);
    while (!given.empty() && given.back() == ' ') given.remove_suffix(1);
    return given.size() == name.size() &&
           std::equal(given.begin(), given.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) ==
                    std::tolower(static_cast<unsigned char>(b));
           });
  });
}

void global_init_once() {
  static std::once_flag flag;
  std::call_once(flag, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Per-transfer state; heap-allocated so that the pointers handed to libcurl stay valid.
struct Transfer {
  HttpTransport::RequestId id = 0;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string url;
  std::string proxy; // the proxy it goes through, without credentials ("" for none)
  std::string request_body;
  std::string response_body;
  std::size_t cap = 0;
  bool too_large = false;
  int socket_errno = 0;  // EMFILE or ENFILE when opening a socket failed for want of descriptors
  std::string addresses; // the IP addresses it opened sockets for, ", "-separated
  std::optional<double> retry_after_s;
  char error_buffer[CURL_ERROR_SIZE] = {};

  ~Transfer() {
    if (headers != nullptr) curl_slist_free_all(headers);
    if (easy != nullptr) curl_easy_cleanup(easy);
  }
};

std::string trim(std::string_view text) {
  std::size_t begin = 0;
  std::size_t end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])) != 0) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])) != 0) --end;
  return std::string(text.substr(begin, end - begin));
}

// Retry-After is either delta-seconds or an HTTP date (RFC 9110 section 10.2.3).
std::optional<double> parse_retry_after(const std::string& value) {
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(),
                  [](unsigned char c) { return std::isdigit(c) != 0; })) {
    if (value.size() > 9) return 1e9; // absurdly long: callers cap it anyway
    return static_cast<double>(std::stol(value));
  }
  const time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  const double delta = std::difftime(when, std::time(nullptr));
  return delta > 0 ? delta : 0.0;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  if (transfer->response_body.empty()) {
    // The body announced by Content-Length (within the cap) takes one allocation, not a dozen
    // regrowths and their copies.
    curl_off_t length = -1;
    if (curl_easy_getinfo(transfer->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) ==
            CURLE_OK &&
        length > 0 && static_cast<std::uint64_t>(length) <= transfer->cap)
      transfer->response_body.reserve(static_cast<std::size_t>(length));
  }
  if (transfer->response_body.size() + bytes > transfer->cap) {
    // Returning less than `bytes` makes libcurl abort with CURLE_WRITE_ERROR: the rest of an
    // oversize body is never read into memory.
    transfer->too_large = true;
    transfer->response_body.clear();
    transfer->response_body.shrink_to_fit();
    return 0;
  }
  transfer->response_body.append(data, bytes);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  const std::string_view line(data, bytes);
  // A new status line (after a 100 Continue, say) starts a new header block.
  if (line.rfind("HTTP/", 0) == 0) transfer->retry_after_s.reset();
  const std::size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    const std::string name = core::ascii_lowercase(trim(line.substr(0, colon)));
    if (name == "retry-after")
      transfer->retry_after_s = parse_retry_after(trim(line.substr(colon + 1)));
  }
  return bytes;
}

// Opens the transfer's sockets as libcurl would, noting when the process or the system is out
// of file descriptors: that failure is this machine's, and libcurl would report it as a
// connection that failed.
curl_socket_t on_open_socket(void* user, curlsocktype /*purpose*/, curl_sockaddr* address) {
  auto* transfer = static_cast<Transfer*>(user);
  char text[INET6_ADDRSTRLEN] = {};
  const void* ip = nullptr;
  if (address->family == AF_INET)
    ip = &reinterpret_cast<const sockaddr_in*>(&address->addr)->sin_addr;
  else if (address->family == AF_INET6)
    ip = &reinterpret_cast<const sockaddr_in6*>(&address->addr)->sin6_addr;
  if (ip != nullptr && inet_ntop(address->family, ip, text, sizeof text) != nullptr &&
      transfer->addresses.find(text) == std::string::npos)
    transfer->addresses += (transfer->addresses.empty() ? "" : ", ") + std::string(text);
  const curl_socket_t fd = socket(address->family, address->socktype, address->protocol);
  if (fd == CURL_SOCKET_BAD && (errno == EMFILE || errno == ENFILE)) transfer->socket_errno = errno;
  return fd;
}

std::string open_file_limit_error(int error) {
  rlimit limit{};
  std::string soft = "?";
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    soft = std::to_string(limit.rlim_cur);
  if (error == ENFILE)
    return "local limit: the system's open-file table is full (ENFILE), so no socket could be "
           "opened; the endpoint was not reached. Close files elsewhere or raise fs.file-max";
  return "local limit: this process hit its open-file limit (EMFILE, ulimit -n " + soft +
         "), so no socket could be opened; the endpoint was not reached. Raise it with "
         "`ulimit -n N` or lower --concurrency";
}

// "<curl's message> (address host:port, IP a.b.c.d)": which address failed, as far as libcurl
// got: "not resolved" when the name did not resolve, and the proxy when the request went
// through one (whose address is then the one that failed).
std::string connect_error(CURLcode code, const Transfer& transfer, const std::string& message) {
  const std::string& url = transfer.url;
  std::string host = url_host(url);
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  const std::string_view rest = std::string_view(url).substr(url.find("://") + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = authority.rfind('@'); at != std::string_view::npos) authority.remove_prefix(at + 1);
  long port = url.rfind("https", 0) == 0 ? 443 : 80;
  const std::size_t colon = authority.rfind(':');
  const std::size_t bracket = authority.rfind(']');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket))
    port = std::strtol(std::string(authority.substr(colon + 1)).c_str(), nullptr, 10);
  std::string where = "address " + host + ":" + std::to_string(port);
  if (!transfer.proxy.empty()) where += ", through the proxy " + transfer.proxy;
  if (code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY)
    where += ", not resolved";
  else if (!transfer.addresses.empty())
    where += ", IP " + transfer.addresses;
  return message + " (" + where + ")";
}

TransportFailure classify(CURLcode code, bool too_large) {
  if (too_large) return TransportFailure::too_large;
  switch (code) {
  case CURLE_OK: return TransportFailure::none;
  case CURLE_COULDNT_CONNECT:
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_RESOLVE_PROXY: return TransportFailure::connect;
  case CURLE_OPERATION_TIMEDOUT: return TransportFailure::timeout;
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_PEER_FAILED_VERIFICATION:
  case CURLE_SSL_CERTPROBLEM:
  case CURLE_SSL_CIPHER:
  case CURLE_SSL_CACERT_BADFILE:
  case CURLE_SSL_ISSUER_ERROR:
  case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
  case CURLE_SSL_INVALIDCERTSTATUS:
  case CURLE_USE_SSL_FAILED:
  case CURLE_SSL_ENGINE_INITFAILED: return TransportFailure::tls;
  case CURLE_GOT_NOTHING:
  case CURLE_PARTIAL_FILE:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM: return TransportFailure::closed;
  default: return TransportFailure::other;
  }
}

std::string cap_text(std::size_t cap) {
  if (cap >= (1u << 20) && cap % (1u << 20) == 0) return std::to_string(cap >> 20) + " MiB";
  return std::to_string(cap) + " bytes";
}

} // namespace

std::string describe_redirect(int http_status, const std::string& redirect_url) {
  const std::string where =
      redirect_url.empty() ? std::string("(no Location)") : strip_credentials(redirect_url);
  return "HTTP " + std::to_string(http_status) + " redirect to " + where +
         " refused: llmrepro does not follow redirects; use the final URL as --endpoint";
}

const char* to_string(TransportFailure failure) {
  switch (failure) {
  case TransportFailure::none: return "none";
  case TransportFailure::connect: return "connection failed";
  case TransportFailure::tls: return "TLS error";
  case TransportFailure::timeout: return "timeout";
  case TransportFailure::closed: return "connection closed";
  case TransportFailure::too_large: return "response too large";
  case TransportFailure::local_limit: return "local limit";
  case TransportFailure::other: return "transport error";
  }
  return "transport error";
}

// Easy handles kept for reuse at most: a handle of a finished transfer is reset and serves the
// next one, instead of one handle made and destroyed for each request.
constexpr std::size_t k_max_idle_handles = 512;
constexpr long k_receive_buffer_bytes = 64L * 1024;

struct HttpTransport::Impl {
  CURLM* multi = nullptr;
  RequestId next_id = 1;
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> transfers;
  // Finished transfers that perform() collected on behalf of a later poll().
  std::deque<Finished> stashed;
  std::vector<CURL*> idle; // reset easy handles of finished transfers

  Impl() {
    global_init_once();
    multi = curl_multi_init();
  }

  ~Impl() {
    remove_all();
    for (CURL* easy : idle) curl_easy_cleanup(easy);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  CURL* easy_handle() {
    if (idle.empty()) return curl_easy_init();
    CURL* easy = idle.back();
    idle.pop_back();
    return easy;
  }

  // Takes a finished transfer's handle (already out of the multi handle) for reuse.
  void keep_handle(Transfer& transfer) {
    if (idle.size() >= k_max_idle_handles) return;
    curl_easy_reset(transfer.easy);
    idle.push_back(transfer.easy);
    transfer.easy = nullptr;
  }

  void remove_all() {
    for (auto& [easy, transfer] : transfers) curl_multi_remove_handle(multi, easy);
    transfers.clear();
  }

  // Moves every finished transfer out of the multi handle into `out`.
  void collect(std::vector<Finished>& out) {
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
      if (message->msg != CURLMSG_DONE) continue;
      CURL* easy = message->easy_handle;
      const CURLcode code = message->data.result;
      auto found = transfers.find(easy);
      if (found == transfers.end()) continue;
      Transfer& transfer = *found->second;

      Finished finished;
      finished.id = transfer.id;
      long status = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
      finished.response.http_status = static_cast<int>(status);
      finished.response.retry_after_s = transfer.retry_after_s;
      finished.response.failure = classify(code, transfer.too_large);
      if (code != CURLE_OK && transfer.socket_errno != 0)
        finished.response.failure = TransportFailure::local_limit;
      if (status >= 300 && status < 400) {
        char* location = nullptr;
        if (curl_easy_getinfo(easy, CURLINFO_REDIRECT_URL, &location) == CURLE_OK &&
            location != nullptr)
          finished.response.redirect_url = location;
      }
      if (finished.response.failure == TransportFailure::local_limit) {
        finished.response.error = open_file_limit_error(transfer.socket_errno);
      } else if (finished.response.failure == TransportFailure::too_large) {
        finished.response.error =
            "response exceeded the " + cap_text(transfer.cap) + " cap (--max-response-bytes)";
      } else if (finished.response.failure != TransportFailure::none) {
        finished.response.error = transfer.error_buffer[0] != '\0'
                                      ? std::string(transfer.error_buffer)
                                      : std::string(curl_easy_strerror(code));
        if (finished.response.failure == TransportFailure::connect)
          finished.response.error = connect_error(code, transfer, finished.response.error);
        finished.response.body = std::move(transfer.response_body);
      } else {
        finished.response.body = std::move(transfer.response_body);
      }
      curl_multi_remove_handle(multi, easy);
      keep_handle(transfer);
      transfers.erase(found);
      out.push_back(std::move(finished));
    }
  }
};

HttpTransport::HttpTransport() : m_impl(std::make_unique<Impl>()) {}
HttpTransport::~HttpTransport() = default;

void HttpTransport::close_connections() {
  // The multi handle owns the connection cache: a new one starts with none.
  m_impl->remove_all();
  curl_multi_cleanup(m_impl->multi);
  m_impl->multi = curl_multi_init();
}

HttpTransport::RequestId HttpTransport::submit(const HttpRequest& request) {
  auto transfer = std::make_unique<Transfer>();
  transfer->id = m_impl->next_id++;
  transfer->cap = request.max_response_bytes;
  transfer->easy = m_impl->easy_handle();
  CURL* easy = transfer->easy;

  transfer->url = request.url;
  curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
  // The proxy is chosen here, not by libcurl from the environment: "" is none at all (never
  // one for loopback), and a chosen one is used for this host whatever no_proxy would add.
  const std::optional<ProxyChoice> proxy = proxy_for(request.url);
  curl_easy_setopt(easy, CURLOPT_PROXY, proxy ? proxy->proxy.c_str() : "");
  if (proxy) {
    curl_easy_setopt(easy, CURLOPT_NOPROXY, "");
    transfer->proxy = proxy_without_credentials(proxy->proxy);
  }
  curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
  curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, transfer.get());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "llmrepro");
  curl_easy_setopt(easy, CURLOPT_PRIVATE, transfer.get());
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->error_buffer);
  // A 50 KB answer in one read rather than four of libcurl's default 16 KiB.
  curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, k_receive_buffer_bytes);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, transfer.get());
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, transfer.get());
  const double timeout_ms = std::max(1.0, request.timeout_s * 1000.0);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, request.insecure ? 0L : 1L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, request.insecure ? 0L : 2L);

  for (const std::string& header : request.headers)
    transfer->headers = curl_slist_append(transfer->headers, header.c_str());
  // An explicit --header of the key's own name wins: never two Authorization headers.
  const std::string key_header =
      request.api_key_header.empty() ? "Authorization" : request.api_key_header;
  if (!request.api_key.empty() && !names_header(request.headers, key_header)) {
    const std::string key_line = request.api_key_header.empty()
                                     ? "Authorization: Bearer " + request.api_key
                                     : request.api_key_header + ": " + request.api_key;
    transfer->headers = curl_slist_append(transfer->headers, key_line.c_str());
  }
  // libcurl would otherwise send "Expect: 100-continue" for large bodies and wait for a
  // go-ahead that some servers never send.
  transfer->headers = curl_slist_append(transfer->headers, "Expect:");
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, transfer->headers);

  if (request.method == HttpRequest::Method::post) {
    transfer->request_body = request.body;
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, transfer->request_body.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(transfer->request_body.size()));
  } else {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  }

  const RequestId id = transfer->id;
  curl_multi_add_handle(m_impl->multi, easy);
  m_impl->transfers.emplace(easy, std::move(transfer));
  return id;
}

std::vector<HttpTransport::Finished> HttpTransport::poll(double max_wait_s) {
  std::vector<Finished> out;
  while (!m_impl->stashed.empty()) {
    out.push_back(std::move(m_impl->stashed.front()));
    m_impl->stashed.pop_front();
  }
  int running = 0;
  curl_multi_perform(m_impl->multi, &running);
  m_impl->collect(out);
  if (!out.empty()) return out;

  const double wait_ms = std::clamp(max_wait_s * 1000.0, 0.0, 3600.0 * 1000.0);
  curl_multi_poll(m_impl->multi, nullptr, 0, static_cast<int>(wait_ms), nullptr);
  curl_multi_perform(m_impl->multi, &running);
  m_impl->collect(out);
  return out;
}

void HttpTransport::cancel_all() {
  m_impl->remove_all();
  m_impl->stashed.clear();
}

std::size_t HttpTransport::in_flight() const { return m_impl->transfers.size(); }

HttpResponse HttpTransport::perform(const HttpRequest& request) {
  const RequestId id = submit(request);
  for (;;) {
    // Drives the multi handle directly rather than through poll(), which would hand back the
    // stashed transfers of other callers and never wait.
    int running = 0;
    curl_multi_perform(m_impl->multi, &running);
    std::vector<Finished> finished;
    m_impl->collect(finished);
    std::optional<HttpResponse> mine;
    for (Finished& item : finished) {
      if (item.id == id)
        mine = std::move(item.response);
      else
        m_impl->stashed.push_back(std::move(item));
    }
    if (mine) return std::move(*mine);
    curl_multi_poll(m_impl->multi, nullptr, 0, 1000, nullptr);
  }
}

} // namespace llmrepro::probes
