// `llmrepro audit`: the driver. It reads like the design: load_suite → plan → run → analyse →
// judge → write_reports, each a function of its own module; this file only wires them together.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
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
#include "cli/judging_options.hpp"
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
  JudgingOptions judging; // --fail-on, --max-unique, ..., --fragile-gap, --fragile-window
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

  // The plan-defining flags, to tell what was given on the command line (--resume compares
  // those with the stored audit).
  struct PlanFlags {
    CLI::Option* suite = nullptr;
    CLI::Option* endpoint = nullptr;
    CLI::Option* compare = nullptr;
    CLI::Option* api = nullptr;
    CLI::Option* model = nullptr;
    CLI::Option* runs = nullptr;
    CLI::Option* concurrency = nullptr;
    CLI::Option* max_tokens = nullptr;
    CLI::Option* top_logprobs = nullptr;
    CLI::Option* seed = nullptr;
    CLI::Option* probe = nullptr;
    CLI::Option* shard = nullptr;
    CLI::Option* stream = nullptr;
  } plan_flags;
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

// Every flag's value checked (NaN, infinities and out-of-range values are usage errors naming
// the flag) and gathered into the configuration a new audit runs with.
core::Result<core::AuditConfig> config_from(const AuditOptions& options) {
  core::AuditConfig config;
  config.api = options.api;
  config.model = options.model;
  if (options.runs < 1)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--runs must be at least 1 (got {})", options.runs));
  config.runs = options.runs;
  if (options.levels.empty())
    return core::make_error(core::ErrorCode::usage, "--concurrency needs at least one level");
  for (std::size_t i = 0; i < options.levels.size(); ++i) {
    const int level = options.levels[i];
    if (level < 1 || level > 4096)
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--concurrency level {} is out of range 1..4096", level));
    if (std::find(options.levels.begin(), options.levels.begin() + static_cast<long>(i), level) !=
        options.levels.begin() + static_cast<long>(i))
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--concurrency lists level {} twice", level));
  }
  config.levels = options.levels;
  if (options.max_tokens < 1)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--max-tokens must be at least 1 (got {})",
                                        options.max_tokens));
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
  if (!(std::isfinite(options.rate) && options.rate >= 0.0))
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--rate must be a finite number >= 0 (0: unlimited; got {})",
                                        options.rate));
  config.rate_limit = options.rate;
  if (auto valid = check_finite_in("--semantic-threshold", options.semantic_threshold, -1.0, 1.0);
      !valid)
    return valid.error();
  if (!options.embeddings.empty())
    if (auto valid = probes::validate_base_url(options.embeddings); !valid)
      return core::make_error(core::ErrorCode::usage, "--embeddings: " + valid.error().message);
  config.stream = options.stream;
  if (auto valid = check_finite_above("--timeout", options.timeout_s, 0.0,
                                      "a finite number of seconds");
      !valid)
    return valid.error();
  config.timeout_s = options.timeout_s;
  if (options.retries < 0)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--retries must be >= 0 (got {})", options.retries));
  config.retries = options.retries;
  if (options.engine_max_num_seqs < 1)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--engine-max-num-seqs must be at least 1 (got {})",
                                        options.engine_max_num_seqs));
  if (auto judged = apply_judging_options(options.judging, config, false); !judged)
    return judged.error();
  return config;
}

// How many endpoints the command line names: --endpoint (or the embedded engine) and --compare.
std::size_t given_endpoint_count(const AuditOptions& options) {
  return std::max<std::size_t>(options.endpoints.size(), 1) + options.compare.size();
}

std::string model_text(const std::string& model) {
  return model.empty() ? "none (detected)" : model;
}

std::string probes_text(const std::vector<core::ProbeKind>& probes) {
  std::string out;
  for (const auto probe : probes) out += (out.empty() ? "" : ",") + std::string(core::to_string(probe));
  return out;
}

// A base URL as stored: trailing slashes dropped, credentials removed.
std::string comparable_url(const std::string& url) {
  auto valid = probes::validate_base_url(url);
  return probes::strip_credentials(valid ? *valid : url);
}

// The first field in which two prompts of a suite differ, named as the suite line names it;
// empty when they are the same (the line they came from does not count).
std::string prompt_difference(const core::Prompt& a, const core::Prompt& b) {
  if (a.id != b.id) return "id";
  if (a.text != b.text) return a.is_chat() != b.is_chat() ? "prompt or messages" : "prompt";
  if (a.messages.size() != b.messages.size()) return "messages";
  for (std::size_t i = 0; i < a.messages.size(); ++i)
    if (a.messages[i].role != b.messages[i].role || a.messages[i].content != b.messages[i].content)
      return "messages";
  if (a.max_tokens != b.max_tokens) return "max_tokens";
  if (a.tags != b.tags) return "tags";
  if (a.expect.kind != b.expect.kind || a.expect.value != b.expect.value ||
      a.expect.path != b.expect.path || a.expect.number != b.expect.number ||
      a.expect.tolerance != b.expect.tolerance)
    return "expect";
  if (a.extract.kind != b.extract.kind || a.extract.pattern != b.extract.pattern) return "extract";
  if (a.response_format_json != b.response_format_json) return "response_format";
  return {};
}

