#include <doctest/doctest.h>

#include <string>

#include "core/probe_text.hpp"
#include "probes/detail/filler_traffic.hpp"
#include "probes/detail/prefix_trial.hpp"
#include "probes/detail/request_builder.hpp"

using llmrepro::probes::EndpointTarget;
using llmrepro::probes::HttpRequest;
using llmrepro::probes::SchedulerConfig;
using namespace llmrepro::probes::detail;

namespace {

EndpointTarget test_target() {
  EndpointTarget target;
  target.base_url = "http://127.0.0.1:9/base";
  target.headers = {"X-Team: audit"};
  target.api_key = "secret";
  target.insecure = true;
  return target;
}

SchedulerConfig test_config() {
  SchedulerConfig config;
  config.params.model = "run-model";
  config.params.max_tokens = 64;
  config.params.stream = true;
  config.timeout_s = 7;
  config.max_response_bytes = 4096;
  return config;
}

} // namespace

TEST_CASE("post_request") {
  const HttpRequest request = post_request(test_target(), test_config(), "/flush_cache", "{}");
  CHECK(request.method == HttpRequest::Method::post);
  CHECK(request.url == "http://127.0.0.1:9/base/flush_cache");
  CHECK(request.body == "{}");
  REQUIRE(request.headers.size() == 2);
  CHECK(request.headers[0] == "Content-Type: application/json");
  CHECK(request.headers[1] == "X-Team: audit");
  CHECK(request.api_key == "secret");
  CHECK(request.timeout_s == 7);
  CHECK(request.max_response_bytes == 4096);
  CHECK(request.insecure);
}

TEST_CASE("params_for") {
  EndpointTarget target = test_target();
  CHECK(params_for(target, test_config()).model == "run-model");
  target.model = "own-model";
  CHECK(params_for(target, test_config()).model == "own-model");
  CHECK(params_for(target, test_config()).max_tokens == 64);
}

TEST_CASE("params_for: --logprobs-form together sends the integer count to any host") {
  llmrepro::core::Prompt prompt;
  prompt.id = "p";
  prompt.text = "The capital of";
  EndpointTarget target = test_target(); // 127.0.0.1: the common form by host
  SchedulerConfig config = test_config();
  config.params.top_logprobs = 4;
  CHECK(params_for(target, config).chat_form == llmrepro::probes::ChatRequestForm::common);
  std::string body = generation_request(target, config, prompt, params_for(target, config)).body;
  CHECK(body.find("\"logprobs\":true") != std::string::npos);
  CHECK(body.find("\"top_logprobs\":4") != std::string::npos);
  target.logprobs_form = llmrepro::probes::LogprobsForm::together;
  CHECK(params_for(target, config).chat_form == llmrepro::probes::ChatRequestForm::together);
  body = generation_request(target, config, prompt, params_for(target, config)).body;
  CHECK(body.find("\"logprobs\":4") != std::string::npos);
  CHECK(body.find("top_logprobs") == std::string::npos);
}

TEST_CASE("params_for: llama.cpp's /completion names the model given or a router needs") {
  using llmrepro::probes::Dialect;
  llmrepro::core::Prompt prompt;
  prompt.id = "p";
  prompt.text = "The capital of";
  EndpointTarget target = test_target();
  target.dialect = Dialect::llamacpp;
  target.model = "detected-model";
  const auto body_of = [&] {
    return generation_request(target, test_config(), prompt, params_for(target, test_config()))
        .body;
  };
  // Found through /v1/models on a single-model server: not sent, the body it always had.
  CHECK_FALSE(params_for(target, test_config()).native_model);
  CHECK(body_of().find("\"model\"") == std::string::npos);
  SUBCASE("--model given") {
    target.model_given = true;
    CHECK(params_for(target, test_config()).native_model);
    CHECK(body_of().find("\"model\":\"detected-model\"") != std::string::npos);
  }
  SUBCASE("a router detected") {
    target.llamacpp_router = true;
    CHECK(params_for(target, test_config()).native_model);
    CHECK(body_of().find("\"model\":\"detected-model\"") != std::string::npos);
  }
}

TEST_CASE("generation_request") {
  llmrepro::core::Prompt prompt;
  prompt.id = "p";
  prompt.text = "What is the capital of France?";
  const HttpRequest request = generation_request(test_target(), test_config(), prompt,
                                                 params_for(test_target(), test_config()));
  CHECK(request.url == "http://127.0.0.1:9/base/v1/chat/completions");
  CHECK(request.body.find("capital of France") != std::string::npos);
  CHECK(request.body.find("\"run-model\"") != std::string::npos);
  CHECK(request.api_key == "secret");
}

