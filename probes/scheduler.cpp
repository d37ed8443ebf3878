#include "probes/scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <optional>
#include <set>

#include "core/clock.hpp"
#include "core/probe_text.hpp"
#include "core/random.hpp"
#include "probes/endpoint_url.hpp"
#include "probes/http_transport.hpp"

namespace llmrepro::probes {
namespace {

using Steady = std::chrono::steady_clock;

// Retry-After is honoured up to this long; a longer one is an outage, not back-pressure.
constexpr double k_max_retry_after_s = 60;
// How many early attempts decide that nothing is listening (see run_plan's contract).
constexpr int k_unreachable_attempts = 8;
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

Judgement judge(const HttpResponse &response, Dialect dialect, bool stream) {
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
    } else {
      // A truncated or garbled body is usually a transient fault of a proxy or the server.
      judgement.verdict = Verdict::retry;
      judgement.reason = "malformed response: " + parsed.error().message;
    }
    return judgement;
  }
  judgement.reason = "HTTP " + std::to_string(status) + ": " + describe_error_body(response.body);
  if (status == 429) {
    judgement.verdict = Verdict::retry;
    judgement.retry_after_s = response.retry_after_s;
  } else if (status >= 500) {
    judgement.verdict = Verdict::retry;
  } else {
    judgement.verdict = Verdict::fail;
  }
  return judgement;
}

// One logical request holding a concurrency slot: in flight, or waiting for its next attempt.
struct Slot {
  const core::PlannedRequest *planned = nullptr;
  std::string url;
  HttpRequest request;
  int attempts = 0;
  std::int64_t started_ms = 0;
  bool in_flight = false;
  HttpTransport::RequestId transfer = 0;
  Steady::time_point retry_at;
  int last_status = 0;
  std::string last_reason;
};

class Runner {
public:
  Runner(const core::Suite &suite, const std::vector<EndpointTarget> &targets,
         const SchedulerConfig &config, core::RecordSink &sink,
         const std::function<void(const SchedulerProgress &)> &on_progress,
         const std::atomic<bool> &stop_requested, std::vector<core::ProbeActivity> &activity)
      : m_suite(suite), m_targets(targets), m_config(config), m_sink(sink),
        m_on_progress(on_progress), m_stop(stop_requested), m_activity(activity),
        m_rng(config.params.seed ^ 0x6A09E667F3BCC908ULL) {
    m_activity.resize(targets.size());
  }

  void set_total(std::size_t total) { m_progress.total = total; }

