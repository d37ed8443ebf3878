// The benchmark's endpoint: answers every POST at once with one fixed OpenAI chat completion of
// 256 tokens with top-2 logprobs (or a stream of the same tokens as SSE chunks), so that what is
// measured is the client. Raw epoll with SO_REUSEPORT, one event loop per thread, keep-alive.
//
//   responder <port> [threads] [variants] [tokens] [decimal|float32]
//   responder --dump DIR
//
// `variants` > 1 serves that many bodies in turn, differing in their last tokens, so that an
// audit built against it has some drift to analyse. `tokens` sets the completion's length
// (default 256; the request's max_tokens is not read). The log probabilities are short decimals
// (-0.012, -2.125: `decimal`, the default) over 110 distinct texts, or, with `float32`, float32
// values printed as the shortest decimal of their double (-0.012000000104308128), as servers
// computing in float32 and serialising Python floats (vLLM, SGLang) print them, with a text of its
// own at every position of every variant, the candidates' too (about 1,000 texts for 4 variants
// of 128 tokens: as in an audit of real prompts, most text ids take two bytes). Prints
// "ready <port>" once listening. `--dump` writes the first variant's bodies (256 tokens, decimal)
// to DIR/chat.json and DIR/chat.sse (what bench/parse_bench.cpp parses) and exits.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

// Set once by main() before any body is built.
int k_tokens = 256;
bool k_float32_logprobs = false;

// With float32 log probabilities, what sets a variant's texts apart from the others'.
std::string variant_suffix(int variant) {
  return k_float32_logprobs && variant > 0 ? "'" + std::to_string(variant) : "";
}

std::string token_text(int position, int variant) {
  if (k_float32_logprobs) return " w" + std::to_string(position) + variant_suffix(variant);
  if (variant > 0 && position >= k_tokens - 8) return " v" + std::to_string(variant);
  return " w" + std::to_string(position % 97);
}

std::string bytes_of(const std::string& text) {
  std::string out = "[";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(static_cast<unsigned char>(text[i]));
  }
  return out + "]";
}

std::string token_entry(const std::string& text, const std::string& logprob) {
  return "{\"token\":\"" + text + "\",\"logprob\":" + logprob + ",\"bytes\":" + bytes_of(text);
}

// The float32 nearest to the decimal `text`, printed as the shortest decimal of its double.
std::string float32_text(const std::string& text) {
  const double value = static_cast<double>(std::strtof(text.c_str(), nullptr));
  char out[64];
  const auto written = std::to_chars(out, out + sizeof(out), value);
  return std::string(out, written.ptr);
}

std::string logprob_entry(int position, int variant) {
  const std::string first = token_text(position, variant);
  const std::string second = k_float32_logprobs
                                 ? " a" + std::to_string(position) + variant_suffix(variant)
                                 : " alt" + std::to_string(position % 13);
  std::string lp1 = "-0.0" + std::to_string(10 + position % 80);
  std::string lp2 = "-" + std::to_string(2 + position % 5) + ".125";
  if (k_float32_logprobs) { // -2.125 is a float32 already: the second candidate's varies more
    lp1 = float32_text(lp1);
    lp2 =
        float32_text("-" + std::to_string(2 + position % 5) + ".1" + std::to_string(position % 97));
  }
  return token_entry(first, lp1) + ",\"top_logprobs\":[" + token_entry(first, lp1) + "}," +
         token_entry(second, lp2) + "}]}";
}

std::string chat_body(int variant) {
  std::string content;
  std::string entries;
  for (int i = 0; i < k_tokens; ++i) {
    content += token_text(i, variant);
    if (i > 0) entries += ',';
    entries += logprob_entry(i, variant);
  }
  return "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":1755000000,"
         "\"model\":\"bench-model\",\"system_fingerprint\":\"fp_bench\",\"choices\":[{\"index\":0,"
         "\"message\":{\"role\":\"assistant\",\"content\":\"" +
         content + "\",\"refusal\":null},\"logprobs\":{\"content\":[" + entries +
         "],\"refusal\":null},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,"
         "\"completion_tokens\":" +
         std::to_string(k_tokens) + ",\"total_tokens\":" + std::to_string(k_tokens + 8) + "}}";
}

std::string stream_body(int variant) {
  std::string out;
  const std::string head =
      "data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\","
      "\"created\":1755000000,\"model\":\"bench-model\",\"system_fingerprint\":"
      "\"fp_bench\",\"choices\":[{\"index\":0,";
  out += head + "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                "\"finish_reason\":null}]}\n\n";
  for (int i = 0; i < k_tokens; ++i) {
    const bool last = i == k_tokens - 1;
    out += head + "\"delta\":{\"content\":\"" + token_text(i, variant) +
           "\"},\"logprobs\":{\"content\":[" + logprob_entry(i, variant) +
           "],\"refusal\":null},\"finish_reason\":" + (last ? "\"length\"" : "null") + "}]}\n\n";
  }
  return out + "data: [DONE]\n\n";
}

