// The capability preflight: which parameter a refusal names, what two identical answers say of
// temperature 0 and of a seed, and the requests it sends to a loopback server that refuses,
// samples or answers alike. Refusal bodies are tests/data/formats (sources in its README).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "dialect_test_support.hpp"
#include "loopback_server.hpp"
#include "probes/capability_preflight.hpp"

namespace {

using llmrepro::core::CapabilityOutcome;
using llmrepro::core::Completion;
using llmrepro::core::TemperatureMode;
using llmrepro::core::TokenLogprob;
using llmrepro::probes::Dialect;
using llmrepro::probes::test::read_format;

// A completion of `tokens`, each with its chosen logprob and two candidates.
Completion
preflight_answer(const std::vector<std::tuple<std::string, double, std::string, double>>& tokens) {
  Completion c;
  c.has_logprobs = true;
  for (const auto& [token, logprob, other, other_logprob] : tokens) {
    TokenLogprob t{token, logprob, {{token, logprob}, {other, other_logprob}}};
    llmrepro::core::sort_candidates(c); // no-op here; the real parsers sort
    c.tokens.push_back(t);
    c.text += token;
  }
  llmrepro::core::sort_candidates(c);
  return c;
}

} // namespace

TEST_CASE("refused_parameter: the refusals providers send, and what is no refusal") {
  using llmrepro::probes::refused_parameter;
  CHECK(refused_parameter(400, read_format("anthropic_error_400_temperature_deprecated.json")) ==
        "temperature");
  CHECK(refused_parameter(400, read_format("openai_error_400_temperature_unsupported.json")) ==
        "temperature");
  CHECK(refused_parameter(400, read_format("openai_error_400_logprobs_unsupported.json")) ==
        "logprobs");
  CHECK(refused_parameter(400,
                          R"({"error": {"message": "Unrecognized request argument supplied: seed",
                    "type": "invalid_request_error", "param": null, "code": null}})") == "seed");
  CHECK(refused_parameter(400, R"({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "seed: Extra inputs are not permitted"}})") == "seed");
  // Asking for fewer candidates, or another token limit, refuses none of ours.
  CHECK(refused_parameter(400, read_format("vllm_error_400_top_logprobs_too_large.json")).empty());
  CHECK(
      refused_parameter(400, read_format("openai_error_400_max_tokens_unsupported.json")).empty());
  // Only a refusal of the request itself: not a server error naming the same word.
  CHECK(refused_parameter(500, read_format("anthropic_error_400_temperature_deprecated.json"))
            .empty());
  // A word inside another is not the parameter ("seeded", "exceeds").
  CHECK(
      refused_parameter(400, R"({"error": {"message": "not supported: seeded prompts"}})").empty());
}

TEST_CASE("judge_greedy: alike, sampled, parted at a near tie or far from one, text alone") {
  using llmrepro::probes::judge_greedy;
  const Completion a =
      preflight_answer({{"The", -0.01, "A", -4.0}, {" sea", -0.2, " ocean", -1.9}});
  CHECK(judge_greedy(a, a).outcome == CapabilityOutcome::accepted);

  // A token 2.5 nats below the top candidate: no greedy decoder picks it.
  const Completion sampled = preflight_answer({{"A", -4.0, "The", -1.5}});
  const auto ignored = judge_greedy(a, sampled);
  CHECK(ignored.outcome == CapabilityOutcome::ignored);
  CHECK(ignored.detail == "an answer's token 1 chose a token 2.50 nats below the top candidate: "
                          "the endpoint samples");

  // Parted at token 2, where the first answer's top two were 0.05 nats apart: batch noise can do
  // that under greedy decoding.
  const Completion near =
      preflight_answer({{"The", -0.01, "A", -4.0}, {" sea", -0.70, " ocean", -0.75}});
  const Completion other =
      preflight_answer({{"The", -0.01, "A", -4.0}, {" ocean", -0.69, " sea", -0.72}});
  const auto tie = judge_greedy(near, other);
  CHECK(tie.outcome == CapabilityOutcome::accepted);
  CHECK(tie.detail == "two identical requests parted at token 2, at a near tie (0.050 nats)");

  // Parted where the top candidate led by 1.7 nats, each answer choosing its own top token.
  const Completion far =
      preflight_answer({{"The", -0.01, "A", -4.0}, {" wave", -0.1, " sea", -1.8}});
  const auto parted = judge_greedy(a, far);
  CHECK(parted.outcome == CapabilityOutcome::ignored);
  CHECK(parted.detail == "two identical requests parted at token 2, where the top candidate led "
                         "by 1.70 nats: the endpoint samples");

  Completion text_a;
  text_a.text = "The sea.";
  Completion text_b;
  text_b.text = "Waves.";
  CHECK(judge_greedy(text_a, text_a).outcome == CapabilityOutcome::accepted);
  CHECK(judge_greedy(text_a, text_b).outcome == CapabilityOutcome::unconfirmed);
}

