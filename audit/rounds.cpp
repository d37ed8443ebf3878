#include "audit/rounds.hpp"

#include <fmt/format.h>

#include <vector>

#include "audit/judging.hpp"
#include "audit/run.hpp"
#include "audit/session.hpp"
#include "core/adaptive.hpp"
#include "core/analysis.hpp"
#include "core/audit_report.hpp"
#include "core/recorded_requests.hpp"

namespace llmrepro::audit {
namespace {

// The analysis a look judges from: endpoint 0's sweep over the records of the rounds planned so
// far, streamed from the database a prompt at a time (audit/session.hpp).
core::Result<core::AuditAnalysis> analyse_planned(const AuditRun& run,
                                                  const core::RecordedRequests& planned) {
  SessionOptions options;
  options.tool = run.request.tool;
  options.judge = false;
  options.keep = [&planned](const core::RequestRecord& record) {
    return planned.contains(record.planned);
  };
  // Analysed under the run's configuration, as the run holds it.
  options.adjust = [&run](core::AuditData& data) -> core::Result<void> {
    data.config = run.config();
    return {};
  };
  auto session = load_session(*run.database, options);
  if (!session) return session.error();
  return std::move(session->report.analysis);
}

void add_to(core::Plan& plan, core::RecordedRequests& planned, const core::Plan& round) {
  for (const auto& wave : round.waves) {
    for (const auto& request : wave.requests) planned.insert(request);
    plan.waves.push_back(wave);
  }
}

} // namespace

core::Result<void> apply_adaptive_options(const AuditRequest& options, core::AuditConfig& config) {
  const GivenValues& flags = options.given;
  if (!options.adaptive) {
    for (const auto& [option, flag] : {std::pair{flags.adaptive_epsilon, "--adaptive-epsilon"},
                                       std::pair{flags.adaptive_initial, "--adaptive-initial"},
                                       std::pair{flags.adaptive_assume, "--adaptive-assume"}})
      if (option)
        return core::make_error(
            core::ErrorCode::usage,
            fmt::format("{} sets how --adaptive decides; add --adaptive", flag));
    return {};
  }
  if (flags.adaptive_epsilon) {
    LLMREPRO_TRY(check_finite_above("--adaptive-epsilon", options.adaptive_epsilon, 0.0,
                                    "a probability in (0, 1)"));
    if (options.adaptive_epsilon >= 1.0)
      return core::make_error(
          core::ErrorCode::usage,
          fmt::format("--adaptive-epsilon must be a probability in (0, 1) (got {})",
                      options.adaptive_epsilon));
  }
  const auto assumption = core::parse_adaptive_assumption(options.adaptive_assume);
  if (!assumption)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--adaptive-assume must be 'none' or "
                                        "'greedy-shared-noise' (got '{}')",
                                        options.adaptive_assume));
  if (options.adaptive_initial < 2)
    return core::make_error(core::ErrorCode::usage,
                            fmt::format("--adaptive-initial must be at least 2, the runs that can "
                                        "show a difference (got {})",
                                        options.adaptive_initial));
  if (!options.resume && config.plan.runs <= options.adaptive_initial)
    return core::make_error(
        core::ErrorCode::usage,
        fmt::format("--adaptive spends --runs ({}) as the most a prompt gets at a level, after "
                    "--adaptive-initial ({}) runs each: give --runs above it",
                    config.plan.runs, options.adaptive_initial));
  if (options.endpoints.size() + options.compare.size() > 1)
    return core::make_error(core::ErrorCode::usage,
                            "--adaptive decides from one endpoint's runs: audit one endpoint at a "
                            "time (the decisions of one would starve the comparison)");
  if (config.plan.profile != core::AuditProfile::standard ||
      config.plan.probes != std::vector<core::ProbeKind>{core::ProbeKind::sweep})
    return core::make_error(core::ErrorCode::usage,
                            "--adaptive runs the sweep probe alone (--probe sweep, the standard "
                            "profile): the other probes' runs are paired by design");
  config.adaptive.enabled = true;
  config.adaptive.initial = options.adaptive_initial;
  config.adaptive.epsilon = options.adaptive_epsilon;
  config.adaptive.assume = *assumption;
  return {};
}