  // Runs one wave; returns an error when the run must end (sink failure, unreachable endpoint).
  core::Result<void> run_wave(const core::Wave &wave,
                              std::deque<const core::PlannedRequest *> queue) {
    if (wave.endpoint_index < 0 ||
        static_cast<std::size_t>(wave.endpoint_index) >= m_targets.size())
      return core::make_error(core::ErrorCode::internal,
                              "plan names endpoint " + std::to_string(wave.endpoint_index) +
                                  " but only " + std::to_string(m_targets.size()) + " were given");
    const EndpointTarget &target = m_targets[static_cast<std::size_t>(wave.endpoint_index)];
    core::ProbeActivity &activity = m_activity[static_cast<std::size_t>(wave.endpoint_index)];
    const bool serial_prefix = wave.probe == core::ProbeKind::prefix;
    const std::size_t concurrency =
        serial_prefix ? 1 : static_cast<std::size_t>(std::max(1, wave.concurrency));
    const std::size_t filler_target = wave.probe == core::ProbeKind::mixed ? concurrency : 0;
    std::set<HttpTransport::RequestId> fillers;
    m_progress.concurrency = wave.concurrency;
    report_progress();

    // The unreachable rule watches only the first wave that has work.
    bool watching = !m_watched_a_wave && !queue.empty();
    m_watched_a_wave = m_watched_a_wave || watching;
    const auto max_attempts = static_cast<std::size_t>(std::max(0, m_config.retries) + 1);
    const int watch_limit = static_cast<int>(
        std::min<std::size_t>(k_unreachable_attempts, queue.size() * max_attempts));
    int watched = 0;
    bool unreachable = false;
    std::string unreachable_error;

    std::vector<Slot> slots;
    slots.reserve(concurrency);
    for (;;) {
      const bool draining = unreachable || m_stop.load();
      Steady::time_point now = Steady::now();

      // Fill free slots, in the wave's order, as the rate limit allows.
      while (!draining && slots.size() < concurrency && !queue.empty() && may_start(now)) {
        Slot slot;
        core::Result<void> prepared = prepare(slot, *queue.front(), target, wave.probe);
        if (!prepared) return prepared;
        // Nothing else is in flight here (one slot, no filler), so a blocking call is safe.
        if (serial_prefix) prepare_prefix_trial(*queue.front(), target, activity);
        queue.pop_front();
        slot.started_ms = m_clock.now_ms();
        start(slot, now);
        slots.push_back(std::move(slot));
      }

      // Slots whose backoff has passed try again; when draining they end here.
      for (std::size_t i = 0; i < slots.size();) {
        Slot &slot = slots[i];
        if (slot.in_flight) {
          ++i;
          continue;
        }
        if (unreachable) {
          if (auto recorded = record_failure(slot); !recorded) return abort(recorded);
          slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        if (draining) {
          slots.erase(slots.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        if (slot.retry_at <= now && may_start(now)) start(slot, now);
        ++i;
      }

      // Filler runs only while audited work of the wave is active.
      const bool audited_active = !slots.empty() || (!queue.empty() && !draining);
      while (audited_active && !draining && fillers.size() < filler_target) {
        fillers.insert(m_transport.submit(filler_request(target)));
        ++activity.filler_sent;
      }

      if (slots.empty() && (queue.empty() || draining) && fillers.empty()) break;

      double wait_s = k_max_idle_s;
      for (const Slot &slot : slots)
        if (!slot.in_flight) wait_s = std::min(wait_s, seconds_until(slot.retry_at, now));
      if (m_config.rate_limit > 0)
        wait_s = std::min(wait_s, std::max(0.0, seconds_until(m_next_start, now)));
      std::vector<HttpTransport::Finished> finished = m_transport.poll(std::max(0.0, wait_s));

      now = Steady::now();
      for (HttpTransport::Finished &done : finished) {
        if (fillers.erase(done.id) > 0) {
          if (done.response.failure != TransportFailure::none || done.response.http_status < 200 ||
              done.response.http_status >= 300)
            ++activity.filler_failed;
          continue;
        }
        auto found = std::find_if(slots.begin(), slots.end(), [&](const Slot &slot) {
          return slot.in_flight && slot.transfer == done.id;
        });
        if (found == slots.end()) continue;
        Slot &slot = *found;
        slot.in_flight = false;
        if (done.response.http_status > 0) slot.last_status = done.response.http_status;
        Judgement judgement = judge(done.response, target.dialect, m_config.params.stream);
        slot.last_reason = judgement.reason;
        // Anything but a connection or TLS failure proves that something answers there.
        if (!judgement.unreachable) m_reached = true;

        if (watching) {
          ++watched;
          if (judgement.unreachable && unreachable_error.empty())
            unreachable_error = judgement.reason;
          const bool spent = judgement.verdict == Judgement::Verdict::fail ||
                             (judgement.verdict == Judgement::Verdict::retry &&
                              static_cast<std::size_t>(slot.attempts) >= max_attempts);
          if (m_reached) {
            watching = false;
          } else if (watched >= watch_limit || spent) {
            // Every attempt so far failed to connect: nothing is listening there.
            unreachable = true;
            watching = false;
          }
        }

        bool finished_for_good = true;
        core::Result<void> recorded;
        if (judgement.verdict == Judgement::Verdict::success) {
          recorded = record_success(slot, std::move(judgement.completion));
        } else if (judgement.verdict == Judgement::Verdict::fail ||
                   static_cast<std::size_t>(slot.attempts) >= max_attempts || unreachable) {
          recorded = record_failure(slot);
        } else if (m_stop.load()) {
          // Abandoned unrecorded: its retries were not spent, so --resume should run it again.
        } else {
          finished_for_good = false;
          const double delay = judgement.retry_after_s
                                   ? std::min(*judgement.retry_after_s, k_max_retry_after_s)
                                   : backoff_delay_s(m_config, slot.attempts, m_rng.uniform());
          slot.retry_at = now + seconds(delay);
        }
        if (!recorded) return abort(recorded);
        if (finished_for_good) slots.erase(found);
      }
    }

    if (unreachable)
      return core::make_error(core::ErrorCode::endpoint, "cannot reach " +
                                                             strip_credentials(target.base_url) +
                                                             ": " + unreachable_error);
    return {};
  }

private:
  bool may_start(Steady::time_point now) const {
    return m_config.rate_limit <= 0 || now >= m_next_start;
  }

  HttpRequest post_request(const EndpointTarget &target, const std::string &path,
                           std::string body) const {
    HttpRequest request;
    request.method = HttpRequest::Method::post;
    request.url = join_url(target.base_url, path);
    request.body = std::move(body);
    request.headers.push_back("Content-Type: application/json");
    request.headers.insert(request.headers.end(), target.headers.begin(), target.headers.end());
    request.api_key = target.api_key;
    request.timeout_s = m_config.timeout_s;
    request.max_response_bytes = m_config.max_response_bytes;
    request.insecure = target.insecure;
    return request;
  }

  GenerationParams params_for(const EndpointTarget &target) const {
    GenerationParams params = m_config.params;
    if (!target.model.empty()) params.model = target.model;
    return params;
  }

  static bool answered_2xx(const HttpResponse &response) {
    return response.failure == TransportFailure::none && response.http_status >= 200 &&
           response.http_status < 300;
  }

  HttpRequest filler_request(const EndpointTarget &target) {
    const std::uint64_t index = m_filler_index++;
    GenerationParams params = params_for(target);
    params.max_tokens = core::filler_max_tokens(index);
    params.stream = false;
    DialectRequest built = build_request(target.dialect, core::filler_prompt(index), params);
    return post_request(target, built.path, std::move(built.body));
  }

  // Warm trial: prime the prefix. Cold trial: flush the cache where the engine offers a route.
  void prepare_prefix_trial(const core::PlannedRequest &planned, const EndpointTarget &target,
                            core::ProbeActivity &activity) {
    if (core::prefix_trial_is_warm(planned.repeat)) {
      GenerationParams params = params_for(target);
      params.max_tokens = 1;
      params.stream = false;
      DialectRequest built = build_request(target.dialect, core::prefix_priming_prompt(), params);
      ++activity.primes_sent;
      if (!answered_2xx(m_transport.perform(post_request(target, built.path, built.body))))
        ++activity.primes_failed;
      return;
    }
    if (!activity.flush_looked_up) {
      activity.flush_looked_up = true;
      for (const char *route : k_flush_routes) {
        ++activity.flushes_sent;
        if (answered_2xx(m_transport.perform(post_request(target, route, "{}")))) {
          activity.flush_route = route;
          return;
        }
        ++activity.flushes_failed;
      }
      return;
    }
    if (activity.flush_route.empty()) return;
    ++activity.flushes_sent;
    if (!answered_2xx(m_transport.perform(post_request(target, activity.flush_route, "{}"))))
      ++activity.flushes_failed;
  }

  core::Result<void> prepare(Slot &slot, const core::PlannedRequest &planned,
                             const EndpointTarget &target, core::ProbeKind probe) const {
    if (planned.prompt_index < 0 ||
        static_cast<std::size_t>(planned.prompt_index) >= m_suite.prompts.size())
      return core::make_error(core::ErrorCode::internal,
                              "plan names prompt " + std::to_string(planned.prompt_index) +
                                  " but the suite has " + std::to_string(m_suite.prompts.size()));
    const core::Prompt prompt =
        core::probe_prompt(m_suite.prompts[static_cast<std::size_t>(planned.prompt_index)], probe);
    DialectRequest built = build_request(target.dialect, prompt, params_for(target));
    slot.planned = &planned;
    slot.request.method = HttpRequest::Method::post;
    slot.request.url = join_url(target.base_url, built.path);
    slot.request.body = std::move(built.body);
    slot.request.headers.push_back("Content-Type: application/json");
    slot.request.headers.insert(slot.request.headers.end(), target.headers.begin(),
                                target.headers.end());
    slot.request.api_key = target.api_key;
    slot.request.timeout_s = m_config.timeout_s;
    slot.request.max_response_bytes = m_config.max_response_bytes;
    slot.request.insecure = target.insecure;
    return {};
  }

  void start(Slot &slot, Steady::time_point now) {
    slot.transfer = m_transport.submit(slot.request);
    slot.in_flight = true;
    ++slot.attempts;
    if (m_config.rate_limit > 0)
      m_next_start = std::max(m_next_start, now) + seconds(1.0 / m_config.rate_limit);
  }

  core::Result<void> record_success(const Slot &slot, core::Completion completion) {
    core::RequestRecord record;
    record.planned = *slot.planned;
    record.outcome.ok = true;
    record.outcome.http_status = slot.last_status;
    record.outcome.attempts = slot.attempts;
    record.outcome.started_ms = slot.started_ms;
    record.outcome.finished_ms = m_clock.now_ms();
    record.outcome.completion = std::move(completion);
    return commit(std::move(record));
  }

  core::Result<void> record_failure(const Slot &slot) {
    core::RequestRecord record;
    record.planned = *slot.planned;
    record.outcome.ok = false;
    record.outcome.http_status = slot.last_status;
    record.outcome.attempts = slot.attempts;
    record.outcome.error = slot.last_reason + " after " + std::to_string(slot.attempts) +
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

  const core::Suite &m_suite;
  const std::vector<EndpointTarget> &m_targets;
  const SchedulerConfig &m_config;
  core::RecordSink &m_sink;
  const std::function<void(const SchedulerProgress &)> &m_on_progress;
  const std::atomic<bool> &m_stop;
  std::vector<core::ProbeActivity> &m_activity;
  core::SplitMix64 m_rng;
  std::uint64_t m_filler_index = 0;
  core::SystemClock m_clock;
  HttpTransport m_transport; // one for the whole run, so connections are reused across waves
  SchedulerProgress m_progress;
  Steady::time_point m_next_start{};
  bool m_reached = false;
  bool m_watched_a_wave = false;
};

} // namespace

double backoff_delay_s(const SchedulerConfig &config, int retry, double jitter) {
  const double doubled = config.backoff_initial_s * std::pow(2.0, std::max(0, retry - 1));
  return std::min(doubled, config.backoff_max_s) * (1.0 + 0.1 * jitter);
}

core::Result<void>
run_plan(const core::Plan &plan, const core::Suite &suite,
         const std::vector<EndpointTarget> &targets, const SchedulerConfig &config,
         core::RecordSink &sink,
         const std::function<bool(const core::PlannedRequest &)> &already_recorded,
         const std::function<void(const SchedulerProgress &)> &on_progress,
         const std::atomic<bool> &stop_requested) {
  std::vector<core::ProbeActivity> activity;
  return run_plan(plan, suite, targets, config, sink, already_recorded, on_progress,
                  stop_requested, activity);
}

core::Result<void>
run_plan(const core::Plan &plan, const core::Suite &suite,
         const std::vector<EndpointTarget> &targets, const SchedulerConfig &config,
         core::RecordSink &sink,
         const std::function<bool(const core::PlannedRequest &)> &already_recorded,
         const std::function<void(const SchedulerProgress &)> &on_progress,
         const std::atomic<bool> &stop_requested, std::vector<core::ProbeActivity> &activity) {
  // Decide the work up front so that progress has a true total.
  std::vector<std::deque<const core::PlannedRequest *>> queues;
  std::size_t total = 0;
  for (const core::Wave &wave : plan.waves) {
    std::deque<const core::PlannedRequest *> queue;
    for (const core::PlannedRequest &planned : wave.requests)
      if (!already_recorded || !already_recorded(planned)) queue.push_back(&planned);
    total += queue.size();
    queues.push_back(std::move(queue));
  }

  Runner runner(suite, targets, config, sink, on_progress, stop_requested, activity);
  runner.set_total(total);
  for (std::size_t i = 0; i < plan.waves.size(); ++i) {
    if (stop_requested.load()) break;
    if (queues[i].empty()) continue;
    if (core::Result<void> result = runner.run_wave(plan.waves[i], std::move(queues[i])); !result)
      return result;
  }
  return {};
}

} // namespace llmrepro::probes
