#include "probes/scheduler.hpp"

#include "core/agent_chain.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <optional>

#include "core/probe_text.hpp"
#include "core/random.hpp"
#include "core/result.hpp"
#include "probes/detail/filler_traffic.hpp"
#include "probes/detail/prefix_trial.hpp"
#include "probes/detail/restart_round.hpp"
#include "probes/detail/request_builder.hpp"
#include "probes/detail/unreachable_rule.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/http_transport.hpp"

namespace llmrepro::probes {
namespace {

using Steady = std::chrono::steady_clock;

// Retry-After is honoured up to this long; a longer one is an outage, not back-pressure.
constexpr double k_max_retry_after_s = 60;
// Longest sleep of the loop, so that a stop request is noticed promptly.
constexpr double k_max_idle_s = 0.05;

Steady::duration seconds(double s) {
  return std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(s));
}

double seconds_until(Steady::time_point when, Steady::time_point now) {
  return std::chrono::duration<double>(when - now).count();
}

// What one attempt's response means for its request.
struct Judgement {
  enum class Verdict { success, retry, fail } verdict = Verdict::fail;
  std::string reason;
  core::Completion completion;
  std::optional<double> retry_after_s;
  bool unreachable = false; // connection or TLS failure: nothing usable is listening there
};

Judgement judge(const HttpResponse& response, Dialect dialect, bool stream) {
  Judgement judgement;
  using Verdict = Judgement::Verdict;
  switch (response.failure) {
  case TransportFailure::none: break;
  case TransportFailure::connect:
  case TransportFailure::timeout:
  case TransportFailure::closed:
    judgement.verdict = Verdict::retry;
    judgement.reason = response.error;
    judgement.unreachable = response.failure == TransportFailure::connect;
    return judgement;
  case TransportFailure::tls:
    // A certificate problem does not fix itself between retries.
    judgement.verdict = Verdict::fail;
    judgement.reason = response.error;
    judgement.unreachable = true;
    return judgement;
  case TransportFailure::too_large:
  case TransportFailure::local_limit: // this machine's limit: no sign of the endpoint either way
  case TransportFailure::other:
    judgement.verdict = Verdict::fail;
    judgement.reason = response.error;
    return judgement;
  }

  const int status = response.http_status;
  if (status >= 200 && status < 300) {
    core::Result<core::Completion> parsed = parse_response(dialect, response.body, stream);
    if (parsed) {
      judgement.verdict = Verdict::success;
      judgement.completion = std::move(parsed.value());
    } else if (std::optional<std::string> sent = endpoint_error_of(dialect, parsed.error())) {
      // The endpoint's own error, mid-stream or in place of a completion: retried as a 5xx is.
      judgement.verdict = names_request_refusal(*sent) ? Verdict::fail : Verdict::retry;
      judgement.reason = parsed.error().message;
    } else {
      // A truncated or garbled body is usually a transient fault of a proxy or the server.
      judgement.verdict = Verdict::retry;
      judgement.reason = "malformed response: " + parsed.error().message;
    }
    return judgement;
  }
  judgement.reason = "HTTP " + std::to_string(status) + ": " + describe_error_body(response.body);
  if (status >= 300 && status < 400) {
    judgement.verdict = Verdict::fail;
    judgement.reason = describe_redirect(status, response.redirect_url);
  } else if (status == 429 || status == 408 || status == 425) {
    // Too many requests, request timeout, too early: the same request may pass later.
    judgement.verdict = Verdict::retry;
    judgement.retry_after_s = response.retry_after_s;
  } else if (status >= 500) {
    // A server fault may pass; a refusal of this request (its output failed the server's own
    // format check, say) fails again on every attempt.
    judgement.verdict = names_request_refusal(response.body) ? Verdict::fail : Verdict::retry;
  } else {
    judgement.verdict = Verdict::fail;
  }
  return judgement;
}

// One logical request holding a concurrency slot: in flight, or waiting for its next attempt.
struct Slot {
  const core::PlannedRequest* planned = nullptr;
  HttpRequest request;
  core::TokenBound bound;                           // what one attempt may use, for the budget
  std::optional<core::BudgetLedger::Ticket> ticket; // the budget's ticket of the attempt in flight
  int attempts = 0;
  std::int64_t started_ms = 0;
  bool in_flight = false;
  HttpTransport::RequestId transfer = 0;
  Steady::time_point retry_at;
  int last_status = 0;
  std::string last_reason;
  std::optional<int> long_context_words; // the long context was cut to this many words to fit
  // A cold prefix trial after vLLM's reset: its prefix-cache counter before the trial
  // (detail::prepare_prefix_trial).
  std::optional<long> cache_hits_before;
  // An agent chain (core/agent_chain.hpp): the conversation as sent so far, the requests it
  // sent, the attempts of the steps done, and the steps' answers joined; empty otherwise.
  std::optional<core::Prompt> conversation;
  GenerationParams params;
  int chain_steps = 0;
  int chain_attempts = 0;
  std::optional<core::Completion> chain;
};

// One wave as it runs: its requests still to start and the slots of those started.
struct WaveState {
  const core::Wave& wave;
  const EndpointTarget& target;
  core::ProbeActivity& activity;
  std::deque<const core::PlannedRequest*> queue;
  bool serial_prefix = false; // the prefix probe: one request at a time, with its side traffic
  int prefix_words = core::k_prefix_words; // the shared prefix's words it sends (prefix_words_for)
  int restarted_round = -1;                // the restart probe: the round whose restart ran last
  // Rounds under --serial-spacing: when each prompt's last request started.
  std::map<int, Steady::time_point> last_start;
  std::size_t concurrency = 1;  // slots
  std::size_t filler_count = 0; // fillers kept in flight (the mixed and mixed-sampling probes)
  std::vector<Slot> slots;
};

class Runner {
public:
  explicit Runner(const RunPlanInputs& inputs, std::vector<core::ProbeActivity>& activity)
      : m_suite(inputs.suite), m_targets(inputs.targets), m_config(inputs.config),
        m_sink(inputs.sink), m_on_progress(inputs.on_progress), m_stop(inputs.stop_requested),
        m_clock(inputs.clock), m_activity(activity), m_budget(inputs.budget),
        m_restart(inputs.restart), m_rng(inputs.config.params.seed ^ 0x6A09E667F3BCC908ULL),
        m_fillers(inputs.config) {
    m_activity.resize(m_targets.size());
  }

