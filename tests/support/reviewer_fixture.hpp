// A small audit for the reviewer-facing renderers (HTML, JUnit, Markdown), built from request
// records and analysed by core::make_audit_report, so the reports see real analysis output.
// Prompt 0 branches like the published "Queens" case, prompt 1 carries hostile model text
// (</script>, <img onerror>, quotes, ESC, invalid UTF-8), 2 is stable, 3 stable but fragile,
// 4 failed in every run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/audit_report.hpp"

namespace llmrepro::test {

inline core::TokenLogprob tok(std::string token, double logprob, std::string runner_up,
                              double runner_up_logprob) {
  core::TokenLogprob t;
  t.token = token;
  t.logprob = logprob;
  t.top = {{std::move(token), logprob}, {std::move(runner_up), runner_up_logprob}};
  return t;
}

// A confident token: top-2 two nats below.
inline core::TokenLogprob sure(std::string token) {
  return tok(std::move(token), -0.01, "\u2205", -2.01);
}

inline core::Completion completion_of(std::vector<core::TokenLogprob> tokens) {
  core::Completion c;
  for (const auto& t : tokens) c.text += t.token;
  c.tokens = std::move(tokens);
  c.has_logprobs = true;
  c.finish_reason = "stop";
  c.system_fingerprint = "fp_test";
  c.completion_tokens = static_cast<long>(c.tokens.size());
  return c;
}

inline const std::string k_hostile_script = " </script><script>alert(1)</script>";
inline const std::string k_hostile_img = " <img src=x onerror=alert(1)>";
// Ends in a right-to-left override, which would show "exe.png" as "gnp.exe" (bidi_controls.hpp).
inline const std::string k_hostile_tail = " \"quoted\" & 'single' \x1b[31m\xff|`x` \u202Egnp.exe";
inline const std::string k_hostile_id = "hostile<b>\"id\"</b>";

struct Fixture {
  core::AuditData data;
  core::AuditReport report;
  Fixture() = default;
  Fixture(const Fixture&) = delete; // report.data points into data
  Fixture& operator=(const Fixture&) = delete;
};

inline std::unique_ptr<Fixture> make_fixture() {
  auto fixture = std::make_unique<Fixture>();
  core::AuditData& data = fixture->data;
  data.info = {"audit-fixture", 1700000000000, 1700000060000, "complete"};
  data.config.plan.runs = 4;
  data.config.plan.levels = {1, 8};
  data.config.gates.fail_on.unstable = true;
  data.endpoints.push_back(
      {"http://127.0.0.1:8000/v1", "openai-chat", "tiny-ref", false, {"fp_a", "fp_b"}});
  data.suite.source = "suite.jsonl";
  for (const std::string id : {"capital", k_hostile_id.c_str(), "steady", "near-tie", "broken"}) {
    data.suite.prompts.push_back(core::Prompt{.id = id, .text = "prompt " + id});
  }

  const core::Completion queens = completion_of({sure("The"), sure(" capital"), sure(" is"),
                                                 tok(" Queens", -0.68, " New", -0.71), sure(","),
                                                 tok(" New", -0.2, " NY", -0.24), sure(" York")});
  const core::Completion city =
      completion_of({sure("The"), sure(" capital"), sure(" is"),
                     tok(" New", -0.69, " Queens", -0.70), sure(" York"), sure(" City")});
  const core::Completion ny = completion_of({sure("The"), sure(" capital"), sure(" is"),
                                             tok(" Queens", -0.68, " New", -0.71), sure(","),
                                             tok(" NY", -0.21, " New", -0.23)});
  const core::Completion script = completion_of(
      {sure("Sure"), sure(":"), tok(k_hostile_script, -0.5, k_hostile_img, -0.52), sure(" done")});
  const core::Completion img =
      completion_of({sure("Sure"), sure(":"), tok(k_hostile_img, -0.49, k_hostile_script, -0.51),
                     sure(k_hostile_tail)});
  const core::Completion steady = completion_of({sure("Four"), sure(".")});
  const core::Completion near_tie =
      completion_of({sure("Yes"), tok(",", -0.70, ".", -0.71), sure(" indeed")});

  // (prompt, level) -> the completions of its four runs; a null entry is a failed request.
  const auto runs = [&](int prompt, int level) -> std::vector<const core::Completion*> {
    switch (prompt) {
    case 0:
      return level == 1 ? std::vector{&queens, &queens, &queens, &queens}
                        : std::vector{&queens, &city, &queens, &ny};
    case 1:
      return level == 1 ? std::vector{&script, &script, &img, &script}
                        : std::vector{&script, &img, &script, &script};
    case 2: return {&steady, &steady, &steady, &steady};
    case 3: return {&near_tie, &near_tie, &near_tie, &near_tie};
    default: return {nullptr, nullptr, nullptr, nullptr};
    }
  };
  std::int64_t clock = data.info.started_ms;
  for (int level : data.config.plan.levels) {
    for (int prompt = 0; prompt < 5; ++prompt) {
      const auto completions = runs(prompt, level);
      for (int repeat = 0; repeat < 4; ++repeat) {
        core::RequestRecord record;
        record.planned = {0, prompt, level, core::ProbeKind::sweep, repeat};
        record.outcome.attempts = 1;
        record.outcome.started_ms = clock;
        clock += level == 1 ? 100 : 40;
        record.outcome.finished_ms = clock;
        const core::Completion* completion = completions[static_cast<std::size_t>(repeat)];
        if (completion == nullptr) {
          record.outcome.ok = false;
          record.outcome.http_status = 500;
          record.outcome.error = "HTTP 500: <html>oops</html>";
        } else {
          record.outcome.ok = true;
          record.outcome.http_status = 200;
          record.outcome.completion = *completion;
        }
        data.records.push_back(record);
      }
    }
  }
  fixture->report =
      core::make_audit_report(data, core::ToolInfo{"0.1.0", "test build", "not compiled"});
  return fixture;
}

} // namespace llmrepro::test
