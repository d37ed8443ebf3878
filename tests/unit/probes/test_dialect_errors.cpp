// parse_response() on bad bodies, and describe_error_body() on every error payload.
#include <doctest/doctest.h>

#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::describe_error_body;
using probes::Dialect;
using probes::parse_response;
using probes::test::parse_error;
using probes::test::read_format;
using probes::test::sse_body;
using Json = nlohmann::ordered_json;

TEST_CASE("parse_response malformed bodies") {
  SUBCASE("not JSON") {
    CHECK(parse_error(Dialect::openai_chat, "{\"choices\": [") ==
          "openai-chat: malformed JSON at byte 14");
    CHECK(parse_error(Dialect::tgi, "<html>Bad Gateway</html>") == "tgi: malformed JSON at byte 1");
    CHECK(parse_error(Dialect::sglang, "  \n") == "sglang: empty body");
  }
  SUBCASE("missing and wrongly typed fields are named") {
    Json body = Json::parse(read_format("openai_chat_completion_logprobs.json"));
    Json missing = body;
    missing["choices"][0]["message"].erase("content");
    CHECK(parse_error(Dialect::openai_chat, missing.dump()) ==
          "openai-chat: missing field choices[0].message.content");
    Json wrong = body;
    wrong["choices"][0]["logprobs"]["content"][3]["logprob"] = "-0.1";
    CHECK(parse_error(Dialect::openai_chat, wrong.dump()) ==
          "openai-chat: field choices[0].logprobs.content[3].logprob must be a number");
    Json empty = body;
    empty["choices"] = Json::array();
    CHECK(parse_error(Dialect::openai_chat, empty.dump()) == "openai-chat: field choices is empty");
    CHECK(parse_error(Dialect::openai_chat, "[1, 2]") == "openai-chat: body must be an object");
  }
  SUBCASE("legacy arrays of different lengths") {
    Json body = Json::parse(read_format("openai_legacy_completion_logprobs.json"));
    body["choices"][0]["logprobs"]["token_logprobs"].erase(5);
    CHECK(parse_error(Dialect::openai_completions, body.dump()) ==
          "openai-completions: field choices[0].logprobs.token_logprobs has 5 entries but "
          "choices[0].logprobs.tokens has 6");
  }
  SUBCASE("native shapes") {
    CHECK(parse_error(Dialect::llamacpp,
                      R"({"content":"a","completion_probabilities":[{"token":"a"}]})") ==
          "llamacpp: field completion_probabilities[0] has none of logprob, prob or probs");
    CHECK(parse_error(Dialect::llamacpp,
                      R"({"content":"a","completion_probabilities":[{"token":"a","prob":1.5}]})") ==
          "llamacpp: field completion_probabilities[0].prob must be a probability in [0, 1]");
    CHECK(parse_error(Dialect::sglang,
                      R"({"text":"a","meta_info":{"output_token_logprobs":[[-0.1]]}})") ==
          "sglang: field meta_info.output_token_logprobs[0] must be [logprob, token_id, text]");
    CHECK(parse_error(Dialect::ollama, R"({"response":"a","done":false})") ==
          "ollama: field done is false in a non-streamed answer");
    CHECK(parse_error(Dialect::ollama, R"({"done":true})") ==
          "ollama: missing field message.content (chat) or response (generate)");
    CHECK(parse_error(Dialect::tgi,
                      R"({"generated_text":"a","details":{"tokens":[{"text":"a"}]}})") ==
          "tgi: missing field details.tokens[0].logprob");
  }
  SUBCASE("an error envelope with a 2xx status") {
    CHECK(parse_error(Dialect::openai_chat, read_format("openai_error_429.json"))
              .rfind("openai-chat: endpoint error: Rate limit reached for gpt-4o-mini", 0) == 0);
    CHECK(parse_error(Dialect::tgi, read_format("tgi_error_429_overloaded.json")) ==
          "tgi: endpoint error: Model is overloaded");
    CHECK(parse_error(Dialect::ollama, read_format("ollama_error_503_queue_full.json")) ==
          "ollama: endpoint error: server busy, please try again.  maximum pending requests "
          "exceeded");
  }
  SUBCASE("nesting too deep to be a response") {
    std::string deep(100000, '[');
    CHECK(parse_error(Dialect::openai_chat, deep) ==
          "openai-chat: JSON nested deeper than 64 levels");
  }
  SUBCASE("every truncation of a whole body is an error") {
    for (const char* name :
         {"openai_chat_completion_logprobs.json", "vllm_completion_logprobs.json",
          "sglang_generate_logprobs.json", "tgi_generate_details_top_tokens.json"}) {
      std::string body = read_format(name);
      Dialect dialect = std::string(name).rfind("sglang", 0) == 0 ? Dialect::sglang
                        : std::string(name).rfind("tgi", 0) == 0  ? Dialect::tgi
                        : std::string(name).rfind("vllm", 0) == 0 ? Dialect::openai_completions
                                                                  : Dialect::openai_chat;
      // Cuts before the closing brace: trailing whitespace alone may go.
      std::size_t end = body.find_last_not_of(" \t\r\n");
      std::size_t accepted = 0;
      for (std::size_t cut = 0; cut < end; cut += 3)
        accepted +=
            parse_response(dialect, std::string_view(body).substr(0, cut), false).has_value();
      INFO(std::string(name));
      CHECK(accepted == 0);
    }
  }
}