  void set_total(std::size_t total) { m_progress.total = total; }

  // Runs one wave; returns an error when the run must end (sink failure, unreachable endpoint).
  core::Result<void> run_wave(const core::Wave& wave,
                              std::deque<const core::PlannedRequest*> queue) {
    if (wave.endpoint_index < 0 ||
        static_cast<std::size_t>(wave.endpoint_index) >= m_targets.size())
      return core::make_error(core::ErrorCode::internal,
                              "plan names endpoint " + std::to_string(wave.endpoint_index) +
                                  " but only " + std::to_string(m_targets.size()) + " were given");
    const auto endpoint = static_cast<std::size_t>(wave.endpoint_index);
    WaveState state{wave, m_targets[endpoint], m_activity[endpoint], std::move(queue)};
    state.serial_prefix = wave.probe == core::ProbeKind::prefix;
    if (state.serial_prefix) state.prefix_words = prefix_words_for(state.target, state.activity);
    if (wave.probe == core::ProbeKind::restart && m_restart == nullptr)
      return core::make_error(core::ErrorCode::usage,
                              "the plan holds the restart probe: give --restart-cmd");
    state.concurrency = core::probe_is_serial(wave.probe)
                            ? 1
                            : static_cast<std::size_t>(std::max(1, wave.concurrency));
    state.filler_count = core::probe_uses_fillers(wave.probe) ? state.concurrency : 0;
    state.slots.reserve(state.concurrency);
    m_progress.concurrency = wave.concurrency;
    report_progress();
    m_unreachable.begin_wave(state.queue.size(), max_attempts());

    for (;;) {
      const bool draining = m_unreachable.unreachable() || stopping();
      Steady::time_point now = Steady::now();
      LLMREPRO_TRY(start_queued(state, draining, now));
      if (auto retried = retry_waiting(state, draining, now); !retried) return abort(retried);
      // Filler runs only while audited work of the wave is active.
      const bool audited_active = !state.slots.empty() || (!state.queue.empty() && !draining);
      if (audited_active && !draining)
        m_fillers.top_up(m_transport, state.target, state.filler_count, wave.concurrency,
                         core::fillers_sampled(wave.probe), state.activity, m_budget);
      if (state.slots.empty() && (state.queue.empty() || draining) && m_fillers.empty()) break;

      // What was reserved since the last poll is charged durably before it goes on the wire.
      if (auto charged = write_budget_journal(); !charged) return abort(charged);
      std::vector<HttpTransport::Finished> finished = m_transport.poll(idle_wait_s(state, now));
      now = Steady::now();
      for (HttpTransport::Finished& done : finished) {
        if (m_fillers.take(done, state.activity, m_budget)) continue;
        if (auto handled = on_finished(state, done, now); !handled) return abort(handled);
      }
    }

    if (m_unreachable.unreachable())
      return core::make_error(core::ErrorCode::endpoint,
                              "cannot reach " + strip_credentials(state.target.base_url) + ": " +
                                  m_unreachable.error());
    return {};
  }