std::string http_response(const std::string& body, bool stream) {
  return std::string("HTTP/1.1 200 OK\r\nContent-Type: ") +
         (stream ? "text/event-stream" : "application/json") +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct Connection {
  std::string in;
  std::string out;
  std::size_t sent = 0;
};

struct Responses {
  std::vector<std::string> plain;
  std::vector<std::string> stream;
  std::atomic<unsigned> next{0};
};

// Finds the end of one complete request in `in` (headers and Content-Length body); 0 if partial.
std::size_t complete_request(const std::string& in, bool* stream) {
  const std::size_t header_end = in.find("\r\n\r\n");
  if (header_end == std::string::npos) return 0;
  std::size_t length = 0;
  std::size_t line = in.find("\r\n") + 2;
  while (line < header_end) {
    const std::size_t eol = in.find("\r\n", line);
    std::string_view header(in.data() + line, eol - line);
    constexpr std::string_view name = "content-length:";
    if (header.size() > name.size() && strncasecmp(header.data(), name.data(), name.size()) == 0)
      length = std::strtoul(std::string(header.substr(name.size())).c_str(), nullptr, 10);
    line = eol + 2;
  }
  const std::size_t total = header_end + 4 + length;
  if (in.size() < total) return 0;
  const std::string_view body(in.data() + header_end + 4, length);
  *stream = body.find("\"stream\":true") != std::string_view::npos ||
            body.find("\"stream\": true") != std::string_view::npos;
  return total;
}

void serve(int port, Responses& responses) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      listen(listener, 1024) != 0) {
    std::perror("responder: bind/listen");
    std::exit(1);
  }
  const int poller = epoll_create1(0);
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = listener;
  epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
  std::unordered_map<int, Connection> connections;
  std::vector<epoll_event> events(256);
  char buffer[65536];

  const auto close_connection = [&](int fd) {
    epoll_ctl(poller, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    connections.erase(fd);
  };
  // Writes what is pending; returns false when the connection is gone.
  const auto flush = [&](int fd, Connection& connection) {
    while (connection.sent < connection.out.size()) {
      const ssize_t n = send(fd, connection.out.data() + connection.sent,
                             connection.out.size() - connection.sent, MSG_NOSIGNAL);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
      connection.sent += static_cast<std::size_t>(n);
    }
    connection.out.clear();
    connection.sent = 0;
    return true;
  };

  for (;;) {
    const int ready = epoll_wait(poller, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < ready; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == listener) {
        for (;;) {
          const int client = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
          if (client < 0) break;
          setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event client_event{};
          client_event.events = EPOLLIN | EPOLLOUT | EPOLLET;
          client_event.data.fd = client;
          epoll_ctl(poller, EPOLL_CTL_ADD, client, &client_event);
          connections[client];
        }
        continue;
      }
      Connection& connection = connections[fd];
      bool alive = true;
      for (;;) {
        const ssize_t n = recv(fd, buffer, sizeof buffer, 0);
        if (n == 0) {
          alive = false;
          break;
        }
        if (n < 0) {
          alive = errno == EAGAIN || errno == EWOULDBLOCK;
          break;
        }
        connection.in.append(buffer, static_cast<std::size_t>(n));
      }
      bool stream = false;
      while (const std::size_t used = complete_request(connection.in, &stream)) {
        connection.in.erase(0, used);
        const unsigned index = responses.next.fetch_add(1, std::memory_order_relaxed);
        const auto& pool = stream ? responses.stream : responses.plain;
        connection.out += pool[index % pool.size()];
      }
      if (alive) alive = flush(fd, connection);
      if (!alive) close_connection(fd);
    }
  }
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::string_view(argv[1]) == "--dump" && argc < 3)) {
    std::fprintf(stderr,
                 "usage: responder <port> [threads] [variants] [tokens] [decimal|float32] | "
                 "responder --dump DIR\n");
    return 2;
  }
  if (std::string_view(argv[1]) == "--dump") {
    const std::string dir = argv[2];
    return write_file(dir + "/chat.json", chat_body(0)) &&
                   write_file(dir + "/chat.sse", stream_body(0))
               ? 0
               : 1;
  }
  const int port = std::atoi(argv[1]);
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int variants = argc > 3 ? std::atoi(argv[3]) : 1;
  if (argc > 4) k_tokens = std::atoi(argv[4]);
  if (argc > 5) k_float32_logprobs = std::string_view(argv[5]) == "float32";
  if (k_tokens < 8) {
    std::fprintf(stderr, "responder: tokens must be at least 8\n");
    return 2;
  }
  Responses responses;
  for (int v = 0; v < variants; ++v) {
    responses.plain.push_back(http_response(chat_body(v), false));
    responses.stream.push_back(http_response(stream_body(v), true));
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(serve, port, std::ref(responses));
  std::printf("ready %d body_bytes %zu\n", port, responses.plain[0].size());
  std::fflush(stdout);
  for (auto& worker : workers) worker.join();
}
