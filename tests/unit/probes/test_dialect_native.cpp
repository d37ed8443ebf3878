// parse_response() for the native dialects (llama.cpp, SGLang, Ollama, TGI), whole and streamed.
#include <cmath>

#include <doctest/doctest.h>

#include "core/logprob_floor.hpp"
#include "core/tool_calls.hpp"
#include "probes/dialect.hpp"
#include "tests/unit/probes/dialect_test_support.hpp"

using namespace llmrepro;
using probes::Dialect;
using probes::parse_response;
using probes::test::numbers;
using probes::test::parse_ok;
using probes::test::read_format;
using probes::test::same_tokens;
using probes::test::sse_body;
using probes::test::with_literals;
using Json = nlohmann::ordered_json;

namespace {

// SGLang stream events for the reference response's meta_info: cumulative (each event repeats
// the text and logprobs so far, the default) or incremental (each event has its own token).
Json sglang_events(const Json& meta, bool incremental) {
  Json events = Json::array();
  std::string text;
  for (std::size_t i = 0; i < 6; ++i) {
    const Json& piece = meta["output_token_logprobs"][i][2];
    text = incremental ? piece.get<std::string>() : text + piece.get<std::string>();
    Json event{{"text", text}};
    event["meta_info"]["finish_reason"] = i == 5 ? meta["finish_reason"] : Json();
    event["meta_info"]["completion_tokens"] = i + 1;
    event["meta_info"]["output_token_logprobs"] = Json::array();
    event["meta_info"]["output_top_logprobs"] = Json::array();
    for (std::size_t j = incremental ? i : 0; j <= i; ++j) {
      event["meta_info"]["output_token_logprobs"].push_back(meta["output_token_logprobs"][j]);
      event["meta_info"]["output_top_logprobs"].push_back(meta["output_top_logprobs"][j]);
    }
    events.push_back(event);
  }
  return events;
}

// TGI stream events, one token each, for the reference response's details; the last one
// carries generated_text and the details summary.
Json tgi_events(const Json& response) {
  const Json& details = response["details"];
  Json events = Json::array();
  for (std::size_t i = 0; i < 3; ++i) {
    Json event{{"index", i + 1},
               {"token", details["tokens"][i]},
               {"top_tokens", details["top_tokens"][i]},
               {"generated_text", nullptr},
               {"details", nullptr}};
    if (i == 2) {
      event["generated_text"] = response["generated_text"];
      event["details"] =
          Json{{"finish_reason", "eos_token"}, {"generated_tokens", 3}, {"seed", nullptr}};
    }
    events.push_back(event);
  }
  return events;
}

// The NDJSON stream of an Ollama /api/chat response: one line per logprobs entry, then the
// final object.
std::string ollama_stream(const Json& response) {
  std::string body;
  for (const auto& entry : response["logprobs"]) {
    Json line{{"model", "qwen3:8b"}, {"done", false}, {"logprobs", Json::array({entry})}};
    line["message"] = Json{{"role", "assistant"}, {"content", entry["token"]}};
    body += line.dump() + "\r\n";
  }
  Json last{{"model", "qwen3:8b"}, {"done", true}, {"done_reason", "stop"}, {"eval_count", 7}};
  last["message"] = Json{{"role", "assistant"}, {"content", ""}};
  body += last.dump() + "\n";
  return body;
}

} // namespace