TEST_CASE("parse_response truncated and failed streams") {
  Json chunks = Json::parse(read_format("vllm_chat_completion_stream_chunks.json"));
  SUBCASE("no [DONE]") {
    CHECK(parse_error(Dialect::openai_chat, sse_body(chunks, false), true) ==
          "openai-chat: stream ended without data: [DONE] (truncated)");
    CHECK(parse_error(Dialect::sglang, "data: {\"text\":\"a\",\"meta_info\":{}}\n\n", true) ==
          "sglang: stream ended without data: [DONE] (truncated)");
  }
  SUBCASE("cut inside an event") {
    std::string body = sse_body(chunks, false);
    body.resize(body.size() - 40);
    std::string message = parse_error(Dialect::openai_chat, body, true);
    CHECK(message.rfind("openai-chat: stream event 4: malformed JSON at byte ", 0) == 0);
  }
  SUBCASE("an error event") {
    Json events = Json::array(
        {chunks[0], Json::parse(read_format("vllm_error_400_top_logprobs_too_large.json"))});
    CHECK(parse_error(Dialect::openai_chat, sse_body(events), true) ==
          "openai-chat: endpoint error: Requested sample logprobs of 21, which is "
          "greater than max allowed: 20 (parameter=logprobs, value=21)");
  }
  SUBCASE("a wrongly typed field names its event") {
    chunks[2]["choices"][0]["logprobs"]["content"][1]["top_logprobs"][0]["token"] = 7;
    CHECK(parse_error(Dialect::openai_chat, sse_body(chunks), true) ==
          "openai-chat: stream event 3: field choices[0].logprobs.content[1].top_logprobs[0].token "
          "must be a string");
  }
  SUBCASE("native streams without their final event") {
    CHECK(parse_error(Dialect::llamacpp, "data: {\"content\":\"a\",\"stop\":false}\n\n", true) ==
          "llamacpp: stream ended without a final event (\"stop\": true): truncated");
    CHECK(parse_error(
              Dialect::llamacpp,
              "data: {\"content\":\"a\",\"stop\":false}\n\nerror: {\"code\":500,\"message\":\"out "
              "of memory\",\"type\":\"server_error\"}\n\n",
              true) == "llamacpp: endpoint error: out of memory");
    CHECK(parse_error(Dialect::ollama, "{\"response\":\"a\",\"done\":false}\n", true) ==
          "ollama: stream ended without a final object (\"done\": true): truncated");
    CHECK(parse_error(Dialect::ollama,
                      "{\"response\":\"a\",\"done\":false}\n{\"error\":\"boom\"}\n",
                      true) == "ollama: endpoint error: boom");
    CHECK(
        parse_error(Dialect::tgi,
                    "data: {\"token\":{\"id\":1,\"text\":\"a\",\"logprob\":-0.1,\"special\":false},"
                    "\"generated_text\":null}\n\n",
                    true) == "tgi: stream ended without a final event (generated_text): truncated");
  }
  SUBCASE("hostile bytes give a value or an endpoint error naming the dialect") {
    std::string body = sse_body(chunks);
    std::size_t badly_reported = 0;
    for (std::size_t i = 0; i < body.size(); i += 3) {
      std::string mutated = body;
      mutated[i] = static_cast<char>(mutated[i] ^ 0x5A);
      for (Dialect dialect : probes::all_dialects())
        for (bool stream : {true, false}) {
          auto result = parse_response(dialect, mutated, stream);
          if (result) continue;
          std::string prefix = std::string(probes::to_string(dialect)) + ": ";
          badly_reported += result.error().code != core::ErrorCode::endpoint ||
                            result.error().message.rfind(prefix, 0) != 0;
        }
    }
    CHECK(badly_reported == 0);
  }
}

