// The audit's budgets (--max-requests, --max-tokens-total, --max-cost): the rule that decides
// whether one more request may start without any budget being exceeded, whatever the requests
// already in flight turn out to use. docs/design.md "Budgets" states the rule.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/audit.hpp"
#include "core/completion.hpp"
#include "core/cost.hpp"
#include "core/plan.hpp"
#include "core/result.hpp"
#include "core/suite.hpp"

namespace llmrepro::core {

// The budgets an audit was given; an empty member is no budget. max_cost needs price.
struct BudgetLimits {
  std::optional<long> max_requests; // attempts the endpoint is sent, fillers and primes included
  std::optional<long> max_tokens_total; // prompt + completion tokens
  std::optional<double> max_cost;       // in the price's currency
  std::optional<Price> price;           // what a token costs; needed by max_cost
  // Whether any budget is set.
  bool any() const { return max_requests || max_tokens_total || max_cost; }
};

// `max_tokens` capped at `stop_after` (--stop-after W) where one is set: what every request,
// audited, filler or counted by a budget, asks for.
inline int capped_max_tokens(int max_tokens, std::optional<int> stop_after) {
  return stop_after ? std::min(max_tokens, *stop_after) : max_tokens;
}

// What one request can use at most: its prompt tokens and its completion tokens.
struct TokenBound {
  long prompt = 0;
  long completion = 0;
  long total() const { return prompt + completion; }
};

// An upper bound on the prompt tokens of a request sending `prompt` (text or messages): its UTF-8
// bytes, plus 64 per message, plus 64. A byte-level BPE tokenizer gives at most one token per
// byte; the margins cover the special tokens a chat template adds around each message and the
// request.
long prompt_token_bound(const Prompt& prompt);

// What a budget has used: requests (attempts) and tokens, and their cost where priced.
struct BudgetSpent {
  long requests = 0;
  long tokens = 0;
  double cost = 0.0;
};

// What a ledger has charged: spent plus reserved for the requests in flight, in requests and in
// prompt and completion tokens (the cost follows from them at the price). An upper bound on what
// the endpoint was sent; made durable before each send, so that a crash cannot lose it.
struct BudgetCharge {
  long requests = 0;
  long prompt_tokens = 0;
  long completion_tokens = 0;
  friend bool operator==(const BudgetCharge&, const BudgetCharge&) = default;
};

// Decides, request by request, whether one may start, and keeps what was spent and what is
// reserved for the requests in flight. Not thread-safe: the scheduler calls it from one thread.
//
// The rule: a request may start only if spent + reserved + its bound stays within every budget
// (requests: +1; tokens: bound.total(); cost: cost_of(price, bound)). Once one is refused the
// ledger is exhausted and refuses every later one, so that the audit ends rather than filling
// the budget with whichever smaller requests still fit.
class BudgetLedger {
public:
  using Ticket = std::size_t;

  explicit BudgetLedger(BudgetLimits limits) : m_limits(std::move(limits)) {}

  const BudgetLimits& limits() const { return m_limits; }

  // Counts a request already sent (recorded by an earlier run of the audit, --resume) as spent.
  void add_spent(long requests, long prompt_tokens, long completion_tokens);

  // Spent plus reserved: what the ledger has charged so far.
  BudgetCharge charged() const;

  // --resume: raises what is spent so that each part of charged() is at least `charge` (what an
  // earlier run charged durably, which also counts the requests in flight when it was killed).
  void charge_at_least(const BudgetCharge& charge);

  // Where the charge is made durable. try_start only marks it due; the caller that sends calls
  // write_journal() before anything reserved since goes on the wire (the scheduler: before each
  // transport poll or blocking request), so that one write covers a batch of starts.
  using Journal = std::function<Result<void>(const BudgetCharge&)>;
  void set_journal(Journal journal) { m_journal = std::move(journal); }

  // Hands charged() to the journal if a request was reserved since the last write. An error
  // overruns the ledger (nothing more starts) and is returned: what was reserved must not be sent.
  Result<void> write_journal();

