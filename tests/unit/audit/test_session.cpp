#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "audit/session.hpp"
#include "core/audit_report.hpp"
#include "core/probe_text.hpp"
#include "report/json_report.hpp"
#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;

namespace {

core::TokenLogprob token(std::string text, double logprob, double runner_up) {
  return core::TokenLogprob{text, logprob, {{text, logprob}, {"~", runner_up}}};
}

// Prompt p's completion: "a b c" or, for a flipped run, "a x y" (diverging at token 1).
core::RequestRecord make_record(int endpoint, int prompt, int concurrency, core::ProbeKind probe,
                                int repeat, bool flipped, bool ok = true) {
  core::RequestRecord record;
  record.planned = {endpoint, prompt, concurrency, probe, repeat};
  auto& outcome = record.outcome;
  outcome.ok = ok;
  outcome.http_status = ok ? 200 : 500;
  outcome.error = ok ? "" : "HTTP 500";
  outcome.attempts = 1;
  outcome.started_ms = 1000 + 10 * repeat;
  outcome.finished_ms = 1050 + 10 * repeat + concurrency;
  if (!ok) return record;
  auto& completion = outcome.completion;
  completion.has_logprobs = true;
  completion.model = "m";
  completion.system_fingerprint = "fp" + std::to_string(endpoint);
  completion.tokens = {token("a", -0.1, -2.0), token(flipped ? " x" : " b", -0.7, -0.72),
                       token(flipped ? " y" : " c", -0.2, -3.0)};
  completion.completion_tokens = 3;
  completion.text = flipped ? "a x y" : "a b c";
  return record;
}

core::AuditData make_header() {
  core::AuditData header;
  header.info = {"audit-loader", 1000, 0, "complete"};
  header.config.plan.runs = 3;
  header.config.plan.levels = {1, 8};
  header.config.plan.probes = {core::ProbeKind::sweep, core::ProbeKind::prefix};
  header.endpoints = {{"http://127.0.0.1:1", "openai-chat", "m", false, {}},
                      {"http://127.0.0.1:2", "openai-chat", "m", false, {}}};
  for (const char* id : {"p0", "p1", "p2"}) {
    core::Prompt prompt;
    prompt.id = id;
    prompt.text = std::string("say ") + id;
    header.suite.prompts.push_back(prompt);
  }
  header.suite.prompts[1].expect = {core::Expectation::Kind::contains, "b", "", 0.0, 0.0};
  return header;
}

} // namespace