  // Whether nothing new may start: Ctrl-C, or the budget refused a request or was overrun.
  bool stopping() const {
    return m_stop.load() || (m_budget != nullptr && (m_budget->exhausted() || m_budget->overrun()));
  }

private:
  // The words of shared prefix the prefix probe sends to `target`: as many as fit its context per
  // slot beside every suite prompt (core::prefix_words_fitting), one count for the whole audit so
  // the prefix stays shared, and never more than an earlier run of the audit sent (a resumed run
  // must send the prompts its trials are compared with). A cut is counted in `activity`.
  int prefix_words_for(const EndpointTarget& target, core::ProbeActivity& activity) const {
    std::vector<core::Prompt> prompts = m_suite.prompts;
    for (core::Prompt& prompt : prompts)
      if (prompt.max_tokens)
        prompt.max_tokens = core::capped_max_tokens(*prompt.max_tokens, m_config.stop_after);
    int words =
        core::prefix_words_fitting(prompts, m_config.params.max_tokens, target.context_per_slot);
    if (activity.prefix_shortened) words = std::min(words, activity.prefix_words);
    if (words < core::k_prefix_words) {
      activity.prefix_shortened = true;
      activity.prefix_words = words;
    }
    return words;
  }

  core::Result<void> write_budget_journal() {
    return m_budget != nullptr ? m_budget->write_journal() : core::Result<void>{};
  }

  std::size_t max_attempts() const {
    return static_cast<std::size_t>(std::max(0, m_config.retries) + 1);
  }

  bool may_start(Steady::time_point now) const {
    return m_config.rate_limit <= 0 || now >= m_next_start;
  }

  // Fills free slots, in the wave's order, as the rate limit allows.
  core::Result<void> start_queued(WaveState& state, bool draining, Steady::time_point now) {
    while (!draining && state.slots.size() < state.concurrency && !state.queue.empty() &&
           may_start(now)) {
      if (state.wave.probe == core::ProbeKind::restart &&
          core::restart_round_of(state.queue.front()->repeat) != state.restarted_round) {
        LLMREPRO_TRY(start_round(state));
        continue;
      }
      if (!may_start_in_order(state, now)) break;
      Slot slot;
      core::Result<void> prepared = prepare(slot, *state.queue.front(), state);
      if (!prepared) return prepared;
      // A warm prefix trial's priming request is reserved with it: both fit, or neither is sent.
      std::optional<core::BudgetLedger::Ticket> prime_ticket;
      const bool primed =
          state.serial_prefix && core::prefix_trial_is_warm(state.queue.front()->repeat);
      if (m_budget != nullptr) {
        if (primed) {
          prime_ticket =
              m_budget->try_start({core::prompt_token_bound(core::prefix_priming_prompt()), 1});
          if (!prime_ticket) break;
        }
        slot.ticket = m_budget->try_start(slot.bound);
        if (!slot.ticket) {
          if (prime_ticket) m_budget->release(*prime_ticket);
          break;
        }
      }
      // Nothing else is in flight here (one slot, no filler), so a blocking call is safe; the
      // priming request and the trial are charged durably first.
      if (state.serial_prefix) LLMREPRO_TRY(write_budget_journal());
      if (state.serial_prefix)
        slot.cache_hits_before =
            detail::prepare_prefix_trial(m_transport, state.target, m_config, *state.queue.front(),
                                         state.prefix_words, state.activity);
      // The priming request is never parsed: it spends its bound.
      if (prime_ticket) m_budget->settle(*prime_ticket, std::nullopt);
      state.queue.pop_front();
      if (slot.long_context_words) {
        core::ProbeActivity& activity = state.activity;
        activity.long_context_words_min =
            activity.long_shortened == 0
                ? *slot.long_context_words
                : std::min(activity.long_context_words_min, *slot.long_context_words);
        ++activity.long_shortened;
      }
      slot.started_ms = m_clock.now_ms();
      if (state.wave.rounds) state.last_start[slot.planned->prompt_index] = now;
      start(slot, now);
      state.slots.push_back(std::move(slot));
    }
    return {};
  }

