#include "cli/audit_passes.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <unistd.h>

#include "cli/audit_adaptive.hpp"
#include "cli/audit_budget.hpp"
#include "cli/audit_keys.hpp"
#include "cli/commands.hpp"
#include "cli/judging_options.hpp"
#include "core/determinism_check.hpp"
#include "core/prompt_form.hpp"
#include "core/redaction.hpp"
#include "core/result.hpp"
#include "core/resume_check.hpp"
#include "probes/embeddings_client.hpp"
#include "probes/endpoint_detector.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/logprob_check.hpp"
#include "probes/proxy_rule.hpp"
#include "probes/suite_loader.hpp"
#include "store/database_sink.hpp"

namespace llmrepro::cli {

namespace {

// --timeout and --rate: a timeout of 30 days at most and an interval between requests of at
// most 11.6 days (1 / k_min_rate) fit libcurl's long milliseconds and the steady clock's
// nanoseconds with room to spare; 1e9 requests a second is unlimited in all but name.
constexpr double k_max_timeout_s = 30.0 * 86400.0;
constexpr double k_min_rate = 1e-6; // one request in 11.6 days
constexpr double k_max_rate = 1e9;

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
    return core::make_error(
        core::ErrorCode::usage,
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

// --profile deterministic sets the levels, the probe kinds and the stability gates itself. An
// explicit --concurrency or --probe would quietly test less than the profile promises, so it is
// an error naming the conflict; explicit gates win (they can only be as strict or looser, and the
// profile's own determinism gate still judges the claim).
core::Result<void> apply_profile(const AuditOptions& options, core::AuditConfig& config) {
  const auto& flags = options.plan_flags;
  LLMREPRO_TRY_ASSIGN(config.profile, core::parse_audit_profile(options.profile));
  if (options.max_concurrency < 1)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--max-concurrency must be at least 1 (got {})", options.max_concurrency));
  // --resume without --profile runs the stored profile: --max-concurrency then stands for the
  // levels it implies, which the resume check compares with the stored ones.
  if (options.resume && !given(flags.profile)) {
    if (given(flags.max_concurrency))
      config.levels = core::deterministic_levels(options.max_concurrency);
    return {};
  }
  if (config.profile == core::AuditProfile::standard) {
    if (given(flags.max_concurrency))
      return core::make_error(core::ErrorCode::usage,
                              "--max-concurrency caps the levels of --profile deterministic; "
                              "with the standard profile list the levels with --concurrency");
    return {};
  }
  for (const auto& [option, flag] :
       {std::pair{flags.concurrency, "--concurrency"}, std::pair{flags.probe, "--probe"}})
    if (given(option))
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("{} conflicts with --profile deterministic, which sets the levels "
                      "(1,2,8,9,16,32,44,64,128, capped by --max-concurrency) and the probes "
                      "(sweep,mixed,prefix) itself; drop {} or use --profile standard",
                      flag, flag));
  config.levels = core::deterministic_levels(options.max_concurrency);
  config.probes = core::deterministic_probes();
  if (!given(options.judging.options.max_unique)) config.gates.max_unique = 1;
  if (!given(options.judging.options.max_logprob_drift)) config.gates.max_logprob_drift = 0.0;
  return {};
}

// The budgets, --price and --stop-after, checked and written into `config` where given.
core::Result<void> apply_budget_options(const AuditOptions& options, core::AuditConfig& config) {
  const auto& flags = options.budget_flags;
  if (!options.price.empty()) LLMREPRO_TRY_ASSIGN(config.price, core::parse_price(options.price));
  if (given(flags.max_requests)) {
    if (options.max_requests < 1)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("--max-requests must be at least 1 (got {})", options.max_requests));
    config.max_requests = options.max_requests;
  }
  if (given(flags.max_tokens_total)) {
    if (options.max_tokens_total < 1)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("--max-tokens-total must be at least 1 (got {})", options.max_tokens_total));
    config.max_tokens_total = options.max_tokens_total;
  }
  if (given(flags.max_cost)) {
    LLMREPRO_TRY(check_finite_above("--max-cost", options.max_cost, 0.0, "a finite amount"));
    // A resumed audit may price with its stored --price (checked once it is read).
    if (!config.price && !options.resume)
      return core::make_error(core::ErrorCode::usage,
                              "--max-cost needs --price input=X,output=Y (per million tokens) to "
                              "count what the tokens cost");
    config.max_cost = options.max_cost;
  }
  if (given(flags.stop_after)) {
    if (options.stop_after < 1)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("--stop-after must be at least 1 (got {})", options.stop_after));
    config.stop_after = options.stop_after;
  }
  if (options.dry_run && options.resume)
    return core::make_error(core::ErrorCode::usage,
                            "--dry-run plans a new audit; it does not combine with --resume");
  return {};
}