TEST_CASE("side traffic requests") {
  SUBCASE("filler_request: the filler prompt, its own length, never streamed") {
    const HttpRequest request = filler_request(test_target(), test_config(), 3);
    CHECK(request.url == "http://127.0.0.1:9/base/v1/chat/completions");
    CHECK(request.body.find("\"max_tokens\":" + std::to_string(llmrepro::core::filler_max_tokens(
                                                    3))) != std::string::npos);
    CHECK(request.body.find("\"stream\":true") == std::string::npos);
  }
  SUBCASE("filler_request sampled: temperature 1, top_p 1 and the filler's own seed") {
    SchedulerConfig config = test_config();
    config.params.seed = 40;
    CHECK(filler_seed(config, 0) == 41);
    CHECK(filler_seed(config, 3) == 44);
    const HttpRequest greedy = filler_request(test_target(), config, 3);
    CHECK(greedy.body.find("\"temperature\":0.0") != std::string::npos);
    CHECK(greedy.body.find("top_p") == std::string::npos);
    CHECK(greedy.body.find("\"seed\":40") != std::string::npos);
    const HttpRequest sampled = filler_request(test_target(), config, 3, true);
    CHECK(sampled.body.find("\"temperature\":1.0") != std::string::npos);
    CHECK(sampled.body.find("\"top_p\":1.0") != std::string::npos);
    CHECK(sampled.body.find("\"seed\":44") != std::string::npos);
    CHECK(sampled.body.find(*llmrepro::core::filler_prompt(3, {}).text) != std::string::npos);
    CHECK(sampled.body.find("\"stream\":true") == std::string::npos);
  }
  SUBCASE("priming_request: the shared prefix (as many words as asked), one token") {
    const HttpRequest request =
        priming_request(test_target(), test_config(), llmrepro::core::k_prefix_words);
    CHECK(request.body.find("\"max_tokens\":1,") != std::string::npos);
    const std::string full = *llmrepro::core::prefix_priming_prompt().text;
    CHECK(request.body.find(full.substr(0, full.size() - 9)) != std::string::npos);
    const HttpRequest cut = priming_request(test_target(), test_config(), 3);
    const std::string three = *llmrepro::core::prefix_priming_prompt(3).text;
    CHECK(cut.body.find(three.substr(0, three.size() - 9)) != std::string::npos);
    CHECK(cut.body.find(full.substr(0, full.size() - 9)) == std::string::npos);
    CHECK(request.body.find("\"stream\":true") == std::string::npos);
    CHECK(request.headers.size() == 2);
  }
}

// The sampled fillers' payload in every dialect that sends fillers, each in the shape its API
// documents for sampling: OpenAI's chat, completions and Responses references (temperature,
// top_p, seed), llama.cpp's server README (/completion: temperature, top_p, seed), SGLang's
// sampling_params, Ollama's options, TGI's GenerateParameters (do_sample, temperature; top_p
// must lie below 1, so it is left out), Gemini's generationConfig (temperature, topP, seed),
// Anthropic's Messages API (temperature alone, no seed).
TEST_CASE("sampled fillers carry temperature 1 in every dialect") {
  using llmrepro::probes::Dialect;
  SchedulerConfig config = test_config();
  config.params.seed = 9;
  const auto body_in = [&config](Dialect dialect, bool sampled) {
    EndpointTarget target = test_target();
    target.dialect = dialect;
    return filler_request(target, config, 0, sampled).body;
  };
  const auto has = [](const std::string& body, const std::string& part) {
    return body.find(part) != std::string::npos;
  };
  struct Expected {
    Dialect dialect;
    std::string temperature; // as sampled fillers send it
    std::string top_p;       // empty: not sent
    std::string seed;        // empty: not sent
  };
  const Expected expected[] = {
      {Dialect::openai_chat, R"("temperature":1.0)", R"("top_p":1.0)", R"("seed":10)"},
      {Dialect::openai_completions, R"("temperature":1.0)", R"("top_p":1.0)", R"("seed":10)"},
      {Dialect::openai_responses, R"("temperature":1.0)", R"("top_p":1.0)", ""},
      {Dialect::llamacpp, R"("temperature":1.0)", R"("top_p":1.0)", R"("seed":10)"},
      {Dialect::sglang, R"("temperature":1.0)", R"("top_p":1.0)", ""},
      {Dialect::ollama, R"("temperature":1.0)", R"("top_p":1.0)", R"("seed":10)"},
      {Dialect::tgi, R"("temperature":1.0)", "", R"("seed":10)"},
      {Dialect::gemini, R"("temperature":1.0)", R"("topP":1.0)", R"("seed":10)"},
      {Dialect::anthropic, R"("temperature":1.0)", "", ""},
  };
  for (const Expected& each : expected) {
    CAPTURE(llmrepro::probes::to_string(each.dialect));
    const std::string sampled = body_in(each.dialect, true);
    const std::string greedy = body_in(each.dialect, false);
    CHECK(has(sampled, each.temperature));
    CHECK_FALSE(has(greedy, each.temperature));
    CHECK(has(greedy, R"("temperature":0.0)") != (each.dialect == Dialect::tgi));
    if (!each.top_p.empty()) CHECK(has(sampled, each.top_p));
    CHECK_FALSE(has(greedy, "top_p"));
    CHECK_FALSE(has(greedy, "topP"));
    if (!each.seed.empty()) CHECK(has(sampled, each.seed));
  }
  CHECK(has(body_in(Dialect::tgi, true), R"("do_sample":true)"));
  CHECK(has(body_in(Dialect::tgi, false), R"("do_sample":false)"));
  CHECK_FALSE(has(body_in(Dialect::tgi, true), "top_p"));
  CHECK_FALSE(has(body_in(Dialect::anthropic, true), "top_p"));
}

