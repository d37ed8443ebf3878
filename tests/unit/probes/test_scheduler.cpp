#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>

#include "probes/scheduler.hpp"
#include "tests/unit/probes/loopback_server.hpp"

using llmrepro::core::ErrorCode;
using llmrepro::core::Plan;
using llmrepro::core::PlannedRequest;
using llmrepro::core::RecordSink;
using llmrepro::core::RequestRecord;
using llmrepro::core::Result;
using llmrepro::core::Suite;
using llmrepro::core::Wave;
using llmrepro::probes::EndpointTarget;
using llmrepro::probes::run_plan;
using llmrepro::probes::SchedulerConfig;
using llmrepro::probes::SchedulerProgress;
using llmrepro::probes::testing::LoopbackServer;
using llmrepro::probes::testing::unused_port;

namespace {

constexpr const char* k_completion = R"({
  "id": "chatcmpl-1", "object": "chat.completion", "model": "tiny",
  "system_fingerprint": "fp_test",
  "choices": [{"index": 0, "finish_reason": "stop",
    "message": {"role": "assistant", "content": "Paris"},
    "logprobs": {"content": [{"token": "Paris", "logprob": -0.01,
      "top_logprobs": [{"token": "Paris", "logprob": -0.01}, {"token": "Lyon", "logprob": -4.6}]}]}}],
  "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})";

// An OpenAI-compatible chat endpoint whose answer to the n-th request (0-based) is scripted;
// it counts requests and the most it ever served at once.
class ScriptedEndpoint {
public:
  using Script = std::function<void(int hit, httplib::Response&)>;

  explicit ScriptedEndpoint(Script script)
      : m_script(std::move(script)), m_server([this](httplib::Server& routes) {
          routes.Post("/v1/chat/completions",
                      [this](const httplib::Request& request, httplib::Response& response) {
                        {
                          std::lock_guard<std::mutex> lock(m_mutex);
                          m_bodies.push_back(request.body);
                        }
                        const int now = ++m_active;
                        int seen = m_max_active.load();
                        while (now > seen && !m_max_active.compare_exchange_weak(seen, now)) {
                        }
                        m_script(m_hits++, response);
                        --m_active;
                      });
        }) {}

  std::string url() const { return m_server.url(); }
  int hits() const { return m_hits.load(); }
  int max_active() const { return m_max_active.load(); }

private:
  Script m_script;
  std::atomic<int> m_hits{0};
  std::atomic<int> m_active{0};
  std::atomic<int> m_max_active{0};
  std::mutex m_mutex;
  std::vector<std::string> m_bodies;
  LoopbackServer m_server;
};

void answer_ok(httplib::Response& response) {
  response.set_content(k_completion, "application/json");
}

void answer_ok_after(httplib::Response& response, int milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
  answer_ok(response);
}

class VectorSink final : public RecordSink {
public:
  std::function<Result<void>(const RequestRecord&)> hook;
  std::vector<RequestRecord> records;

