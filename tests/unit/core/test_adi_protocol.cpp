// --profile adi: its plan (bursts and serial rounds), the text divergence in bytes and
// characters, and the protocol's figures over an analysis built from scripted records.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "core/adi_protocol.hpp"
#include "core/analysis.hpp"
#include "core/plan.hpp"
#include "core/text_divergence.hpp"
#include "tests/support/request_records.hpp"

using llmrepro::testing::failed_record;
using llmrepro::testing::numbered_suite;
using llmrepro::testing::ok_record;
namespace core = llmrepro::core;

namespace {

core::PlanConfig adi_plan_config() {
  core::PlanConfig config;
  config.levels = core::adi_levels();
  config.runs = core::k_adi_burst;
  config.serial_runs = core::k_adi_serial_runs;
  config.bursts = config.serial_rounds = true;
  config.seed = 5;
  return config;
}

core::Completion adi_text(std::string text, std::string fingerprint = "fp_a") {
  core::Completion completion;
  completion.text = std::move(text);
  completion.system_fingerprint = std::move(fingerprint);
  return completion;
}

std::optional<core::TextDivergence> parted(std::vector<std::string_view> texts) {
  return core::first_text_divergence(texts);
}

} // namespace

TEST_CASE("adi plan: serial rounds at level 1, a burst per prompt above it") {
  const core::Suite suite = numbered_suite(4);
  const core::PlanConfig config = adi_plan_config();
  const core::Plan plan = core::make_plan(suite, config);
  REQUIRE(plan.waves.size() == 2);
  CHECK(plan.size() == 4 * 3 + 4 * 10);

  const core::Wave& serial = plan.waves[0];
  CHECK(serial.concurrency == 1);
  CHECK(serial.rounds);
  CHECK_FALSE(serial.burst);
  REQUIRE(serial.requests.size() == 12);
  // Round by round, the prompts in one order in every round.
  std::vector<int> first_round;
  for (std::size_t i = 0; i < 4; ++i) first_round.push_back(serial.requests[i].prompt_index);
  CHECK(std::set<int>(first_round.begin(), first_round.end()) == std::set<int>{0, 1, 2, 3});
  for (std::size_t i = 0; i < serial.requests.size(); ++i) {
    CHECK(serial.requests[i].repeat == static_cast<int>(i / 4));
    CHECK(serial.requests[i].prompt_index == first_round[i % 4]);
  }

  const core::Wave& burst = plan.waves[1];
  CHECK(burst.concurrency == 10);
  CHECK(burst.burst);
  CHECK_FALSE(burst.rounds);
  REQUIRE(burst.requests.size() == 40);
  // Each prompt's ten repeats together, in order, each prompt once.
  std::set<int> prompts;
  for (std::size_t i = 0; i < burst.requests.size(); ++i) {
    CHECK(burst.requests[i].prompt_index == burst.requests[i - i % 10].prompt_index);
    CHECK(burst.requests[i].repeat == static_cast<int>(i % 10));
    prompts.insert(burst.requests[i].prompt_index);
  }
  CHECK(prompts.size() == 4);

  // plan_contains follows the runs of each level.
  CHECK(core::planned_repeats(config, core::ProbeKind::sweep, 1) == 3);
  CHECK(core::planned_repeats(config, core::ProbeKind::sweep, 10) == 10);
  CHECK(core::plan_contains(config, 4, {0, 2, 1, core::ProbeKind::sweep, 2}));
  CHECK_FALSE(core::plan_contains(config, 4, {0, 2, 1, core::ProbeKind::sweep, 3}));
  CHECK(core::plan_contains(config, 4, {0, 2, 10, core::ProbeKind::sweep, 9}));
  CHECK_FALSE(core::plan_contains(config, 4, {0, 2, 10, core::ProbeKind::sweep, 10}));
}

TEST_CASE("a standard plan keeps one shuffled wave per level") {
  core::PlanConfig config = adi_plan_config();
  config.bursts = config.serial_rounds = false;
  config.serial_runs.reset();
  const core::Plan plan = core::make_plan(numbered_suite(4), config);
  REQUIRE(plan.waves.size() == 2);
  CHECK(plan.waves[0].requests.size() == 40);
  CHECK_FALSE(plan.waves[0].rounds);
  CHECK_FALSE(plan.waves[1].burst);
}

TEST_CASE("first_text_divergence: bytes, and the whole characters before them") {
  CHECK_FALSE(parted({}));
  CHECK_FALSE(parted({"same"}));
  CHECK_FALSE(parted({"same", "same", "same"}));
  CHECK(parted({"abc", "abd"}) == core::TextDivergence{2, 2});
  // One text ends where the other goes on.
  CHECK(parted({"abc", "abcd"}) == core::TextDivergence{3, 3});
  CHECK(parted({"", "x"}) == core::TextDivergence{0, 0});
  // "café" against "cafè": é is C3 A9, è is C3 A8; the texts share 4 bytes, and 3 whole
  // characters, since the fourth character's second byte differs.
  CHECK(parted({"caf\xC3\xA9!", "caf\xC3\xA8!"}) == core::TextDivergence{4, 3});
  // Multi-byte characters before the divergence count once each: "日本 " is 7 bytes.
  CHECK(parted({"\xE6\x97\xA5\xE6\x9C\xAC a", "\xE6\x97\xA5\xE6\x9C\xAC b"}) ==
        core::TextDivergence{7, 3});
  // The earliest parting over three texts.
  CHECK(parted({"hello world", "hello there", "help"}) == core::TextDivergence{3, 3});
}