TEST_CASE("load_session") {
  const testing::TempDir dir("loader");
  const std::string path = dir.file("audit.db");
  auto database = store::AuditDatabase::create(path, make_header());
  REQUIRE(database);
  // Recorded interleaved across prompts, endpoints and probes, as a real run records them.
  int recorded = 0;
  for (int repeat = 0; repeat < 3; ++repeat)
    for (int level : {1, 8})
      for (int endpoint : {0, 1})
        for (int prompt : {2, 0, 1}) {
          const bool flipped = prompt == 1 && level == 8 && repeat == 2 && endpoint == 0;
          const bool failed = prompt == 2 && repeat == 1 && level == 1 && endpoint == 1;
          REQUIRE(database->record(make_record(endpoint, prompt, level, core::ProbeKind::sweep,
                                               repeat, flipped, !failed)));
          ++recorded;
        }
  // Prefix trials of prompt 0 at endpoint 0: warm trials diverge from cold ones.
  for (int repeat = 0; repeat < 4; ++repeat) {
    REQUIRE(database->record(
        make_record(0, 0, 1, core::ProbeKind::prefix, repeat, core::prefix_trial_is_warm(repeat))));
    ++recorded;
  }
  const core::ToolInfo tool{"test", "test build", "not compiled"};

  SUBCASE("gives exactly the report of the whole audit in memory") {
    auto whole = database->load();
    REQUIRE(whole);
    const auto expected = core::make_audit_report(*whole, tool);
    auto streamed = audit::load_session(*database, {.tool = tool});
    REQUIRE(streamed);
    CHECK(report::render_json(streamed->report) == report::render_json(expected));
    // Read on the analysis's own thread, as on a machine of one: the same report.
    auto alone = audit::load_session(*database, {.tool = tool, .read_ahead = false});
    REQUIRE(alone);
    CHECK(report::render_json(alone->report) == report::render_json(expected));
    CHECK(streamed->report.analysis.summary.unstable_prompts == 1);
    CHECK(streamed->report.analysis.summary.failed_requests == 0);
    CHECK(streamed->report.endpoints.at(1).summary.failed_requests == 1);
    REQUIRE(streamed->report.probes.size() == 2);
    CHECK(streamed->report.probes[1].prefix_drift_prompts == 1);
    REQUIRE(streamed->report.comparison);
    CHECK(streamed->report.comparison->agreeing_prompts == 3);
  }

  SUBCASE("keeps every record's key and outcome in recorded order, without text and tokens") {
    auto whole = database->load();
    auto streamed = audit::load_session(*database, {.tool = tool});
    REQUIRE(whole);
    REQUIRE(streamed);
    const auto& records = streamed->data->records;
    REQUIRE(records.size() == static_cast<std::size_t>(recorded));
    for (std::size_t i = 0; i < records.size(); ++i) {
      CHECK(records[i].planned == whole->records[i].planned);
      CHECK(records[i].outcome.ok == whole->records[i].outcome.ok);
      CHECK(records[i].outcome.finished_ms == whole->records[i].outcome.finished_ms);
      CHECK(records[i].outcome.completion.text.empty());
      CHECK(records[i].outcome.completion.tokens.empty());
    }
    CHECK(streamed->data->endpoints[1].fingerprints == std::vector<std::string>{"fp1"});
  }

  SUBCASE("analyses only the records `keep` keeps, and leaves the verdict unjudged if asked") {
    audit::SessionOptions options;
    options.tool = tool;
    options.judge = false;
    // Endpoint 0's level-1 sweep only: 3 prompts x 3 runs, none of them flipped.
    options.keep = [](const core::RequestRecord& record) {
      return record.planned.endpoint_index == 0 && record.planned.concurrency == 1 &&
             record.planned.probe == core::ProbeKind::sweep;
    };
    auto kept = audit::load_session(*database, options);
    REQUIRE(kept);
    CHECK(kept->data->records.size() == static_cast<std::size_t>(recorded));
    CHECK(kept->report.analysis.summary.unstable_prompts == 0);
    CHECK(kept->report.analysis.summary.requests == 9);
  }

  SUBCASE("`adjust` changes the header before the analysis and the data after the load") {
    audit::SessionOptions options;
    options.tool = tool;
    int calls = 0;
    options.adjust = [&calls](core::AuditData& data) -> core::Result<void> {
      ++calls;
      data.config.plan.runs = 7;
      return {};
    };
    auto adjusted = audit::load_session(*database, options);
    REQUIRE(adjusted);
    CHECK(calls == 2);
    CHECK(adjusted->data->config.plan.runs == 7);
    options.adjust = [](core::AuditData&) -> core::Result<void> {
      return core::make_error(core::ErrorCode::input, "refused");
    };
    auto refused = audit::load_session(*database, options);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message == "refused");
  }

  SUBCASE("hands each prompt's records over once, in prompt order, with their tokens") {
    std::vector<int> prompts;
    std::vector<std::size_t> sizes;
    auto loaded = database->load([&](const core::AuditData& header, int prompt,
                                     const std::vector<core::RequestRecord>& records) {
      CHECK(header.suite.prompts.size() == 3);
      prompts.push_back(prompt);
      sizes.push_back(records.size());
      for (const auto& record : records) {
        CHECK(record.planned.prompt_index == prompt);
        if (record.outcome.ok) CHECK(record.outcome.completion.tokens.size() == 3);
      }
      return core::Result<void>{};
    });
    REQUIRE(loaded);
    CHECK(prompts == std::vector<int>{0, 1, 2});
    CHECK(sizes == std::vector<std::size_t>{16, 12, 12});
  }

  SUBCASE("an error from the visitor stops the load and is returned") {
    int visits = 0;
    auto loaded =
        database->load([&](const core::AuditData&, int, const std::vector<core::RequestRecord>&) {
          ++visits;
          return core::Result<void>{core::make_error(core::ErrorCode::input, "visitor refused")};
        });
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().message == "visitor refused");
    CHECK(visits == 1);
  }
}

