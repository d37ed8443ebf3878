// Recorded requests built by hand, for the analysis tests of every room: one that succeeded with
// a given completion, planned as (endpoint 0, prompt, level, probe kind, repeat).
#pragma once

#include <utility>

#include "core/request_record.hpp"

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

} // namespace llmrepro::testing