TEST_CASE("adi_summary: the protocol's figures over scripted runs") {
  // p0: every run the same. p1: the burst parts from the serial runs at byte 4 ("café" vs
  // "cafè"). p2: one serial run differs at the end, and the fingerprint changed under it.
  // p3: a failed burst request.
  const core::Suite suite = numbered_suite(4);
  std::vector<core::RequestRecord> records;
  for (int r = 0; r < 3; ++r) {
    records.push_back(ok_record(0, 1, r, adi_text("Paris")));
    records.push_back(ok_record(1, 1, r, adi_text("caf\xC3\xA9")));
    records.push_back(ok_record(2, 1, r, r == 2 ? adi_text("42.", "fp_b") : adi_text("42")));
    records.push_back(ok_record(3, 1, r, adi_text("yes")));
  }
  for (int r = 0; r < 10; ++r) {
    records.push_back(ok_record(0, 10, r, adi_text("Paris")));
    records.push_back(ok_record(1, 10, r, adi_text("caf\xC3\xA8")));
    records.push_back(ok_record(2, 10, r, adi_text("42")));
    records.push_back(r == 9 ? failed_record(3, 10, r) : ok_record(3, 10, r, adi_text("yes")));
  }
  const core::AuditAnalysis analysis = core::analyse(suite, records, core::AnalysisConfig{});
  REQUIRE(analysis.prompts.size() == 4);
  CHECK(analysis.prompts[1].text_divergence == core::TextDivergence{4, 3});
  CHECK(analysis.prompts[2].text_divergence == core::TextDivergence{2, 2});
  CHECK(analysis.prompts[2].fingerprints == 2);
  CHECK(analysis.summary.fingerprint_drift_prompts == 1);
  // Level by level: p1's levels each agree within themselves; p2 parts among the serial runs.
  CHECK_FALSE(analysis.prompts[1].by_concurrency[0].text_divergence);
  CHECK(analysis.prompts[2].by_concurrency[0].text_divergence == core::TextDivergence{2, 2});
  CHECK_FALSE(analysis.prompts[2].by_concurrency[1].text_divergence);
  CHECK(*core::modal_completion_share(analysis.prompts[1]) == doctest::Approx(10.0 / 13.0));
  CHECK(*core::modal_completion_share(analysis.prompts[3]) == doctest::Approx(12.0 / 13.0));

  core::AuditConfig config;
  config.plan.profile = core::AuditProfile::adi;
  config.plan.levels = core::adi_levels();
  config.plan.runs = 10;
  config.plan.serial_runs = 3;
  config.requests.serial_spacing_s = 0.5;
  const core::AdiSummary s = core::adi_summary(analysis, config);
  CHECK(s.burst == 10);
  CHECK(s.serial_runs == 3);
  CHECK(s.cases == 4);
  CHECK(s.diverged == 2);
  CHECK(s.burst_diverged == 0);
  CHECK(s.serial_diverged == 1);
  CHECK(s.burst_differs_from_serial == 1);
  CHECK(s.text_diverged == 2);
  CHECK(s.min_divergence_bytes == 2);
  CHECK(*s.median_divergence_bytes == doctest::Approx(3.0));
  CHECK(s.min_divergence_characters == 2);
  CHECK(*s.median_divergence_characters == doctest::Approx(2.5));
  // (13 + 10 + 12 + 12) / 13 / 4 cases.
  CHECK(*s.mean_modal_share == doctest::Approx(47.0 / 52.0));
  CHECK(*s.min_modal_share == doctest::Approx(10.0 / 13.0));
  CHECK(s.fingerprints == 2);
  CHECK(s.fingerprint_drift_cases == 1);
  CHECK(s.diverged_with_fingerprint_drift == 1);
  const std::vector<std::string> lines = core::adi_lines(s);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "4 cases, each a burst of 10 concurrent requests and 3 serial requests 0.5 s "
                    "apart (--serial-spacing; the leaderboard's protocol waits 60 s)");
  CHECK(lines[1] == "diverged 2 of 4: within the burst 0, among the serial requests 1, the "
                    "burst's modal response not the serial one 1");
  CHECK(lines[2] == "first divergence over the 2 cases whose texts part: byte 3 (median; least "
                    "2), character 2.5 (median; least 2)");
  CHECK(lines[3] == "modal share 0.904 (mean over the cases; least 0.769)");
  CHECK(lines[4] == "fingerprint drift in 1 of 4 cases (2 distinct fingerprints over the audit; "
                    "1 of the drifting cases diverged)");
  // Several endpoints: each line names its endpoint.
  const std::vector<std::string> both = core::adi_lines(std::vector<core::AdiSummary>{s, s});
  REQUIRE(both.size() == 10);
  CHECK(both[5].rfind("#1 4 cases", 0) == 0);
}