TEST_CASE("a streamed report holds one record's tokens at a time and is the whole audit's") {
  // Random audits, recorded in a shuffled order, at two levels and two endpoints, with failures,
  // a prompt whose completions differ in their tokens and logprobs, one whose runs sometimes come
  // back without tokens (text mode), and one that reasons; every other one with prefix-cache
  // trials whose warm side flips, half of those in the determinism profile, which compares
  // endpoint 1's sides too.
  const core::ToolInfo tool{"test", "test build", "not compiled"};
  for (unsigned seed = 1; seed <= 12; ++seed) {
    CAPTURE(seed);
    std::mt19937 random(seed);
    const testing::TempDir dir("streamed-" + std::to_string(seed));
    core::AuditData header = make_header();
    header.config.plan.runs = 5;
    header.config.plan.levels = {1, 4};
    const bool prefix = seed % 2 == 0;
    header.config.plan.probes = {core::ProbeKind::sweep};
    if (prefix) header.config.plan.probes.push_back(core::ProbeKind::prefix);
    if (seed % 4 == 0) header.config.plan.profile = core::AuditProfile::deterministic;
    auto database = store::AuditDatabase::create(dir.file("audit.db"), header);
    REQUIRE(database);
    std::vector<core::RequestRecord> records;
    for (int endpoint : {0, 1})
      for (int prompt : {0, 1, 2})
        for (int level : {1, 4})
          for (int repeat = 0; repeat < 5; ++repeat) {
            const bool flipped = std::uniform_int_distribution<int>(0, 3)(random) == 0;
            const bool failed = std::uniform_int_distribution<int>(0, 9)(random) == 0;
            core::RequestRecord record = make_record(
                endpoint, prompt, level, core::ProbeKind::sweep, repeat, flipped, !failed);
            auto& completion = record.outcome.completion;
            if (!failed) {
              // Every run's own logprobs: drift to measure.
              const double moved = std::uniform_real_distribution<double>(0.0, 0.01)(random);
              completion.tokens[2].logprob -= moved;
              completion.tokens[2].top[0].logprob -= moved;
            }
            if (!failed && prompt == 1 && std::uniform_int_distribution<int>(0, 4)(random) == 0)
              completion.tokens.clear(); // text mode
            if (!failed && prompt == 2) {
              completion.reasoning_text = "think";
              completion.reasoning_tokens = {token("think", -0.3, -1.0)};
              completion.reasoning_split = core::ReasoningSplit::separate;
            }
            records.push_back(std::move(record));
          }
    for (int endpoint : {0, 1})
      for (int prompt : {0, 1, 2})
        for (int repeat = 0; prefix && repeat < 6; ++repeat) {
          const bool warm = core::prefix_trial_is_warm(repeat);
          const bool flipped = warm && std::uniform_int_distribution<int>(0, 2)(random) == 0;
          const bool failed = std::uniform_int_distribution<int>(0, 9)(random) == 0;
          records.push_back(
              make_record(endpoint, prompt, 1, core::ProbeKind::prefix, repeat, flipped, !failed));
        }
    std::shuffle(records.begin(), records.end(), random);
    REQUIRE(database->record_batch(records));

    auto whole = database->load();
    REQUIRE(whole);
    const auto expected = core::make_audit_report(*whole, tool);
    // What the visitor is handed: no tokens until it reads them, and one record's at a time.
    std::size_t most_held = 0;
    auto checked = database->load_streamed([&](const core::AuditData&, int,
                                               const std::vector<core::RequestRecord>& group,
                                               core::RecordTokens& tokens) -> core::Result<void> {
      const auto held = [&group] {
        return static_cast<std::size_t>(
            std::count_if(group.begin(), group.end(), [](const core::RequestRecord& record) {
              return !record.outcome.completion.tokens.empty();
            }));
      };
      CHECK(held() == 0);
      for (std::size_t i = 0; i < group.size(); ++i) {
        LLMREPRO_TRY(tokens.read(i));
        most_held = std::max(most_held, held());
        const std::string text = group[i].outcome.completion.text;
        tokens.drop(i);
        CHECK(group[i].outcome.completion.tokens.empty());
        CHECK(group[i].outcome.completion.text == text); // the text stays
        // Read again, the same tokens come back.
        LLMREPRO_TRY(tokens.read(i));
        tokens.drop(i);
      }
      return {};
    });
    REQUIRE(checked);
    CHECK(most_held == 1);

    auto streamed = audit::load_session(*database, {.tool = tool});
    REQUIRE(streamed);
    CHECK(report::render_json(streamed->report) == report::render_json(expected));
    // Read on the analysis's own thread, as on a machine of one: the same report.
    auto alone = audit::load_session(*database, {.tool = tool, .read_ahead = false});
    REQUIRE(alone);
    CHECK(report::render_json(alone->report) == report::render_json(expected));
    REQUIRE(streamed->report.probes.size() == (prefix ? 2U : 1U));
    if (prefix) {
      // Every prompt's sides compared, each with its first cold trial.
      const auto& sides = streamed->report.probes[1].prefix;
      REQUIRE(sides.size() == 3);
      for (const auto& drift : sides) CHECK(drift.cold_drift_from_reference.positions_compared > 0);
    }
    auto lean = audit::load_session(*database, {.tool = tool, .lean = true});
    REQUIRE(lean);
    CHECK(lean->report.analysis.summary.requests == expected.analysis.summary.requests);
  }
}