  Result<void> record(RequestRecord record) override {
    records.push_back(std::move(record));
    if (hook) return hook(records.back());
    return {};
  }
};

Suite make_suite(int prompts) {
  Suite suite;
  suite.source = "test";
  for (int i = 0; i < prompts; ++i) {
    llmrepro::core::Prompt prompt;
    prompt.id = "p" + std::to_string(i);
    prompt.text = "What is the capital of France?";
    suite.prompts.push_back(prompt);
  }
  return suite;
}

// One wave per level, each with `requests` repeats of prompt 0.
Plan make_plan(const std::vector<int>& levels, int requests) {
  Plan plan;
  for (int level : levels) {
    Wave wave;
    wave.concurrency = level;
    for (int repeat = 0; repeat < requests; ++repeat) {
      PlannedRequest planned;
      planned.concurrency = level;
      planned.repeat = repeat;
      wave.requests.push_back(planned);
    }
    plan.waves.push_back(wave);
  }
  return plan;
}

SchedulerConfig fast_config() {
  SchedulerConfig config;
  config.timeout_s = 5;
  config.retries = 3;
  config.backoff_initial_s = 0.01;
  config.backoff_max_s = 0.05;
  return config;
}

struct Run {
  Result<void> result;
  double seconds = 0;
};

// What a test may set beyond the defaults of `run`: another suite, another clock, and where the
// probes' side traffic is counted.
struct RunExtras {
  const Suite* suite = nullptr;                 // default: one prompt
  const llmrepro::core::Clock* clock = nullptr; // default: the system clock
  std::vector<llmrepro::core::ProbeActivity>* activity = nullptr;
  llmrepro::core::BudgetLedger* budget = nullptr; // default: no budget
};

Run run(const Plan& plan, const std::string& url, const SchedulerConfig& config, VectorSink& sink,
        const std::function<bool(const PlannedRequest&)>& skip = {},
        const std::function<void(const SchedulerProgress&)>& progress = {},
        const std::atomic<bool>* stop = nullptr, const RunExtras& extras = {}) {
  static const Suite one_prompt = make_suite(1);
  EndpointTarget target;
  target.base_url = url;
  std::atomic<bool> never{false};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<EndpointTarget> targets{target};
  const llmrepro::core::SystemClock system_clock;
  Result<void> result = run_plan({.plan = plan,
                                  .suite = extras.suite != nullptr ? *extras.suite : one_prompt,
                                  .targets = targets,
                                  .config = config,
                                  .sink = sink,
                                  .stop_requested = stop != nullptr ? *stop : never,
                                  .clock = extras.clock != nullptr ? *extras.clock : system_clock,
                                  .already_recorded = skip,
                                  .on_progress = progress,
                                  .activity = extras.activity,
                                  .budget = extras.budget});
  return {result, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

} // namespace

TEST_CASE("run_plan") {
  SUBCASE("keeps exactly the wave's concurrency in flight") {
    ScriptedEndpoint endpoint(
        [](int, httplib::Response& response) { answer_ok_after(response, 60); });
    VectorSink sink;
    Run result = run(make_plan({4}, 12), endpoint.url(), fast_config(), sink);
    REQUIRE(result.result.has_value());
    CHECK(endpoint.hits() == 12);
    CHECK(endpoint.max_active() == 4);
    REQUIRE(sink.records.size() == 12);
    for (const RequestRecord& record : sink.records) {
      CHECK(record.outcome.ok);
      CHECK(record.outcome.attempts == 1);
      CHECK(record.outcome.http_status == 200);
      CHECK(record.outcome.completion.text == "Paris");
      CHECK(record.outcome.finished_ms >= record.outcome.started_ms);
    }
  }
  SUBCASE("waves run in order, each at its own level") {
    ScriptedEndpoint endpoint(
        [](int, httplib::Response& response) { answer_ok_after(response, 40); });
    VectorSink sink;
    Run result = run(make_plan({1, 3}, 6), endpoint.url(), fast_config(), sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 12);
    for (std::size_t i = 0; i < 6; ++i) CHECK(sink.records[i].planned.concurrency == 1);
    for (std::size_t i = 6; i < 12; ++i) CHECK(sink.records[i].planned.concurrency == 3);
    CHECK(endpoint.max_active() == 3);
  }
  SUBCASE("retries 5xx and malformed bodies, then succeeds") {
    ScriptedEndpoint endpoint([](int hit, httplib::Response& response) {
      if (hit == 0) {
        response.status = 500;
        response.set_content(R"({"error":{"message":"boom"}})", "application/json");
      } else if (hit == 1) {
        response.set_content(R"({"choices": [)", "application/json");
      } else {
        answer_ok(response);
      }
    });
    VectorSink sink;
    Run result = run(make_plan({1}, 1), endpoint.url(), fast_config(), sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 1);
    CHECK(sink.records[0].outcome.ok);
    CHECK(sink.records[0].outcome.attempts == 3);
    CHECK(endpoint.hits() == 3);
  }
  SUBCASE("gives up after the retries and records the reason once") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) {
      response.status = 503;
      response.set_content(R"({"error":"server busy"})", "application/json");
    });
    SchedulerConfig config = fast_config();
    config.retries = 2;
    VectorSink sink;
    Run result = run(make_plan({1}, 1), endpoint.url(), config, sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 1);
    CHECK_FALSE(sink.records[0].outcome.ok);
    CHECK(sink.records[0].outcome.attempts == 3);
    CHECK(sink.records[0].outcome.http_status == 503);
    CHECK(sink.records[0].outcome.error == "HTTP 503: server busy after 3 attempts");
    CHECK(endpoint.hits() == 3);
  }
  SUBCASE("a 429 waits for Retry-After") {
    ScriptedEndpoint endpoint([](int hit, httplib::Response& response) {
      if (hit == 0) {
        response.status = 429;
        response.set_header("Retry-After", "1");
        response.set_content(R"({"error":"Model is overloaded"})", "application/json");
      } else {
        answer_ok(response);
      }
    });
    VectorSink sink;
    Run result = run(make_plan({1}, 1), endpoint.url(), fast_config(), sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 1);
    CHECK(sink.records[0].outcome.ok);
    CHECK(sink.records[0].outcome.attempts == 2);
    CHECK(result.seconds >= 1.0);
    CHECK(result.seconds < 2.0);
  }
  SUBCASE("another 4xx fails at once") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) {
      response.status = 400;
      response.set_content(
          R"({"error":{"message":"The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled."}})",
          "application/json");
    });
    VectorSink sink;
    Run result = run(make_plan({1}, 1), endpoint.url(), fast_config(), sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 1);
    CHECK(sink.records[0].outcome.attempts == 1);
    CHECK(sink.records[0].outcome.http_status == 400);
    CHECK(sink.records[0].outcome.error ==
          "HTTP 400: The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled. "
          "after 1 attempt");
    CHECK(endpoint.hits() == 1);
  }
  SUBCASE("a 408 and a 425 are retried like a 429") {
    ScriptedEndpoint endpoint([](int hit, httplib::Response& response) {
      if (hit < 2) {
        response.status = hit == 0 ? 408 : 425;
        response.set_content(R"({"error":"try again"})", "application/json");
      } else {
        answer_ok(response);
      }
    });
    VectorSink sink;
    Run result = run(make_plan({1}, 1), endpoint.url(), fast_config(), sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 1);
    CHECK(sink.records[0].outcome.ok);
    CHECK(sink.records[0].outcome.attempts == 3);
    CHECK(endpoint.hits() == 3);
  }
  SUBCASE("a 500 refusing this request's output fails once, without backoff") {
    // llama.cpp's answer when the model's output fails its own chat-format check
    // (common/chat.cpp, a server_error): the same request fails the same way every time.
    ScriptedEndpoint endpoint([](int, httplib::Response& response) {
      response.status = 500;
      response.set_content(
          R"({"error":{"code":500,"message":"The model produced output that does not match the expected Hermes 2 Pro format","type":"server_error"}})",
          "application/json");
    });
    SchedulerConfig config = fast_config();
    config.backoff_initial_s = 5; // a retry would make the test take seconds
    VectorSink sink;
    Run result = run(make_plan({2}, 4), endpoint.url(), config, sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 4);
    for (const RequestRecord& record : sink.records) {
      CHECK_FALSE(record.outcome.ok);
      CHECK(record.outcome.attempts == 1);
      CHECK(record.outcome.http_status == 500);
      CHECK(record.outcome.error == "HTTP 500: The model produced output that does not match "
                                    "the expected Hermes 2 Pro format after 1 attempt");
    }
    CHECK(endpoint.hits() == 4);
    CHECK(result.seconds < 4.0);
  }
  SUBCASE("a mid-stream error event is an endpoint error, retried, never 'malformed'") {
    ScriptedEndpoint endpoint([](int hit, httplib::Response& response) {
      // A first event, then the error (llama.cpp's format_oai_sse of its error), on every hit
      // but the last; the error event is the second event one time and the third the next.
      std::string events = R"(data: {"choices":[{"index":0,"delta":{"content":"Pa"}}]})"
                           "\n\n";
      if (hit == 1) events += events;
      if (hit < 2) {
        events += R"(data: {"error":{"code":500,"message":"slot crashed","type":"server_error"}})"
                  "\n\n";
      } else {
        events +=
            R"(data: {"choices":[{"index":0,"delta":{"content":"ris"},"finish_reason":"stop"}]})"
            "\n\ndata: [DONE]\n\n";
      }
      response.set_content(events, "text/event-stream");
    });
    SchedulerConfig config = fast_config();
    config.params.stream = true;
    config.params.top_logprobs = 0;
    VectorSink sink;
    SUBCASE("a transient one is retried") {
      Run result = run(make_plan({1}, 1), endpoint.url(), config, sink);
      REQUIRE(result.result.has_value());
      REQUIRE(sink.records.size() == 1);
      CHECK(sink.records[0].outcome.ok);
      CHECK(sink.records[0].outcome.completion.text == "Paris");
      CHECK(sink.records[0].outcome.attempts == 3);
    }
    SUBCASE("its reason names no event index") {
      config.retries = 1;
      Run result = run(make_plan({1}, 1), endpoint.url(), config, sink);
      REQUIRE(result.result.has_value());
      REQUIRE(sink.records.size() == 1);
      CHECK_FALSE(sink.records[0].outcome.ok);
      CHECK(sink.records[0].outcome.error ==
            "openai-chat: endpoint error: slot crashed after 2 attempts");
    }
  }
  SUBCASE("an oversize response fails with the cap") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) {
      response.set_content(std::string(100000, ' ') + k_completion, "application/json");
    });
    SchedulerConfig config = fast_config();
    config.max_response_bytes = 4096;
    VectorSink sink;
    Run result = run(make_plan({1}, 1), endpoint.url(), config, sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 1);
    CHECK_FALSE(sink.records[0].outcome.ok);
    CHECK(sink.records[0].outcome.attempts == 1);
    CHECK(sink.records[0].outcome.error.find("exceeded the 4096 bytes cap") != std::string::npos);
  }
  SUBCASE("the timeout bounds each attempt") {
    ScriptedEndpoint endpoint(
        [](int, httplib::Response& response) { answer_ok_after(response, 600); });
    SchedulerConfig config = fast_config();
    config.timeout_s = 0.15;
    config.retries = 1;
    VectorSink sink;
    Run result = run(make_plan({1}, 1), endpoint.url(), config, sink);
    REQUIRE(result.result.has_value());
    REQUIRE(sink.records.size() == 1);
    CHECK_FALSE(sink.records[0].outcome.ok);
    CHECK(sink.records[0].outcome.attempts == 2);
    CHECK(sink.records[0].outcome.http_status == 0);
    CHECK(sink.records[0].outcome.error.find("timed out") != std::string::npos);
    CHECK(sink.records[0].outcome.error.find("after 2 attempts") != std::string::npos);
    CHECK(result.seconds < 0.55);
  }
  SUBCASE("nothing listening: endpoint error, quickly, with the requests recorded") {
    const std::string url = "http://127.0.0.1:" + std::to_string(unused_port());
    VectorSink sink;
    Run result = run(make_plan({8}, 20), url, fast_config(), sink);
    REQUIRE_FALSE(result.result.has_value());
    CHECK(result.result.error().code == ErrorCode::endpoint);
    CHECK(result.result.error().message.rfind("cannot reach " + url + ": ", 0) == 0);
    CHECK(result.seconds < 1.0);
    // Exactly the eight requests that started, each failed once.
    REQUIRE(sink.records.size() == 8);
    for (const RequestRecord& record : sink.records) {
      CHECK_FALSE(record.outcome.ok);
      CHECK(record.outcome.attempts == 1);
    }
  }
  SUBCASE("nothing listening at level 1: the first request's retries decide") {
    const std::string url = "http://127.0.0.1:" + std::to_string(unused_port());
    VectorSink sink;
    SchedulerConfig config = fast_config();
    config.retries = 2;
    Run result = run(make_plan({1, 4}, 5), url, config, sink);
    REQUIRE_FALSE(result.result.has_value());
    CHECK(result.result.error().code == ErrorCode::endpoint);
    REQUIRE(sink.records.size() == 1);
    CHECK(sink.records[0].outcome.attempts == 3);
  }
  SUBCASE("an endpoint that answers errors is reachable: no early exit") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) {
      response.status = 404;
      response.set_content("no such route", "text/plain");
    });
    VectorSink sink;
    Run result = run(make_plan({2}, 10), endpoint.url(), fast_config(), sink);
    REQUIRE(result.result.has_value());
    CHECK(sink.records.size() == 10);
    CHECK(endpoint.hits() == 10);
  }
  SUBCASE("already recorded requests are skipped, progress counts the rest") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) { answer_ok(response); });
    VectorSink sink;
    std::vector<SchedulerProgress> progress;
    Run result = run(
        make_plan({2}, 6), endpoint.url(), fast_config(), sink,
        [](const PlannedRequest& planned) { return planned.repeat % 2 == 0; },
        [&](const SchedulerProgress& now) { progress.push_back(now); });
    REQUIRE(result.result.has_value());
    CHECK(endpoint.hits() == 3);
    REQUIRE(sink.records.size() == 3);
    for (const RequestRecord& record : sink.records) CHECK(record.planned.repeat % 2 == 1);
    REQUIRE_FALSE(progress.empty());
    CHECK(progress.back().done == 3);
    CHECK(progress.back().failed == 0);
    CHECK(progress.back().total == 3);
    CHECK(progress.back().concurrency == 2);
  }
  SUBCASE("stop: nothing new starts, the requests in flight finish") {
    ScriptedEndpoint endpoint(
        [](int, httplib::Response& response) { answer_ok_after(response, 50); });
    std::atomic<bool> stop{false};
    VectorSink sink;
    sink.hook = [&](const RequestRecord&) -> Result<void> {
      if (sink.records.size() == 3) stop = true;
      return {};
    };
    Run result = run(make_plan({2}, 20), endpoint.url(), fast_config(), sink, {}, {}, &stop);
    REQUIRE(result.result.has_value());
    CHECK(sink.records.size() == 4);
    CHECK(endpoint.hits() == 4);
  }
  SUBCASE("a sink error ends the run and is returned") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) { answer_ok(response); });
    VectorSink sink;
    sink.hook = [&](const RequestRecord&) -> Result<void> {
      if (sink.records.size() == 2)
        return llmrepro::core::make_error(ErrorCode::environment, "disk full");
      return {};
    };
    Run result = run(make_plan({1}, 10), endpoint.url(), fast_config(), sink);
    REQUIRE_FALSE(result.result.has_value());
    CHECK(result.result.error().message == "disk full");
    CHECK(sink.records.size() == 2);
  }
  SUBCASE("rate_limit spaces the starts") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) { answer_ok(response); });
    SchedulerConfig config = fast_config();
    config.rate_limit = 20; // one start per 50 ms
    VectorSink sink;
    Run result = run(make_plan({5}, 5), endpoint.url(), config, sink);
    REQUIRE(result.result.has_value());
    CHECK(sink.records.size() == 5);
    CHECK(result.seconds >= 0.2);
    CHECK(result.seconds < 0.6);
  }
}

