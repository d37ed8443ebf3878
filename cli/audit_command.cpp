// `llmrepro audit`: the driver. It reads like the design: load_suite → plan → run → analyse →
// judge → write_reports, each a function of its own module; this file only wires them together.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/report_outputs.hpp"
#include "core/audit_report.hpp"
#include "core/clock.hpp"
#include "engine/engine_server.hpp"
#include "probes/embeddings_client.hpp"
#include "probes/endpoint_detector.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/scheduler.hpp"
#include "probes/suite_loader.hpp"
#include "report/audit_database.hpp"
#include "report/database_sink.hpp"
#include "report/report_loader.hpp"
#include "report/terminal_summary.hpp"

namespace llmrepro::cli {

namespace {

struct AuditOptions {
  std::string suite;
  std::vector<std::string> endpoints; // --endpoint, repeatable
  std::vector<std::string> compare;   // --compare, after the endpoints
  std::vector<std::string> probes{"sweep"};
  std::string api = "auto";
  std::string model;
  int runs = 5;
  std::vector<int> levels{1, 8, 32};
  int max_tokens = 128;
  int top_logprobs = 2;
  double fragile_gap = 0.05;
  int fragile_window = 50;
  bool stream = false;
  double timeout_s = 120.0;
  int retries = 3;
  std::size_t max_response_bytes = 16u << 20;
  std::string api_key_env = "OPENAI_API_KEY";
  std::vector<std::string> headers;
  bool insecure = false;
  std::string db = "llmrepro-audit.db";
  bool resume = false;
  bool overwrite = false;
  std::string fail_on = "none";
  std::optional<int> max_unique;
  std::optional<double> max_unstable_rate;
  std::optional<double> min_tara;
  std::uint64_t seed = 0;
  std::string shard = "1/1";
  double rate = 0.0;
  std::string embeddings;
  std::string embeddings_model;
  double semantic_threshold = 0.9;
  ReportOutputs outputs;
  bool quiet = false;
  // The embedded reference engine, used when no --endpoint is given.
  int engine_max_num_seqs = 16;
  bool engine_batch_invariant = false;
  bool engine_prefix_cache = false;
  std::uint64_t engine_seed = 0;
};

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_interrupts{0};

extern "C" void on_interrupt(int) {
  // First Ctrl-C: finish the requests in flight and keep a consistent, partial database.
  // Second: leave at once; every recorded request is already committed.
  if (g_interrupts.fetch_add(1) >= 1) std::_Exit(130);
  g_stop_requested.store(true);
}

// "i/n" with 1 <= i <= n, as the 0-based index and the count.
core::Result<std::pair<int, int>> parse_shard(const std::string& text) {
  const auto bad = [&] {
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--shard '{}' is not i/n with 1 <= i <= n, e.g. 2/4", text));
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) return bad();
  int index = 0;
  int count = 0;
  try {
    std::size_t used_index = 0;
    std::size_t used_count = 0;
    index = std::stoi(text.substr(0, slash), &used_index);
    count = std::stoi(text.substr(slash + 1), &used_count);
    if (used_index != slash || used_count != text.size() - slash - 1) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (count < 1 || index < 1 || index > count) return bad();
  return std::pair<int, int>{index - 1, count};
}

core::Result<core::AuditConfig> config_from(const AuditOptions& options) {
  core::AuditConfig config;
  config.api = options.api;
  config.model = options.model;
  if (options.runs < 1) return core::make_error(core::ErrorCode::usage, "--runs must be at least 1");
  config.runs = options.runs;
  if (options.levels.empty())
    return core::make_error(core::ErrorCode::usage, "--concurrency needs at least one level");
  for (int level : options.levels)
    if (level < 1 || level > 4096)
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--concurrency level {} is out of range 1..4096", level));
  config.levels = options.levels;
  if (options.max_tokens < 1)
    return core::make_error(core::ErrorCode::usage, "--max-tokens must be at least 1");
  config.max_tokens = options.max_tokens;
  if (options.top_logprobs < 2 || options.top_logprobs > 20)
    return core::make_error(core::ErrorCode::usage,
                            "--top-logprobs must be between 2 and 20 (the gap needs two candidates)");
  config.top_logprobs = options.top_logprobs;
  config.seed = options.seed;
  config.probes.clear();
  for (const auto& name : options.probes) {
    auto probe = core::parse_probe_kind(name);
    if (!probe) return probe.error();
    if (std::find(config.probes.begin(), config.probes.end(), *probe) != config.probes.end())
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--probe names '{}' twice", name));
    config.probes.push_back(*probe);
  }
  if (config.probes.empty())
    return core::make_error(core::ErrorCode::usage, "--probe needs at least one probe kind");
  auto shard = parse_shard(options.shard);
  if (!shard) return shard.error();
  std::tie(config.shard_index, config.shard_count) = *shard;
  if (!(options.rate >= 0.0))
    return core::make_error(core::ErrorCode::usage, "--rate must be >= 0 (0: unlimited)");
  config.rate_limit = options.rate;
  if (!(options.semantic_threshold >= -1.0 && options.semantic_threshold <= 1.0))
    return core::make_error(core::ErrorCode::usage, "--semantic-threshold must be within -1..1");
  if (!options.embeddings.empty())
    if (auto valid = probes::validate_base_url(options.embeddings); !valid)
      return core::make_error(core::ErrorCode::usage, "--embeddings: " + valid.error().message);
  config.stream = options.stream;
  if (options.timeout_s <= 0)
    return core::make_error(core::ErrorCode::usage, "--timeout must be positive");
  config.timeout_s = options.timeout_s;
  if (options.retries < 0) return core::make_error(core::ErrorCode::usage, "--retries must be >= 0");
  config.retries = options.retries;
  if (options.fragile_gap <= 0)
    return core::make_error(core::ErrorCode::usage, "--fragile-gap must be positive");
  config.fragile_gap = options.fragile_gap;
  if (options.fragile_window < 1)
    return core::make_error(core::ErrorCode::usage, "--fragile-window must be at least 1");
  config.fragile_window = options.fragile_window;
  auto fail_on = core::parse_fail_on(options.fail_on);
  if (!fail_on) return fail_on.error();
  config.gates.fail_on = *fail_on;
  config.gates.max_unique = options.max_unique;
  config.gates.max_unstable_rate = options.max_unstable_rate;
  config.gates.min_tara = options.min_tara;
  return config;
}

// The endpoint as it will be driven: either the user's, or the embedded engine started here.
struct Target {
  probes::EndpointTarget target;
  core::EndpointInfo info;
  std::unique_ptr<engine::EngineServer> embedded;
};

// `endpoint` empty: the embedded reference engine.
core::Result<Target> connect(const AuditOptions& options, const core::AuditConfig& config,
                             const std::string& endpoint) {
  Target result;
  if (endpoint.empty()) {
    engine::ServeConfig serve;
    serve.port = 0;
    serve.max_num_seqs = options.engine_max_num_seqs;
    serve.batch_invariant = options.engine_batch_invariant;
    serve.prefix_cache = options.engine_prefix_cache;
    serve.seed = options.engine_seed;
    auto server = engine::EngineServer::start(serve);
    if (!server) return server.error();
    result.embedded = std::move(*server);
    result.target.base_url = result.embedded->base_url();
    result.target.dialect = probes::Dialect::openai_chat;
    result.info.url = result.target.base_url;
    result.info.dialect = probes::to_string(result.target.dialect);
    result.info.model = result.embedded->model_name();
    result.info.embedded = true;
    return result;
  }

  auto valid = probes::validate_base_url(endpoint);
  if (!valid) return valid.error();
  result.target.base_url = endpoint;
  result.target.headers = options.headers;
  result.target.insecure = options.insecure;
  if (const char* key = std::getenv(options.api_key_env.c_str()); key && *key)
    result.target.api_key = key;
  result.info.url = probes::strip_credentials(endpoint);

  if (config.api == "auto") {
    std::string explanation;
    auto dialect = probes::detect_dialect(endpoint, result.target.headers,
                                          result.target.api_key, options.insecure,
                                          std::min(config.timeout_s, 10.0), &explanation);
    if (!dialect) return dialect.error();
    result.target.dialect = *dialect;
    if (!options.quiet)
      fmt::print(stderr, "llmrepro: --api auto chose {} ({})\n", probes::to_string(*dialect),
                 explanation);
  } else {
    auto dialect = probes::parse_dialect(config.api);
    if (!dialect) return dialect.error();
    result.target.dialect = *dialect;
  }
  result.info.dialect = probes::to_string(result.target.dialect);
  result.info.model = config.model;
  return result;
}

// Semantic agreement of the distinct completions (--embeddings): measured, stored beside the
// audit, and put into `data` so that every report of this run shows it as `report` would.
core::Result<void> measure_and_store_semantics(const AuditOptions& options,
                                               const core::AuditReport& audit_report,
                                               report::AuditDatabase& database,
                                               core::AuditData& data) {
  probes::EmbeddingsTarget target;
  target.url = options.embeddings;
  target.model = options.embeddings_model;
  target.headers = options.headers;
  target.insecure = options.insecure;
  target.timeout_s = options.timeout_s;
  if (const char* key = std::getenv(options.api_key_env.c_str()); key && *key) target.api_key = key;
  auto agreement =
      probes::measure_semantic_agreement(target, audit_report.analysis, options.semantic_threshold);
  if (!agreement) return agreement.error();
  if (auto stored = database.store_semantic(*agreement); !stored) return stored.error();
  data.semantic = std::move(*agreement);
  return {};
}

int run_audit(const AuditOptions& options) {
  core::SystemClock clock;

  // 1. Configuration and suite: everything is validated before anything is sent.
  auto config_or = config_from(options);
  if (!config_or) return report_error(config_or.error());
  const bool exists = std::filesystem::exists(options.db);
  if (options.resume && !exists)
    return report_error(core::make_error(
        core::ErrorCode::usage, fmt::format("--resume: no audit database at '{}'", options.db)));
  if (!options.resume && exists && !options.overwrite)
    return report_error(core::make_error(
        core::ErrorCode::usage,
        fmt::format("'{}' already exists: pass --resume to continue that audit, --overwrite to "
                    "replace it, or --db to choose another file",
                    options.db)));

  core::AuditData header;
  std::optional<report::AuditDatabase> database;
  if (options.resume) {
    auto opened = report::AuditDatabase::open(options.db);
    if (!opened) return report_error(opened.error());
    database.emplace(std::move(*opened));
    auto stored = database->load();
    if (!stored) return report_error(stored.error());
    header = std::move(*stored);
    header.records.clear();
  } else {
    if (options.suite.empty())
      return report_error(core::make_error(core::ErrorCode::usage, "--suite is required"));
    auto suite = probes::load_suite(options.suite);
    if (!suite) return report_error(suite.error());
    header.suite = std::move(*suite);
    header.config = *config_or;
  }
  const core::AuditConfig& config = header.config;

  // 2. Endpoint: the user's, or the embedded reference engine.
  //    Several (--endpoint repeated, --compare): the same plan runs against each; endpoint 0's
  //    analysis stays the top-level one. --compare alone compares the embedded engine with them.
  std::vector<std::string> urls = options.endpoints;
  if (urls.empty()) urls.push_back("");
  urls.insert(urls.end(), options.compare.begin(), options.compare.end());
  if (options.resume && urls.size() != header.endpoints.size())
    return report_error(core::make_error(
        core::ErrorCode::usage,
        fmt::format("--resume: the audit in '{}' has {} endpoints but {} were given", options.db,
                    header.endpoints.size(), urls.size())));
  std::vector<Target> targets;
  for (const auto& url : urls) {
    auto target_or = connect(options, config, url);
    if (!target_or) return report_error(target_or.error());
    Target& target = *target_or;
    if (target.info.model.empty() && !target.embedded) {
      auto model = probes::detect_model(url, target.target.headers, target.target.api_key,
                                        options.insecure, std::min(config.timeout_s, 10.0));
      if (model) target.info.model = *model;
    }
    target.target.model = target.info.model;
    targets.push_back(std::move(target));
  }
  const Target& target = targets.front();
  std::vector<core::EndpointInfo> infos;
  std::vector<probes::EndpointTarget> endpoint_targets;
  for (const auto& each : targets) {
    infos.push_back(each.info);
    endpoint_targets.push_back(each.target);
  }

  // 3. Database: created with the header, so that a crash leaves a resumable audit.
  if (!options.resume) {
    if (exists) std::filesystem::remove(options.db);
    header.info.id = fmt::format("audit-{}", clock.now_ms());
    header.info.started_ms = clock.now_ms();
    header.info.status = "partial";
    header.endpoints = infos;
    auto created = report::AuditDatabase::create(options.db, header);
    if (!created) return report_error(created.error());
    database.emplace(std::move(*created));
  } else {
    for (std::size_t e = 0; e < infos.size(); ++e)
      if (auto updated = database->update_endpoint(static_cast<int>(e), infos[e]); !updated)
        return report_error(updated.error());
  }

  // 4. Plan and run: exactly c requests in flight per level; finished requests are committed
  //    as they arrive; --resume skips what is already recorded.
  const core::Plan plan = core::make_plan(
      header.suite, core::plan_config_of(config, static_cast<int>(endpoint_targets.size())));
  auto done = database->recorded_successes();
  if (!done) return report_error(done.error());
  std::set<std::tuple<int, int, int, int, int>> recorded;
  for (const auto& key : *done)
    recorded.insert({key.endpoint_index, key.prompt_index, key.concurrency,
                     static_cast<int>(key.probe), key.repeat});
  const auto already_recorded = [&](const core::PlannedRequest& key) {
    return recorded.count({key.endpoint_index, key.prompt_index, key.concurrency,
                           static_cast<int>(key.probe), key.repeat}) > 0;
  };

  probes::SchedulerConfig scheduler;
  scheduler.params.model = target.info.model;
  scheduler.params.max_tokens = config.max_tokens;
  scheduler.params.top_logprobs = config.top_logprobs;
  scheduler.params.seed = config.seed;
  scheduler.params.stream = config.stream;
  scheduler.timeout_s = config.timeout_s;
  scheduler.retries = config.retries;
  scheduler.rate_limit = config.rate_limit;
  scheduler.max_response_bytes = options.max_response_bytes;

  const bool show_progress = !options.quiet && isatty(STDERR_FILENO);
  const auto progress = [&](const probes::SchedulerProgress& p) {
    if (!show_progress) return;
    fmt::print(stderr, "\r\033[Kllmrepro: c={} {}/{} requests, {} failed", p.concurrency, p.done,
               p.total, p.failed);
  };
  if (!options.quiet)
    fmt::print(stderr, "llmrepro: auditing {}{} with {} prompts x {} runs at concurrency {}\n",
               target.info.url, target.embedded ? " (embedded reference engine)" : "",
               header.suite.prompts.size(), config.runs, fmt::join(config.levels, ","));

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  report::DatabaseSink sink(*database);
  std::vector<core::ProbeActivity> activity;
  auto ran = probes::run_plan(plan, header.suite, endpoint_targets, scheduler, sink,
                              already_recorded, progress, g_stop_requested, activity);
  // The sink commits on its own thread: drain it before anything reads the records back or
  // marks the audit partial or complete. Its error counts when the run itself succeeded.
  if (auto drained = sink.finish(); !drained && ran) ran = drained.error();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (show_progress) fmt::print(stderr, "\r\033[K");

  // 5. Status: complete only when every planned request is recorded.
  if (auto stored = database->store_probe_activity(activity); !stored)
    return report_error(stored.error());
  // 6. Analyse (streaming the records from the database), judge, and write every report.
  auto loaded = report::load_report(*database, tool_info());
  if (!loaded) return report_error(loaded.error());
  core::AuditData& data = *loaded->data;
  const core::AuditReport& audit_report = loaded->report;
  const bool complete = data.records.size() >= plan.size() && !g_stop_requested.load();
  const std::int64_t finished_ms = clock.now_ms();
  if (auto status = database->set_status(complete ? "complete" : "partial", finished_ms); !status)
    return report_error(status.error());
  data.info.status = complete ? "complete" : "partial";
  data.info.finished_ms = finished_ms;
  if (!options.embeddings.empty()) {
    auto measured = measure_and_store_semantics(options, audit_report, *database, data);
    if (!measured) return report_error(measured.error());
  }
  if (auto written = write_report_outputs(audit_report, options.outputs); !written)
    return report_error(written.error());
  if (!options.quiet)
    fmt::print("{}", report::render_terminal_summary(audit_report, isatty(STDOUT_FILENO) != 0));

  if (!ran) return report_error(ran.error());
  if (g_stop_requested.load()) {
    fmt::print(stderr, "llmrepro: interrupted; '{}' holds a partial audit: continue it with "
                       "--resume --db {}\n",
               options.db, options.db);
    return 130;
  }
  return audit_report.verdict.passed ? k_exit_pass : k_exit_gate_failed;
}

} // namespace

void register_audit_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* audit = app.add_subcommand(
      "audit", "Send each prompt of a suite N times at each concurrency level and analyse the drift");
  audit->add_option("--suite", options->suite, "JSON Lines suite (or one prompt per line)");
  audit->add_option("--endpoint", options->endpoints,
                    "Base URL of the server (repeatable: the same plan runs against each and the "
                    "report compares them); omitted: the embedded reference engine");
  audit->add_option("--compare", options->compare,
                    "Another endpoint to run the same plan against and compare (repeatable)");
  audit->add_option("--probe", options->probes,
                    "Probe kinds: sweep, mixed (filler traffic), prefix (warm vs cold shared "
                    "prefix), long (long prompts)")
      ->delimiter(',')
      ->capture_default_str();
  audit->add_option("--api", options->api,
                    "auto|openai-chat|openai-completions|llamacpp|sglang|ollama|tgi")
      ->capture_default_str();
  audit->add_option("--model", options->model, "Model name to request (default: detected)");
  audit->add_option("--runs", options->runs, "Runs of each prompt at each level")
      ->capture_default_str();
  audit->add_option("--concurrency", options->levels, "Concurrency levels, e.g. 1,8,32")
      ->delimiter(',')
      ->capture_default_str();
  audit->add_option("--max-tokens", options->max_tokens, "Default max_tokens")->capture_default_str();
  audit->add_option("--top-logprobs", options->top_logprobs, "Candidates per token (2..20)")
      ->capture_default_str();
  audit->add_option("--fragile-gap", options->fragile_gap, "τ: fragile when a top-1/top-2 gap is below it (nats)")
      ->capture_default_str();
  audit->add_option("--fragile-window", options->fragile_window, "W: tokens of the reference searched for the gap")
      ->capture_default_str();
  audit->add_flag("--stream", options->stream, "Use streaming (SSE) responses");
  audit->add_option("--timeout", options->timeout_s, "Per-request timeout in seconds")
      ->capture_default_str();
  audit->add_option("--retries", options->retries, "Retries for connection errors, 429 and 5xx")
      ->capture_default_str();
  audit->add_option("--max-response-bytes", options->max_response_bytes,
                    "Reject a response larger than this, without buffering it")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 34));
  audit->add_option("--api-key-env", options->api_key_env,
                    "Environment variable holding the API key (sent as a bearer token)")
      ->capture_default_str();
  audit->add_option("--header", options->headers, "Extra request header 'K: V' (repeatable)");
  audit->add_flag("--insecure", options->insecure, "Do not verify TLS certificates");
  audit->add_option("--db", options->db, "Audit database (SQLite)")->capture_default_str();
  audit->add_flag("--resume", options->resume, "Continue the audit stored in --db");
  audit->add_flag("--overwrite", options->overwrite, "Replace an existing --db");
  audit->add_option("--seed", options->seed, "Seed sent to the endpoint and used for the shuffle")
      ->capture_default_str();
  audit->add_option("--shard", options->shard,
                    "Audit only slice i of n of the suite (every n-th prompt from the i-th); "
                    "join the slices with `llmrepro merge`")
      ->capture_default_str();
  audit->add_option("--rate", options->rate, "Cap on requests per second (0: unlimited)")
      ->capture_default_str();
  audit->add_option("--embeddings", options->embeddings,
                    "After the run, embed each prompt's distinct completions with this "
                    "OpenAI-compatible /v1/embeddings server and report their cosine similarity");
  audit->add_option("--embeddings-model", options->embeddings_model,
                    "Embedding model to request (default: the server's)");
  audit->add_option("--semantic-threshold", options->semantic_threshold,
                    "A prompt agrees semantically when its least similar pair reaches this cosine")
      ->capture_default_str();
  audit->add_option("--fail-on", options->fail_on, "none|unstable|fragile")->capture_default_str();
  audit->add_option("--max-unique", options->max_unique, "Fail when a prompt has more distinct completions");
  audit->add_option("--max-unstable-rate", options->max_unstable_rate, "Fail when the unstable share exceeds it");
  audit->add_option("--min-tara", options->min_tara, "Fail when TARa@N is below it");
  add_report_output_options(*audit, options->outputs);
  audit->add_flag("--quiet", options->quiet, "Print nothing but errors");
  audit->add_option("--engine-max-num-seqs", options->engine_max_num_seqs,
                    "Embedded engine: sequences per batch")
      ->capture_default_str();
  audit->add_flag("--engine-batch-invariant", options->engine_batch_invariant,
                  "Embedded engine: fix every reduction order");
  audit->add_flag("--engine-prefix-cache", options->engine_prefix_cache,
                  "Embedded engine: reuse cached prompt prefixes");
  audit->add_option("--engine-seed", options->engine_seed, "Embedded engine: weight seed");
  audit->callback([options, &result] { result.exit_code = run_audit(*options); });
}

} // namespace llmrepro::cli
