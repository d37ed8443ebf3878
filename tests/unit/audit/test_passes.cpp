// The audit room's passes, driven as `llmrepro audit` drives them (load_or_resume, then execute)
// against the embedded reference engine on loopback: what lands in the database, what --resume
// skips, where a budget stops, and that a bad value stops the run before any request.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "audit/request.hpp"
#include "audit/run.hpp"
#include "core/clock.hpp"
#include "core/verdict.hpp"
#include "store/audit_database.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro;

namespace {

// Two prompts of four tokens each: 2 prompts x 2 runs x 2 levels = 8 planned requests.
const char* const k_suite =
    R"({"id": "weather", "prompt": "The weather in the valley", "max_tokens": 4}
{"id": "sky", "prompt": "In the morning the sky is", "max_tokens": 4}
)";
constexpr std::size_t k_planned = 8;

// A request as the CLI would make it from `--suite S --db D --runs 2 --concurrency 1,2
// --engine-batch-invariant`, notices collected instead of printed.
audit::AuditRequest small_request(const testing::TempDir& dir, std::vector<std::string>& notes) {
  audit::AuditRequest request;
  request.suite = dir.write("suite.jsonl", k_suite);
  request.given.suite = true;
  request.db = dir.file("audit.db");
  request.runs = 2;
  request.levels = {1, 2};
  // Every reduction order fixed, so that both runs at both levels agree token for token.
  request.engine_batch_invariant = true;
  request.quiet = true;
  request.notify = [&notes](std::string_view text) { notes.emplace_back(text); };
  request.tool = {"test", "unit", "none"};
  return request;
}

// The run's passes in the CLI's order; the error of the first pass that failed.
core::Result<void> run_audit(audit::AuditRun& run) {
  LLMREPRO_TRY(audit::load_or_resume(run));
  return audit::execute(run);
}

core::AuditData stored(const std::string& db) {
  auto database = store::AuditDatabase::open(db);
  REQUIRE_MESSAGE(database, (database ? "" : database.error().message));
  auto data = database->load();
  REQUIRE_MESSAGE(data, (data ? "" : data.error().message));
  return std::move(*data);
}

} // namespace

TEST_CASE("audit::execute records every planned request once and judges the run") {
  const testing::TempDir dir("audit-passes");
  std::vector<std::string> notes;
  const audit::AuditRequest request = small_request(dir, notes);
  const core::SystemClock clock;
  audit::AuditRun run{request, clock};
  const auto done = run_audit(run);
  REQUIRE_MESSAGE(done, (done ? "" : done.error().message));
  CHECK(run.ran);
  CHECK_FALSE(run.interrupted);
  CHECK(run.plan.size() == k_planned);
  CHECK(run.recorded.size() == 0);

  const core::AuditData data = stored(request.db);
  CHECK(data.records.size() == k_planned);
  CHECK(data.info.status == "complete");
  CHECK(data.info.finished_ms >= data.info.started_ms);
  CHECK(data.budget_stop.empty());
  std::map<int, int> per_prompt;
  for (const auto& record : data.records) {
    CHECK(record.outcome.ok);
    ++per_prompt[record.planned.prompt_index];
  }
  CHECK(per_prompt == std::map<int, int>{{0, 4}, {1, 4}});
  // Batch-invariant kernels: one completion per prompt, so no prompt is unstable.
  CHECK(run.report().analysis.prompts.size() == 2);
  for (const auto& prompt : run.report().analysis.prompts) CHECK_FALSE(prompt.unstable);
  CHECK(run.report().verdict.status == core::VerdictStatus::pass);
  CHECK(notes.empty()); // quiet, and nothing went wrong
}