TEST_CASE("judge_seed: alike is honoured, different is not, empty says nothing") {
  using llmrepro::probes::judge_seed;
  Completion a;
  a.text = "The sea.";
  Completion b;
  b.text = "Waves.";
  CHECK(judge_seed(a, a, 7).outcome == CapabilityOutcome::honoured);
  CHECK(judge_seed(a, a, 7).detail == "two sampled requests with seed 7 answered alike");
  CHECK(judge_seed(a, b, 7).outcome == CapabilityOutcome::not_honoured);
  CHECK(judge_seed(Completion{}, Completion{}, 7).outcome == CapabilityOutcome::untested);
}

namespace {

// Answers each POST with the next of `answers` ({status, body}), the last one repeated, and keeps
// every request body.
class QueueServer {
public:
  explicit QueueServer(std::vector<std::pair<int, std::string>> answers)
      : m_answers(answers.begin(), answers.end()), m_server([this](httplib::Server& server) {
          const auto handle = [this](const httplib::Request& request, httplib::Response& response) {
            const std::lock_guard lock(m_mutex);
            m_bodies.push_back(nlohmann::json::parse(request.body));
            const auto [status, body] = m_answers.front();
            if (m_answers.size() > 1) m_answers.pop_front();
            response.status = status;
            response.set_content(body, "application/json");
          };
          server.Post("/v1/chat/completions", handle);
          server.Post("/v1/messages", handle);
        }) {}

  std::string url() const { return m_server.url(); }
  std::vector<nlohmann::json> bodies() {
    const std::lock_guard lock(m_mutex);
    return m_bodies;
  }

private:
  std::mutex m_mutex;
  std::deque<std::pair<int, std::string>> m_answers;
  std::vector<nlohmann::json> m_bodies;
  llmrepro::probes::testing::LoopbackServer m_server;
};

llmrepro::probes::SchedulerConfig preflight_config() {
  llmrepro::probes::SchedulerConfig c;
  c.params.model = "m";
  c.params.seed = 7;
  c.timeout_s = 10;
  return c;
}

llmrepro::probes::EndpointTarget preflight_target(const std::string& url, Dialect dialect) {
  llmrepro::probes::EndpointTarget t;
  t.base_url = url;
  t.dialect = dialect;
  return t;
}

} // namespace

TEST_CASE("run_preflight: an endpoint that answers alike at temperature 0 costs two requests") {
  QueueServer server({{200, read_format("openai_chat_completion_logprobs.json")}});
  const auto found =
      llmrepro::probes::run_preflight(preflight_target(server.url(), Dialect::openai_chat),
                                      preflight_config(), true, TemperatureMode::zero);
  CHECK(found.requests == 2);
  CHECK(found.failure.empty());
  CHECK(found.temperature.outcome == CapabilityOutcome::accepted);
  CHECK(found.in_effect == TemperatureMode::zero);
  CHECK(found.logprobs.outcome == CapabilityOutcome::accepted);
  CHECK(found.candidates_requested == 2);
  CHECK(found.candidates_returned == 2);
  CHECK(found.seed.outcome == CapabilityOutcome::untested);
  CHECK(found.model == "gpt-4o-mini-2024-07-18");
  const auto bodies = server.bodies();
  REQUIRE(bodies.size() == 2);
  CHECK(bodies[0] == bodies[1]);
  CHECK(bodies[0]["temperature"] == 0.0);
  CHECK(bodies[0]["seed"] == 7);
  CHECK(bodies[0]["max_tokens"] == llmrepro::probes::k_preflight_max_tokens);
  CHECK(bodies[0]["messages"][0]["content"] == "Write one sentence about the sea.");
  CHECK(llmrepro::core::capabilities_line(found) ==
        "preflight (2 requests): temperature 0 accepted (two identical requests answered "
        "alike); logprobs returned, 2 candidates; seed untested (greedy decoding: a seed changes "
        "nothing); model gpt-4o-mini-2024-07-18 answered");
}

