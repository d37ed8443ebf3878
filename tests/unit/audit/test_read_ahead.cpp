#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "audit/read_ahead.hpp"

using namespace llmrepro;

namespace {

// A prompt's records as the store hands them: read fills a record's tokens, drop empties them.
// Every call is logged, and must come from the thread that owns the file.
class FakeTokens final : public core::RecordTokens {
public:
  explicit FakeTokens(std::size_t records) : m_tokens(records) {}

  core::Result<void> read(std::size_t index) override {
    check_thread();
    log.push_back("read " + std::to_string(index));
    if (fail_at && reads == *fail_at)
      return core::make_error(core::ErrorCode::input, "record " + std::to_string(index));
    if (throw_at && reads == *throw_at) throw std::runtime_error("reader");
    ++reads;
    m_tokens[index] = {static_cast<int>(index)};
    held = std::max(
        held, static_cast<std::size_t>(std::count_if(m_tokens.begin(), m_tokens.end(),
                                                     [](const auto& t) { return !t.empty(); })));
    return {};
  }
  void drop(std::size_t index) override {
    check_thread();
    log.push_back("drop " + std::to_string(index));
    m_tokens[index].clear();
  }
  // What the analysis sees of a record (read on its own thread, after read() returned).
  bool has_tokens(std::size_t index) const {
    return m_tokens[index] == std::vector<int>{static_cast<int>(index)};
  }
  bool none_held() const {
    return std::all_of(m_tokens.begin(), m_tokens.end(), [](const auto& t) { return t.empty(); });
  }

  std::vector<std::string> log;
  std::size_t reads = 0;
  std::size_t held = 0;                // the most records holding tokens at once
  std::optional<std::size_t> fail_at;  // the read (counted from 0) that fails
  std::optional<std::size_t> throw_at; // the read that throws
  bool wrong_thread = false;

private:
  void check_thread() {
    if (std::this_thread::get_id() != m_owner) wrong_thread = true;
  }
  std::thread::id m_owner = std::this_thread::get_id();
  std::vector<std::vector<int>> m_tokens;
};

// An analysis as core::AuditReportBuilder::add_streamed_prompt reads: a reference read first and
// again in its turn, each read dropped before the next, then settled.
core::Result<void> analyse(core::RecordTokens& tokens, const FakeTokens& source,
                           const std::vector<std::size_t>& order, bool announce,
                           std::vector<std::string>& seen) {
  if (announce) tokens.will_read(order);
  for (std::size_t index : order) {
    LLMREPRO_TRY(tokens.read(index));
    seen.push_back((source.has_tokens(index) ? "has " : "lacks ") + std::to_string(index));
    tokens.drop(index);
  }
  tokens.settle();
  seen.push_back(source.none_held() ? "settled" : "not settled");
  return {};
}

std::vector<std::string> expected_log(const std::vector<std::size_t>& order) {
  std::vector<std::string> log;
  for (std::size_t index : order) {
    log.push_back("read " + std::to_string(index));
    log.push_back("drop " + std::to_string(index));
  }
  return log;
}

std::vector<std::string> reads_and_drops(const std::vector<std::string>& log, bool reads) {
  std::vector<std::string> out;
  for (const auto& entry : log)
    if (entry.starts_with(reads ? "read" : "drop")) out.push_back(entry);
  return out;
}

} // namespace

TEST_CASE("ReadAhead: the analysis takes the records in its order, each with its tokens") {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    const std::size_t records = 1 + random() % 40;
    std::vector<std::size_t> order(records);
    for (std::size_t i = 0; i < records; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), random);
    // A probe's reference: read first, and again in its turn.
    order.insert(order.begin(), order[random() % records]);
    const bool announce = trial % 4 != 3;
    const std::size_t depth = 2 + random() % 8;
    FakeTokens source(records);
    std::vector<std::string> seen;
    audit::ReadAhead ahead(source, depth);
    const auto outcome = ahead.run(
        [&](core::RecordTokens& tokens) { return analyse(tokens, source, order, announce, seen); });
    REQUIRE(outcome);
    CHECK_FALSE(source.wrong_thread);
    std::vector<std::string> expected;
    for (std::size_t index : order) expected.push_back("has " + std::to_string(index));
    expected.push_back("settled");
    CHECK(seen == expected);
    // Read in the order announced, every read dropped once, in order.
    const auto log = expected_log(order);
    CHECK(reads_and_drops(source.log, true) == reads_and_drops(log, true));
    CHECK(reads_and_drops(source.log, false) == reads_and_drops(log, false));
    CHECK(source.none_held());
    // Ahead by `depth` at most, and drops lag by as many; unannounced, one at a time.
    CHECK(source.held <= 2 * depth + 1);
    if (!announce) CHECK(source.log == log);
  }
}

