// The first pass: the request checked and turned into a configuration, then the suite loaded
// for a new audit or the stored audit read and held to the request (--resume).
#include "audit/run.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>

#include "audit/config.hpp"
#include "audit/judging.hpp"
#include "audit/keys.hpp"
#include "audit/rounds.hpp"
#include "audit/session.hpp"
#include "core/resume_check.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/suite_loader.hpp"

namespace llmrepro::audit {

namespace {

// How many endpoints the command line names: --endpoint (or the embedded engine) and --compare.
std::size_t given_endpoint_count(const AuditRequest& options) {
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
  const AuditRequest& options = run.request;
  const core::PlanFlagsGiven& flags = options.given.plan;
  core::ResumeRequest request;
  request.config = wanted;
  request.given = flags;
  request.config.plan.engine = engine_settings_of(options);
  request.config.plan.header_names = header_names_of(options);
  if (options.given.suite) {
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
core::Result<void> resume_budgets(const AuditRequest& options, const core::AuditConfig& wanted,
                                  core::AuditConfig& stored) {
  const GivenValues& flags = options.given;
  if (flags.stop_after && wanted.plan.stop_after != stored.plan.stop_after)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--resume: the audit in '{}' was planned with {}; --stop-after {} would mix "
                    "capped and uncapped completions. Resume without --stop-after, or start a "
                    "new audit with --overwrite",
                    options.db,
                    stored.plan.stop_after ? fmt::format("--stop-after {}", *stored.plan.stop_after)
                                           : std::string("no --stop-after"),
                    options.stop_after));
  if (wanted.analysis.price) stored.analysis.price = wanted.analysis.price;
  if (flags.max_requests) stored.budget.max_requests = wanted.budget.max_requests;
  if (flags.max_tokens_total) stored.budget.max_tokens_total = wanted.budget.max_tokens_total;
  if (flags.max_cost) {
    if (!stored.analysis.price)
      return core::make_error(core::ErrorCode::usage,
                              "--max-cost needs --price input=X,output=Y (per million tokens) to "
                              "count what the tokens cost");
    stored.budget.max_cost = wanted.budget.max_cost;
  }
  return {};
}

// --resume: the stored audit's header, checked against the flags given; the judging flags given
// replace the stored ones (and are stored once the run starts).
core::Result<void> resume_stored(AuditRun& run, const core::AuditConfig& wanted, bool urls_given) {
  const AuditRequest& options = run.request;
  auto opened = open_audit_database(options.db, options.notify);
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
  LLMREPRO_TRY(apply_judging(options.judging, run.header.config, true));
  if (auto fits = check_gates_fit(run.header.config, run.header.endpoints.size(),
                                  "the endpoints of an audit do not change on --resume");
      !fits)
    return fits;
  LLMREPRO_TRY(resume_budgets(options, wanted, run.header.config));
  // How long the serial requests wait is the run's own, as the timeout is.
  if (options.given.serial_spacing) {
    if (run.header.config.plan.profile != core::AuditProfile::adi)
      return core::make_error(core::ErrorCode::usage,
                              fmt::format("--resume: the audit in '{}' does not run --profile "
                                          "adi, whose serial requests --serial-spacing spaces",
                                          options.db));
    run.header.config.requests.serial_spacing_s = wanted.requests.serial_spacing_s;
  }
  LLMREPRO_TRY(check_adaptive_resume(options, wanted, run.header.config));
  // Stored too, so that a later `report` shows the budgets the audit last ran under.
  const core::AuditConfig& after = run.header.config;
  run.judging_changed = core::judging_differs(before, after) || before.budget != after.budget ||
                        before.analysis.price != after.analysis.price;
  return {};
}

// The restart probe restarts the user's endpoint with --restart-cmd: the embedded engine runs in
// this process and has nothing to restart, and a stored plan holding the probe needs the command
// again on --resume (it is never stored).
core::Result<void> check_restart_command(const AuditRun& run) {
  const AuditRequest& options = run.request;
  const auto& probes = run.header.config.plan.probes;
  const bool planned =
      std::find(probes.begin(), probes.end(), core::ProbeKind::restart) != probes.end();
  if (planned && options.restart_cmd.empty())
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--resume: the audit in '{}' plans the restart probe: "
                                        "give --restart-cmd again (it is never stored)",
                                        options.db));
  if (!planned && !options.restart_cmd.empty())
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--resume: the audit in '{}' plans no restart probe; "
                                        "drop --restart-cmd",
                                        options.db));
  if (planned && std::find(run.urls.begin(), run.urls.end(), std::string()) != run.urls.end())
    return core::make_error(core::ErrorCode::usage,
                            "--restart-cmd restarts an endpoint given with --endpoint; the "
                            "embedded engine (no --endpoint) cannot be restarted");
  return {};
}

} // namespace

core::Result<void> load_or_resume(AuditRun& run) {
  const AuditRequest& options = run.request;
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
    LLMREPRO_TRY(check_restart_command(run));
    return choose_keys(run);
  }
  if (options.suite.empty()) return core::make_error(core::ErrorCode::usage, "--suite is required");
  auto suite = probes::load_suite(options.suite);
  if (!suite) return suite.error();
  run.header.suite = std::move(*suite);
  run.header.config = *config_or;
  // Stored so that --resume can hold them to the audit (resume_plan_differences).
  if (std::find(run.urls.begin(), run.urls.end(), std::string()) != run.urls.end())
    run.header.config.plan.engine = engine_settings_of(options);
  run.header.config.plan.header_names = header_names_of(options);
  LLMREPRO_TRY(check_restart_command(run));
  return choose_keys(run);
}

core::Plan dry_run_plan(const AuditRun& run) {
  return core::make_plan(run.header.suite,
                         core::plan_config_of(run.config(), static_cast<int>(run.urls.size())));
}

} // namespace llmrepro::audit
