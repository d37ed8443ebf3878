// What an audit records for each logical request, and the sink it records into.
#pragma once

#include <cstdint>
#include <string>

#include "core/completion.hpp"
#include "core/plan.hpp"
#include "core/result.hpp"

namespace llmrepro::core {

struct RequestOutcome {
  bool ok = false;
  int http_status = 0; // last HTTP status seen; 0 when no response arrived
  std::string error;   // why it failed, after the last attempt; empty on success
  int attempts = 0;    // 1 plus the retries spent
  std::int64_t started_ms = 0;
  std::int64_t finished_ms = 0;
  Completion completion; // meaningful when ok
};

struct RequestRecord {
  PlannedRequest planned;
  RequestOutcome outcome;
};

// Where finished requests go as they finish. core declares it; store implements it with
// SQLite (store::DatabaseSink, on a writer thread).
class RecordSink {
public:
  virtual ~RecordSink() = default;
  // Called once per logical request, after its last attempt. A failure here stops the audit.
  // Taken by value: the driver hands its record over (a 256-token completion is worth not copying).
  virtual Result<void> record(RequestRecord record) = 0;
};

} // namespace llmrepro::core
