#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "dialect_test_support.hpp"
#include "probes/server_description.hpp"

using llmrepro::core::ServerDescription;
using llmrepro::core::ServerFact;
using llmrepro::probes::Dialect;
using llmrepro::probes::test::read_format;
namespace probes = llmrepro::probes;

namespace {

// The body one discovery file lists under `path` (tests/data/formats/discovery_<server>.json).
std::string discovery_body(const std::string& server, const std::string& path) {
  return nlohmann::json::parse(read_format("discovery_" + server + ".json")).at(path).dump();
}

} // namespace

TEST_CASE("describe_llamacpp_props reads the build, slots, context per slot and model path") {
  const ServerDescription d = probes::describe_llamacpp_props(read_format("llamacpp_props.json"));
  CHECK(d.kind == "llama.cpp");
  CHECK(d.version == "b10470-34af94cd9");
  CHECK(d.facts == std::vector<ServerFact>{{"slots", "8"},
                                           {"context per slot", "512"},
                                           {"model path", "/models/qwen3-0.6b-f16.gguf"}});
  CHECK(d.summary == "llama.cpp b10470-34af94cd9, 8 slots, 512 tokens per slot");
}

TEST_CASE("describe_llamacpp_props names a router and what it lacks") {
  const ServerDescription d =
      probes::describe_llamacpp_props(discovery_body("llamacpp_router", "/props"));
  // The router's /props has neither build_info nor total_slots: not a description.
  CHECK_FALSE(d.known());
  const ServerDescription one_slot =
      probes::describe_llamacpp_props(R"({"total_slots":1,"role":"router"})");
  CHECK(one_slot.version.empty());
  CHECK(one_slot.facts == std::vector<ServerFact>{{"slots", "1"}, {"role", "router"}});
  CHECK(one_slot.summary == "llama.cpp, 1 slot");
}

TEST_CASE("context_per_slot") {
  // tools/server/server-context.cpp get_props: default_generation_settings.n_ctx is the slot's.
  CHECK(probes::context_per_slot(
            probes::describe_llamacpp_props(read_format("llamacpp_props.json"))) == 512);
  // Without it, a whole context shared by the slots gives each its share.
  const ServerDescription shared =
      probes::describe_llamacpp_props(R"({"build_info":"b1","total_slots":8,"n_ctx":2048})");
  CHECK(shared.facts == std::vector<ServerFact>{{"slots", "8"}, {"context per slot", "256"}});
  CHECK(probes::context_per_slot(shared) == 256);
  // Nothing to read, or nothing a request could use: unknown.
  CHECK_FALSE(probes::context_per_slot(
      probes::describe_llamacpp_props(R"({"build_info":"b1","total_slots":4})")));
  CHECK_FALSE(probes::context_per_slot(probes::describe_llamacpp_props(
      R"({"build_info":"b1","default_generation_settings":{"n_ctx":0}})")));
  CHECK_FALSE(probes::context_per_slot(probes::describe_llamacpp_props(
      R"({"build_info":"b1","default_generation_settings":{"n_ctx":"lots"}})")));
  CHECK_FALSE(probes::context_per_slot(probes::describe_vllm_version(R"({"version":"0.11.0"})")));
}

TEST_CASE("describe_sglang_server_info reads the version and the main settings") {
  const ServerDescription d =
      probes::describe_sglang_server_info(read_format("sglang_get_server_info.json"));
  CHECK(d.kind == "SGLang");
  CHECK(d.version == "0.5.5");
  // context_length null: left out.
  CHECK(d.facts == std::vector<ServerFact>{{"model path", "Qwen/Qwen3-8B"},
                                           {"tp size", "2"},
                                           {"dp size", "1"},
                                           {"max running requests", "128"},
                                           {"attention backend", "fa3"},
                                           {"radix cache", "on"},
                                           {"deterministic inference", "true"},
                                           {"random seed", "42"}});
  CHECK(d.summary == "SGLang 0.5.5, tp 2, radix cache on");
}

