#include <doctest/doctest.h>

#include "probes/endpoint_detector.hpp"
#include "tests/unit/probes/loopback_server.hpp"

using llmrepro::core::ErrorCode;
using llmrepro::probes::decide_dialect;
using llmrepro::probes::DetectionProbes;
using llmrepro::probes::Dialect;
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
  return probes;
}

const char* k_models =
    R"({"object":"list","data":[{"id":"qwen3-8b","object":"model","owned_by":"vllm"}]})";

} // namespace

TEST_CASE("decide_dialect") {
  std::string why;
  SUBCASE("Ollama: /api/tags lists models") {
    DetectionProbes probes = all_not_found();
    probes.tags = answer(200, R"({"models":[{"name":"llama3.2:1b"}]})");
    probes.models = answer(200, k_models);
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
  SUBCASE("nothing answered: cannot reach") {
    DetectionProbes probes;
    probes.models.error = "Failed to connect to h port 1";
    auto dialect = decide_dialect("http://h:1", probes, &why);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().code == ErrorCode::endpoint);
    CHECK(dialect.error().message == "cannot reach http://h:1: Failed to connect to h port 1");
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
        response.set_content(k_models, "application/json");
      });
    });
    std::string why;
    auto dialect = llmrepro::probes::detect_dialect(server.url(), {}, "sk-test", false, 5, &why);
    REQUIRE(dialect.has_value());
    CHECK(*dialect == Dialect::ollama);
    CHECK(authorization == "Bearer sk-test");
    auto model = llmrepro::probes::detect_model(server.url(), {}, "", false, 5);
    REQUIRE(model.has_value());
    CHECK(*model == "qwen3-8b");
  }
  SUBCASE("nothing listening") {
    const std::string url = "http://127.0.0.1:" + std::to_string(unused_port());
    auto dialect = llmrepro::probes::detect_dialect(url, {}, "", false, 5, nullptr);
    REQUIRE_FALSE(dialect.has_value());
    CHECK(dialect.error().code == ErrorCode::endpoint);
    CHECK(dialect.error().message.rfind("cannot reach " + url + ": ", 0) == 0);
    auto model = llmrepro::probes::detect_model(url, {}, "", false, 5);
    REQUIRE_FALSE(model.has_value());
    CHECK(model.error().message.rfind("cannot reach ", 0) == 0);
  }
}