  // Bursts: a prompt's requests start once the previous prompt's have all ended, so that each
  // burst is in flight alone. Rounds: a prompt's next request waits until --serial-spacing has
  // passed since its last one started (the poll wakes every k_max_idle_s to look again).
  bool may_start_in_order(const WaveState& state, Steady::time_point now) const {
    const core::PlannedRequest& next = *state.queue.front();
    if (state.wave.burst && !state.slots.empty() &&
        state.slots.front().planned->prompt_index != next.prompt_index)
      return false;
    if (state.wave.rounds && m_config.serial_spacing_s > 0) {
      const auto last = state.last_start.find(next.prompt_index);
      if (last != state.last_start.end() &&
          now < last->second + std::chrono::duration_cast<Steady::duration>(
                                   std::chrono::duration<double>(m_config.serial_spacing_s)))
        return false;
    }
    return true;
  }

  // The restart probe's next round: the restart and the readiness wait (nothing else is in
  // flight: the probe is serial), or, where they fail, the round's remaining requests recorded as
  // failed with the cause.
  core::Result<void> start_round(WaveState& state) {
    const int round = core::restart_round_of(state.queue.front()->repeat);
    state.restarted_round = round;
    const std::int64_t started_ms = m_clock.now_ms();
    const std::optional<std::string> failed =
        detail::restart_endpoint(m_transport, state.target, m_config, *m_restart, state.activity);
    if (!failed) return {};
    while (!state.queue.empty() && core::restart_round_of(state.queue.front()->repeat) == round) {
      core::RequestRecord record;
      record.planned = *state.queue.front();
      record.outcome.ok = false;
      record.outcome.attempts = 0;
      record.outcome.error = *failed;
      record.outcome.started_ms = started_ms;
      record.outcome.finished_ms = m_clock.now_ms();
      state.queue.pop_front();
      ++m_progress.failed;
      LLMREPRO_TRY(commit(std::move(record)));
    }
    return {};
  }