TEST_CASE("describe_vllm_version, describe_ollama_version: the version alone") {
  const ServerDescription vllm = probes::describe_vllm_version(discovery_body("vllm", "/version"));
  CHECK(vllm.kind == "vLLM");
  CHECK(vllm.version == "0.11.0");
  CHECK(vllm.facts.empty());
  CHECK(vllm.summary == "vLLM 0.11.0");
  const ServerDescription ollama =
      probes::describe_ollama_version(discovery_body("ollama", "/api/version"));
  CHECK(ollama.summary == "Ollama 0.13.0");
}

TEST_CASE("describe_tgi_info reads max_input_tokens, or max_input_length before TGI 2.1") {
  const ServerDescription d = probes::describe_tgi_info(discovery_body("tgi", "/info"));
  CHECK(d.kind == "TGI");
  CHECK(d.version == "3.3.6");
  // sha null: left out.
  CHECK(d.facts == std::vector<ServerFact>{{"model id", "Qwen/Qwen3-8B"},
                                           {"max input tokens", "4095"},
                                           {"max total tokens", "4096"}});
  CHECK(d.summary == "TGI 3.3.6, Qwen/Qwen3-8B, 4095 input tokens, 4096 total tokens");
  const ServerDescription old =
      probes::describe_tgi_info(read_format("tgi_info_max_input_length.json"));
  CHECK(old.version == "1.4.5");
  CHECK(old.facts == std::vector<ServerFact>{{"sha", "4ee0a0c4010b6e000f176977648aa1749339e8cb"},
                                             {"model id", "bigscience/bloom-560m"},
                                             {"max input tokens", "1024"},
                                             {"max total tokens", "2048"}});
}

TEST_CASE("a body in another shape describes nothing") {
  for (const std::string body :
       {"", "<html>ok</html>", "[]", "{}", R"({"version": 3})", R"({"error":"not found"})"}) {
    CAPTURE(body);
    CHECK_FALSE(probes::describe_llamacpp_props(body).known());
    CHECK_FALSE(probes::describe_sglang_server_info(body).known());
    CHECK_FALSE(probes::describe_vllm_version(body).known());
    CHECK_FALSE(probes::describe_tgi_info(body).known());
    CHECK_FALSE(probes::describe_ollama_version(body).known());
  }
}

TEST_CASE("server text is capped and stripped of control characters") {
  const std::string long_build(500, 'b');
  const ServerDescription d = probes::describe_llamacpp_props(
      R"({"build_info":")" + long_build + R"(","total_slots":2,"model_path":"a\nb\u001b[31m"})");
  CHECK(d.version == std::string(120, 'b') + "\u2026");
  CHECK(d.facts.at(1) == ServerFact{"model path", "a b [31m"});
}

TEST_CASE("description_routes and describe_from_bodies follow the dialect") {
  CHECK(probes::description_routes(Dialect::llamacpp) == std::vector<std::string>{"/props"});
  CHECK(probes::description_routes(Dialect::tgi) == std::vector<std::string>{"/info"});
  CHECK(probes::description_routes(Dialect::sglang) ==
        std::vector<std::string>{"/get_server_info"});
  CHECK(probes::description_routes(Dialect::ollama) == std::vector<std::string>{"/api/version"});
  CHECK(probes::description_routes(Dialect::openai_chat) ==
        std::vector<std::string>{"/version", "/props"});
  CHECK(probes::description_routes(Dialect::gemini).empty());
  CHECK(probes::description_routes(Dialect::anthropic).empty());
  CHECK(probes::description_routes(Dialect::openai_responses).empty());
  // llama.cpp through its OpenAI route: /version did not answer, /props did.
  const ServerDescription llama =
      probes::describe_from_bodies(Dialect::openai_chat, {"", read_format("llamacpp_props.json")});
  CHECK(llama.kind == "llama.cpp");
  const ServerDescription vllm =
      probes::describe_from_bodies(Dialect::openai_chat, {discovery_body("vllm", "/version"), ""});
  CHECK(vllm.kind == "vLLM");
  CHECK_FALSE(probes::describe_from_bodies(Dialect::openai_chat, {"", ""}).known());
  CHECK_FALSE(probes::describe_from_bodies(Dialect::gemini, {}).known());
}
