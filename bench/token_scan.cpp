// The floor of a report that reads every token: each record of an audit file streamed as
// `llmrepro report` streams it (store::AuditDatabase::load_streamed), every record's tokens read
// (decoded, and the text they spell) and dropped, and nothing analysed. Built by
// bench/report_memory.sh against a build's own libraries (only the public store API is used).
//
//   token_scan DB [rounds]
//
// Prints "<seconds> <records> <tokens>": the best round's wall seconds. Checks that every
// successful record's tokens were read, so that a scan that skips work fails instead of looking
// fast.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store/audit_database.hpp"

namespace {

using llmrepro::core::AuditData;
using llmrepro::core::RecordTokens;
using llmrepro::core::RequestRecord;
using llmrepro::core::Result;
using llmrepro::store::AuditDatabase;

struct Scanned {
  long records = 0;
  long tokens = 0;
  double logprobs = 0; // summed, so that the decoded values are used
};

Scanned scan(const AuditDatabase& database) {
  Scanned scanned;
  const auto loaded = database.load_streamed(
      [&](const AuditData&, int, const std::vector<RequestRecord>& records,
          RecordTokens& tokens) -> Result<void> {
        for (std::size_t i = 0; i < records.size(); ++i) {
          if (!records[i].outcome.ok) continue;
          if (auto read = tokens.read(i); !read) return read;
          ++scanned.records;
          for (const auto& token : records[i].outcome.completion.tokens) {
            ++scanned.tokens;
            scanned.logprobs += token.logprob;
            for (const auto& candidate : token.top) scanned.logprobs += candidate.logprob;
          }
          tokens.drop(i);
        }
        return {};
      },
      AuditDatabase::KeptRecords::failures);
  if (!loaded) {
    std::fprintf(stderr, "token_scan: %s\n", loaded.error().message.c_str());
    std::exit(1);
  }
  return scanned;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: token_scan DB [rounds]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  double best = 0;
  Scanned scanned;
  for (int round = 0; round < rounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    auto database = AuditDatabase::open(argv[1]);
    if (!database) {
      std::fprintf(stderr, "token_scan: %s\n", database.error().message.c_str());
      return 1;
    }
    scanned = scan(database.value());
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (round == 0 || seconds < best) best = seconds;
  }
  if (scanned.tokens == 0) {
    std::fprintf(stderr, "token_scan: no tokens read\n");
    return 1;
  }
  std::printf("%.3f %ld %ld\n", best, scanned.records, scanned.tokens);
  return 0;
}