// Every flag's value checked (NaN, infinities and out-of-range values are usage errors naming
// the flag) and gathered into the configuration a new audit runs with.
core::Result<core::AuditConfig> config_from(const AuditOptions& options) {
  core::AuditConfig config;
  config.api = options.api;
  config.model = options.model;
  config.logprobs_form = options.logprobs_form;
  // Only openai-chat requests carry the form; told another dialect, the flag would do nothing.
  if (options.logprobs_form != "auto" && options.api != "auto" && options.api != "openai-chat")
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--logprobs-form applies to --api openai-chat (or auto), "
                                        "not --api {}",
                                        options.api));
  // Gemini names the model in the request's path: there is no route to ask it for one. A
  // resumed audit runs with the model it stored.
  if (!options.resume && options.api == "gemini" && options.model.empty())
    return core::make_error(core::ErrorCode::usage,
                            "--api gemini needs --model (the model is part of the URL, "
                            ".../models/MODEL:generateContent)");
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
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--max-tokens must be at least 1 (got {})", options.max_tokens));
  config.max_tokens = options.max_tokens;
  if (options.top_logprobs < 2 || options.top_logprobs > 20)
    return core::make_error(
        core::ErrorCode::usage,
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
  // The interval between starts (1 / rate) must fit the steady clock and libcurl's long
  // milliseconds, as must the timeout: bounds well inside both.
  if (!(std::isfinite(options.rate) &&
        (options.rate == 0.0 || (options.rate >= k_min_rate && options.rate <= k_max_rate))))
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--rate must be 0 (unlimited) or a number of requests per second within "
                    "{}..{} (got {})",
                    k_min_rate, k_max_rate, options.rate));
  config.rate_limit = options.rate;
  if (auto valid = check_finite_in("--semantic-threshold", options.semantic_threshold, -1.0, 1.0);
      !valid)
    return valid.error();
  if (!options.embeddings.empty())
    if (auto valid = probes::validate_base_url(options.embeddings); !valid)
      return core::make_error(core::ErrorCode::usage, "--embeddings: " + valid.error().message);
  config.stream = options.stream;
  if (!(std::isfinite(options.timeout_s) && options.timeout_s > 0.0 &&
        options.timeout_s <= k_max_timeout_s))
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--timeout must be a number of seconds greater than 0 "
                                        "and at most {} (got {})",
                                        k_max_timeout_s, options.timeout_s));
  config.timeout_s = options.timeout_s;
  if (options.retries < 0)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--retries must be >= 0 (got {})", options.retries));
  config.retries = options.retries;
  if (options.engine_max_num_seqs < 1)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--engine-max-num-seqs must be at least 1 (got {})",
                                        options.engine_max_num_seqs));
  LLMREPRO_TRY(apply_judging_options(options.judging, config, false));
  LLMREPRO_TRY(apply_profile(options, config));
  LLMREPRO_TRY(apply_budget_options(options, config));
  LLMREPRO_TRY(apply_adaptive_options(options, config));
  return config;
}

// The embedded engine's settings as the --engine-* flags give them.
core::EngineSettings engine_settings_of(const AuditOptions& options) {
  return core::EngineSettings{options.engine_max_num_seqs, options.engine_batch_invariant,
                              options.engine_prefix_cache, options.engine_seed};
}