TEST_CASE("parse_response llamacpp") {
  SUBCASE("current logprob shape") {
    auto completion =
        parse_ok(Dialect::llamacpp, read_format("llamacpp_completion_native_n_probs.json"));
    REQUIRE(completion.tokens.size() == 3);
    CHECK(completion.text == "The capital of");
    CHECK(completion.tokens[1].token == " capital");
    CHECK(completion.tokens[1].top[1].token == " French");
    CHECK(*completion.tokens[2].gap() == -1.19e-06 - -14.0926);
    CHECK(completion.finish_reason == "limit");
    CHECK(completion.model == "qwen3-8b-q4_k_m.gguf");
    CHECK(completion.completion_tokens == 3);
    CHECK(completion.has_logprobs);
  }
  SUBCASE("post-sampling probabilities") {
    auto completion = parse_ok(Dialect::llamacpp,
                               read_format("llamacpp_completion_native_post_sampling_probs.json"));
    REQUIRE(completion.tokens.size() == 2);
    CHECK(completion.text == "The capital");
    CHECK(completion.tokens[0].logprob == 0.0);
    REQUIRE(completion.tokens[0].top.size() == 1);
    CHECK_FALSE(completion.tokens[0].gap().has_value());
    CHECK(completion.completion_tokens == 2);
  }
  SUBCASE("old probs/tok_str shape") {
    auto completion = parse_ok(Dialect::llamacpp,
                               read_format("llamacpp_completion_native_old_probs_tok_str.json"));
    REQUIRE(completion.tokens.size() == 2);
    CHECK(completion.text == " to find");
    CHECK(completion.tokens[0].token == " to");
    CHECK(completion.tokens[0].logprob == std::log(0.9832262396812439));
    CHECK(completion.tokens[0].top[1].token == " different");
    CHECK(*completion.tokens[0].gap() ==
          std::log(0.9832262396812439) - std::log(0.01389230228960514));
    CHECK(completion.tokens[1].token == " find");
    CHECK(completion.finish_reason == "limit");
    CHECK(completion.model == "models/llama-2-7b.Q4_K_M.gguf");
  }
  SUBCASE("float lowest and p == 0 become the floor") {
    std::string body = R"({"content":"a","stop":true,"stop_type":"eos","completion_probabilities":[
        {"token":"a","logprob":-0.1,"top_logprobs":[{"token":"a","logprob":-0.1},
                                                   {"token":"b","logprob":-3.4028234663852886e38}]},
        {"token":"c","prob":0.0,"top_probs":[{"token":"c","prob":0.0}]}]})";
    auto completion = parse_ok(Dialect::llamacpp, body);
    CHECK(completion.tokens[0].top[1].logprob == core::k_logprob_floor);
    CHECK(completion.tokens[1].logprob == core::k_logprob_floor);
    CHECK(completion.finish_reason == "eos");
    CHECK(completion.completion_tokens == 2);
  }
  SUBCASE("NaN, infinities, overflow and null in every shape") {
    // nlohmann::json, llama.cpp's JSON library, writes a non-finite float as null; a proxy in
    // Python writes NaN and the infinities (json.dumps's default).
    std::string body = with_literals(R"({"content":"abcd","stop":true,"stop_type":"limit",
        "completion_probabilities":[
        {"token":"a","logprob":NaN,"top_logprobs":[{"token":"a","logprob":NaN},
                                                   {"token":"b","logprob":-Infinity}]},
        {"token":"b","prob":null,"top_probs":[{"token":"b","prob":Infinity},
                                              {"token":"c","prob":0.25}]},
        {"content":"c","probs":[{"tok_str":"c","prob":1e400},{"tok_str":"d","prob":-1e400}]},
        {"content":"d","probs":null}]})");
    auto completion = parse_ok(Dialect::llamacpp, body);
    REQUIRE(completion.tokens.size() == 4);
    const auto& tokens = completion.tokens;
    CHECK(std::isnan(tokens[0].logprob));
    CHECK(tokens[0].top[0].token == "b");
    CHECK(tokens[0].top[0].logprob == core::k_logprob_floor);
    CHECK(std::isnan(tokens[0].top[1].logprob));
    CHECK(std::isnan(tokens[1].logprob));
    CHECK(tokens[1].top[0].token == "c");
    CHECK(tokens[1].top[0].logprob == std::log(0.25));
    CHECK(std::isnan(tokens[1].top[1].logprob));
    // The old shape's sampled token takes its candidate's value, unknown here.
    CHECK(std::isnan(tokens[2].logprob));
    CHECK(tokens[2].top[0].token == "d");
    CHECK(tokens[2].top[0].logprob == core::k_logprob_floor);
    CHECK(std::isnan(tokens[2].top[1].logprob));
    // No candidates at all: nothing to read the sampled token's value from.
    CHECK(std::isnan(tokens[3].logprob));
    CHECK(tokens[3].top.empty());
    CHECK(completion.numbers == numbers(2, 1, 1, 2, 1));
  }
  SUBCASE("byte-fragment tokens are spelled by their bytes") {
    // llama.cpp sends a token that is not whole UTF-8 as U+FFFD with its bytes beside it.
    std::string body = R"({"content":"\u20ac","stop":true,"stop_type":"limit",
        "completion_probabilities":[
        {"id":1,"token":"\ufffd","bytes":[226,130],"logprob":-0.1,"top_logprobs":[
          {"id":1,"token":"\ufffd","bytes":[226,130],"logprob":-0.1},
          {"id":2,"token":"\ufffd","bytes":[226,128],"logprob":-2.0}]},
        {"id":3,"token":"\ufffd","bytes":[172],"prob":0.5,"top_probs":[
          {"id":3,"token":"\ufffd","bytes":[172],"prob":0.5},
          {"id":4,"token":"!","bytes":[33],"prob":0.25}]}]})";
    auto completion = parse_ok(Dialect::llamacpp, body);
    REQUIRE(completion.tokens.size() == 2);
    CHECK(completion.tokens[0].token == "bytes:\\xe2\\x82");
    CHECK(completion.tokens[0].top[1].token == "bytes:\\xe2\\x80");
    CHECK(*completion.tokens[0].greedy());
    CHECK(completion.tokens[1].token == "bytes:\\xac");
    CHECK(completion.tokens[1].top[1].token == "!");
    CHECK(*completion.tokens[1].greedy());
    CHECK(core::tokens_match_text(completion));
  }
  SUBCASE("NaN and null in a stream, not counted twice when an old server repeats them") {
    Json response = Json::parse(read_format("llamacpp_completion_native_n_probs.json"));
    auto& probabilities = response["completion_probabilities"];
    probabilities[0]["top_logprobs"][1]["logprob"] = "@-Infinity@";
    probabilities[1]["logprob"] = nullptr;
    probabilities[2]["top_logprobs"][1]["logprob"] = "@NaN@";
    auto whole = parse_ok(Dialect::llamacpp, with_literals(response.dump()));
    CHECK(whole.numbers == numbers(1, 0, 1, 0, 1));
    Json events = Json::array();
    for (const auto& probability : probabilities)
      events.push_back(Json{{"content", probability["token"]},
                            {"stop", false},
                            {"completion_probabilities", Json::array({probability})}});
    events.push_back(Json{{"content", ""},
                          {"stop", true},
                          {"stop_type", "limit"},
                          {"completion_probabilities", probabilities}});
    auto streamed = parse_ok(Dialect::llamacpp, with_literals(sse_body(events, false)), true);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.numbers == whole.numbers);
  }
  SUBCASE("stream, one token per event") {
    auto whole =
        parse_ok(Dialect::llamacpp, read_format("llamacpp_completion_native_n_probs.json"));
    Json response = Json::parse(read_format("llamacpp_completion_native_n_probs.json"));
    Json events = Json::array();
    for (const auto& probability : response["completion_probabilities"])
      events.push_back(Json{{"content", probability["token"]},
                            {"stop", false},
                            {"completion_probabilities", Json::array({probability})}});
    events.push_back(Json{{"content", ""},
                          {"stop", true},
                          {"stop_type", "limit"},
                          {"model", "qwen3-8b-q4_k_m.gguf"},
                          {"tokens_predicted", 3}});
    auto streamed = parse_ok(Dialect::llamacpp, sse_body(events, false), true);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "limit");
    CHECK(streamed.completion_tokens == 3);
    SUBCASE("an old server's final event repeating every token is not counted twice") {
      events.back()["completion_probabilities"] = response["completion_probabilities"];
      auto repeated = parse_ok(Dialect::llamacpp, sse_body(events, false), true);
      CHECK(same_tokens(whole, repeated));
    }
  }
}

