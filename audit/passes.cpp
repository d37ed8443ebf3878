// The passes from the database to the verdict, and execute(), which runs every pass after
// load_or_resume in order.
#include "audit/run.hpp"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "audit/budget.hpp"
#include "audit/keys.hpp"
#include "audit/open_file_limit.hpp"
#include "audit/rounds.hpp"
#include "audit/session.hpp"
#include "core/redaction.hpp"
#include "probes/capability_preflight.hpp"
#include "probes/embeddings_client.hpp"
#include "probes/proxy_rule.hpp"
#include "store/database_sink.hpp"

namespace llmrepro::audit {

namespace {

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_interrupts{0};

extern "C" void on_interrupt(int) {
  // First Ctrl-C: finish the requests in flight and keep a consistent, partial database.
  // Second: leave at once; every recorded request is already committed.
  if (g_interrupts.fetch_add(1) >= 1) std::_Exit(130);
  g_stop_requested.store(true);
}

// Semantic agreement of the distinct completions (--embeddings), measured after the run; stored
// with the run's outcome.
core::Result<core::SemanticAgreement> measure_semantics(const AuditRequest& options,
                                                        const core::AuditReport& audit_report,
                                                        const std::string& key) {
  probes::EmbeddingsTarget target;
  target.url = options.embeddings;
  if (auto notice = probes::proxy_notice(target.url)) note(options, *notice + "\n");
  target.model = options.embeddings_model;
  target.headers = options.headers;
  target.insecure = options.insecure;
  target.timeout_s = options.timeout_s;
  target.api_key = key;
  warn_if_clear_text(options, options.embeddings, key);
  if (!audit_report.details)
    return probes::measure_semantic_agreement(target, audit_report.analysis,
                                              options.semantic_threshold);
  // A lean report's prompts are slim: their completions are read back to be embedded.
  core::AuditAnalysis whole = audit_report.analysis;
  for (core::PromptAnalysis& prompt : whole.prompts) audit_report.details->restore(prompt);
  LLMREPRO_TRY(audit_report.details->error());
  return probes::measure_semantic_agreement(target, whole, options.semantic_threshold);
}

} // namespace

core::Result<void> open_database(AuditRun& run) {
  const AuditRequest& options = run.request;
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
  const AuditRequest& options = run.request;
  const core::AuditConfig& config = run.config();
  const Target& target = run.targets.front();
  const probes::SchedulerConfig scheduler =
      probes::scheduler_config_of(config, target.info.model, options.max_response_bytes);
  std::vector<probes::EndpointTarget> endpoint_targets;
  for (const auto& each : run.targets) endpoint_targets.push_back(each.target);

  const bool show_progress = options.progress;
  const auto progress = [&](const probes::SchedulerProgress& p) {
    if (!show_progress) return;
    note(options, fmt::format("\r\033[Kllmrepro: c={} {}/{} requests, {} failed", p.concurrency,
                              p.done, p.total, p.failed));
  };
  if (!options.quiet)
    note(options,
         fmt::format("llmrepro: auditing {}{} with {} prompts x {} runs at concurrency {}\n",
                     target.info.url, target.embedded ? " (embedded reference engine)" : "",
                     run.header.suite.prompts.size(), config.plan.runs,
                     fmt::join(config.plan.levels, ",")));

  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  // A budget counts the whole audit: what a resumed audit already sent is spent.
  auto ledger = start_ledger(config, options.resume ? &*run.database : nullptr);
  if (!ledger) return ledger.error();
  run.budget = std::move(*ledger);
  if (run.budget && !run.header.suite.prompts.empty()) {
    const core::Prompt preflight =
        probes::preflight_prompt(run.header.suite.prompts.front().is_chat());
    run.budget->add_spent(run.preflight_requests,
                          run.preflight_requests * core::prompt_token_bound(preflight),
                          run.preflight_requests * probes::k_preflight_max_tokens);
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
  const probes::RestartSettings restart{options.restart_cmd, options.restart_timeout_s};
  run.activity = core::earlier_prefix_sizing(run.header.probe_activity);
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
         .budget = run.budget ? &*run.budget : nullptr,
         .restart = options.restart_cmd.empty() ? nullptr : &restart});
    if (auto drained = database_sink.finish(); !drained && sent) sent = drained.error();
    return sent;
  };
  run.ran = run_rounds(run, send, g_stop_requested);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (show_progress) note(options, "\r\033[K");
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
  SessionOptions options;
  options.tool = run.request.tool;
  // The run judges once, with what only it knows (judge_run).
  options.judge = false;
  // Its reports are rendered as `report` renders them, from a lean report.
  options.lean = true;
  // The adaptive decisions of the last look are saved with the outcome, after this analysis.
  if (run.adaptive)
    options.adjust = [&run](core::AuditData& data) -> core::Result<void> {
      data.adaptive = run.adaptive;
      return {};
    };
  auto session = load_session(*run.database, options);
  if (!session) return session.error();
  run.loaded.emplace(std::move(*session));
  return {};
}