TEST_CASE("ReadAhead: a failed read ends the analysis with its error, and nothing stays held") {
  for (std::size_t fail_at = 0; fail_at < 12; ++fail_at) {
    CAPTURE(fail_at);
    FakeTokens source(10);
    source.fail_at = fail_at;
    std::vector<std::size_t> order = {3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    std::vector<std::string> seen;
    audit::ReadAhead ahead(source, 4);
    const auto outcome = ahead.run(
        [&](core::RecordTokens& tokens) { return analyse(tokens, source, order, true, seen); });
    CHECK_FALSE(source.wrong_thread);
    CHECK(source.none_held());
    if (fail_at >= order.size()) {
      CHECK(outcome);
      continue;
    }
    REQUIRE_FALSE(outcome);
    CHECK(outcome.error().message == "record " + std::to_string(order[fail_at]));
    // The analysis took every record before the failed one, each with its tokens.
    CHECK(seen.size() == fail_at);
  }
}

TEST_CASE("ReadAhead: an analysis that returns early or throws leaves nothing held") {
  FakeTokens source(10);
  audit::ReadAhead early(source, 4);
  const auto outcome = early.run([&](core::RecordTokens& tokens) -> core::Result<void> {
    tokens.will_read({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    LLMREPRO_TRY(tokens.read(0)); // never dropped
    return core::make_error(core::ErrorCode::input, "stopped");
  });
  REQUIRE_FALSE(outcome);
  CHECK(outcome.error().message == "stopped");
  CHECK(source.none_held());

  FakeTokens thrown(4);
  audit::ReadAhead throwing(thrown, 2);
  CHECK_THROWS_AS(throwing.run([&](core::RecordTokens& tokens) -> core::Result<void> {
    tokens.will_read({0, 1, 2, 3});
    LLMREPRO_TRY(tokens.read(0));
    throw std::runtime_error("thrown");
  }),
                  std::runtime_error);
  CHECK(thrown.none_held());

  // The reader throws (out of memory): the analysis ends, waiting for a record or for its drops,
  // and the exception goes on from run().
  for (std::size_t throw_at = 0; throw_at < 5; ++throw_at) { // each of the five reads
    CAPTURE(throw_at);
    FakeTokens source_throws(4);
    source_throws.throw_at = throw_at;
    std::vector<std::string> seen;
    audit::ReadAhead reader_throws(source_throws, 2);
    CHECK_THROWS_AS(reader_throws.run([&](core::RecordTokens& tokens) {
      return analyse(tokens, source_throws, {2, 0, 1, 2, 3}, true, seen);
    }),
                    std::runtime_error);
  }

  // A read outside the announced order is a bug in the analysis, said as one.
  FakeTokens strayed(4);
  audit::ReadAhead stray(strayed, 2);
  const auto misread = stray.run([&](core::RecordTokens& tokens) -> core::Result<void> {
    tokens.will_read({0, 1});
    return tokens.read(1);
  });
  REQUIRE_FALSE(misread);
  CHECK(misread.error().code == core::ErrorCode::internal);
  CHECK(strayed.none_held());
}

namespace {

// Records whose read fills their completion (token i spells "t<i>" with a runner-up above it at
// odd records), as the store reads into the records it handed the analysis.
class RecordsTokens final : public core::RecordTokens {
public:
  explicit RecordsTokens(std::vector<core::RequestRecord>& records) : m_records(&records) {}
  core::Result<void> read(std::size_t index) override {
    core::Completion& completion = (*m_records)[index].outcome.completion;
    completion.has_logprobs = true;
    completion.text.clear();
    for (std::size_t i = 0; i <= index; ++i) {
      core::TokenLogprob token;
      token.token = "t" + std::to_string(i);
      token.logprob = -0.5;
      token.top.push_back({token.token, token.logprob});
      token.top.push_back({"u", index % 2 == 1 ? -0.25 : -2.0});
      completion.text += token.token.view();
      completion.tokens.push_back(token);
    }
    if (index % 3 == 2) completion.text += "!"; // the tokens no longer spell the text
    return {};
  }
  void drop(std::size_t index) override { (*m_records)[index].outcome.completion.tokens.clear(); }

private:
  std::vector<core::RequestRecord>* m_records;
};

} // namespace

TEST_CASE("ReadAhead: each read record's completion facts, computed by the reader") {
  std::vector<core::RequestRecord> records(7);
  for (std::size_t i = 0; i < records.size(); ++i) records[i].outcome.ok = i != 4;
  RecordsTokens source(records);
  audit::ReadAhead ahead(source, 2, &records);
  std::vector<std::string> problems;
  const auto outcome = ahead.run([&](core::RecordTokens& tokens) -> core::Result<void> {
    const std::vector<std::size_t> order = {5, 0, 1, 2, 3, 4, 5, 6};
    tokens.will_read(order);
    for (std::size_t index : order) {
      LLMREPRO_TRY(tokens.read(index));
      const core::CompletionFacts* facts = tokens.facts(index);
      const auto name = std::to_string(index);
      if (!records[index].outcome.ok) {
        if (facts != nullptr) problems.push_back(name + ": facts of a failed record");
      } else if (facts == nullptr) {
        problems.push_back(name + ": no facts");
      } else {
        const auto own = core::completion_facts(records[index].outcome.completion);
        if (facts->identity != own.identity || facts->min_candidates != own.min_candidates ||
            facts->below_runner_up != own.below_runner_up ||
            facts->token_text_mismatch != own.token_text_mismatch)
          problems.push_back(name + ": facts differ from the analysis's own");
        if (facts->below_runner_up != (index % 2 == 1))
          problems.push_back(name + ": below the runner-up is wrong");
        if (facts->token_text_mismatch != (index % 3 == 2))
          problems.push_back(name + ": the spelling is wrong");
        if (facts->min_candidates != 2) problems.push_back(name + ": candidates are wrong");
      }
      tokens.drop(index);
    }
    return {};
  });
  REQUIRE(outcome);
  CHECK(problems.empty());
  for (const auto& problem : problems) MESSAGE(problem);
  // Without the records, no facts: the analysis computes its own.
  RecordsTokens plain_source(records);
  audit::ReadAhead plain(plain_source, 2);
  const auto plain_outcome = plain.run([&](core::RecordTokens& tokens) -> core::Result<void> {
    LLMREPRO_TRY(tokens.read(1));
    if (tokens.facts(1) != nullptr) problems.push_back("facts without records");
    tokens.drop(1);
    return {};
  });
  REQUIRE(plain_outcome);
  CHECK(problems.empty());
}