// How the given suite differs from the stored one; empty when its prompts are the same.
std::string suite_difference(const core::Suite& stored, const core::Suite& given) {
  if (stored.prompts.size() != given.prompts.size())
    return fmt::format("{} prompts (stored) vs {} (given)", stored.prompts.size(),
                       given.prompts.size());
  for (std::size_t i = 0; i < stored.prompts.size(); ++i) {
    const auto& a = stored.prompts[i];
    const auto& b = given.prompts[i];
    const std::string field = prompt_difference(a, b);
    if (field.empty()) continue;
    if (field == "id")
      return fmt::format("prompt {} is '{}' (stored) vs '{}' (given)", i + 1, a.id, b.id);
    return fmt::format("prompt {} '{}' differs in its {}", i + 1, a.id, field);
  }
  return {};
}

// --resume runs the stored plan: every plan-defining flag given on the command line must say
// what the stored audit says. One usage error names each difference, before any request.
core::Result<void> check_resume_plan(const AuditOptions& options, const core::AuditConfig& wanted,
                                     const core::AuditData& stored,
                                     const std::vector<std::string>& urls, bool urls_given) {
  const auto& flags = options.plan_flags;
  const core::AuditConfig& was = stored.config;
  std::vector<std::string> differences;
  const auto compare = [&](CLI::Option* flag, const char* name, const std::string& stored_text,
                           const std::string& given_text) {
    if (given(flag) && stored_text != given_text)
      differences.push_back(
          fmt::format("{} {} (stored) vs {} (given)", name, stored_text, given_text));
  };
  if (given(flags.suite)) {
    auto suite = probes::load_suite(options.suite);
    if (!suite) return suite.error();
    if (auto difference = suite_difference(stored.suite, *suite); !difference.empty())
      differences.push_back(fmt::format("--suite '{}' (stored) vs '{}' (given): {}",
                                        stored.suite.source, options.suite, difference));
  }
  if (urls_given) {
    if (urls.size() != stored.endpoints.size()) {
      differences.push_back(fmt::format("--endpoint/--compare {} endpoint{} (stored) vs {} (given)",
                                        stored.endpoints.size(),
                                        stored.endpoints.size() == 1 ? "" : "s", urls.size()));
    } else {
      const std::size_t endpoint_flags = std::max<std::size_t>(options.endpoints.size(), 1);
      for (std::size_t i = 0; i < urls.size(); ++i) {
        const auto& endpoint = stored.endpoints[i];
        const bool same = urls[i].empty()
                              ? endpoint.embedded
                              : !endpoint.embedded &&
                                    comparable_url(urls[i]) == comparable_url(endpoint.url);
        if (same) continue;
        const auto text = [](const std::string& url, bool embedded) {
          return embedded ? std::string("the embedded reference engine") : url;
        };
        differences.push_back(fmt::format(
            "{} {} (stored) vs {} (given)", i < endpoint_flags ? "--endpoint" : "--compare",
            text(endpoint.url, endpoint.embedded),
            text(probes::strip_credentials(urls[i]), urls[i].empty())));
      }
    }
  }
  compare(flags.api, "--api", was.api, wanted.api);
  compare(flags.model, "--model", model_text(was.model), model_text(wanted.model));
  compare(flags.runs, "--runs", std::to_string(was.runs), std::to_string(wanted.runs));
  compare(flags.concurrency, "--concurrency", fmt::format("{}", fmt::join(was.levels, ",")),
          fmt::format("{}", fmt::join(wanted.levels, ",")));
  compare(flags.max_tokens, "--max-tokens", std::to_string(was.max_tokens),
          std::to_string(wanted.max_tokens));
  compare(flags.top_logprobs, "--top-logprobs", std::to_string(was.top_logprobs),
          std::to_string(wanted.top_logprobs));
  compare(flags.seed, "--seed", std::to_string(was.seed), std::to_string(wanted.seed));
  compare(flags.probe, "--probe", probes_text(was.probes), probes_text(wanted.probes));
  compare(flags.shard, "--shard", fmt::format("{}/{}", was.shard_index + 1, was.shard_count),
          fmt::format("{}/{}", wanted.shard_index + 1, wanted.shard_count));
  compare(flags.stream, "--stream", was.stream ? "on" : "off", wanted.stream ? "on" : "off");
  if (differences.empty()) return {};
  return core::make_error(
      core::ErrorCode::usage,
      fmt::format("--resume: the audit in '{}' was planned with other settings: {}. Resume with "
                  "the stored settings, or start a new audit with --overwrite",
                  options.db, fmt::join(differences, "; ")));
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
  const std::string second_endpoint_hint = "add --compare URL or a second --endpoint";
  if (!options.resume)
    if (auto fits = check_gates_fit(*config_or, given_endpoint_count(options), second_endpoint_hint);
        !fits)
      return report_error(fits.error());
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

  // The endpoints: the user's, or the embedded reference engine (""). Several (--endpoint
  // repeated, --compare): the same plan runs against each; endpoint 0's analysis stays the
  // top-level one. --compare alone compares the embedded engine with them. --resume without
  // either flag runs against the stored endpoints.
  const bool urls_given = !options.endpoints.empty() || !options.compare.empty();
  std::vector<std::string> urls = options.endpoints;
  if (urls.empty()) urls.push_back("");
  urls.insert(urls.end(), options.compare.begin(), options.compare.end());

  core::AuditData header;
  std::optional<report::AuditDatabase> database;
  bool judging_changed = false;
  if (options.resume) {
    auto opened = report::AuditDatabase::open(options.db);
    if (!opened) return report_error(opened.error());
    database.emplace(std::move(*opened));
    // Streamed, so that the header is read without holding every completion's tokens.
    auto stored = database->load([](const core::AuditData&, int,
                                    const std::vector<core::RequestRecord>&) {
      return core::Result<void>{};
    });
    if (!stored) return report_error(stored.error());
    header = std::move(*stored);
    header.records.clear();
    // The plan is the stored one: what the command line says of it must agree.
    if (auto same = check_resume_plan(options, *config_or, header, urls, urls_given); !same)
      return report_error(same.error());
    if (!urls_given) {
      urls.clear();
      for (const auto& endpoint : header.endpoints)
        urls.push_back(endpoint.embedded ? std::string() : endpoint.url);
    }
    // The judging flags given replace the stored ones (and are stored once the run starts).
    const core::AuditConfig before = header.config;
    if (auto judged = apply_judging_options(options.judging, header.config, true); !judged)
      return report_error(judged.error());
    if (auto fits = check_gates_fit(header.config, header.endpoints.size(),
                                    "the endpoints of an audit do not change on --resume");
        !fits)
      return report_error(fits.error());
    judging_changed = !(before.gates == header.config.gates) ||
                      before.fragile_gap != header.config.fragile_gap ||
                      before.fragile_window != header.config.fragile_window;
  } else {
    if (options.suite.empty())
      return report_error(core::make_error(core::ErrorCode::usage, "--suite is required"));
    auto suite = probes::load_suite(options.suite);
    if (!suite) return report_error(suite.error());
    header.suite = std::move(*suite);
    header.config = *config_or;
  }
  const core::AuditConfig& config = header.config;

  // 2. Endpoint: connect to each (detecting the dialect and model where asked).
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
    // So that a later `llmrepro report` judges the audit as this run does.
    if (judging_changed)
      if (auto updated = database->update_config(config); !updated)
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

  const probes::SchedulerConfig scheduler =
      probes::scheduler_config_of(config, target.info.model, options.max_response_bytes);

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
  auto ran = probes::run_plan({.plan = plan,
                               .suite = header.suite,
                               .targets = endpoint_targets,
                               .config = scheduler,
                               .sink = sink,
                               .stop_requested = g_stop_requested,
                               .clock = clock,
                               .already_recorded = already_recorded,
                               .on_progress = progress,
                               .activity = &activity});
  // The sink commits on its own thread: drain it before anything reads the records back or
  // marks the audit partial or complete. Its error counts when the run itself succeeded.
  if (auto drained = sink.finish(); !drained && ran) ran = drained.error();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (show_progress) fmt::print(stderr, "\r\033[K");

  // 5. Status: complete only when every planned request is recorded.
  if (auto stored = database->store_probe_activity(activity); !stored)
    return report_error(stored.error());
  // 6. Analyse (streaming the records from the database), judge with what only the run knows
  //    (an interruption, an endpoint that refused every connection), and write every report:
  //    the files, the terminal summary and the exit code all state the one verdict.
  auto loaded = report::load_report(*database, tool_info());
  if (!loaded) return report_error(loaded.error());
  core::AuditData& data = *loaded->data;
  core::AuditReport& audit_report = loaded->report;
  const bool interrupted = g_stop_requested.load();
  const bool complete = data.records.size() >= plan.size() && !interrupted;
  const std::int64_t finished_ms = clock.now_ms();
  if (auto status = database->set_status(complete ? "complete" : "partial", finished_ms); !status)
    return report_error(status.error());
  data.info.status = complete ? "complete" : "partial";
  data.info.finished_ms = finished_ms;
  if (!options.embeddings.empty() && ran && !interrupted) {
    auto measured = measure_and_store_semantics(options, audit_report, *database, data);
    if (!measured) return report_error(measured.error());
  }
  core::RunFacts facts = core::stored_run_facts(audit_report);
  facts.interrupted = interrupted;
  if (!ran) facts.run_error = ran.error().message;
  core::rejudge(audit_report, config.gates, facts);
  if (auto emitted = emit_reports(audit_report, options.outputs, options.quiet); !emitted)
    return report_error(emitted.error());

  if (!ran) report_error(ran.error());
  if (interrupted)
    fmt::print(stderr, "llmrepro: interrupted; '{}' holds a partial audit: continue it with "
                       "--resume --db {}\n",
               options.db, options.db);
  return exit_code_of(audit_report.verdict, interrupted);
}

} // namespace