  // Slots whose backoff has passed try again; when draining they end here, recorded as failed
  // when the endpoint is unreachable, abandoned unrecorded when the run stops.
  core::Result<void> retry_waiting(WaveState& state, bool draining, Steady::time_point now) {
    auto& slots = state.slots;
    for (std::size_t i = 0; i < slots.size();) {
      Slot& slot = slots[i];
      if (slot.in_flight) {
        ++i;
        continue;
      }
      if (m_unreachable.unreachable()) {
        LLMREPRO_TRY(record_failure(slot));
        slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (draining) {
        slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (slot.retry_at <= now && may_start(now)) {
        // A retry is one more request: when the budget refuses it, the request is abandoned
        // unrecorded, as on a stop, so that --resume with a larger budget runs it again.
        if (m_budget != nullptr) {
          slot.ticket = m_budget->try_start(slot.bound);
          if (!slot.ticket) {
            slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
            continue;
          }
        }
        start(slot, now);
      }
      ++i;
    }
    return {};
  }

  // How long to wait for the transport: until the next retry or rate-limited start is due, at
  // most k_max_idle_s so that a stop request is noticed promptly.
  double idle_wait_s(const WaveState& state, Steady::time_point now) const {
    double wait_s = k_max_idle_s;
    for (const Slot& slot : state.slots)
      if (!slot.in_flight) wait_s = std::min(wait_s, seconds_until(slot.retry_at, now));
    if (m_config.rate_limit > 0)
      wait_s = std::min(wait_s, std::max(0.0, seconds_until(m_next_start, now)));
    return std::max(0.0, wait_s);
  }

  // An audited attempt finished: its request is recorded, or waits for its next attempt.
  core::Result<void> on_finished(WaveState& state, HttpTransport::Finished& done,
                                 Steady::time_point now) {
    auto found = std::find_if(state.slots.begin(), state.slots.end(), [&](const Slot& slot) {
      return slot.in_flight && slot.transfer == done.id;
    });
    if (found == state.slots.end()) return {};
    Slot& slot = *found;
    slot.in_flight = false;
    if (done.response.http_status > 0) slot.last_status = done.response.http_status;
    Judgement judgement = judge(done.response, state.target.dialect, m_config.params.stream);
    slot.last_reason = judgement.reason;
    settle_budget(slot, done.response, judgement);
    const bool attempts_spent = static_cast<std::size_t>(slot.attempts) >= max_attempts();
    const bool spent = judgement.verdict == Judgement::Verdict::fail ||
                       (judgement.verdict == Judgement::Verdict::retry && attempts_spent);
    const bool unreachable =
        m_unreachable.attempt_ended(judgement.unreachable, judgement.reason, spent);

    bool finished_for_good = true;
    core::Result<void> recorded;
    if (judgement.verdict == Judgement::Verdict::success) {
      if (continue_chain(slot, state.target, judgement.completion, now)) {
        finished_for_good = false;
      } else {
        if (slot.conversation) {
          core::join_chain_step(slot.chain, std::move(judgement.completion));
          judgement.completion = std::move(*slot.chain);
        }
        recorded = record_success(slot, state.target, std::move(judgement.completion));
      }
    } else if (judgement.verdict == Judgement::Verdict::fail || attempts_spent || unreachable) {
      recorded = record_failure(slot);
    } else if (stopping()) {
      // Abandoned unrecorded: its retries were not spent, so --resume should run it again.
    } else {
      finished_for_good = false;
      const double delay = judgement.retry_after_s
                               ? std::min(*judgement.retry_after_s, k_max_retry_after_s)
                               : backoff_delay_s(m_config, slot.attempts, m_rng.uniform());
      slot.retry_at = now + seconds(delay);
    }
    if (!recorded) return recorded;
    if (finished_for_good) state.slots.erase(found);
    return {};
  }

  // What the attempt of `slot` that just ended used, spent from the budget: see run_plan.
  void settle_budget(Slot& slot, const HttpResponse& response, const Judgement& judgement) {
    if (m_budget == nullptr || !slot.ticket) return;
    const core::BudgetLedger::Ticket ticket = *slot.ticket;
    slot.ticket.reset();
    if (judgement.verdict == Judgement::Verdict::success) {
      m_budget->settle(ticket,
                       m_budget->used_by_success(*slot.planned, judgement.completion, slot.bound));
    } else if (response.failure == TransportFailure::none &&
               (response.http_status < 200 || response.http_status >= 300)) {
      // The endpoint answered with an error status: it generated nothing. (A 2xx that did not
      // parse may have generated everything: it spends its bound.)
      m_budget->settle(ticket, core::TokenBound{0, 0});
    } else {
      m_budget->settle(ticket, std::nullopt);
    }
  }

  core::Result<void> prepare(Slot& slot, const core::PlannedRequest& planned,
                             const WaveState& state) const {
    if (planned.prompt_index < 0 ||
        static_cast<std::size_t>(planned.prompt_index) >= m_suite.prompts.size())
      return core::make_error(core::ErrorCode::internal,
                              "plan names prompt " + std::to_string(planned.prompt_index) +
                                  " but the suite has " + std::to_string(m_suite.prompts.size()));
    const core::Prompt& suite_prompt =
        m_suite.prompts[static_cast<std::size_t>(planned.prompt_index)];
    core::Prompt prompt = state.serial_prefix
                              ? core::prefix_probe_prompt(suite_prompt, state.prefix_words)
                              : core::probe_prompt(suite_prompt, state.wave.probe);
    if (prompt.max_tokens)
      prompt.max_tokens = core::capped_max_tokens(*prompt.max_tokens, m_config.stop_after);
    if (state.wave.probe == core::ProbeKind::long_prompt && state.target.context_per_slot) {
      // The long context is cut to the server's context per slot: a prompt it must refuse as too
      // long would test nothing.
      const core::SizedPrompt sized = core::sized_long_prompt(
          suite_prompt, prompt.max_tokens.value_or(m_config.params.max_tokens),
          state.target.context_per_slot);
      if (sized.shortened) {
        const std::optional<int> max_tokens = prompt.max_tokens;
        prompt = sized.prompt;
        prompt.max_tokens = max_tokens;
        slot.long_context_words = sized.words;
      }
    }
    slot.planned = &planned;
    if (m_budget != nullptr)
      slot.bound = m_budget->bound_of(planned, prompt,
                                      prompt.max_tokens.value_or(m_config.params.max_tokens));
    GenerationParams params = detail::params_for(state.target, m_config);
    // A cold prefix trial where the server can leave its cache out of one request.
    params.bypass_prompt_cache = state.serial_prefix &&
                                 !core::prefix_trial_is_warm(planned.repeat) &&
                                 detail::has_per_request_cold_mode(state.target.dialect);
    slot.request = detail::generation_request(state.target, m_config, prompt, params);
    if (suite_prompt.is_chain()) {
      slot.conversation = prompt;
      slot.params = params;
    }
    return {};
  }

  // An agent chain whose step just answered with tool calls: the conversation grows by the
  // model's turn and the tools' scripted results, and is sent again at once as a new request of
  // the same slot, with its own attempts and its own bound (it holds more tokens). Returns
  // false where the chain ends here.
  bool continue_chain(Slot& slot, const EndpointTarget& target, core::Completion& step,
                      Steady::time_point now) {
    if (!slot.conversation) return false;
    const core::Prompt& prompt =
        m_suite.prompts[static_cast<std::size_t>(slot.planned->prompt_index)];
    ++slot.chain_steps;
    if (!core::chain_continues(prompt, step, slot.chain_steps)) return false;
    core::append_chain_step(*slot.conversation, prompt, step);
    core::join_chain_step(slot.chain, std::move(step));
    slot.request = detail::generation_request(target, m_config, *slot.conversation, slot.params);
    if (m_budget != nullptr)
      slot.bound =
          m_budget->bound_of(*slot.planned, *slot.conversation,
                             slot.conversation->max_tokens.value_or(m_config.params.max_tokens));
    slot.chain_attempts += slot.attempts;
    slot.attempts = 0;
    slot.retry_at = now;
    return true;
  }

  void start(Slot& slot, Steady::time_point now) {
    slot.transfer = m_transport.submit(slot.request);
    slot.in_flight = true;
    ++slot.attempts;
    if (m_config.rate_limit > 0)
      m_next_start = std::max(m_next_start, now) + seconds(1.0 / m_config.rate_limit);
  }

  core::Result<void> record_success(const Slot& slot, const EndpointTarget& target,
                                    core::Completion completion) {
    // A cold trial after vLLM's reset, whose answer does not say what its cache served: the
    // counter's growth across the trial does (the prefix probe is serial, so nothing of ours
    // ran beside it; another client's hits would count against it).
    if (slot.cache_hits_before && !completion.usage.cached_prompt)
      if (const auto after = detail::read_prefix_cache_hits(m_transport, target, m_config))
        completion.usage.cached_prompt = std::max(0L, *after - *slot.cache_hits_before);
    core::RequestRecord record;
    record.planned = *slot.planned;
    record.outcome.ok = true;
    record.outcome.http_status = slot.last_status;
    record.outcome.attempts = slot.chain_attempts + slot.attempts;
    record.outcome.started_ms = slot.started_ms;
    record.outcome.finished_ms = m_clock.now_ms();
    record.outcome.completion = std::move(completion);
    return commit(std::move(record));
  }

  core::Result<void> record_failure(const Slot& slot) {
    core::RequestRecord record;
    record.planned = *slot.planned;
    record.outcome.ok = false;
    record.outcome.http_status = slot.last_status;
    record.outcome.attempts = slot.chain_attempts + slot.attempts;
    // An agent chain that failed after some steps says at which request it broke.
    record.outcome.error =
        (slot.chain_steps > 0 ? "chain step " + std::to_string(slot.chain_steps + 1) + ": "
                              : std::string()) +
        slot.last_reason + " after " + std::to_string(slot.attempts) +
        (slot.attempts == 1 ? " attempt" : " attempts");
    record.outcome.started_ms = slot.started_ms;
    record.outcome.finished_ms = m_clock.now_ms();
    ++m_progress.failed;
    return commit(std::move(record));
  }

  core::Result<void> commit(core::RequestRecord record) {
    core::Result<void> result = m_sink.record(std::move(record));
    if (!result) return result;
    ++m_progress.done;
    report_progress();
    return {};
  }

  core::Result<void> abort(core::Result<void> error) {
    m_transport.cancel_all();
    return error;
  }

  void report_progress() const {
    if (m_on_progress) m_on_progress(m_progress);
  }

  const core::Suite& m_suite;
  const std::vector<EndpointTarget>& m_targets;
  const SchedulerConfig& m_config;
  core::RecordSink& m_sink;
  const std::function<void(const SchedulerProgress&)>& m_on_progress;
  const std::atomic<bool>& m_stop;
  const core::Clock& m_clock;
  std::vector<core::ProbeActivity>& m_activity;
  core::BudgetLedger* m_budget;
  const RestartSettings* m_restart;
  core::SplitMix64 m_rng;
  HttpTransport m_transport; // one for the whole run, so connections are reused across waves
  detail::FillerTraffic m_fillers;
  detail::UnreachableRule m_unreachable;
  SchedulerProgress m_progress;
  Steady::time_point m_next_start{};
};

} // namespace

double backoff_delay_s(const SchedulerConfig& config, int retry, double jitter) {
  const double doubled = config.backoff_initial_s * std::pow(2.0, std::max(0, retry - 1));
  return std::min(doubled, config.backoff_max_s) * (1.0 + 0.1 * jitter);
}

SchedulerConfig scheduler_config_of(const core::AuditConfig& config, const std::string& model,
                                    std::size_t max_response_bytes) {
  SchedulerConfig scheduler;
  scheduler.params.model = model;
  scheduler.params.max_tokens =
      core::capped_max_tokens(config.plan.max_tokens, config.plan.stop_after);
  scheduler.stop_after = config.plan.stop_after;
  scheduler.params.top_logprobs = config.plan.top_logprobs;
  scheduler.params.seed = config.plan.seed;
  scheduler.params.stream = config.plan.stream;
  scheduler.timeout_s = config.requests.timeout_s;
  scheduler.retries = config.requests.retries;
  scheduler.rate_limit = config.requests.rate_limit;
  scheduler.serial_spacing_s = config.requests.serial_spacing_s;
  scheduler.max_response_bytes = max_response_bytes;
  scheduler.filler_shape.across_256 = config.plan.profile == core::AuditProfile::deterministic;
  scheduler.filler_shape.seed = config.plan.seed;
  return scheduler;
}

core::Result<void> run_plan(const RunPlanInputs& inputs) {
  // Decide the work up front so that progress has a true total.
  const core::Plan& plan = inputs.plan;
  std::vector<std::deque<const core::PlannedRequest*>> queues;
  std::size_t total = 0;
  for (const core::Wave& wave : plan.waves) {
    std::deque<const core::PlannedRequest*> queue;
    for (const core::PlannedRequest& planned : wave.requests)
      if (!inputs.already_recorded || !inputs.already_recorded(planned)) queue.push_back(&planned);
    total += queue.size();
    queues.push_back(std::move(queue));
  }

  std::vector<core::ProbeActivity> unkept;
  Runner runner(inputs, inputs.activity != nullptr ? *inputs.activity : unkept);
  runner.set_total(total);
  for (std::size_t i = 0; i < plan.waves.size(); ++i) {
    if (runner.stopping()) break;
    if (queues[i].empty()) continue;
    if (core::Result<void> result = runner.run_wave(plan.waves[i], std::move(queues[i])); !result)
      return result;
  }
  return {};
}

} // namespace llmrepro::probes