// The names of the --header lines given; their values are secrets and are never stored.
std::vector<std::string> header_names_of(const AuditOptions& options) {
  std::vector<std::string> names;
  for (const std::string& line : options.headers)
    if (std::string name = core::header_name(line); !name.empty()) names.push_back(name);
  return names;
}

// How many endpoints the command line names: --endpoint (or the embedded engine) and --compare.
std::size_t given_endpoint_count(const AuditOptions& options) {
  return std::max<std::size_t>(options.endpoints.size(), 1) + options.compare.size();
}

// A base URL as stored: trailing slashes dropped, credentials removed.
std::string comparable_url(const std::string& url) {
  auto valid = probes::validate_base_url(url);
  return probes::strip_credentials(valid ? *valid : url);
}

// --resume runs the stored plan: every plan-defining flag given on the command line must say
// what the stored audit (run.header) says. One usage error names each difference, before any
// request.
core::Result<void> check_resume_plan(const AuditRun& run, const core::AuditConfig& wanted,
                                     bool urls_given) {
  const AuditOptions& options = run.options;
  const auto& flags = options.plan_flags;
  core::ResumeRequest request;
  request.config = wanted;
  request.given = {.api = given(flags.api),
                   .model = given(flags.model),
                   .runs = given(flags.runs),
                   .concurrency = given(flags.concurrency),
                   .max_tokens = given(flags.max_tokens),
                   .top_logprobs = given(flags.top_logprobs),
                   .seed = given(flags.seed),
                   .probe = given(flags.probe),
                   .shard = given(flags.shard),
                   .stream = given(flags.stream),
                   .logprobs_form = given(flags.logprobs_form),
                   .profile = given(flags.profile),
                   .max_concurrency = given(flags.max_concurrency),
                   .engine_max_num_seqs = given(flags.engine_max_num_seqs),
                   .engine_batch_invariant = given(flags.engine_batch_invariant),
                   .engine_prefix_cache = given(flags.engine_prefix_cache),
                   .engine_seed = given(flags.engine_seed)};
  request.config.engine = engine_settings_of(options);
  request.config.header_names = header_names_of(options);
  if (given(flags.suite)) {
    auto suite = probes::load_suite(options.suite);
    if (!suite) return suite.error();
    request.suite = std::move(*suite);
    request.suite_path = options.suite;
  }
  request.urls = run.urls;
  request.endpoint_flag_count = std::max<std::size_t>(options.endpoints.size(), 1);
  request.endpoints_given = urls_given;
  const core::UrlForms url_forms{comparable_url, probes::strip_credentials};
  const auto differences = core::resume_plan_differences(run.header, request, url_forms);
  if (differences.empty()) return {};
  std::vector<std::string> texts;
  for (const auto& difference : differences) texts.push_back(core::to_string(difference));
  return core::make_error(
      core::ErrorCode::usage,
      fmt::format("--resume: the audit in '{}' was planned with other settings: {}. Resume with "
                  "the stored settings, or start a new audit with --overwrite",
                  options.db, fmt::join(texts, "; ")));
}

// --resume: budgets and --price given replace the stored ones (the whole audit counts, so a
// larger budget lets it go on); --stop-after shapes the completions, so it must stay as stored.
core::Result<void> resume_budgets(const AuditOptions& options, const core::AuditConfig& wanted,
                                  core::AuditConfig& stored) {
  const auto& flags = options.budget_flags;
  if (given(flags.stop_after) && wanted.stop_after != stored.stop_after)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--resume: the audit in '{}' was planned with {}; --stop-after {} would mix "
                    "capped and uncapped completions. Resume without --stop-after, or start a "
                    "new audit with --overwrite",
                    options.db,
                    stored.stop_after ? fmt::format("--stop-after {}", *stored.stop_after)
                                      : std::string("no --stop-after"),
                    options.stop_after));
  if (wanted.price) stored.price = wanted.price;
  if (given(flags.max_requests)) stored.max_requests = wanted.max_requests;
  if (given(flags.max_tokens_total)) stored.max_tokens_total = wanted.max_tokens_total;
  if (given(flags.max_cost)) {
    if (!stored.price)
      return core::make_error(core::ErrorCode::usage,
                              "--max-cost needs --price input=X,output=Y (per million tokens) to "
                              "count what the tokens cost");
    stored.max_cost = wanted.max_cost;
  }
  return {};
}

