#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "probes/endpoint_detector.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"
#include "tests/unit/probes/loopback_server.hpp"

using llmrepro::core::ErrorCode;
using llmrepro::probes::decide_dialect;
using llmrepro::probes::DetectionProbes;
using llmrepro::probes::Dialect;
using llmrepro::probes::is_llamacpp_router;
using llmrepro::probes::pick_gemini_model;
using llmrepro::probes::pick_model;
using llmrepro::probes::ProbeAnswer;
using llmrepro::probes::testing::LoopbackServer;
using llmrepro::probes::testing::unused_port;

namespace {

ProbeAnswer answer(int status, std::string body) {
  ProbeAnswer result;
  result.answered = true;
  result.http_status = status;
  result.body = std::move(body);
  return result;
}

ProbeAnswer not_found() { return answer(404, "Not Found"); }

DetectionProbes all_not_found() {
  DetectionProbes probes;
  probes.models = not_found();
  probes.health = not_found();
  probes.props = not_found();
  probes.tags = not_found();
  probes.info = not_found();
  probes.model_info = not_found();
  probes.version = not_found();
  probes.chat_route = not_found();
  probes.responses_route = not_found();
  probes.gemini_models = not_found();
  return probes;
}

// A transport failure: no HTTP answer at all.
ProbeAnswer unanswered() {
  ProbeAnswer result;
  result.error = "Operation timed out after 5000 milliseconds";
  return result;
}

// A /v1/models that names no server, as OpenAI's does.
const char* k_openai_models =
    R"({"object":"list","data":[{"id":"gpt-4.1","object":"model","owned_by":"system"}]})";

const char* k_models =
    R"({"object":"list","data":[{"id":"qwen3-8b","object":"model","owned_by":"vllm"}]})";
// Ollama's own /v1/models names the model's namespace, not the server.
const char* k_ollama_models =
    R"({"object":"list","data":[{"id":"qwen3-8b","object":"model","owned_by":"library"}]})";

bool object_has_models(const ProbeAnswer& probe) {
  return probe.http_status == 200 && nlohmann::json::parse(probe.body).contains("models");
}

// The detection answers of one kind of server from tests/data/formats/discovery_<server>.json:
// each GET path listed there answers 200 with its body (an empty body for null), every other
// path 404. Keys that are not a GET path (an example error) are skipped.
DetectionProbes discovery(const std::string& server) {
  const auto paths =
      nlohmann::json::parse(llmrepro::probes::test::read_format("discovery_" + server + ".json"));
  DetectionProbes probes = all_not_found();
  const std::pair<const char*, ProbeAnswer*> routes[] = {
      {"/v1/models", &probes.models},
      {"/health", &probes.health},
      {"/props", &probes.props},
      {"/api/tags", &probes.tags},
      {"/info", &probes.info},
      {"/get_model_info", &probes.model_info},
      {"/api/version", &probes.version},
      {"/v1/chat/completions", &probes.chat_route},
      {"/v1/responses", &probes.responses_route},
      {"/v1beta/models", &probes.gemini_models}};
  for (const auto& [path, probe] : routes) {
    const auto found = paths.find(path);
    if (found != paths.end()) *probe = answer(200, found->is_null() ? "" : found->dump());
  }
  return probes;
}

} // namespace