TEST_CASE("run_plan with RunPlanInputs") {
  static const Suite suite = make_suite(2);

  SUBCASE("the records' timestamps come from the injected clock") {
    // A clock that stands still: every timestamp is the one it gives.
    class StoppedClock final : public llmrepro::core::Clock {
    public:
      std::int64_t now_ms() const override { return 1234; }
    };
    ScriptedEndpoint endpoint([](int, httplib::Response& response) { answer_ok(response); });
    const StoppedClock clock;
    VectorSink sink;
    const Plan plan = make_plan({2}, 3);
    REQUIRE(run(plan, endpoint.url(), fast_config(), sink, {}, {}, nullptr,
                {.suite = &suite, .clock = &clock})
                .result.has_value());
    REQUIRE(sink.records.size() == 3);
    for (const RequestRecord& record : sink.records) {
      CHECK(record.outcome.started_ms == 1234);
      CHECK(record.outcome.finished_ms == 1234);
    }
  }

  SUBCASE("mixed waves send filler beside the audited requests and count it") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) { answer_ok(response); });
    VectorSink sink;
    Plan plan = make_plan({2}, 4);
    plan.waves[0].probe = llmrepro::core::ProbeKind::mixed;
    std::vector<llmrepro::core::ProbeActivity> activity;
    REQUIRE(run(plan, endpoint.url(), fast_config(), sink, {}, {}, nullptr,
                {.suite = &suite, .activity = &activity})
                .result.has_value());
    CHECK(sink.records.size() == 4);
    REQUIRE(activity.size() == 1);
    CHECK(activity[0].filler_sent >= 2);
    CHECK(activity[0].filler_failed == 0);
    // Fillers are never recorded: the endpoint saw them beside the four audited requests.
    CHECK(endpoint.hits() == 4 + activity[0].filler_sent);
  }

  SUBCASE("prefix waves prime warm trials and look for a flush route once") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) { answer_ok(response); });
    VectorSink sink;
    // Repeats 0..3 of one prompt: two cold trials and two warm ones.
    Plan plan = make_plan({1}, 4);
    plan.waves[0].probe = llmrepro::core::ProbeKind::prefix;
    for (auto& planned : plan.waves[0].requests) planned.probe = llmrepro::core::ProbeKind::prefix;
    std::vector<llmrepro::core::ProbeActivity> activity;
    REQUIRE(run(plan, endpoint.url(), fast_config(), sink, {}, {}, nullptr,
                {.suite = &suite, .activity = &activity})
                .result.has_value());
    CHECK(sink.records.size() == 4);
    REQUIRE(activity.size() == 1);
    CHECK(activity[0].primes_sent == 2);
    CHECK(activity[0].primes_failed == 0);
    // The scripted endpoint has no flush route: both are tried once, then cold trials go unflushed.
    CHECK(activity[0].flush_looked_up);
    CHECK(activity[0].flush_route.empty());
    CHECK(activity[0].flushes_sent == 2);
    CHECK(activity[0].flushes_failed == 2);
    CHECK(endpoint.hits() == 4 + 2);
    CHECK(endpoint.max_active() == 1);
  }
}