// --resume: the stored audit's header, checked against the flags given; the judging flags given
// replace the stored ones (and are stored once the run starts).
core::Result<void> resume_stored(AuditRun& run, const core::AuditConfig& wanted, bool urls_given) {
  const AuditOptions& options = run.options;
  auto opened = open_audit_database(options.db);
  if (!opened) return opened.error();
  run.database.emplace(std::move(*opened));
  // Streamed, so that the header is read without holding every completion's tokens.
  auto stored =
      run.database->load([](const core::AuditData&, int, const std::vector<core::RequestRecord>&) {
        return core::Result<void>{};
      });
  if (!stored) return stored.error();
  run.header = std::move(*stored);
  run.header.records.clear();
  // The plan is the stored one: what the command line says of it must agree.
  LLMREPRO_TRY(check_resume_plan(run, wanted, urls_given));
  if (!urls_given) {
    run.urls.clear();
    for (const auto& endpoint : run.header.endpoints)
      run.urls.push_back(endpoint.embedded ? std::string() : endpoint.url);
  }
  const core::AuditConfig before = run.header.config;
  LLMREPRO_TRY(apply_judging_options(options.judging, run.header.config, true));
  if (auto fits = check_gates_fit(run.header.config, run.header.endpoints.size(),
                                  "the endpoints of an audit do not change on --resume");
      !fits)
    return fits;
  LLMREPRO_TRY(resume_budgets(options, wanted, run.header.config));
  LLMREPRO_TRY(check_adaptive_resume(options, wanted, run.header.config));
  // Stored too, so that a later `report` shows the budgets the audit last ran under.
  run.judging_changed = core::judging_differs(before, run.header.config) ||
                        before.max_requests != run.header.config.max_requests ||
                        before.max_tokens_total != run.header.config.max_tokens_total ||
                        before.max_cost != run.header.config.max_cost ||
                        before.price != run.header.config.price;
  return {};
}

