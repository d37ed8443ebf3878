// The parse micro-benchmark: probes::parse_response() on the responder's 256-token chat
// completion with top-2 logprobs, whole and as its SSE stream (`responder --dump DIR` writes
// both), in MB/s of body parsed. Built by bench/driver.sh against each build's own libraries
// (only the public probes/dialect.hpp is used, so one source serves a baseline build too).
//
//   parse_bench CHAT_JSON CHAT_SSE [seconds per round] [rounds]
//
// A path of "-" leaves that form out (for a profile of the other).
// Prints one line per form: "<form> <bytes> <microseconds a parse> <MB/s>", the best round of
// the thread's CPU time (not wall time: the machine is shared). Checks every parse: 256 tokens,
// each with 2 candidates, so that a parser that drops work fails instead of looking fast.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "probes/dialect.hpp"

namespace {

double thread_cpu_s() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "parse_bench: cannot read %s\n", path);
    std::exit(2);
  }
  return text.str();
}

void check(const llmrepro::core::Result<llmrepro::core::Completion>& parsed) {
  if (!parsed) {
    std::fprintf(stderr, "parse_bench: %s\n", parsed.error().message.c_str());
    std::exit(1);
  }
  const auto& tokens = parsed.value().tokens;
  bool whole = tokens.size() == 256;
  for (const auto& token : tokens) whole = whole && token.top.size() == 2;
  if (!whole) {
    std::fprintf(stderr, "parse_bench: expected 256 tokens with 2 candidates each\n");
    std::exit(1);
  }
}

// The best of `rounds` rounds of at least `seconds` of CPU each: microseconds a parse.
double measure(const std::string& body, bool stream, double seconds, int rounds) {
  using llmrepro::probes::Dialect;
  double best = 0;
  for (int round = 0; round < rounds; ++round) {
    long parses = 0;
    const double start = thread_cpu_s();
    double elapsed = 0;
    do {
      for (int i = 0; i < 16; ++i)
        check(llmrepro::probes::parse_response(Dialect::openai_chat, body, stream));
      parses += 16;
      elapsed = thread_cpu_s() - start;
    } while (elapsed < seconds);
    const double per_parse = elapsed / static_cast<double>(parses);
    if (round == 0 || per_parse < best) best = per_parse;
  }
  return best * 1e6;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: parse_bench CHAT_JSON CHAT_SSE [seconds per round] [rounds]\n");
    return 2;
  }
  const double seconds = argc > 3 ? std::atof(argv[3]) : 0.3;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  const char* forms[] = {"whole", "sse"};
  for (int i = 0; i < 2; ++i) {
    if (std::string(argv[1 + i]) == "-") continue;
    const std::string body = read_file(argv[1 + i]);
    const double us = measure(body, i == 1, seconds, rounds);
    std::printf("%s %zu %.2f %.1f\n", forms[i], body.size(), us,
                static_cast<double>(body.size()) / us);
  }
  return 0;
}
