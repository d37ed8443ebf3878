// build_request(): the path and JSON body each dialect sends.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "probes/dialect.hpp"
#include "probes/detail/prompt_text.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::GenerationParams;
using Json = nlohmann::ordered_json;

namespace {

core::Prompt text_prompt(const std::string& text) {
  core::Prompt prompt;
  prompt.id = "t";
  prompt.text = text;
  return prompt;
}

core::Prompt chat_prompt() {
  core::Prompt prompt;
  prompt.id = "c";
  prompt.messages = {{"system", "Be brief."}, {"user", "Capital of France?"}};
  return prompt;
}

GenerationParams params(bool stream = false) {
  GenerationParams result;
  result.model = "m";
  result.max_tokens = 64;
  result.top_logprobs = 3;
  result.seed = 42;
  result.stream = stream;
  return result;
}

Json body_of(const probes::DialectRequest& request) { return Json::parse(request.body); }

} // namespace

TEST_CASE("flatten_messages") {
  CHECK(probes::flatten_messages(chat_prompt().messages) ==
        "system: Be brief.\nuser: Capital of France?\nassistant:");
  CHECK(probes::prompt_as_messages(text_prompt("hi")).size() == 1);
  CHECK(probes::prompt_as_messages(text_prompt("hi"))[0].role == "user");
}

TEST_CASE("build_request openai-chat") {
  SUBCASE("chat prompt") {
    auto request = probes::build_request(Dialect::openai_chat, chat_prompt(), params());
    CHECK(request.path == "/v1/chat/completions");
    Json body = body_of(request);
    CHECK(body["model"] == "m");
    REQUIRE(body["messages"].size() == 2);
    CHECK(body["messages"][1]["role"] == "user");
    CHECK(body["messages"][1]["content"] == "Capital of France?");
    CHECK(body["temperature"] == 0.0);
    CHECK(body["max_tokens"] == 64);
    CHECK(body["logprobs"] == true);
    CHECK(body["top_logprobs"] == 3);
    CHECK(body["seed"] == 42);
    CHECK(body["stream"] == false);
    CHECK_FALSE(body.contains("stream_options"));
    CHECK_FALSE(body.contains("response_format"));
  }
  SUBCASE("text prompt, streamed, no model, prompt max_tokens and response_format") {
    core::Prompt prompt = text_prompt("Say hi");
    prompt.max_tokens = 5;
    prompt.response_format_json = R"({"type":"json_object"})";
    GenerationParams options = params(true);
    options.model.clear();
    Json body = body_of(probes::build_request(Dialect::openai_chat, prompt, options));
    CHECK_FALSE(body.contains("model"));
    REQUIRE(body["messages"].size() == 1);
    CHECK(body["messages"][0]["role"] == "user");
    CHECK(body["messages"][0]["content"] == "Say hi");
    CHECK(body["max_tokens"] == 5);
    CHECK(body["stream"] == true);
    CHECK(body["stream_options"]["include_usage"] == true);
    CHECK(body["response_format"]["type"] == "json_object");
  }
}

TEST_CASE("build_request openai-completions") {
  auto request = probes::build_request(Dialect::openai_completions, chat_prompt(), params());
  CHECK(request.path == "/v1/completions");
  Json body = body_of(request);
  CHECK(body["prompt"] == "system: Be brief.\nuser: Capital of France?\nassistant:");
  CHECK(body["logprobs"] == 3);
  CHECK_FALSE(body.contains("top_logprobs"));
  CHECK(body["max_tokens"] == 64);
  CHECK(body["seed"] == 42);
  CHECK(body["temperature"] == 0.0);
}

TEST_CASE("build_request llamacpp") {
  auto request =
      probes::build_request(Dialect::llamacpp, text_prompt("The capital of"), params(true));
  CHECK(request.path == "/completion");
  Json body = body_of(request);
  CHECK(body["prompt"] == "The capital of");
  CHECK(body["n_predict"] == 64);
  CHECK(body["n_probs"] == 3);
  CHECK(body["temperature"] == 0.0);
  CHECK(body["seed"] == 42);
  CHECK(body["stream"] == true);
  CHECK_FALSE(body.contains("cache_prompt"));
  CHECK_FALSE(body.contains("model"));
  SUBCASE("router mode names the model") {
    GenerationParams router = params();
    router.native_model = true;
    Json routed = body_of(probes::build_request(Dialect::llamacpp, text_prompt("He"), router));
    CHECK(routed["model"] == "m");
    CHECK(routed["n_probs"] == 3);
    router.model.clear();
    CHECK_FALSE(body_of(probes::build_request(Dialect::llamacpp, text_prompt("He"), router))
                    .contains("model"));
  }
}