TEST_CASE("audit::execute fails a gate the run cannot meet") {
  const testing::TempDir dir("audit-verdict");
  std::vector<std::string> notes;
  audit::AuditRequest request = small_request(dir, notes);
  // A top-1/top-2 gap is always below 1000 nats: with --fail-on fragile every prompt fails it.
  request.judging.fail_on = "fragile";
  request.judging.given.fail_on = true;
  request.judging.fragile_gap = 1000.0;
  request.judging.given.fragile_gap = true;
  const core::SystemClock clock;
  audit::AuditRun run{request, clock};
  const auto done = run_audit(run);
  REQUIRE_MESSAGE(done, (done ? "" : done.error().message));
  CHECK(stored(request.db).records.size() == k_planned);
  CHECK(stored(request.db).config.analysis.fragile_gap == 1000.0);
  for (const auto& prompt : run.report().analysis.prompts) CHECK(prompt.fragile == true);
  CHECK(run.report().verdict.status == core::VerdictStatus::fail);
}

TEST_CASE("audit::execute stops at --max-requests and --resume sends only the rest") {
  const testing::TempDir dir("audit-budget");
  std::vector<std::string> notes;
  audit::AuditRequest request = small_request(dir, notes);
  request.max_requests = 3;
  request.given.max_requests = true;
  const core::SystemClock clock;
  {
    audit::AuditRun run{request, clock};
    const auto done = run_audit(run);
    REQUIRE_MESSAGE(done, (done ? "" : done.error().message));
    REQUIRE(run.budget.has_value());
    CHECK(run.budget->exhausted());
    CHECK(run.report().verdict.status == core::VerdictStatus::error);
  }
  const core::AuditData first = stored(request.db);
  CHECK(first.records.size() == 3);
  CHECK(first.info.status == "partial");
  CHECK(first.budget_stop == "budget --max-requests 3 reached: 3 of 8 planned requests sent; 2 "
                             "prompts undecided: weather, sky");

  // --resume with a larger budget: the three recorded requests are skipped, the five left sent.
  audit::AuditRequest resumed = small_request(dir, notes);
  resumed.resume = true;
  resumed.given.suite = false;
  resumed.suite.clear();
  resumed.max_requests = 100;
  resumed.given.max_requests = true;
  audit::AuditRun run{resumed, clock};
  const auto done = run_audit(run);
  REQUIRE_MESSAGE(done, (done ? "" : done.error().message));
  CHECK(run.recorded.size() == 3);
  const core::AuditData second = stored(request.db);
  CHECK(second.records.size() == k_planned);
  CHECK(second.info.status == "complete");
  CHECK(second.budget_stop.empty()); // this run was not stopped: the stored line is cleared
  // The first run's records are kept as they were recorded, not sent again.
  for (std::size_t i = 0; i < first.records.size(); ++i) {
    CHECK(second.records[i].planned == first.records[i].planned);
    CHECK(second.records[i].outcome.started_ms == first.records[i].outcome.started_ms);
  }
  CHECK(run.report().verdict.status == core::VerdictStatus::pass);
}

TEST_CASE("audit::load_or_resume refuses a bad value before any request or database") {
  const testing::TempDir dir("audit-usage");
  std::vector<std::string> notes;
  audit::AuditRequest request = small_request(dir, notes);
  const core::SystemClock clock;
  SUBCASE("--runs 0") {
    request.runs = 0;
    audit::AuditRun run{request, clock};
    const auto loaded = audit::load_or_resume(run);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().code == core::ErrorCode::usage);
    CHECK(loaded.error().message == "--runs must be at least 1 (got 0)");
  }
  SUBCASE("--resume of a database that does not exist") {
    request.resume = true;
    audit::AuditRun run{request, clock};
    const auto loaded = audit::load_or_resume(run);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().code == core::ErrorCode::usage);
    CHECK(loaded.error().message == "--resume: no audit database at '" + request.db + "'");
  }
  SUBCASE("--adaptive-epsilon without --adaptive") {
    request.given.adaptive_epsilon = true;
    audit::AuditRun run{request, clock};
    const auto loaded = audit::load_or_resume(run);
    REQUIRE_FALSE(loaded);
    CHECK(loaded.error().message == "--adaptive-epsilon sets how --adaptive decides; add "
                                    "--adaptive");
  }
  CHECK_FALSE(std::filesystem::exists(request.db));
  CHECK(notes.empty());
}