// `endpoint` empty: the embedded reference engine.
// `key`: what cli/audit_keys.hpp chose for it ("" none).
core::Result<Target> connect(const AuditOptions& options, const core::AuditConfig& config,
                             const core::Suite& suite, const std::string& endpoint,
                             const std::string& key) {
  Target result;
  if (endpoint.empty()) {
    engine::ServeConfig serve;
    serve.port = 0;
    // As stored with the audit (a --resume runs the engine it was started with), else as given.
    const core::EngineSettings settings = config.engine.value_or(engine_settings_of(options));
    serve.max_num_seqs = settings.max_num_seqs;
    serve.batch_invariant = settings.batch_invariant;
    // The determinism profile's prefix probe tests the cache: with it off, warm and cold trials
    // would run the same path.
    serve.prefix_cache =
        settings.prefix_cache || config.profile == core::AuditProfile::deterministic;
    serve.seed = settings.seed;
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
  // Said even under --quiet: where requests (and any key) go is never a silent default.
  if (auto notice = probes::proxy_notice(endpoint)) fmt::print(stderr, "{}\n", *notice);
  result.target.base_url = endpoint;
  result.target.headers = options.headers;
  result.target.insecure = options.insecure;
  result.target.api_key = key;
  warn_if_clear_text(endpoint, key);
  result.info.url = core::redact(probes::strip_credentials(endpoint));
  // The dialect found, before a chat suite moves to the chat route: it says how to describe it.
  probes::Dialect served = probes::Dialect::openai_chat;
  probes::DetectionExtras detected; // its answers: the description reuses them
  if (config.api == "auto") {
    std::string explanation;
    auto dialect = probes::detect_dialect(endpoint, result.target.headers, result.target.api_key,
                                          options.insecure, std::min(config.timeout_s, 10.0),
                                          &explanation, &detected);
    if (!dialect) return dialect.error();
    const int chat_prompts = core::chat_prompt_count(suite);
    const probes::Dialect chosen = probes::dialect_for_suite(
        *dialect, static_cast<int>(suite.prompts.size()) - chat_prompts, chat_prompts);
    if (chosen != *dialect)
      explanation += fmt::format("; the suite's {} chat prompts go to its /v1/chat/completions "
                                 "route, through the model's chat template, not flattened onto {}",
                                 chat_prompts, probes::to_string(*dialect));
    result.target.dialect = chosen;
    served = *dialect;
    result.target.llamacpp_router = detected.llamacpp_router;
    if (!options.quiet)
      print_stderr(fmt::format("llmrepro: --api auto chose {} ({})\n", probes::to_string(chosen),
                               explanation));
  } else {
    auto dialect = probes::parse_dialect(config.api);
    if (!dialect) return dialect.error();
    result.target.dialect = *dialect;
    served = *dialect;
  }
  result.info.dialect = probes::to_string(result.target.dialect);
  result.info.model = config.model;
  result.target.model_given = !config.model.empty();
  LLMREPRO_TRY_ASSIGN(result.target.logprobs_form,
                      probes::parse_logprobs_form(config.logprobs_form));
  result.info.server =
      probes::describe_server(result.target, served, std::min(config.timeout_s, 10.0), &detected);
  return result;
}

// Semantic agreement of the distinct completions (--embeddings): measured, stored beside the
// audit, and put into `data` so that every report of this run shows it as `report` would.
core::Result<void> measure_and_store_semantics(const AuditOptions& options,
                                               const core::AuditReport& audit_report,
                                               store::AuditDatabase& database,
                                               core::AuditData& data, const std::string& key) {
  probes::EmbeddingsTarget target;
  target.url = options.embeddings;
  if (auto notice = probes::proxy_notice(target.url)) fmt::print(stderr, "{}\n", *notice);
  target.model = options.embeddings_model;
  target.headers = options.headers;
  target.insecure = options.insecure;
  target.timeout_s = options.timeout_s;
  target.api_key = key;
  warn_if_clear_text(options.embeddings, key);
  auto agreement =
      probes::measure_semantic_agreement(target, audit_report.analysis, options.semantic_threshold);
  if (!agreement) return agreement.error();
  LLMREPRO_TRY(database.store_semantic(*agreement));
  data.semantic = std::move(*agreement);
  return {};
}

// A model on OpenAI's own API that returns no logprobs (a reasoning model) is named before the
// plan runs, so that an audit compared on text alone is never mistaken for a parse failure.
// One that rejects the parameter is then asked without it.
// Returns whether it sent a request.
bool check_logprobs_up_front(const AuditOptions& options, const core::AuditConfig& config,
                             const core::Suite& suite, Target& target) {
  if (target.embedded || suite.prompts.empty() || !probes::logprob_check_applies(target.target))
    return false;
  const probes::SchedulerConfig scheduler =
      probes::scheduler_config_of(config, target.info.model, options.max_response_bytes);
  probes::LogprobSupport support =
      probes::check_logprob_support(target.target, scheduler, suite.prompts.front());
  if (support.returns_logprobs) return true;
  target.target.rejects_logprobs = support.rejects_logprobs;
  if (!options.quiet)
    print_stderr(fmt::format(
        "llmrepro: model '{}' at {} returns no logprobs: {}; its completions are compared by "
        "text alone, with no top-2 gap{}\n",
        support.model.empty() ? "(unnamed)" : support.model, target.info.url, support.reason,
        support.rejects_logprobs ? " (requests are sent without logprobs)" : ""));
  return true;
}

} // namespace