TEST_CASE("decide_dialect") {
  std::string why;
  SUBCASE("Ollama: /api/tags lists models") {
    DetectionProbes probes = all_not_found();
    probes.tags = answer(200, R"({"models":[{"name":"llama3.2:1b"}]})");
    probes.version = answer(200, R"({"version":"0.13.0"})");
    probes.models = answer(200, k_ollama_models);
    auto dialect = decide_dialect("http://h", probes, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::ollama);
    CHECK(why.find("/api/tags") != std::string::npos);
  }
  SUBCASE("TGI: /info with model_id and router fields") {
    DetectionProbes probes = all_not_found();
    probes.info = answer(200, R"({"model_id":"bigscience/bloom","max_concurrent_requests":128})");
    probes.health = answer(200, "");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::tgi);
    probes.info = answer(200, R"({"model_id":"m","router":"text-generation-router"})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::tgi);
    probes.info = answer(200, R"({"model_id":"m"})");
    CHECK(decide_dialect("http://h", probes, &why).has_value() == false);
  }
  SUBCASE("SGLang: /get_model_info") {
    DetectionProbes probes = all_not_found();
    probes.model_info = answer(200, R"({"model_path":"Qwen/Qwen3-8B","is_generation":true})");
    probes.models = answer(200, k_models);
    probes.health = answer(200, "");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::sglang);
  }
  SUBCASE("llama.cpp: /health and /props, or owned_by llamacpp") {
    DetectionProbes probes = all_not_found();
    probes.health = answer(200, R"({"status":"ok"})");
    probes.props = answer(200, R"({"total_slots":4})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::llamacpp);
    probes.props = not_found();
    probes.models = answer(200, R"({"data":[{"id":"m.gguf","owned_by":"llamacpp"}]})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::llamacpp);
    CHECK(why.find("owned_by") != std::string::npos);
  }
  SUBCASE("OpenAI-compatible otherwise") {
    DetectionProbes probes = all_not_found();
    probes.models = answer(200, k_models);
    probes.health = answer(200, "");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
  }
  SUBCASE("a catch-all HTML 200 is not evidence") {
    DetectionProbes probes;
    for (ProbeAnswer* probe : {&probes.models, &probes.health, &probes.props, &probes.tags,
                               &probes.info, &probes.model_info})
      *probe = answer(200, "<html>welcome</html>");
    auto dialect = decide_dialect("http://h", probes, &why);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().message.find("pass --api") != std::string::npos);
  }
  SUBCASE("401 on /v1/models points at the key") {
    DetectionProbes probes = all_not_found();
    probes.models = answer(401, R"({"error":{"message":"Incorrect API key"}})");
    auto dialect = decide_dialect("https://u:pw@h", probes, &why);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().code == ErrorCode::endpoint);
    CHECK(dialect.error().message.find("credentials") != std::string::npos);
    CHECK(dialect.error().message.find("pw") == std::string::npos);
  }
  SUBCASE("a redirect names its Location") {
    DetectionProbes probes = all_not_found();
    for (ProbeAnswer* redirected : {&probes.models, &probes.health}) {
      *redirected = answer(301, "");
      redirected->redirect_url = "https://h/v1/models?api_key=secret";
    }
    probes.health.redirect_url = "https://h/health";
    auto dialect = decide_dialect("http://h", probes, &why);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().message ==
          "cannot tell which API http://h speaks (/v1/models: HTTP 301 redirect to "
          "https://h/v1/models refused: llmrepro does not follow redirects; use the final URL "
          "as --endpoint; /health: HTTP 301 redirect to https://h/health refused: llmrepro does "
          "not follow redirects; use the final URL as --endpoint)");
  }
  SUBCASE("nothing answered: cannot reach") {
    DetectionProbes probes;
    probes.models.error = "Failed to connect to h port 1";
    auto dialect = decide_dialect("http://h:1", probes, &why);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().code == ErrorCode::endpoint);
    CHECK(dialect.error().message == "cannot reach http://h:1: Failed to connect to h port 1");
  }
}

TEST_CASE("decide_dialect: the Gemini API's model list") {
  std::string why;
  const std::string gemini_list = llmrepro::probes::test::read_format("gemini_models_list.json");
  SUBCASE("models/... names with supportedGenerationMethods: gemini") {
    DetectionProbes probes = all_not_found();
    probes.gemini_models = answer(200, gemini_list);
    auto dialect = decide_dialect("http://h", probes, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::gemini);
    CHECK(why == "gemini: /v1beta/models lists \"models/...\" with supportedGenerationMethods "
                 "(the Gemini API)");
  }
  SUBCASE("a base URL ending in /v1beta: /v1/models is the same list, and gemini still wins") {
    DetectionProbes probes = all_not_found();
    probes.models = answer(200, gemini_list);
    probes.gemini_models = answer(200, gemini_list);
    CHECK(*decide_dialect("http://h/v1beta", probes, &why) == Dialect::gemini);
  }
  SUBCASE("servers that name themselves still win") {
    DetectionProbes probes = all_not_found();
    probes.gemini_models = answer(200, gemini_list);
    probes.models = answer(200, k_models);
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models lists owned_by \"vllm\" (vLLM)");
  }
  SUBCASE("Ollama's /api/tags shape at /v1beta/models is not Gemini's") {
    DetectionProbes probes = discovery("ollama");
    probes.gemini_models = probes.tags;
    REQUIRE(object_has_models(probes.gemini_models));
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::ollama);
    CHECK(why == "ollama: /api/version and /api/tags answer (Ollama)");
    // Without Ollama's own routes the same list decides nothing either.
    probes = all_not_found();
    probes.gemini_models = answer(200, R"({"models":[{"name":"qwen3:8b","model":"qwen3:8b"}]})");
    CHECK_FALSE(decide_dialect("http://h", probes, &why).has_value());
    // A "models/" name without the methods array is not enough.
    probes.gemini_models = answer(200, R"({"models":[{"name":"models/qwen3:8b"}]})");
    CHECK_FALSE(decide_dialect("http://h", probes, &why).has_value());
  }
  SUBCASE("an OpenAI-shaped list at /v1beta/models (Google's /v1beta/openai base) is OpenAI") {
    DetectionProbes probes = all_not_found();
    probes.models = answer(200, k_openai_models);
    probes.gemini_models = answer(200, k_openai_models);
    CHECK(*decide_dialect("http://h/v1beta/openai", probes, &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models answers (OpenAI-compatible)");
  }
  SUBCASE("an empty list decides nothing") {
    DetectionProbes probes = all_not_found();
    probes.gemini_models = answer(200, R"({"models":[]})");
    auto dialect = decide_dialect("http://h", probes, &why);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().message.find("pass --api") != std::string::npos);
  }
}