TEST_CASE("parse_response sglang") {
  auto whole = parse_ok(Dialect::sglang, read_format("sglang_generate_logprobs.json"));
  SUBCASE("meta_info triples") {
    REQUIRE(whole.tokens.size() == 6);
    CHECK(whole.text == " He was an American theoretical physicist");
    CHECK(whole.tokens[0].token == " He");
    CHECK(whole.tokens[0].top[1].token == " Richard");
    CHECK(*whole.tokens[0].gap() == -0.912 - -1.0504);
    CHECK(whole.tokens[5].token == " physicist");
    CHECK(whole.finish_reason == "length");
    CHECK(whole.completion_tokens == 6);
    CHECK(whole.has_logprobs);
  }
  Json response = Json::parse(read_format("sglang_generate_logprobs.json"));
  const Json& meta = response["meta_info"];
  SUBCASE("cumulative stream: the last event is the completion") {
    auto streamed = parse_ok(Dialect::sglang, sse_body(sglang_events(meta, false)), true);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "length");
  }
  SUBCASE("incremental stream: events are joined") {
    auto streamed = parse_ok(Dialect::sglang, sse_body(sglang_events(meta, true)), true);
    CHECK(same_tokens(whole, streamed));
  }
  SUBCASE("null, NaN and -Infinity in the triples, whole and streamed") {
    // orjson, which SGLang's server encodes its responses with, writes NaN and the infinities
    // as null; NaN and -Infinity are a Python json.dumps proxy's spelling.
    Json& wild = response["meta_info"];
    wild["output_token_logprobs"][0][0] = nullptr;
    wild["output_top_logprobs"][0][0][0] = nullptr;
    wild["output_top_logprobs"][1][1][0] = "@NaN@";
    wild["output_top_logprobs"][2] = nullptr;
    wild["output_top_logprobs"][3][1][0] = "@-Infinity@";
    auto completion = parse_ok(Dialect::sglang, with_literals(response.dump()));
    const auto& tokens = completion.tokens;
    REQUIRE(tokens.size() == 6);
    CHECK(std::isnan(tokens[0].logprob));
    CHECK(tokens[0].top[0].token == " Richard");
    CHECK(std::isnan(tokens[0].top[1].logprob));
    CHECK(std::isnan(tokens[1].top[1].logprob));
    CHECK(tokens[2].top.empty());
    CHECK(tokens[3].top[1].logprob == core::k_logprob_floor);
    CHECK(completion.numbers == numbers(1, 0, 1, 0, 2));
    // Cumulative events repeat the logprobs so far: only the last event's are counted.
    for (bool incremental : {false, true}) {
      CAPTURE(incremental);
      auto streamed = parse_ok(Dialect::sglang,
                               with_literals(sse_body(sglang_events(wild, incremental))), true);
      CHECK(same_tokens(completion, streamed));
      CHECK(streamed.numbers == completion.numbers);
    }
  }
  SUBCASE("text absent from the triples: token ids") {
    response["meta_info"]["output_token_logprobs"][0][2] = nullptr;
    auto completion = parse_ok(Dialect::sglang, response.dump());
    CHECK(completion.tokens[0].token == "token_id:1260");
  }
}