core::Result<void> check_adaptive_resume(const AuditRequest& options,
                                         const core::AuditConfig& wanted,
                                         const core::AuditConfig& stored) {
  const GivenValues& flags = options.given;
  const bool differs =
      (options.adaptive && !stored.adaptive.enabled) ||
      (flags.adaptive_epsilon && wanted.adaptive.epsilon != stored.adaptive.epsilon) ||
      (flags.adaptive_initial && wanted.adaptive.initial != stored.adaptive.initial) ||
      (flags.adaptive_assume && wanted.adaptive.assume != stored.adaptive.assume);
  if (!differs) return {};
  const auto settings = [](const core::AuditConfig& config) {
    return config.adaptive.enabled
               ? fmt::format("--adaptive --adaptive-initial {} --adaptive-epsilon {} "
                             "--adaptive-assume {}",
                             config.adaptive.initial, config.adaptive.epsilon,
                             core::to_string(config.adaptive.assume))
               : std::string("a fixed plan (no --adaptive)");
  };
  return core::make_error(core::ErrorCode::usage,
                          fmt::format("--resume: the audit in '{}' was planned with {}; its "
                                      "decisions replay only with the same settings. Resume "
                                      "without them, or start a new audit with --overwrite",
                                      options.db, settings(stored)));
}

core::Result<void> run_rounds(AuditRun& run, const SendPlan& send,
                              const std::atomic<bool>& stop_requested) {
  if (!run.config().adaptive.enabled) return send(run.plan);
  return run_adaptive_rounds(run, send, stop_requested);
}

core::Result<void> run_adaptive_rounds(AuditRun& run, const SendPlan& send,
                                       const std::atomic<bool>& stop_requested) {
  const core::AuditConfig& config = run.config();
  const core::PlanConfig plan_config = core::plan_config_of(config, 1);
  core::AdaptiveOutcome& outcome = run.adaptive.emplace();
  core::RecordedRequests planned;
  run.plan = {};
  add_to(run.plan, planned,
         core::initial_adaptive_plan(run.header.suite, plan_config,
                                     core::adaptive_config_of(config), outcome));
  const auto stopped = [&] {
    return stop_requested.load() ||
           (run.budget && (run.budget->exhausted() || run.budget->overrun()));
  };
  LLMREPRO_TRY(run.database->store_adaptive(outcome));
  core::Result<void> sent = send(run.plan);
  while (sent && !stopped()) {
    auto analysis = analyse_planned(run, planned);
    if (!analysis) return analysis.error();
    core::judge_look(outcome, *analysis);
    if (outcome.finished) break;
    const core::Plan round = core::next_adaptive_round(outcome, plan_config);
    add_to(run.plan, planned, round);
    LLMREPRO_TRY(run.database->store_adaptive(outcome));
    if (!run.request.quiet)
      note(run.request,
           fmt::format("llmrepro: adaptive look {}: {} prompts undecided, {} more requests\n",
                       outcome.looks, outcome.count(core::AdaptiveStop::undecided), round.size()));
    sent = send(round);
  }
  if (sent && !outcome.finished && run.budget &&
      (run.budget->exhausted() || run.budget->overrun())) {
    // One last look at what the budget paid for, so that only the prompts it left undecided
    // are marked so (a look spends its own share of the error like any other).
    auto analysis = analyse_planned(run, planned);
    if (!analysis) return analysis.error();
    std::vector<bool> was_undecided;
    for (const auto& prompt : outcome.prompts)
      was_undecided.push_back(prompt.stop == core::AdaptiveStop::undecided);
    core::judge_look(outcome, *analysis);
    // A prompt whose last runs were planned but not sent did not reach --runs: the budget
    // stopped it.
    for (std::size_t i = 0; i < outcome.prompts.size(); ++i)
      if (was_undecided[i] && outcome.prompts[i].stop == core::AdaptiveStop::max_runs)
        outcome.prompts[i].stop = core::AdaptiveStop::undecided;
    core::close_undecided(outcome, core::AdaptiveStop::budget);
  }
  // The last decisions are stored with the run's outcome (judge_run), in the same write.
  return sent;
}

} // namespace llmrepro::audit
