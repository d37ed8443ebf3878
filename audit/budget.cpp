#include "audit/budget.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include "core/probe_text.hpp"

namespace llmrepro::audit {
namespace {

// The max_tokens a request of `prompt` asks for under `config`.
int max_tokens_of(const core::AuditConfig& config, const core::Prompt& prompt) {
  return core::capped_max_tokens(prompt.max_tokens.value_or(config.plan.max_tokens),
                                 config.plan.stop_after);
}

} // namespace

core::BudgetLimits budget_limits_of(const core::AuditConfig& config) {
  core::BudgetLimits limits;
  limits.max_requests = config.budget.max_requests;
  limits.max_tokens_total = config.budget.max_tokens_total;
  limits.max_cost = config.budget.max_cost;
  limits.price = config.analysis.price;
  return limits;
}

core::Result<std::optional<core::BudgetLedger>> start_ledger(const core::AuditConfig& config,
                                                             const store::AuditDatabase* database) {
  const core::BudgetLimits limits = budget_limits_of(config);
  if (!limits.any()) return std::optional<core::BudgetLedger>{};
  core::BudgetLedger ledger(limits);
  if (database == nullptr) return std::optional<core::BudgetLedger>{std::move(ledger)};
  const auto count = [&](const core::AuditData& header, int prompt_index,
                         const std::vector<core::RequestRecord>& records) -> core::Result<void> {
    const core::Prompt& prompt = header.suite.prompts.at(static_cast<std::size_t>(prompt_index));
    for (const core::RequestRecord& record : records) {
      const core::Prompt sent = core::probe_prompt(prompt, record.planned.probe);
      const core::TokenBound bound =
          ledger.bound_of(record.planned, sent, max_tokens_of(header.config, sent));
      const long attempts = std::max(1, record.outcome.attempts);
      if (!record.outcome.ok) {
        ledger.add_spent(attempts, attempts * bound.prompt, attempts * bound.completion);
        continue;
      }
      // Attempts before the success that failed: each counted at its bound.
      ledger.add_spent(attempts - 1, (attempts - 1) * bound.prompt,
                       (attempts - 1) * bound.completion);
      const core::TokenBound used =
          ledger.used_by_success(record.planned, record.outcome.completion, bound);
      ledger.add_spent(1, used.prompt, used.completion);
    }
    return {};
  };
  auto stored = database->load(count);
  if (!stored) return stored.error();
  // The side traffic the last run counted: fillers and primes at their bounds.
  const core::FillerShape shape{config.plan.profile == core::AuditProfile::deterministic,
                                config.plan.seed};
  for (const core::ProbeActivity& activity : stored->probe_activity) {
    for (int index = 0; index < activity.filler_sent; ++index) {
      const auto filler = static_cast<std::uint64_t>(index);
      const int completion =
          core::capped_max_tokens(core::filler_max_tokens(filler), config.plan.stop_after);
      ledger.add_spent(1, core::prompt_token_bound(core::filler_prompt(filler, shape)), completion);
    }
    ledger.add_spent(activity.primes_sent,
                     activity.primes_sent * core::prompt_token_bound(core::prefix_priming_prompt()),
                     activity.primes_sent);
  }
  // What the last budgeted run charged durably counts too: it holds the requests that were in
  // flight when it was killed, which no record shows.
  auto charge = database->load_budget_charge();
  if (!charge) return charge.error();
  if (*charge) ledger.charge_at_least(**charge);
  return std::optional<core::BudgetLedger>{std::move(ledger)};
}

std::string budget_stop_error(const core::BudgetLedger& ledger, const core::Plan& plan,
                              const Session& session) {
  const core::AuditData& data = *session.data;
  const core::AuditReport& report = session.report;
  if (ledger.overrun())
    return "budget stopped: " + ledger.overrun_message() +
           "; nothing more was started, so that no budget could be exceeded";
  // A refusal after the last audited request was recorded (a filler at the wave's tail) stopped
  // nothing the verdict needs.
  if (!ledger.exhausted() || core::recorded_requests(data) >= plan.size()) return {};
  std::map<int, long> planned;
  for (const core::Wave& wave : plan.waves)
    for (const core::PlannedRequest& request : wave.requests) ++planned[request.prompt_index];
  const std::vector<long>& succeeded = session.successes;
  std::vector<bool> unstable(data.suite.prompts.size(), false);
  for (const core::JudgedScope& scope : core::judged_scopes(report))
    for (std::size_t i = 0; i < scope.analysis->prompts.size() && i < unstable.size(); ++i)
      if (scope.analysis->prompts[i].unstable) unstable[i] = true;
  std::vector<std::string> undecided;
  for (std::size_t i = 0; i < data.suite.prompts.size(); ++i) {
    const int index = static_cast<int>(i);
    if (!unstable[i] && (i < succeeded.size() ? succeeded[i] : 0) < planned[index])
      undecided.push_back(data.suite.prompts[i].id);
  }
  return core::budget_stop_message(ledger.exhausted_by(), core::recorded_requests(data),
                                   plan.size(), undecided);
}

} // namespace llmrepro::audit