TEST_CASE("parse_response ollama") {
  SUBCASE("/api/chat") {
    auto completion = parse_ok(Dialect::ollama, read_format("ollama_chat_logprobs.json"));
    REQUIRE(completion.tokens.size() == 7);
    CHECK(completion.text == "The capital of France is Paris.");
    CHECK(*completion.tokens[0].gap() == -0.0041 - -5.6312);
    CHECK(completion.finish_reason == "stop");
    CHECK(completion.model == "qwen3:8b");
    CHECK(completion.completion_tokens == 7);
  }
  SUBCASE("/api/generate") {
    auto completion = parse_ok(Dialect::ollama, read_format("ollama_generate_logprobs.json"));
    REQUIRE(completion.tokens.size() == 7);
    CHECK(completion.text == "The capital of France is Paris.");
    CHECK(completion.tokens[4].token == " is");
    CHECK(completion.tokens[4].top[1].token == ",");
  }
  SUBCASE("NaN, Infinity, overflow and null top_logprobs, whole and streamed") {
    Json response = Json::parse(read_format("ollama_chat_logprobs.json"));
    auto& logprobs = response["logprobs"];
    logprobs[0]["logprob"] = "@NaN@";
    logprobs[1]["top_logprobs"][1]["logprob"] = "@Infinity@";
    logprobs[2]["top_logprobs"] = nullptr;
    logprobs[3]["top_logprobs"][1]["logprob"] = "@1e400@";
    auto whole = parse_ok(Dialect::ollama, with_literals(response.dump()));
    CHECK(std::isnan(whole.tokens[0].logprob));
    CHECK(std::isnan(whole.tokens[1].top[1].logprob));
    CHECK(whole.tokens[2].top.empty());
    CHECK(std::isnan(whole.tokens[3].top[1].logprob));
    CHECK(whole.numbers == numbers(1, 1, 0, 1, 0));
    auto streamed = parse_ok(Dialect::ollama, with_literals(ollama_stream(response)), true);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.numbers == whole.numbers);
  }
  SUBCASE("NDJSON stream") {
    auto whole = parse_ok(Dialect::ollama, read_format("ollama_chat_logprobs.json"));
    Json response = Json::parse(read_format("ollama_chat_logprobs.json"));
    auto streamed = parse_ok(Dialect::ollama, ollama_stream(response), true);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "stop");
    CHECK(streamed.completion_tokens == 7);
  }
}