core::Result<void> load_or_resume(AuditRun& run) {
  const AuditOptions& options = run.options;
  // Before anything can print a URL or a header, the run knows its secrets.
  register_flag_secrets(options);
  auto config_or = config_from(options);
  if (!config_or) return config_or.error();
  const std::string second_endpoint_hint = "add --compare URL or a second --endpoint";
  if (!options.resume)
    if (auto fits =
            check_gates_fit(*config_or, given_endpoint_count(options), second_endpoint_hint);
        !fits)
      return fits;
  run.database_existed = std::filesystem::exists(options.db);
  if (options.resume && !run.database_existed)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--resume: no audit database at '{}'", options.db));
  if (!options.resume && run.database_existed && !options.overwrite)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("'{}' already exists: pass --resume to continue that audit, --overwrite to "
                    "replace it, or --db to choose another file",
                    options.db));

  // The endpoints: the user's, or the embedded reference engine (""). Several (--endpoint
  // repeated, --compare): the same plan runs against each; endpoint 0's analysis stays the
  // top-level one. --compare alone compares the embedded engine with them. --resume without
  // either flag runs against the stored endpoints.
  const bool urls_given = !options.endpoints.empty() || !options.compare.empty();
  run.urls = options.endpoints;
  if (run.urls.empty()) run.urls.push_back("");
  run.urls.insert(run.urls.end(), options.compare.begin(), options.compare.end());

  if (options.resume) {
    LLMREPRO_TRY(resume_stored(run, *config_or, urls_given));
    return choose_keys(run);
  }
  if (options.suite.empty()) return core::make_error(core::ErrorCode::usage, "--suite is required");
  auto suite = probes::load_suite(options.suite);
  if (!suite) return suite.error();
  run.header.suite = std::move(*suite);
  run.header.config = *config_or;
  // Stored so that --resume can hold them to the audit (resume_plan_differences).
  if (std::find(run.urls.begin(), run.urls.end(), std::string()) != run.urls.end())
    run.header.config.engine = engine_settings_of(options);
  run.header.config.header_names = header_names_of(options);
  return choose_keys(run);
}

core::Result<void> print_plan(AuditRun& run) {
  const core::AuditConfig& config = run.config();
  const core::Plan plan = core::make_plan(
      run.header.suite, core::plan_config_of(config, static_cast<int>(run.urls.size())));
  // The URLs as given, their credentials shown as [redacted].
  std::vector<std::string> shown;
  for (const std::string& url : run.urls) shown.push_back(core::redact(url));
  run.dry_run_within_budget = print_dry_run(config, run.header.suite, shown, plan);
  return {};
}

core::Result<void> connect_endpoints(AuditRun& run) {
  const AuditOptions& options = run.options;
  const core::AuditConfig& config = run.config();
  for (std::size_t i = 0; i < run.urls.size(); ++i) {
    const std::string& url = run.urls[i];
    auto target_or = connect(options, config, run.header.suite, url, run.keys[i]);
    if (!target_or) return target_or.error();
    Target& target = *target_or;
    if (target.info.model.empty() && !target.embedded) {
      const bool gemini = target.target.dialect == probes::Dialect::gemini;
      const bool anthropic = target.target.dialect == probes::Dialect::anthropic;
      auto model = probes::detect_model(url, target.target.dialect, target.target.headers,
                                        target.target.api_key, options.insecure,
                                        std::min(config.timeout_s, 10.0));
      // Gemini names the model in every request's path and Anthropic requires it in every
      // body: without one nothing can be sent.
      if (!model && (gemini || anthropic)) return model.error();
      if (model) {
        target.info.model = *model;
        if ((gemini || anthropic) && !options.quiet)
          print_stderr(fmt::format("llmrepro: no --model given: auditing {} ({})\n", *model,
                                   gemini ? "the first model /v1beta/models lists with "
                                            "generateContent"
                                          : "the first model /v1/models lists, its newest"));
      }
    }
    target.target.model = target.info.model;
    if (check_logprobs_up_front(options, config, run.header.suite, target))
      ++run.preflight_requests;
    run.targets.push_back(std::move(target));
  }
  return {};
}