TEST_CASE("run_preflight: a model that refuses temperature is asked without it, at its default") {
  QueueServer server({{400, read_format("anthropic_error_400_temperature_deprecated.json")},
                      {200, read_format("anthropic_message.json")}});
  const auto found =
      llmrepro::probes::run_preflight(preflight_target(server.url(), Dialect::anthropic),
                                      preflight_config(), true, TemperatureMode::zero);
  CHECK(found.requests == 3);
  CHECK(found.temperature.outcome == CapabilityOutcome::refused);
  CHECK(found.temperature.detail == "HTTP 400: `temperature` is deprecated for this model.");
  CHECK(found.in_effect == TemperatureMode::provider_default);
  CHECK(found.logprobs.outcome == CapabilityOutcome::not_sent);
  CHECK(found.seed.outcome == CapabilityOutcome::not_sent);
  const auto bodies = server.bodies();
  REQUIRE(bodies.size() == 3);
  CHECK(bodies[0]["temperature"] == 0.0);
  CHECK_FALSE(bodies[1].contains("temperature"));
  CHECK(bodies[1] == bodies[2]);
  CHECK(llmrepro::core::temperature_effect_line(found) ==
        "temperature 0 refused: audited at the provider's default");

  llmrepro::probes::EndpointTarget resumed = preflight_target(server.url(), Dialect::anthropic);
  llmrepro::probes::apply_capabilities(resumed, found);
  CHECK(resumed.provider_temperature);
  CHECK_FALSE(resumed.omit_seed);
}

TEST_CASE("run_preflight: a refused seed and refused logprobs are each dropped in turn") {
  QueueServer server({{400, R"({"error": {"message": "Unrecognized request argument supplied: seed",
                 "type": "invalid_request_error", "param": null, "code": null}})"},
                      {400, read_format("openai_error_400_logprobs_unsupported.json")},
                      {200, read_format("openai_chat_completion_reasoning_no_logprobs.json")}});
  const auto found =
      llmrepro::probes::run_preflight(preflight_target(server.url(), Dialect::openai_chat),
                                      preflight_config(), true, TemperatureMode::zero);
  CHECK(found.requests == 4);
  CHECK(found.seed.outcome == CapabilityOutcome::refused);
  CHECK(found.logprobs.outcome == CapabilityOutcome::refused);
  CHECK(found.temperature.outcome == CapabilityOutcome::accepted);
  const auto bodies = server.bodies();
  REQUIRE(bodies.size() == 4);
  CHECK_FALSE(bodies[1].contains("seed"));
  CHECK_FALSE(bodies[2].contains("seed"));
  CHECK_FALSE(bodies[2].contains("logprobs"));
  CHECK_FALSE(bodies[2].contains("top_logprobs"));
}

TEST_CASE("run_preflight: at the provider's default the same seed twice tests the seed") {
  nlohmann::json first = nlohmann::json::parse(read_format("openai_chat_completion_logprobs.json"));
  nlohmann::json second = first;
  second["choices"][0]["message"]["content"] = "Waves.";
  QueueServer server({{200, first.dump()}, {200, second.dump()}});
  const auto found =
      llmrepro::probes::run_preflight(preflight_target(server.url(), Dialect::openai_chat),
                                      preflight_config(), true, TemperatureMode::provider_default);
  CHECK(found.requests == 2);
  CHECK(found.temperature.outcome == CapabilityOutcome::not_sent);
  CHECK(found.seed.outcome == CapabilityOutcome::not_honoured);
  CHECK(found.seed.detail == "two sampled requests with seed 7 answered differently");
  for (const nlohmann::json& body : server.bodies()) {
    CHECK_FALSE(body.contains("temperature"));
    CHECK(body["seed"] == 7);
  }
}

TEST_CASE("run_preflight: a request that fails otherwise leaves the rest unchecked") {
  QueueServer server({{404, R"({"error": {"message": "The model `m` does not exist"}})"}});
  const auto found =
      llmrepro::probes::run_preflight(preflight_target(server.url(), Dialect::openai_chat),
                                      preflight_config(), true, TemperatureMode::zero);
  CHECK(found.requests == 1);
  CHECK(found.failure == "HTTP 404: The model `m` does not exist");
  CHECK(found.temperature.outcome == CapabilityOutcome::unchecked);
  CHECK(found.in_effect == TemperatureMode::zero);
}