TEST_CASE("build_request sglang") {
  auto request = probes::build_request(Dialect::sglang, text_prompt("He"), params());
  CHECK(request.path == "/generate");
  Json body = body_of(request);
  CHECK(body["text"] == "He");
  CHECK(body["sampling_params"]["temperature"] == 0.0);
  CHECK(body["sampling_params"]["max_new_tokens"] == 64);
  CHECK(body["return_logprob"] == true);
  CHECK(body["top_logprobs_num"] == 3);
  CHECK(body["return_text_in_logprobs"] == true);
  CHECK(body["stream"] == false);
}

TEST_CASE("build_request ollama") {
  SUBCASE("chat prompt goes to /api/chat") {
    auto request = probes::build_request(Dialect::ollama, chat_prompt(), params());
    CHECK(request.path == "/api/chat");
    Json body = body_of(request);
    CHECK(body["model"] == "m");
    CHECK(body["messages"][0]["content"] == "Be brief.");
    CHECK(body["options"]["temperature"] == 0.0);
    CHECK(body["options"]["seed"] == 42);
    CHECK(body["options"]["num_predict"] == 64);
    CHECK(body["logprobs"] == true);
    CHECK(body["top_logprobs"] == 3);
    CHECK(body["stream"] == false);
  }
  SUBCASE("text prompt goes to /api/generate, response_format mapped to format") {
    core::Prompt prompt = text_prompt("Why?");
    prompt.response_format_json = R"({"type":"json_object"})";
    auto request = probes::build_request(Dialect::ollama, prompt, params(true));
    CHECK(request.path == "/api/generate");
    Json body = body_of(request);
    CHECK(body["prompt"] == "Why?");
    CHECK(body["stream"] == true);
    CHECK(body["format"] == "json");
    prompt.response_format_json =
        R"({"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}})";
    CHECK(body_of(probes::build_request(Dialect::ollama, prompt, params()))["format"] ==
          Json{{"type", "object"}});
  }
}

TEST_CASE("build_request tgi") {
  auto request = probes::build_request(Dialect::tgi, chat_prompt(), params());
  CHECK(request.path == "/generate");
  Json body = body_of(request);
  CHECK(body["inputs"] == "system: Be brief.\nuser: Capital of France?\nassistant:");
  CHECK(body["parameters"]["details"] == true);
  CHECK(body["parameters"]["top_n_tokens"] == 3);
  CHECK(body["parameters"]["do_sample"] == false);
  CHECK(body["parameters"]["max_new_tokens"] == 64);
  CHECK(body["parameters"]["seed"] == 42);
  CHECK_FALSE(body["parameters"].contains("temperature"));
  CHECK(probes::build_request(Dialect::tgi, chat_prompt(), params(true)).path ==
        "/generate_stream");
}

TEST_CASE("build_request invalid UTF-8 in a prompt") {
  // Prompt text is sent as JSON; bytes that are not UTF-8 are replaced rather than thrown on.
  Json body =
      body_of(probes::build_request(Dialect::openai_completions, text_prompt("a\xFF"), params()));
  CHECK(body["prompt"] == "a\xEF\xBF\xBD");
}

TEST_CASE("chat_request_form_of: by the host of the base URL") {
  using probes::chat_request_form_of;
  using probes::ChatRequestForm;
  CHECK(chat_request_form_of("https://api.openai.com/v1") == ChatRequestForm::openai_current);
  CHECK(chat_request_form_of("https://user:pw@API.OpenAI.com:443/v1?x=1") ==
        ChatRequestForm::openai_current);
  CHECK(chat_request_form_of("http://api.openai.com.") == ChatRequestForm::openai_current);
  CHECK(chat_request_form_of("https://api.together.xyz/v1") == ChatRequestForm::together);
  CHECK(chat_request_form_of("https://api.together.ai/v1") == ChatRequestForm::together);
  // Self-hosted servers, proxies and look-alike hosts keep max_tokens.
  CHECK(chat_request_form_of("http://127.0.0.1:8000/v1") == ChatRequestForm::common);
  CHECK(chat_request_form_of("https://openai.example.com/v1") == ChatRequestForm::common);
  CHECK(chat_request_form_of("https://api.openai.com.evil.test/v1") == ChatRequestForm::common);
  CHECK(chat_request_form_of("https://proxy.test/api.openai.com/v1") == ChatRequestForm::common);
  CHECK(chat_request_form_of("http://[::1]:8000/v1") == ChatRequestForm::common);
}