TEST_CASE("flush_answered: a 2xx flushed, except vLLM's explicit refusal in JSON") {
  using llmrepro::probes::HttpResponse;
  const auto answer = [](int status, std::string body) {
    HttpResponse response;
    response.http_status = status;
    response.body = std::move(body);
    return response;
  };
  CHECK(flush_answered(answer(200, "Cache flushed.\n"))); // SGLang
  CHECK(flush_answered(answer(200, "")));                 // vLLM before it answered JSON
  CHECK(flush_answered(answer(200, R"({"success": true})")));
  CHECK_FALSE(flush_answered(answer(200, R"({"success": false})")));
  CHECK_FALSE(flush_answered(answer(404, "Not Found")));
  CHECK_FALSE(flush_answered(answer(400, "Cannot flush: requests are running")));
}

TEST_CASE("parse_prefix_cache_hits: vLLM's counter, summed over its label sets") {
  using llmrepro::probes::detail::parse_prefix_cache_hits;
  // As vLLM's PrometheusStatLogger writes it (vllm/v1/metrics/loggers.py), two engines.
  const std::string metrics =
      "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached "
      "tokens.\n"
      "# TYPE vllm:prefix_cache_hits_total counter\n"
      "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 900.0\n"
      "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 320.0\n"
      "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 160.0 1700000000000\n"
      "vllm:prefix_cache_hits_created{engine=\"0\",model_name=\"m\"} 1.7e+09\n";
  CHECK(parse_prefix_cache_hits(metrics) == 480);
  CHECK(parse_prefix_cache_hits("vllm:prefix_cache_hits_total 7\n") == 7);
  CHECK(parse_prefix_cache_hits("vllm:prefix_cache_hits_total{engine=\"0\"} 0\n") == 0);
  // No sample of it: nothing to read (another server, or a vLLM without the counter).
  CHECK_FALSE(parse_prefix_cache_hits("# TYPE vllm:prefix_cache_hits_total counter\n"));
  CHECK_FALSE(parse_prefix_cache_hits("vllm:gpu_prefix_cache_hit_rate 0.5\n"));
  CHECK_FALSE(parse_prefix_cache_hits("vllm:prefix_cache_hits_total NaN\n"));
  CHECK_FALSE(parse_prefix_cache_hits(""));
}

TEST_CASE("the per-request cold mode: llamacpp's cold trials leave the prompt cache out") {
  using llmrepro::probes::build_request;
  using llmrepro::probes::Dialect;
  CHECK(has_per_request_cold_mode(Dialect::llamacpp));
  CHECK_FALSE(has_per_request_cold_mode(Dialect::openai_chat));
  CHECK_FALSE(has_per_request_cold_mode(Dialect::sglang));
  llmrepro::core::Prompt prompt;
  prompt.id = "p";
  prompt.text = "Say hi";
  llmrepro::probes::GenerationParams params;
  CHECK(build_request(Dialect::llamacpp, prompt, params).body.find("cache_prompt") ==
        std::string::npos);
  params.bypass_prompt_cache = true;
  CHECK(build_request(Dialect::llamacpp, prompt, params).body.find(R"("cache_prompt":false)") !=
        std::string::npos);
}