TEST_CASE("pick_gemini_model") {
  SUBCASE("the first model with generateContent, without models/") {
    auto model = pick_gemini_model(
        answer(200, llmrepro::probes::test::read_format("gemini_models_list.json")));
    REQUIRE(model.has_value());
    CHECK(*model == "gemini-2.0-flash");
  }
  SUBCASE("none generates content: the listed names and --model") {
    auto model = pick_gemini_model(answer(
        200, R"({"models":[{"name":"models/embedding-001","supportedGenerationMethods":)"
             R"(["embedContent"]},{"name":"models/aqa","supportedGenerationMethods":[]}]})"));
    REQUIRE_FALSE(model.has_value());
    CHECK(model.error().code == ErrorCode::endpoint);
    CHECK(model.error().message == "no model that /v1beta/models lists supports generateContent "
                                   "(models/embedding-001, models/aqa); pass --model");
  }
  SUBCASE("no Gemini list") {
    auto refused = pick_gemini_model(answer(403, R"({"error":{"code":403}})"));
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().message ==
          "could not find a model to audit (/v1beta/models: HTTP 403); pass --model");
    auto other = pick_gemini_model(answer(200, k_openai_models));
    REQUIRE_FALSE(other.has_value());
    CHECK(other.error().message == "could not find a model to audit (/v1beta/models: HTTP 200, "
                                   "not a Gemini model list); pass --model");
  }
}