TEST_CASE("chat_request_form_of: --logprobs-form overrides the host's logprobs form") {
  using probes::chat_request_form_of;
  using probes::ChatRequestForm;
  using probes::LogprobsForm;
  // A gateway serving Together's API shape on any host.
  CHECK(chat_request_form_of("http://127.0.0.1:8000/v1", LogprobsForm::together) ==
        ChatRequestForm::together);
  CHECK(chat_request_form_of("https://api.openai.com/v1", LogprobsForm::together) ==
        ChatRequestForm::together);
  // openai on Together's own hosts: the common form; OpenAI's own host keeps its current spec.
  CHECK(chat_request_form_of("https://api.together.xyz/v1", LogprobsForm::openai) ==
        ChatRequestForm::common);
  CHECK(chat_request_form_of("https://api.openai.com/v1", LogprobsForm::openai) ==
        ChatRequestForm::openai_current);
  CHECK(chat_request_form_of("http://127.0.0.1:8000/v1", LogprobsForm::openai) ==
        ChatRequestForm::common);
  CHECK(chat_request_form_of("https://api.together.ai/v1", LogprobsForm::by_host) ==
        ChatRequestForm::together);
}

TEST_CASE("parse_logprobs_form") {
  using probes::LogprobsForm;
  CHECK(probes::parse_logprobs_form("auto").value() == LogprobsForm::by_host);
  CHECK(probes::parse_logprobs_form("openai").value() == LogprobsForm::openai);
  CHECK(probes::parse_logprobs_form("together").value() == LogprobsForm::together);
  auto bad = probes::parse_logprobs_form("Together");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "--logprobs-form must be auto, openai or together (got 'Together')");
  for (LogprobsForm form : {LogprobsForm::by_host, LogprobsForm::openai, LogprobsForm::together})
    CHECK(probes::parse_logprobs_form(probes::to_string(form)).value() == form);
}

TEST_CASE("build_request openai-chat: the request forms") {
  SUBCASE("OpenAI's current spec: max_completion_tokens, never max_tokens") {
    GenerationParams options = params();
    options.chat_form = probes::ChatRequestForm::openai_current;
    Json body = body_of(probes::build_request(Dialect::openai_chat, chat_prompt(), options));
    CHECK(body["max_completion_tokens"] == 64);
    CHECK_FALSE(body.contains("max_tokens"));
    CHECK(body["logprobs"] == true);
    CHECK(body["top_logprobs"] == 3);
  }
  SUBCASE("Together: logprobs is the candidate count, no top_logprobs") {
    GenerationParams options = params();
    options.chat_form = probes::ChatRequestForm::together;
    Json body = body_of(probes::build_request(Dialect::openai_chat, chat_prompt(), options));
    CHECK(body["logprobs"] == 3);
    CHECK_FALSE(body.contains("top_logprobs"));
    CHECK(body["max_tokens"] == 64);
    CHECK_FALSE(body.contains("max_completion_tokens"));
  }
  SUBCASE("a model that refuses logprobs is asked without them") {
    GenerationParams options = params();
    options.chat_form = probes::ChatRequestForm::openai_current;
    options.logprobs = false;
    Json body = body_of(probes::build_request(Dialect::openai_chat, chat_prompt(), options));
    CHECK_FALSE(body.contains("logprobs"));
    CHECK_FALSE(body.contains("top_logprobs"));
    CHECK(body["max_completion_tokens"] == 64);
  }
  SUBCASE("the legacy completions route is not affected") {
    GenerationParams options = params();
    options.chat_form = probes::ChatRequestForm::openai_current;
    Json body =
        body_of(probes::build_request(Dialect::openai_completions, text_prompt("hi"), options));
    CHECK(body["max_tokens"] == 64);
    CHECK(body["logprobs"] == 3);
  }
}