TEST_CASE("describe_error_body") {
  CHECK(describe_error_body(read_format("openai_error_400_max_tokens_unsupported.json")) ==
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
        "'max_completion_tokens' instead.");
  CHECK(describe_error_body(read_format("openai_error_400_logprobs_unsupported.json")) ==
        "Unsupported parameter: 'logprobs' is not supported with this model.");
  CHECK(describe_error_body(read_format("openai_error_400.json")) ==
        "The 'top_logprobs' parameter is only allowed when 'logprobs' is enabled.");
  CHECK(describe_error_body(read_format("llamacpp_error_503_loading.json")) == "Loading model");
  CHECK(describe_error_body(read_format("llamacpp_error_400.json")) ==
        "top_logprobs requires logprobs to be set to true");
  CHECK(describe_error_body(read_format("vllm_error_400_legacy_flat_pre_0_10_1.json")) ==
        "Requested sample logprobs of 21, which is greater than max allowed: 20");
  CHECK(describe_error_body(read_format("sglang_error_openai_flat.json"))
            .rfind(
                "Requested token count exceeds the model's maximum context length of 32768 tokens.",
                0) == 0);
  CHECK(describe_error_body(read_format("tgi_error_422_validation.json")) ==
        "Input validation error: `temperature` must be strictly positive");
  CHECK(describe_error_body(read_format("ollama_error_400_top_logprobs.json")) ==
        "top_logprobs must be between 0 and 20");
  CHECK(describe_error_body(read_format("ollama_openai_error.json")) ==
        "model \"llama9\" not found, try pulling it first");
  SUBCASE("fallbacks") {
    CHECK(describe_error_body("<html>\r\n<body>Bad Gateway</body>") ==
          "<html>  <body>Bad Gateway</body>");
    CHECK(describe_error_body("") == "empty body");
    CHECK(describe_error_body(R"({"detail":"Not Found"})") == R"({"detail":"Not Found"})");
    std::string long_body(150, 'a');
    long_body += "\xC3\xA9"; // bytes 150-151: an "é" the cut must not split
    long_body += std::string(100, 'b');
    std::string expected = std::string(150, 'a') + "\xC3\xA9" + std::string(48, 'b') + "...";
    CHECK(describe_error_body(long_body) == expected);
    std::string split(199, 'a');
    split += "\xC3\xA9tail";
    CHECK(describe_error_body(split) == std::string(199, 'a') + "...");
  }
}

TEST_CASE("endpoint_error_of") {
  SUBCASE("an error event mid-stream is the endpoint's, whichever event carried it") {
    const std::string first = R"(data: {"choices":[{"index":0,"delta":{"content":"a"}}]})"
                              "\n\n";
    const std::string error =
        R"(data: {"error":{"code":500,"message":"slot crashed","type":"server_error"}})"
        "\n\n";
    for (const std::string& body : {first + error, first + first + error}) {
      core::Result<core::Completion> parsed = parse_response(Dialect::openai_chat, body, true);
      REQUIRE_FALSE(parsed.has_value());
      CHECK(parsed.error().message == "openai-chat: endpoint error: slot crashed");
      CHECK(probes::endpoint_error_of(Dialect::openai_chat, parsed.error()) == "slot crashed");
    }
  }
  SUBCASE("llama.cpp's native stream says so the same way") {
    core::Result<core::Completion> parsed = parse_response(
        Dialect::llamacpp,
        "data: {\"content\":\"a\",\"stop\":false}\n\n"
        "data: {\"error\":{\"code\":500,\"message\":\"boom\",\"type\":\"server_error\"}}\n\n",
        true);
    REQUIRE_FALSE(parsed.has_value());
    CHECK(probes::endpoint_error_of(Dialect::llamacpp, parsed.error()) == "boom");
  }
  SUBCASE("a body that fails to parse is not the endpoint's error") {
    core::Result<core::Completion> parsed =
        parse_response(Dialect::openai_chat, "{\"choices\": [", false);
    REQUIRE_FALSE(parsed.has_value());
    CHECK_FALSE(probes::endpoint_error_of(Dialect::openai_chat, parsed.error()).has_value());
    // Another dialect's marker does not match either.
    CHECK_FALSE(
        probes::endpoint_error_of(Dialect::tgi, core::make_error(core::ErrorCode::endpoint,
                                                                 "openai-chat: endpoint error: x"))
            .has_value());
  }
}

TEST_CASE("names_request_refusal") {
  CHECK(probes::names_request_refusal(
      R"({"error":{"code":500,"message":"The model produced output that does not match the )"
      R"(expected Hermes 2 Pro format","type":"server_error"}})"));
  CHECK(probes::names_request_refusal("Failed to parse tool call arguments as JSON"));
  CHECK(probes::names_request_refusal(R"({"error":"Input validation error: `top_n_tokens` )"
                                      R"(must be > 0","error_type":"validation"})"));
  CHECK(probes::names_request_refusal(R"({"object":"error","type":"Invalid_Request_Error"})"));
  CHECK_FALSE(probes::names_request_refusal(R"({"error":{"message":"boom"}})"));
  CHECK_FALSE(probes::names_request_refusal("The server is overloaded or not ready yet."));
  CHECK_FALSE(probes::names_request_refusal(""));
}
