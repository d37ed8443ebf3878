// Recorded requests built by hand, for the analysis tests of every room: one that succeeded with
// a given completion, or failed with an HTTP 500, planned as (endpoint 0, prompt, level, probe
// kind, repeat); and a suite of numbered prompts for them to index.
#pragma once

#include <string>
#include <utility>

#include "core/request_record.hpp"
#include "core/suite.hpp"

namespace llmrepro::testing {

inline core::RequestRecord ok_record(int prompt, int concurrency, int repeat,
                                     core::Completion completion,
                                     core::ProbeKind probe = core::ProbeKind::sweep) {
  core::RequestRecord record;
  record.planned = {0, prompt, concurrency, probe, repeat};
  record.outcome.ok = true;
  record.outcome.attempts = 1;
  record.outcome.completion = std::move(completion);
  return record;
}

// A request that failed for good with HTTP 500 after `attempts` attempts, `error` its reason.
inline core::RequestRecord failed_record(int prompt, int concurrency, int repeat,
                                         std::string error = "HTTP 500", int attempts = 1) {
  core::RequestRecord record;
  record.planned = {0, prompt, concurrency, core::ProbeKind::sweep, repeat};
  record.outcome.error = std::move(error);
  record.outcome.http_status = 500;
  record.outcome.attempts = attempts;
  return record;
}

// `prompts` text prompts with ids p0, p1, ... and text "x".
inline core::Suite numbered_suite(int prompts) {
  core::Suite suite;
  for (int i = 0; i < prompts; ++i)
    suite.prompts.push_back(core::Prompt{.id = "p" + std::to_string(i), .text = "x"});
  return suite;
}

} // namespace llmrepro::testing