TEST_CASE("parse_response tgi") {
  auto whole = parse_ok(Dialect::tgi, read_format("tgi_generate_details_top_tokens.json"));
  SUBCASE("details.top_tokens") {
    REQUIRE(whole.tokens.size() == 3);
    CHECK(whole.text == " Paris.");
    CHECK(whole.tokens[0].token == " Paris");
    CHECK(whole.tokens[0].top[1].token == " the");
    CHECK(*whole.tokens[0].gap() == -0.0213 - -4.1022);
    CHECK(whole.tokens[2].token == "</s>");
    CHECK(whole.finish_reason == "eos_token");
    CHECK(whole.completion_tokens == 3);
  }
  SUBCASE("stream") {
    Json response = Json::parse(read_format("tgi_generate_details_top_tokens.json"));
    auto streamed = parse_ok(Dialect::tgi, sse_body(tgi_events(response), false), true);
    CHECK(same_tokens(whole, streamed));
    CHECK(streamed.finish_reason == "eos_token");
  }
  SUBCASE("null and NaN logprobs and a null top_tokens entry, whole and streamed") {
    // TGI's OpenAPI schema declares Token.logprob nullable.
    Json response = Json::parse(read_format("tgi_generate_details_top_tokens.json"));
    auto& details = response["details"];
    details["tokens"][0]["logprob"] = nullptr;
    details["top_tokens"][0][0]["logprob"] = nullptr;
    details["tokens"][1]["logprob"] = "@NaN@";
    details["top_tokens"][1] = nullptr;
    details["top_tokens"][2][1]["logprob"] = "@-Infinity@";
    auto completion = parse_ok(Dialect::tgi, with_literals(response.dump()));
    const auto& tokens = completion.tokens;
    REQUIRE(tokens.size() == 3);
    CHECK(std::isnan(tokens[0].logprob));
    CHECK(tokens[0].top[0].token == " the");
    CHECK(std::isnan(tokens[0].top[1].logprob));
    CHECK(std::isnan(tokens[1].logprob));
    CHECK(tokens[1].top.empty());
    CHECK(tokens[2].top[1].logprob == core::k_logprob_floor);
    CHECK(completion.numbers == numbers(1, 0, 1, 0, 2));
    auto streamed =
        parse_ok(Dialect::tgi, with_literals(sse_body(tgi_events(response), false)), true);
    CHECK(same_tokens(completion, streamed));
    CHECK(streamed.numbers == completion.numbers);
  }
  SUBCASE("without top_n_tokens: no candidates") {
    Json response = Json::parse(read_format("tgi_generate_details_top_tokens.json"));
    response["details"]["top_tokens"] = Json::array();
    auto completion = parse_ok(Dialect::tgi, response.dump());
    REQUIRE(completion.tokens.size() == 3);
    CHECK(completion.tokens[0].top.empty());
    CHECK(completion.has_logprobs);
  }
  SUBCASE("without details: text only") {
    auto completion = parse_ok(Dialect::tgi, R"({"generated_text":" Paris."})");
    CHECK_FALSE(completion.has_logprobs);
    CHECK(completion.text == " Paris.");
  }
}

