#include "core/budget.hpp"

#include <algorithm>

#include "core/probe_text.hpp"
#include "core/usage_summary.hpp"

namespace llmrepro::core {
namespace {

// Special tokens a chat template may add around one message, and around the whole request.
constexpr long k_template_margin = 64;
// Undecided prompts named in the error line; the rest are counted.
constexpr std::size_t k_named_undecided = 10;

} // namespace

long prompt_token_bound(const Prompt& prompt) {
  long bound = k_template_margin;
  if (prompt.text) bound += static_cast<long>(prompt.text->size()) + k_template_margin;
  for (const Message& message : prompt.messages)
    bound += static_cast<long>(message.role.size() + message.content.size()) + k_template_margin;
  return bound;
}

void BudgetLedger::add_spent(long requests, long prompt_tokens, long completion_tokens) {
  m_spent.requests += requests;
  m_spent.tokens += prompt_tokens + completion_tokens;
  m_spent.cost += cost_of_tokens({prompt_tokens, completion_tokens});
  m_charged.requests += requests;
  m_charged.prompt_tokens += prompt_tokens;
  m_charged.completion_tokens += completion_tokens;
}

BudgetCharge BudgetLedger::charged() const { return m_charged; }

void BudgetLedger::charge_at_least(const BudgetCharge& charge) {
  // Only what is spent is raised: nothing is in flight before a run starts.
  add_spent(std::max(0L, charge.requests - m_charged.requests),
            std::max(0L, charge.prompt_tokens - m_charged.prompt_tokens),
            std::max(0L, charge.completion_tokens - m_charged.completion_tokens));
}

TokenBound BudgetLedger::bound_of(const PlannedRequest& planned, const Prompt& sent,
                                  int max_tokens) const {
  TokenBound bound;
  bound.completion = std::max(0, max_tokens);
  const auto known = m_known_prompt_tokens.find(
      std::tuple{planned.endpoint_index, planned.prompt_index, planned.probe});
  bound.prompt = known != m_known_prompt_tokens.end() ? known->second : prompt_token_bound(sent);
  return bound;
}

void BudgetLedger::learn_prompt_tokens(const PlannedRequest& planned, long prompt_tokens) {
  m_known_prompt_tokens[std::tuple{planned.endpoint_index, planned.prompt_index, planned.probe}] =
      prompt_tokens;
}

TokenBound BudgetLedger::used_by_success(const PlannedRequest& planned,
                                         const Completion& completion, const TokenBound& bound) {
  if (completion.usage.prompt) learn_prompt_tokens(planned, *completion.usage.prompt);
  return {completion.usage.prompt.value_or(bound.prompt), generated_tokens(completion)};
}

double BudgetLedger::cost_of_tokens(const TokenBound& tokens) const {
  if (!m_limits.price) return 0.0;
  return cost_of(*m_limits.price, static_cast<double>(tokens.prompt),
                 static_cast<double>(tokens.completion));
}

std::optional<BudgetLedger::Ticket> BudgetLedger::try_start(const TokenBound& bound) {
  if (exhausted() || overrun()) return std::nullopt;
  if (m_limits.max_requests && m_spent.requests + m_reserved.requests + 1 > *m_limits.max_requests)
    m_exhausted_by = "--max-requests " + std::to_string(*m_limits.max_requests);
  else if (m_limits.max_tokens_total &&
           m_spent.tokens + m_reserved.tokens + bound.total() > *m_limits.max_tokens_total)
    m_exhausted_by = "--max-tokens-total " + std::to_string(*m_limits.max_tokens_total);
  else if (m_limits.max_cost &&
           m_spent.cost + m_reserved.cost + cost_of_tokens(bound) > *m_limits.max_cost)
    m_exhausted_by = "--max-cost " + shortest_decimal(*m_limits.max_cost);
  if (exhausted()) return std::nullopt;
  m_reserved.requests += 1;
  m_reserved.tokens += bound.total();
  m_reserved.cost += cost_of_tokens(bound);
  m_charged.requests += 1;
  m_charged.prompt_tokens += bound.prompt;
  m_charged.completion_tokens += bound.completion;
  const Ticket ticket = m_next_ticket++;
  m_in_flight.emplace(ticket, bound);
  m_journal_due = true;
  return ticket;
}

Result<void> BudgetLedger::write_journal() {
  if (!m_journal || !m_journal_due) return {};
  // Durable before the send: a crash after it cannot lose a reserved request from the count.
  if (auto stored = m_journal(m_charged); !stored) {
    if (m_overrun.empty())
      m_overrun = "the budget's count could not be stored (" + stored.error().message + ")";
    return stored;
  }
  m_journal_due = false;
  return {};
}

void BudgetLedger::release(Ticket ticket) {
  const auto found = m_in_flight.find(ticket);
  if (found == m_in_flight.end()) return;
  const TokenBound bound = found->second;
  m_in_flight.erase(found);
  m_reserved.requests -= 1;
  m_reserved.tokens -= bound.total();
  m_reserved.cost -= cost_of_tokens(bound);
  m_charged.requests -= 1;
  m_charged.prompt_tokens -= bound.prompt;
  m_charged.completion_tokens -= bound.completion;
}

void BudgetLedger::settle(Ticket ticket, const std::optional<TokenBound>& used) {
  const auto found = m_in_flight.find(ticket);
  if (found == m_in_flight.end()) return;
  const TokenBound bound = found->second;
  release(ticket);
  const TokenBound spent = used.value_or(bound);
  add_spent(1, spent.prompt, spent.completion);
  if (!m_overrun.empty()) return;
  if (spent.prompt > bound.prompt)
    m_overrun = "a request reported " + std::to_string(spent.prompt) +
                " prompt tokens, above its bound of " + std::to_string(bound.prompt);
  else if (spent.completion > bound.completion)
    m_overrun = "a request reported " + std::to_string(spent.completion) +
                " completion tokens, above its max_tokens of " + std::to_string(bound.completion);
}

WaveBound wave_bound(const Wave& wave, const Suite& suite, int max_tokens,
                     std::optional<int> stop_after) {
  WaveBound bound;
  for (const PlannedRequest& planned : wave.requests) {
    if (planned.prompt_index < 0 ||
        static_cast<std::size_t>(planned.prompt_index) >= suite.prompts.size())
      continue;
    const Prompt sent =
        probe_prompt(suite.prompts[static_cast<std::size_t>(planned.prompt_index)], wave.probe);
    const int completion = capped_max_tokens(sent.max_tokens.value_or(max_tokens), stop_after);
    ++bound.requests;
    bound.tokens.prompt += prompt_token_bound(sent);
    bound.tokens.completion += completion;
    if (wave.probe == ProbeKind::prefix && prefix_trial_is_warm(planned.repeat)) {
      ++bound.primes;
      bound.tokens.prompt += prompt_token_bound(prefix_priming_prompt());
      bound.tokens.completion += 1;
    }
  }
  return bound;
}

std::string stop_after_line(const AuditConfig& config) {
  if (!config.plan.stop_after) return {};
  const std::string w = std::to_string(*config.plan.stop_after);
  return "completions capped at " + w + " tokens (--stop-after): divergence beyond token " + w +
         " is not seen";
}

std::string named_prompts(const std::vector<std::string>& ids) {
  std::string text;
  for (std::size_t i = 0; i < ids.size() && i < k_named_undecided; ++i)
    text += (i == 0 ? ": " : ", ") + ids[i];
  if (ids.size() > k_named_undecided)
    text += ", +" + std::to_string(ids.size() - k_named_undecided) + " more";
  return text;
}

std::string budget_stop_message(const std::string& exhausted_by, std::size_t sent,
                                std::size_t planned, const std::vector<std::string>& undecided) {
  std::string message = "budget " + exhausted_by + " reached: " + std::to_string(sent) + " of " +
                        std::to_string(planned) + " planned requests sent; " +
                        std::to_string(undecided.size()) +
                        (undecided.size() == 1 ? " prompt undecided" : " prompts undecided");
  message += named_prompts(undecided);
  return message;
}

} // namespace llmrepro::core