core::Result<void> judge_run(AuditRun& run) {
  core::AuditReport& audit_report = run.report();
  core::AuditData& data = *run.loaded->data;
  store::RunOutcome outcome;
  // An adaptive audit is complete once its decisions are, too.
  const bool complete =
      core::audit_complete(core::recorded_requests(data), run.plan.size(), run.interrupted) &&
      (!data.adaptive || data.adaptive->finished);
  outcome.status = core::audit_status(complete);
  outcome.finished_ms = run.clock.now_ms();
  outcome.adaptive = run.adaptive;
  core::RunFacts facts = core::stored_run_facts(audit_report);
  facts.interrupted = run.interrupted;
  if (!run.ran) facts.run_error = core::redact(run.ran.error().message);
  // This run's own budget stop, not one an earlier run stored; stored for `report`.
  facts.budget_stop.clear();
  if (run.budget) facts.budget_stop = budget_stop_error(*run.budget, run.plan, *run.loaded);
  outcome.budget_stop = facts.budget_stop;
  core::Result<void> measured;
  if (!run.request.embeddings.empty() && run.ran && !run.interrupted) {
    auto agreement = measure_semantics(run.request, audit_report, run.embeddings_key);
    if (agreement)
      outcome.semantic = std::move(*agreement);
    else
      measured = agreement.error();
  }
  // One write: a crash leaves the earlier outcome whole or this one, never a mix of the two.
  LLMREPRO_TRY(run.database->store_outcome(outcome));
  data.info.status = outcome.status;
  data.info.finished_ms = outcome.finished_ms;
  data.budget_stop = outcome.budget_stop;
  // So that every report of this run shows it as `report` would.
  if (outcome.semantic) data.semantic = std::move(outcome.semantic);
  if (!measured) return measured;
  // The verdict, computed once: the analysis was loaded unjudged.
  core::rejudge(audit_report, run.config().gates, facts);
  return {};
}

core::Result<void> execute(AuditRun& run) {
  // No report may replace an input, and one process at a time writes the database.
  LLMREPRO_TRY(claim_files(run));
  // Running out of descriptors mid-run would look like an endpoint that cannot be reached.
  LLMREPRO_TRY(check_open_file_limit(run));
  // Each endpoint is reached (or the embedded engine started) and its dialect and model known.
  LLMREPRO_TRY(connect_endpoints(run));
  // The header is stored before the first request, so that a crash leaves a resumable audit.
  LLMREPRO_TRY(open_database(run));
  // The plan fixes every request up front; --resume skips what is already recorded.
  LLMREPRO_TRY(plan_requests(run));
  // Each level's concurrency is held exactly; its own error is reported after the reports.
  LLMREPRO_TRY(run_requests(run));
  // The analysis reads the records back as stored, a prompt at a time, in bounded memory.
  LLMREPRO_TRY(analyse_records(run));
  // What only the run knows (an interruption, an unreachable endpoint) enters the verdict, and
  // the outcome is saved whole: complete only when every planned request is recorded.
  return judge_run(run);
}

} // namespace llmrepro::audit