TEST_CASE("run_plan with a budget") {
  using llmrepro::core::BudgetLedger;
  using llmrepro::core::BudgetLimits;

  SUBCASE("every attempt is a request: retries count") {
    // The first request fails twice with a 500, then succeeds: three attempts.
    ScriptedEndpoint endpoint([](int hit, httplib::Response& response) {
      if (hit < 2) {
        response.status = 500;
        response.set_content(R"({"error":"boom"})", "application/json");
      } else {
        answer_ok(response);
      }
    });
    BudgetLedger budget(BudgetLimits{.max_requests = 3});
    VectorSink sink;
    REQUIRE(run(make_plan({1}, 2), endpoint.url(), fast_config(), sink, {}, {}, nullptr,
                {.budget = &budget})
                .result.has_value());
    CHECK(endpoint.hits() == 3);
    REQUIRE(sink.records.size() == 1);
    CHECK(sink.records[0].outcome.attempts == 3);
    CHECK(budget.exhausted_by() == "--max-requests 3");
    CHECK(budget.spent().requests == 3);
    // The two 500s generated nothing; the success spent the prompt tokens it reported (3), not
    // its prompt bound (30 bytes + 128), and its one completion token.
    CHECK(budget.spent().tokens == 3 + 1);
  }

  SUBCASE("the requests in flight are reserved: level 4 never passes the budget") {
    ScriptedEndpoint endpoint(
        [](int, httplib::Response& response) { answer_ok_after(response, 40); });
    BudgetLedger budget(BudgetLimits{.max_requests = 6});
    VectorSink sink;
    REQUIRE(run(make_plan({4}, 12), endpoint.url(), fast_config(), sink, {}, {}, nullptr,
                {.budget = &budget})
                .result.has_value());
    CHECK(endpoint.hits() == 6);
    CHECK(sink.records.size() == 6);
    CHECK(endpoint.max_active() == 4);
  }

  SUBCASE("tokens: each start fits the bound of spent + reserved + its own") {
    ScriptedEndpoint endpoint(
        [](int, httplib::Response& response) { answer_ok_after(response, 40); });
    // Each request's bound: 158 prompt + 16 completion = 174; three fit in 540, a fourth not.
    BudgetLedger budget(BudgetLimits{.max_tokens_total = 540});
    SchedulerConfig config = fast_config();
    config.params.max_tokens = 16;
    VectorSink sink;
    REQUIRE(
        run(make_plan({4}, 8), endpoint.url(), config, sink, {}, {}, nullptr, {.budget = &budget})
            .result.has_value());
    CHECK(endpoint.hits() == 3);
    CHECK(budget.exhausted_by() == "--max-tokens-total 540");
    // Each spent what it reported: 3 prompt tokens and 1 completion token. The refusal of the
    // fourth ends the starts, though later bounds, now exact (3 + 16), would have fitted.
    CHECK(budget.spent().tokens == 3 * (3 + 1));
  }

  SUBCASE("a request reporting more than its max_tokens stops the run") {
    ScriptedEndpoint endpoint([](int, httplib::Response& response) {
      std::string body = k_completion;
      const std::string reported = R"("completion_tokens": 1)";
      body.replace(body.find(reported), reported.size(), R"("completion_tokens": 5)");
      response.set_content(body, "application/json");
    });
    BudgetLedger budget(BudgetLimits{.max_requests = 100});
    SchedulerConfig config = fast_config();
    config.params.max_tokens = 2;
    VectorSink sink;
    REQUIRE(
        run(make_plan({1}, 3), endpoint.url(), config, sink, {}, {}, nullptr, {.budget = &budget})
            .result.has_value());
    CHECK(endpoint.hits() == 1);
    CHECK(sink.records.size() == 1);
    CHECK(budget.overrun_message() ==
          "a request reported 5 completion tokens, above its max_tokens of 2");
  }
}