TEST_CASE("ollama tool calls: message.tool_calls with object arguments, and the turns sent") {
  // Shapes: docs.ollama.com/capabilities/tool-calling (ollama docs/capabilities/tool-calling.mdx)
  // and ollama's own API reference, "Chat request (with tools)".
  const Json whole = Json::parse(R"({"model":"qwen3","created_at":"2025-12-01T10:00:01Z",
    "message":{"role":"assistant","content":"","tool_calls":[
      {"function":{"index":0,"name":"search","arguments":{"q":"Rome","n":2}}},
      {"function":{"index":1,"name":"clock","arguments":{}}}]},
    "done":true,"done_reason":"stop","prompt_eval_count":30,"eval_count":9})");
  const auto completion = parse_ok(Dialect::ollama, whole.dump());
  REQUIRE(completion.tool_calls.size() == 2);
  // Ollama's calls carry no id.
  probes::test::check_tool_call(completion.tool_calls[0], "search", R"({"n":2,"q":"Rome"})", "");
  probes::test::check_tool_call(completion.tool_calls[1], "clock", "{}", "");
  // The canonical sequence --compare-on tool_calls compares holds no id.
  CHECK(core::tool_calls_json(completion.tool_calls) ==
        R"([{"arguments":{"n":2,"q":"Rome"},"name":"search"},{"arguments":{},"name":"clock"}])");

  // Streamed NDJSON: the calls whole in one chunk, before the final one.
  Json text = whole;
  text["message"] = Json{{"role", "assistant"}, {"content", "Let me look."}};
  text["done"] = false;
  Json calls = whole;
  calls["done"] = false;
  Json last = whole;
  last["message"] = Json{{"role", "assistant"}, {"content", ""}};
  const std::string ndjson = text.dump() + "\n" + calls.dump() + "\n" + last.dump() + "\n";
  const auto streamed = parse_ok(Dialect::ollama, ndjson, true);
  CHECK(streamed.text == "Let me look.");
  CHECK(streamed.tool_calls == completion.tool_calls);
  CHECK(streamed.completion_tokens == 9);

  // The next step: the assistant turn with its calls' object arguments, the result naming its
  // tool; /api/chat even for a text prompt with tools.
  const std::string tools = R"([{"function":{"name":"search"},"type":"function"}])";
  const core::Prompt prompt = probes::test::chain_after_one_step("", tools);
  const auto request = probes::build_request(Dialect::ollama, prompt, probes::GenerationParams{});
  CHECK(request.path == "/api/chat");
  const Json body = Json::parse(request.body);
  CHECK(body["tools"] == Json::parse(tools));
  CHECK(body["messages"][1] == Json::parse(R"({"role":"assistant","content":"","tool_calls":[
    {"type":"function","function":{"index":0,"name":"search","arguments":{"q":"Rome"}}}]})"));
  CHECK(body["messages"][2] ==
        Json::parse(R"({"role":"tool","content":"Colosseum","tool_name":"search"})"));
  core::Prompt text_prompt;
  text_prompt.text = "Go";
  text_prompt.tools_json = tools;
  const auto text_request =
      probes::build_request(Dialect::ollama, text_prompt, probes::GenerationParams{});
  CHECK(text_request.path == "/api/chat");
  CHECK(Json::parse(text_request.body)["messages"] ==
        Json::parse(R"([{"role":"user","content":"Go"}])"));
}