core::Result<void> open_database(AuditRun& run) {
  const AuditOptions& options = run.options;
  std::vector<core::EndpointInfo> infos;
  for (const auto& target : run.targets) infos.push_back(target.info);
  if (!options.resume) {
    // --overwrite: the file goes with its -wal and -shm, which would otherwise be replayed into
    // the new database (the writer lock, claim_files, is held).
    if (run.database_existed)
      for (const auto& suffix : {"", "-wal", "-shm"}) std::filesystem::remove(options.db + suffix);
    core::AuditData& header = run.header;
    header.info.id = fmt::format("audit-{}", run.clock.now_ms());
    header.info.started_ms = run.clock.now_ms();
    header.info.status = core::audit_status(false);
    header.endpoints = infos;
    auto created = store::AuditDatabase::create(options.db, header);
    if (!created) return created.error();
    created->check_records_against_plan();
    run.database.emplace(std::move(*created));
    return {};
  }
  for (std::size_t e = 0; e < infos.size(); ++e)
    LLMREPRO_TRY(run.database->update_endpoint(static_cast<int>(e), infos[e]));
  // So that a later `llmrepro report` judges the audit as this run does.
  if (run.judging_changed) LLMREPRO_TRY(run.database->update_config(run.config()));
  return {};
}

core::Result<void> plan_requests(AuditRun& run) {
  run.plan = core::make_plan(
      run.header.suite, core::plan_config_of(run.config(), static_cast<int>(run.targets.size())));
  auto done = run.database->recorded_successes();
  if (!done) return done.error();
  run.recorded = core::RecordedRequests(*done);
  return {};
}

core::Result<void> run_requests(AuditRun& run) {
  const AuditOptions& options = run.options;
  const core::AuditConfig& config = run.config();
  const Target& target = run.targets.front();
  const probes::SchedulerConfig scheduler =
      probes::scheduler_config_of(config, target.info.model, options.max_response_bytes);
  std::vector<probes::EndpointTarget> endpoint_targets;
  for (const auto& each : run.targets) endpoint_targets.push_back(each.target);

  const bool show_progress = !options.quiet && isatty(STDERR_FILENO);
  const auto progress = [&](const probes::SchedulerProgress& p) {
    if (!show_progress) return;
    fmt::print(stderr, "\r\033[Kllmrepro: c={} {}/{} requests, {} failed", p.concurrency, p.done,
               p.total, p.failed);
  };
  if (!options.quiet)
    print_stderr(
        fmt::format("llmrepro: auditing {}{} with {} prompts x {} runs at concurrency {}\n",
                    target.info.url, target.embedded ? " (embedded reference engine)" : "",
                    run.header.suite.prompts.size(), config.runs, fmt::join(config.levels, ",")));

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  // A budget counts the whole audit: what a resumed audit already sent is spent.
  auto ledger = start_ledger(config, options.resume ? &*run.database : nullptr);
  if (!ledger) return ledger.error();
  run.budget = std::move(*ledger);
  if (run.budget && !run.header.suite.prompts.empty()) {
    const core::Prompt& first = run.header.suite.prompts.front();
    run.budget->add_spent(run.preflight_requests,
                          run.preflight_requests * core::prompt_token_bound(first),
                          run.preflight_requests * scheduler.params.max_tokens);
  }
  // Every attempt is charged before it is sent (kill -9 then --resume stays within the budget):
  // live in the lock file, one pwrite per batch of starts; settled into the database when the
  // run ends. A resumed audit spends at least what its killed run charged.
  if (run.budget) {
    const std::string& id = run.header.info.id;
    if (const auto charged = run.lock->read_charge(id)) run.budget->charge_at_least(*charged);
    LLMREPRO_TRY(run.database->store_budget_charge(run.budget->charged()));
    LLMREPRO_TRY(run.lock->write_charge(id, run.budget->charged()));
    run.budget->set_journal([&lock = *run.lock, id](const core::BudgetCharge& charge) {
      return lock.write_charge(id, charge);
    });
  }
  // One plan's waves, each request committed as it finishes. The sink commits on its own thread:
  // it is drained before anything reads the records back or marks the audit partial or
  // complete; its error counts when the run itself succeeded.
  const SendPlan send = [&](const core::Plan& plan) -> core::Result<void> {
    store::DatabaseSink database_sink(*run.database);
    // Every record is redacted on its way into the database (docs/design.md "Secrets").
    core::RedactingSink sink(database_sink, core::run_secrets());
    core::Result<void> sent = probes::run_plan(
        {.plan = plan,
         .suite = run.header.suite,
         .targets = endpoint_targets,
         .config = scheduler,
         .sink = sink,
         .stop_requested = g_stop_requested,
         .clock = run.clock,
         .already_recorded =
             [&](const core::PlannedRequest& key) { return run.recorded.contains(key); },
         .on_progress = progress,
         .activity = &run.activity,
         .budget = run.budget ? &*run.budget : nullptr});
    if (auto drained = database_sink.finish(); !drained && sent) sent = drained.error();
    return sent;
  };
  run.ran = config.adaptive ? run_adaptive_rounds(run, send, g_stop_requested) : send(run.plan);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (show_progress) fmt::print(stderr, "\r\033[K");
  if (run.budget) {
    run.budget->set_journal({});
    LLMREPRO_TRY(run.database->store_budget_charge(run.budget->charged()));
    LLMREPRO_TRY(run.lock->write_charge(run.header.info.id, run.budget->charged()));
  }
  run.interrupted = g_stop_requested.load();
  return run.database->store_probe_activity(
      core::with_earlier_cold_modes(run.activity, run.header.probe_activity));
}