TEST_CASE("scheduler_config_of") {
  llmrepro::core::AuditConfig audit;
  audit.plan.max_tokens = 7;
  audit.plan.top_logprobs = 5;
  audit.plan.seed = 42;
  audit.plan.stream = true;
  audit.requests.timeout_s = 3.5;
  audit.requests.retries = 1;
  audit.requests.rate_limit = 2.5;
  const SchedulerConfig config = llmrepro::probes::scheduler_config_of(audit, "tiny", 4096);
  CHECK(config.params.model == "tiny");
  CHECK(config.params.max_tokens == 7);
  CHECK(config.params.top_logprobs == 5);
  CHECK(config.params.seed == 42);
  CHECK(config.params.stream);
  CHECK(config.timeout_s == 3.5);
  CHECK(config.retries == 1);
  CHECK(config.rate_limit == 2.5);
  CHECK(config.max_response_bytes == 4096);
  // The backoff is not an audit setting: it keeps the scheduler's defaults.
  CHECK(config.backoff_initial_s == SchedulerConfig{}.backoff_initial_s);
  CHECK(config.backoff_max_s == SchedulerConfig{}.backoff_max_s);
}

TEST_CASE("backoff_delay_s") {
  SchedulerConfig config;
  config.backoff_initial_s = 0.5;
  config.backoff_max_s = 8;
  CHECK(llmrepro::probes::backoff_delay_s(config, 1, 0.0) == 0.5);
  CHECK(llmrepro::probes::backoff_delay_s(config, 2, 0.0) == 1.0);
  CHECK(llmrepro::probes::backoff_delay_s(config, 4, 0.0) == 4.0);
  CHECK(llmrepro::probes::backoff_delay_s(config, 6, 0.0) == 8.0);
  CHECK(llmrepro::probes::backoff_delay_s(config, 1, 0.5) == doctest::Approx(0.525));
  CHECK(llmrepro::probes::backoff_delay_s(config, 9, 0.999) < 8.8);
}