  // The bound of `planned` sending `sent` with `max_tokens`: completion <= max_tokens; prompt =
  // the exact prompt tokens an earlier success of the same endpoint, prompt and probe kind
  // reported (learn_prompt_tokens), else prompt_token_bound(sent).
  TokenBound bound_of(const PlannedRequest& planned, const Prompt& sent, int max_tokens) const;

  // Remembers the prompt tokens the endpoint reported for a success of `planned`'s endpoint,
  // prompt and probe kind.
  void learn_prompt_tokens(const PlannedRequest& planned, long prompt_tokens);

  // What a successful request of `planned` with `bound` used: the prompt tokens it reported
  // (remembered for later bounds, learn_prompt_tokens), else its prompt bound, and the tokens it
  // generated (core::generated_tokens). The live run and --resume count a success alike.
  TokenBound used_by_success(const PlannedRequest& planned, const Completion& completion,
                             const TokenBound& bound);

  // Reserves `bound` for a request about to start, or refuses (empty) when it does not fit, or
  // the ledger is exhausted or overrun. A refusal exhausts the ledger.
  std::optional<Ticket> try_start(const TokenBound& bound);

  // The request of `ticket` was not sent after all: its reservation is released, nothing spent.
  void release(Ticket ticket);

  // The request of `ticket` ended: its reservation is released and what it used is spent. Empty
  // `used`: unknown (the transfer failed mid-way), so the bound is spent. A figure above the
  // bound overruns the ledger: nothing more starts.
  void settle(Ticket ticket, const std::optional<TokenBound>& used);

  BudgetSpent spent() const { return m_spent; }
  bool exhausted() const { return !m_exhausted_by.empty(); }
  // The budget that refused a request, as its flag and value: "--max-requests 40"; empty if none.
  const std::string& exhausted_by() const { return m_exhausted_by; }
  bool overrun() const { return !m_overrun.empty(); }
  // What reported more than its bound: "a request reported 700 prompt tokens, above its bound
  // of 612"; empty if none.
  const std::string& overrun_message() const { return m_overrun; }

private:
  double cost_of_tokens(const TokenBound& tokens) const;

  BudgetLimits m_limits;
  BudgetSpent m_spent;
  BudgetSpent m_reserved;
  BudgetCharge m_charged; // spent + reserved, split as a charge
  Journal m_journal;
  bool m_journal_due = false; // a request was reserved since the journal's last write
  std::map<Ticket, TokenBound> m_in_flight;
  Ticket m_next_ticket = 0;
  std::map<std::tuple<int, int, ProbeKind>, long> m_known_prompt_tokens;
  std::string m_exhausted_by;
  std::string m_overrun;
};

// What one wave of a plan may use at most (--dry-run): its audited requests and the prefix
// probe's priming requests, with their token bounds. The mixed probe's fillers are not included:
// how many run depends on how long the audited requests take.
struct WaveBound {
  long requests = 0; // audited requests
  long primes = 0;   // priming requests before warm prefix trials
  TokenBound tokens; // summed over both
};

// The bound of `wave` over `suite`: each request's prompt as core::probe_prompt sends it
// (prompt_token_bound) and its max_tokens (the prompt's own, else `max_tokens`; capped at
// `stop_after`); each priming request's prompt with 1 token.
WaveBound wave_bound(const Wave& wave, const Suite& suite, int max_tokens,
                     std::optional<int> stop_after);

// The line every report shows near the verdict of an audit run with --stop-after W:
// "completions capped at W tokens (--stop-after): divergence beyond token W is not seen"; empty
// without it.
std::string stop_after_line(const AuditConfig& config);

// ": p1, p2, p3" naming at most ten of `ids`, then ", +N more"; empty when there are none: how
// every error line names the prompts it is about.
std::string named_prompts(const std::vector<std::string>& ids);

// The error line of an audit a budget stopped: "budget --max-requests 40 reached: 40 of 64
// planned requests sent; 3 prompts undecided: p1, p2, p3" (at most 10 ids, then "+N more").
std::string budget_stop_message(const std::string& exhausted_by, std::size_t sent,
                                std::size_t planned, const std::vector<std::string>& undecided);

} // namespace llmrepro::core