core::Result<void> analyse_records(AuditRun& run) {
  auto loaded = store::load_report(*run.database, tool_info());
  if (!loaded) return loaded.error();
  run.loaded.emplace(std::move(*loaded));
  return {};
}

core::Result<void> finish_status(AuditRun& run) {
  core::AuditData& data = *run.loaded->data;
  // An adaptive audit is complete once its decisions are, too.
  const bool complete =
      core::audit_complete(data.records.size(), run.plan.size(), run.interrupted) &&
      (!data.adaptive || data.adaptive->finished);
  const std::int64_t finished_ms = run.clock.now_ms();
  LLMREPRO_TRY(run.database->set_status(core::audit_status(complete), finished_ms));
  data.info.status = core::audit_status(complete);
  data.info.finished_ms = finished_ms;
  return {};
}

core::Result<void> judge_run(AuditRun& run) {
  core::AuditReport& audit_report = run.report();
  if (!run.options.embeddings.empty() && run.ran && !run.interrupted) {
    auto measured = measure_and_store_semantics(run.options, audit_report, *run.database,
                                                *run.loaded->data, run.embeddings_key);
    if (!measured) return measured;
  }
  core::RunFacts facts = core::stored_run_facts(audit_report);
  facts.interrupted = run.interrupted;
  if (!run.ran) facts.run_error = core::redact(run.ran.error().message);
  // This run's own budget stop, not one an earlier run stored; stored for `report`.
  facts.budget_stop.clear();
  if (run.budget)
    facts.budget_stop = budget_stop_error(*run.budget, run.plan, *run.loaded->data, audit_report);
  LLMREPRO_TRY(run.database->store_budget_stop(facts.budget_stop));
  run.loaded->data->budget_stop = facts.budget_stop;
  core::rejudge(audit_report, run.config().gates, facts);
  return {};
}

int conclude(AuditRun& run) {
  const AuditOptions& options = run.options;
  if (!run.ran) report_error(run.ran.error());
  if (run.budget && run.budget->overrun())
    fmt::print(stderr, "llmrepro: warning: {}; no request was started after it\n",
               run.budget->overrun_message());
  if (run.budget && (run.budget->exhausted() || run.budget->overrun()))
    fmt::print(stderr,
               "llmrepro: the budget stopped the audit; '{}' holds a partial audit: continue it "
               "with --resume --db {} and a larger budget\n",
               options.db, options.db);
  if (run.interrupted)
    fmt::print(stderr,
               "llmrepro: interrupted; '{}' holds a partial audit: continue it with "
               "--resume --db {}\n",
               options.db, options.db);
  return exit_code_of(run.report().verdict, run.interrupted);
}

} // namespace llmrepro::cli