void register_audit_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<AuditOptions>();
  CLI::App* audit = app.add_subcommand(
      "audit", "Send each prompt of a suite N times at each concurrency level and analyse the drift");
  auto& flags = options->plan_flags;
  flags.suite =
      audit->add_option("--suite", options->suite, "JSON Lines suite (or one prompt per line)");
  flags.endpoint = audit->add_option("--endpoint", options->endpoints,
                    "Base URL of the server (repeatable: the same plan runs against each and the "
                    "report compares them); omitted: the embedded reference engine");
  flags.compare = audit->add_option("--compare", options->compare,
                    "Another endpoint to run the same plan against and compare (repeatable)");
  flags.probe = audit->add_option("--probe", options->probes,
                    "Probe kinds: sweep, mixed (filler traffic), prefix (warm vs cold shared "
                    "prefix), long (long prompts)")
      ->delimiter(',')
      ->capture_default_str();
  flags.api = audit->add_option("--api", options->api,
                    "auto|openai-chat|openai-completions|llamacpp|sglang|ollama|tgi")
      ->capture_default_str();
  flags.model = audit->add_option("--model", options->model, "Model name to request (default: detected)");
  flags.runs = audit->add_option("--runs", options->runs, "Runs of each prompt at each level")
      ->capture_default_str();
  flags.concurrency =
      audit->add_option("--concurrency", options->levels, "Concurrency levels, e.g. 1,8,32 (each once)")
      ->delimiter(',')
      ->capture_default_str();
  flags.max_tokens = audit->add_option("--max-tokens", options->max_tokens, "Default max_tokens")
                         ->capture_default_str();
  flags.top_logprobs =
      audit->add_option("--top-logprobs", options->top_logprobs, "Candidates per token (2..20)")
      ->capture_default_str();
  flags.stream = audit->add_flag("--stream", options->stream, "Use streaming (SSE) responses");
  audit->add_option("--timeout", options->timeout_s, "Per-request timeout in seconds (> 0)")
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
  audit->add_flag("--resume", options->resume,
                  "Continue the audit stored in --db with its stored plan; judging flags given "
                  "replace the stored ones");
  audit->add_flag("--overwrite", options->overwrite, "Replace an existing --db");
  flags.seed = audit->add_option("--seed", options->seed, "Seed sent to the endpoint and used for the shuffle")
      ->capture_default_str();
  flags.shard = audit->add_option("--shard", options->shard,
                    "Audit only slice i of n of the suite (every n-th prompt from the i-th); "
                    "join the slices with `llmrepro merge`")
      ->capture_default_str();
  audit->add_option("--rate", options->rate, "Cap on requests per second (>= 0; 0: unlimited)")
      ->capture_default_str();
  audit->add_option("--embeddings", options->embeddings,
                    "After the run, embed each prompt's distinct completions with this "
                    "OpenAI-compatible /v1/embeddings server and report their cosine similarity");
  audit->add_option("--embeddings-model", options->embeddings_model,
                    "Embedding model to request (default: the server's)");
  audit->add_option("--semantic-threshold", options->semantic_threshold,
                    "A prompt agrees semantically when its least similar pair reaches this cosine "
                    "(-1..1)")
      ->capture_default_str();
  add_judging_options(*audit, options->judging);
  add_report_output_options(*audit, options->outputs);
  audit->add_flag("--quiet", options->quiet,
                  "Print nothing but errors and, unless the verdict is pass, its headline");
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