TEST_CASE("decide_dialect on real discovery answers") {
  std::string why;
  SUBCASE("llama.cpp with /api/tags (May 2025 to April 2026) is not Ollama") {
    const DetectionProbes probes = discovery("llamacpp");
    REQUIRE(object_has_models(probes.tags));
    auto dialect = decide_dialect("http://h", probes, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::llamacpp);
    CHECK(why == "llamacpp: /v1/models lists owned_by \"llamacpp\" (llama.cpp server); "
                 "/api/tags also answers, but those Ollama-compatible routes are not used");
    CHECK_FALSE(is_llamacpp_router(probes));
  }
  SUBCASE("llama.cpp without /api/tags (before May 2025, after April 2026)") {
    DetectionProbes probes = discovery("llamacpp");
    probes.tags = not_found();
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::llamacpp);
    CHECK(why == "llamacpp: /v1/models lists owned_by \"llamacpp\" (llama.cpp server)");
    // Older builds whose /v1/models named no owner: /health and /props still decide.
    probes.models = not_found();
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::llamacpp);
    CHECK(why == "llamacpp: /health and /props answer (llama.cpp server)");
  }
  SUBCASE("llama.cpp router mode") {
    DetectionProbes probes = discovery("llamacpp_router");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::llamacpp);
    CHECK(why == "llamacpp: /v1/models lists owned_by \"llamacpp\" (llama.cpp server); /props "
                 "says role \"router\": each request names its model");
    CHECK(is_llamacpp_router(probes));
    CHECK(*pick_model(probes.models, probes.tags) == "ggml-org/Qwen3-8B-GGUF:Q8_0");
  }
  SUBCASE("SGLang with its Ollama routes is not Ollama") {
    DetectionProbes probes = discovery("sglang");
    REQUIRE(object_has_models(probes.tags));
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::sglang);
    CHECK(why == "sglang: /v1/models lists owned_by \"sglang\" (SGLang); /api/tags also "
                 "answers, but those Ollama-compatible routes are not used");
    // Without the owner, /get_model_info still outweighs /api/tags.
    probes.models = not_found();
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::sglang);
    CHECK(why.rfind("sglang: /get_model_info answers with \"model_path\" (SGLang); /api/tags "
                    "also answers",
                    0) == 0);
  }
  SUBCASE("Ollama answers its own /api/version") {
    DetectionProbes probes = discovery("ollama");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::ollama);
    CHECK(why == "ollama: /api/version and /api/tags answer (Ollama)");
    CHECK(*pick_model(probes.models, probes.tags) == "qwen3:8b");
    // /api/tags without /api/version beside an OpenAI route: another server's Ollama shim,
    // so its OpenAI route (which returns logprobs) is used.
    probes.version = not_found();
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    CHECK(why.find("without Ollama's /api/version") != std::string::npos);
    // /api/tags alone is still Ollama.
    probes.models = not_found();
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::ollama);
    CHECK(why == "ollama: /api/tags lists \"models\" and no other route answers");
  }
  SUBCASE("vLLM") {
    CHECK(*decide_dialect("http://h", discovery("vllm"), &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models lists owned_by \"vllm\" (vLLM)");
  }
  SUBCASE("TGI") {
    CHECK(*decide_dialect("http://h", discovery("tgi"), &why) == Dialect::tgi);
    CHECK(why == "tgi: /info has \"model_id\" and TGI router fields");
  }
  SUBCASE("the reference engine") {
    CHECK(*decide_dialect("http://h", discovery("llmrepro"), &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models lists owned_by \"llmrepro\" (the reference engine)");
  }
  SUBCASE("an owner named by only some models names no server") {
    DetectionProbes probes = all_not_found();
    probes.models = answer(
        200, R"({"data":[{"id":"a","owned_by":"llamacpp"},{"id":"b","owned_by":"openai"}]})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models answers (OpenAI-compatible)");
  }
}

TEST_CASE("decide_dialect: a Responses-only server") {
  std::string why;
  DetectionProbes probes = all_not_found();
  probes.models = answer(200, k_openai_models);
  SUBCASE("no chat route, a Responses route: openai-responses") {
    probes.responses_route = answer(405, R"({"detail":"Method Not Allowed"})");
    auto dialect = decide_dialect("http://h", probes, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::openai_responses);
    CHECK(why == "openai-responses: /v1/models answers; /v1/chat/completions answers 404 and "
                 "/v1/responses 405: the Responses API only");
    // Any HTTP answer but 404 shows the route, when /v1/models backs it.
    for (const int status : {200, 400, 401, 403, 500}) {
      probes.responses_route = answer(status, "{}");
      CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_responses);
      CHECK(why.find("/v1/responses " + std::to_string(status) + ": the Responses API only") !=
            std::string::npos);
    }
  }
  SUBCASE("the Ollama-compatible routes of another server are still named") {
    probes.responses_route = answer(405, "");
    probes.tags = answer(200, R"({"models":[{"name":"m"}]})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_responses);
    CHECK(why == "openai-responses: /v1/models answers; /v1/chat/completions answers 404 and "
                 "/v1/responses 405: the Responses API only; /api/tags also answers, but those "
                 "Ollama-compatible routes are not used");
  }
  SUBCASE("both routes absent, or both present: openai-chat as before") {
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models answers (OpenAI-compatible)");
    probes.chat_route = answer(405, R"({"detail":"Method Not Allowed"})");
    probes.responses_route = answer(405, R"({"detail":"Method Not Allowed"})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models answers (OpenAI-compatible)");
    // OpenAI itself: GET lists stored chat completions; the chat route exists.
    probes.chat_route = answer(200, R"({"object":"list","data":[]})");
    probes.responses_route = answer(405, "");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    // Only the chat route: openai-chat.
    probes.chat_route = answer(405, "");
    probes.responses_route = not_found();
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
  }
  SUBCASE("a transport failure is no evidence") {
    probes.chat_route = unanswered();
    probes.responses_route = answer(405, "");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    probes.chat_route = not_found();
    probes.responses_route = unanswered();
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models answers (OpenAI-compatible)");
  }
  SUBCASE("a server that names itself keeps its decision") {
    probes.responses_route = answer(405, "");
    probes.models = answer(200, k_models); // owned_by "vllm"
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    CHECK(why == "openai-chat: /v1/models lists owned_by \"vllm\" (vLLM)");
    probes.models = answer(200, R"({"data":[{"id":"tiny","owned_by":"llmrepro"}]})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::openai_chat);
    probes.models = answer(200, R"({"data":[{"id":"m.gguf","owned_by":"llamacpp"}]})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::llamacpp);
    probes.models = answer(200, R"({"data":[{"id":"m","owned_by":"sglang"}]})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::sglang);
    for (const char* server : {"llamacpp", "sglang", "tgi", "ollama"}) {
      CAPTURE(server);
      DetectionProbes named = discovery(server);
      const Dialect before = *decide_dialect("http://h", named, &why);
      named.responses_route = answer(405, "");
      CHECK(*decide_dialect("http://h", named, &why) == before);
    }
  }
  SUBCASE("without a model list: only the statuses of a live route") {
    probes.models = not_found();
    for (const int status : {200, 400, 401, 403, 405}) {
      CAPTURE(status);
      probes.responses_route = answer(status, "{}");
      auto dialect = decide_dialect("http://h", probes, &why);
      REQUIRE(dialect.has_value());
      CHECK(*dialect == Dialect::openai_responses);
      CHECK(why == "openai-responses: no model list (/v1/models: HTTP 404); /v1/chat/completions "
                   "answers 404 and /v1/responses " +
                       std::to_string(status) + ": the Responses API only");
    }
    // A failing gateway, a rate limit or a redirect says nothing about routes.
    for (const int status : {302, 429, 500, 502, 503}) {
      CAPTURE(status);
      probes.responses_route = answer(status, "{}");
      auto dialect = decide_dialect("http://h", probes, &why);
      REQUIRE_FALSE(dialect.has_value());
      CHECK(dialect.error().message == "cannot tell which API http://h speaks (/v1/models: HTTP "
                                       "404; /health: HTTP 404): pass --api explicitly");
    }
    // Both absent, or the chat route not 404: no decision either.
    probes.responses_route = not_found();
    CHECK_FALSE(decide_dialect("http://h", probes, &why).has_value());
    probes.chat_route = answer(401, "{}");
    probes.responses_route = answer(401, "{}");
    CHECK_FALSE(decide_dialect("http://h", probes, &why).has_value());
    // Ollama by /api/tags alone is never outweighed.
    probes.chat_route = not_found();
    probes.responses_route = answer(405, "");
    probes.tags = answer(200, R"({"models":[{"name":"m"}]})");
    CHECK(*decide_dialect("http://h", probes, &why) == Dialect::ollama);
  }
}

TEST_CASE("pick_model") {
  CHECK(*pick_model(answer(200, k_models), not_found()) == "qwen3-8b");
  CHECK(*pick_model(not_found(), answer(200, R"({"models":[{"name":"llama3.2:1b"}]})")) ==
        "llama3.2:1b");
  auto none = pick_model(answer(200, R"({"data":[]})"), not_found());
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message ==
        "could not find a model to audit (/v1/models has no data[0].id); pass --model");
}

TEST_CASE("detect_dialect") {
  SUBCASE("against a loopback Ollama look-alike, with the key sent") {
    std::string authorization;
    LoopbackServer server([&](httplib::Server& routes) {
      routes.Get("/api/tags", [&](const httplib::Request& request, httplib::Response& response) {
        authorization = request.get_header_value("Authorization");
        response.set_content(R"({"models":[{"name":"tiny:latest"}]})", "application/json");
      });
      routes.Get("/v1/models", [](const httplib::Request&, httplib::Response& response) {
        response.set_content(k_ollama_models, "application/json");
      });
      routes.Get("/api/version", [](const httplib::Request&, httplib::Response& response) {
        response.set_content(R"({"version":"0.13.0"})", "application/json");
      });
    });
    std::string why;
    auto dialect = llmrepro::probes::detect_dialect(server.url(), {}, "sk-test", false, 5, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::ollama);
    CHECK(authorization == "Bearer sk-test");
    auto model = llmrepro::probes::detect_model(server.url(), Dialect::ollama, {}, "", false, 5);
    REQUIRE(model.has_value());
    CHECK(*model == "qwen3-8b");
  }
  SUBCASE("a Responses-only server under a base URL with /v1: the routes joined like the rest") {
    // The detector's GETs run in parallel and the server answers each on its own thread.
    std::mutex gets_mutex;
    std::vector<std::string> gets;
    LoopbackServer server([&](httplib::Server& routes) {
      routes.Get("/v1/models", [&](const httplib::Request&, httplib::Response& response) {
        const std::lock_guard lock(gets_mutex);
        gets.push_back("/v1/models");
        response.set_content(k_openai_models, "application/json");
      });
      routes.Get("/v1/responses", [&](const httplib::Request&, httplib::Response& response) {
        const std::lock_guard lock(gets_mutex);
        gets.push_back("/v1/responses");
        response.status = 405;
        response.set_content(R"({"detail":"Method Not Allowed"})", "application/json");
      });
    });
    std::string why;
    auto dialect = llmrepro::probes::detect_dialect(server.url() + "/v1", {}, "", false, 5, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::openai_responses);
    CHECK(why == "openai-responses: /v1/models answers; /v1/chat/completions answers 404 and "
                 "/v1/responses 405: the Responses API only");
    std::sort(gets.begin(), gets.end());
    // The Gemini list joins like Gemini's own paths: under a base naming a version it is
    // "<base>/models", the same /v1/models, asked for a second time with the Gemini key header.
    CHECK(gets == std::vector<std::string>{"/v1/models", "/v1/models", "/v1/responses"});
  }
  SUBCASE("a Gemini look-alike: the list gets the key in x-goog-api-key, and the pick") {
    std::string goog_key;
    std::string authorization = "unset";
    const std::string list = llmrepro::probes::test::read_format("gemini_models_list.json");
    LoopbackServer server([&](httplib::Server& routes) {
      routes.Get("/v1beta/models",
                 [&](const httplib::Request& request, httplib::Response& response) {
                   goog_key = request.get_header_value("x-goog-api-key");
                   authorization = request.get_header_value("Authorization");
                   response.set_content(list, "application/json");
                 });
    });
    std::string why;
    auto dialect = llmrepro::probes::detect_dialect(server.url(), {}, "AIza-test", false, 5, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::gemini);
    CHECK(goog_key == "AIza-test");
    CHECK(authorization.empty());
    auto model =
        llmrepro::probes::detect_model(server.url(), Dialect::gemini, {}, "AIza-test", false, 5);
    REQUIRE(model.has_value());
    CHECK(*model == "gemini-2.0-flash");
    // Under a base naming its version the list is "<base>/models", as Gemini's own paths are.
    auto under_version =
        llmrepro::probes::detect_dialect(server.url() + "/v1beta", {}, "AIza-test", false, 5, &why);
    REQUIRE(under_version.has_value());
    CHECK(*under_version == Dialect::gemini);
  }
  SUBCASE("nothing listening") {
    const std::string url = "http://127.0.0.1:" + std::to_string(unused_port());
    auto dialect = llmrepro::probes::detect_dialect(url, {}, "", false, 5, nullptr);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().code == ErrorCode::endpoint);
    CHECK(dialect.error().message.rfind("cannot reach " + url + ": ", 0) == 0);
    auto model = llmrepro::probes::detect_model(url, Dialect::openai_chat, {}, "", false, 5);
    REQUIRE_FALSE(model.has_value());
    CHECK(model.error().message.rfind("cannot reach ", 0) == 0);
  }
}

TEST_CASE("dialect_for_suite: a suite of chat prompts goes to the chat route of a server found "
          "by its native completion route") {
  using llmrepro::probes::dialect_for_suite;
  for (Dialect native : {Dialect::llamacpp, Dialect::sglang, Dialect::tgi}) {
    CHECK(dialect_for_suite(native, 0, 3) == Dialect::openai_chat);
    // Text prompts keep the native route (llama.cpp's timings, n_probs); a mixed suite too, its
    // chat prompts flattened and named in every output (core/prompt_form).
    CHECK(dialect_for_suite(native, 2, 0) == native);
    CHECK(dialect_for_suite(native, 2, 3) == native);
  }
  CHECK(dialect_for_suite(Dialect::openai_chat, 0, 3) == Dialect::openai_chat);
  CHECK(dialect_for_suite(Dialect::ollama, 0, 3) == Dialect::ollama);
  CHECK(dialect_for_suite(Dialect::openai_completions, 0, 3) == Dialect::openai_completions);
}
