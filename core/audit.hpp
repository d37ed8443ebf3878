// An audit as stored and reported: its configuration, endpoints, suite and recorded requests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/plan.hpp"
#include "core/request_record.hpp"
#include "core/semantic_agreement.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

enum class FailOn { none, unstable, fragile };
const char* to_string(FailOn fail_on);
Result<FailOn> parse_fail_on(const std::string& text);

// The gates that decide the exit code of `llmrepro audit`.
struct GateConfig {
  FailOn fail_on = FailOn::none;
  std::optional<int> max_unique;           // fail when any prompt has more distinct completions
  std::optional<double> max_unstable_rate; // fail when unstable_prompts / prompts exceeds it
  std::optional<double> min_tara;          // fail when TARa@N falls below it
};

// Everything that shapes an audit's requests and analysis. Stored in the database so that
// --resume, `report` and `merge` see exactly what the audit ran with.
struct AuditConfig {
  std::string api = "auto";     // requested dialect; EndpointInfo::dialect is what was used
  std::string model;            // empty: whatever the endpoint serves
  int runs = 5;
  std::vector<int> levels{1, 8, 32};
  std::vector<ProbeKind> probes{ProbeKind::sweep};
  int max_tokens = 128;
  int top_logprobs = 2;
  std::uint64_t seed = 0;       // sent where the API takes one, and the plan's shuffle seed
  bool stream = false;
  double timeout_s = 120.0;
  int retries = 3;
  double fragile_gap = 0.05;
  int fragile_window = 50;
  double rate_limit = 0.0;      // requests per second, 0: unlimited
  int shard_index = 0;
  int shard_count = 1;
  GateConfig gates;
};

struct EndpointInfo {
  std::string url;     // base URL with any credentials removed
  std::string dialect; // the adapter used: openai-chat, openai-completions, llamacpp, ...
  std::string model;
  bool embedded = false; // the in-process reference engine
  std::vector<std::string> fingerprints; // distinct system_fingerprint values seen, sorted
};

struct AuditInfo {
  std::string id;
  std::int64_t started_ms = 0;
  std::int64_t finished_ms = 0;
  std::string status = "partial"; // "complete" once every planned request is recorded
};

// What the probes sent to one endpoint besides the audited requests: the mixed probe's filler,
// the prefix probe's priming requests and cache flushes. Counted by the run that sent them; an
// audit loaded from its database has none.
struct ProbeActivity {
  int filler_sent = 0;
  int filler_failed = 0;
  int primes_sent = 0;
  int primes_failed = 0;
  int flushes_sent = 0;
  int flushes_failed = 0;
  bool flush_looked_up = false; // the prefix probe ran and looked for a flush route
  std::string flush_route;      // the route that flushed ("/flush_cache"); empty: none answered
};

// The whole audit in memory: what the database holds and what the renderers read.
struct AuditData {
  AuditInfo info;
  AuditConfig config;
  std::vector<EndpointInfo> endpoints;
  Suite suite;
  std::vector<RequestRecord> records; // in the order they were recorded
  std::vector<std::string> errors;    // audit-level problems worth reporting (not per request)
  std::vector<ProbeActivity> probe_activity; // per endpoint, by the run that just ended; not stored
  // Semantic agreement of endpoint 0's distinct completions (--embeddings); empty when not measured.
  std::optional<SemanticAgreement> semantic;
};

// The plan an audit configuration implies for `endpoints` endpoints.
PlanConfig plan_config_of(const AuditConfig& config, int endpoints);

// The tool's own identity, printed by --version and written into every report.
struct ToolInfo {
  std::string version;
  std::string build;        // compiler, build type and dependency versions
  std::string cuda;         // "compiled (CUDA 13.0)" or "not compiled"
};

} // namespace llmrepro::core
