// The OpenAI token reader (probes/detail/openai_token_reader.hpp) against the tape it replaces on
// the hot path: every body parses to the same completion, or fails with the same message, with
// the reader as without it; and the reader does take the lists of the shapes it is for.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dialect_test_support.hpp"
#include "probes/detail/json_access.hpp"
#include "probes/detail/json_scanner.hpp"
#include "probes/detail/openai_token_reader.hpp"

namespace llmrepro::probes {

namespace {

using Json = nlohmann::ordered_json;
using detail::openai_token_reader_on_thread;

bool same_number(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

bool same_tokens(const std::vector<core::TokenLogprob>& a,
                 const std::vector<core::TokenLogprob>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].token != b[i].token || !same_number(a[i].logprob, b[i].logprob) ||
        a[i].top.size() != b[i].top.size())
      return false;
    for (std::size_t k = 0; k < a[i].top.size(); ++k)
      if (a[i].top[k].token != b[i].top[k].token ||
          !same_number(a[i].top[k].logprob, b[i].top[k].logprob))
        return false;
  }
  return true;
}

// What parse_response() gives, written out: the message of an error, or every field of the
// completion (log probabilities by their bits).
std::string outcome(const core::Result<core::Completion>& result) {
  if (!result)
    return "error " + std::to_string(static_cast<int>(result.error().code)) + ": " +
           result.error().message;
  const core::Completion& c = result.value();
  std::string out =
      "text=" + c.text + " reasoning=" + c.reasoning_text + " finish=" + c.finish_reason +
      " fingerprint=" + c.system_fingerprint + " model=" + c.model +
      " has_logprobs=" + std::to_string(c.has_logprobs) +
      " completion_tokens=" + std::to_string(c.completion_tokens) +
      " lone_surrogates=" + std::to_string(c.lone_surrogates) +
      " numbers=" + std::to_string(c.numbers.nan) + "," + std::to_string(c.numbers.infinity) + "," +
      std::to_string(c.numbers.negative_infinity) + "," + std::to_string(c.numbers.overflow) + "," +
      std::to_string(c.numbers.null) + " split=" + core::to_string(c.reasoning_split) +
      " calls=" + std::to_string(c.tool_calls.size());
  for (const core::ToolCall& call : c.tool_calls) out += " " + call.name + call.arguments;
  out += c.usage == core::TokenUsage{} ? " usage=none" : " usage=some";
  for (const auto* tokens : {&c.tokens, &c.reasoning_tokens}) {
    out += " tokens=" + std::to_string(tokens->size());
    for (const core::TokenLogprob& token : *tokens) {
      out += "|" + token.token + "@" + std::to_string(std::bit_cast<std::uint64_t>(token.logprob));
      for (const core::TokenCandidate& candidate : token.top)
        out += "," + candidate.token + "@" +
               std::to_string(std::bit_cast<std::uint64_t>(candidate.logprob));
    }
  }
  return out;
}

// Parses `body` with the reader and without it: the two must agree exactly.
void check_agrees(Dialect dialect, const std::string& body, bool stream) {
  INFO("body: ", body);
  openai_token_reader_on_thread() = false;
  const auto tape = parse_response(dialect, body, stream);
  openai_token_reader_on_thread() = true;
  const auto read = parse_response(dialect, body, stream);
  CHECK(outcome(read) == outcome(tape));
  if (tape && read) CHECK(same_tokens(read.value().tokens, tape.value().tokens));
}

// Whether the reader takes `choices[0].logprobs.content` of `body` off the tape.
bool taken(const std::string& body) {
  detail::OpenAiTokenReader reader;
  detail::JsonDocument document = detail::parse_document(body, &reader);
  detail::JsonView root(document);
  return root.at("choices").at(0).at("logprobs").at("content").taken();
}

// A chat completion whose `content` list is `entries` (JSON text).
std::string chat_with(const std::string& entries) {
  return R"({"id":"c","model":"m","system_fingerprint":"fp","choices":[{"index":0,)"
         R"("message":{"role":"assistant","content":"Hi there"},"logprobs":{"content":)" +
         entries + R"(,"refusal":null},"finish_reason":"stop"}],"usage":{"completion_tokens":2}})";
}

// The bench responder's completion: `n` tokens with top-2 candidates and their bytes.
std::string responder_body(int n) {
  Json entries = Json::array();
  std::string text;
  for (int i = 0; i < n; ++i) {
    const std::string first = " w" + std::to_string(i % 97);
    const std::string second = " alt" + std::to_string(i % 13);
    const auto bytes = [](const std::string& token) {
      Json list = Json::array();
      for (char c : token) list.push_back(static_cast<unsigned char>(c));
      return list;
    };
    const double lp1 = -0.01 - (i % 80) * 0.001;
    const double lp2 = -2.125 - (i % 5);
    entries.push_back({{"token", first},
                       {"logprob", lp1},
                       {"bytes", bytes(first)},
                       {"top_logprobs",
                        {{{"token", first}, {"logprob", lp1}, {"bytes", bytes(first)}},
                         {{"token", second}, {"logprob", lp2}, {"bytes", bytes(second)}}}}});
    text += first;
  }
  Json body = {{"id", "chatcmpl-bench"},
               {"object", "chat.completion"},
               {"model", "bench-model"},
               {"choices",
                {{{"index", 0},
                  {"message", {{"role", "assistant"}, {"content", text}}},
                  {"logprobs", {{"content", entries}, {"refusal", nullptr}}},
                  {"finish_reason", "length"}}}},
               {"usage", {{"prompt_tokens", 8}, {"completion_tokens", n}}}};
  return body.dump();
}

// Up to three random edits of `seed` with characters of `alphabet`, `count` times, each parsed
// both ways.
void check_mutations(Dialect dialect, const std::string& seed, bool stream, int count) {
  const std::string alphabet = "{}[]\",:\\-+.eE0123456789 tfnul\xC3\xA9\xFF"
                               "NaIy";
  std::mt19937 random(11);
  for (int i = 0; i < count; ++i) {
    std::string text = seed;
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = random() % text.size();
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
      case 0: text[at] = c; break;
      case 1: text.erase(at, 1); break;
      default: text.insert(at, 1, c); break;
      }
    }
    check_agrees(dialect, text, stream);
  }
}

// A random token object (with candidates when `depth` is 0), made of the values and shapes the
// reader takes, in a random member order with random whitespace.
std::string random_entry(std::mt19937& random, int depth) {
  static const std::vector<std::string> texts = {"a",       " w1",    "\\u00e9",   "\xC3\xA9",
                                                 "\\ud800", "tab\\t", "\\\"q\\\"", ""};
  // Some spell a text above (" w1", "é"), some only begin to.
  static const std::vector<std::string> bytes = {"null",         "[]",        "[97]",
                                                 "[226,128]",    "[0, 255]",  "[32,119,49]",
                                                 "[32, 119 ,4]", "[195,169]", "[32,119,49,0]"};
  static const std::vector<std::string> logprobs = {"-0.5",
                                                    "-0",
                                                    "0",
                                                    "-1e-3",
                                                    "-1.5E+2",
                                                    "-123456789012345678901234",
                                                    "NaN",
                                                    "-Infinity",
                                                    "Infinity",
                                                    "1e400",
                                                    "-1e400",
                                                    "null",
                                                    "-9999.0",
                                                    "-9007199254740993",
                                                    "-9007199254740992",
                                                    "-1.0000000000000002",
                                                    "-0.1000000000000000055511151231257827",
                                                    "-3.4028234663852886e+38",
                                                    "-1e-400"};
  const auto pick = [&](const std::vector<std::string>& from) {
    return from[random() % from.size()];
  };
  const auto space = [&] { return std::string(random() % 3 == 0 ? " \n" : ""); };
  std::vector<std::string> members = {"\"token\":" + space() + "\"" + pick(texts) + "\"",
                                      "\"logprob\":" + pick(logprobs)};
  if (random() % 2 == 0) members.push_back("\"bytes\":" + space() + pick(bytes));
  if (random() % 4 == 0) members.push_back("\"id\":" + std::to_string(random() % 1000));
  if (random() % 4 == 0) members.push_back("\"x\":\"y\"");
  if (depth == 0 && random() % 5 != 0) {
    std::string top = "[";
    for (int k = static_cast<int>(random() % 4); k > 0; --k)
      top += random_entry(random, 1) + (k > 1 ? "," : "");
    members.push_back("\"top_logprobs\":" + (random() % 8 == 0 ? std::string("null") : top + "]"));
  }
  std::shuffle(members.begin(), members.end(), random);
  std::string out = "{" + space();
  for (std::size_t i = 0; i < members.size(); ++i) out += (i > 0 ? "," + space() : "") + members[i];
  return out + space() + "}";
}

const std::string k_entries =
    R"([{"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[{"token":"Hi",)"
    R"("logprob":-0.25,"bytes":[72,105]},{"token":"Hey","logprob":-1.5e0,"bytes":null}]},)"
    R"({"token":" th\u00e9re","logprob":NaN,"bytes":[32,116,104,195,169,114,101],)"
    R"("top_logprobs":[{"token":"\ufffd","logprob":-Infinity,"bytes":[226,128]},)"
    R"({"token":"x","logprob":null}]}])";

} // namespace

TEST_CASE("token reader: the same completions and errors as the tape") {
  SUBCASE("the reference payloads") {
    for (const char* name :
         {"openai_chat_completion_logprobs.json", "vllm_chat_completion_logprobs.json",
          "vllm_chat_completion_logprobs_token_ids.json", "llamacpp_chat_completion_logprobs.json",
          "ollama_openai_chat_completion_logprobs.json", "together_chat_completion_logprobs.json",
          "sglang_chat_reasoning_logprobs.json", "vllm_chat_reasoning.json",
          "openai_chat_completion_reasoning_no_logprobs.json"})
      check_agrees(Dialect::openai_chat, test::read_format(name), false);
    for (const char* name :
         {"llamacpp_v1_completions_logprobs.json", "openai_legacy_completion_logprobs.json",
          "vllm_completion_logprobs.json"})
      check_agrees(Dialect::openai_completions, test::read_format(name), false);
    for (const char* name :
         {"openai_chat_completion_stream_chunks.json", "vllm_chat_completion_stream_chunks.json",
          "together_chat_completion_stream_chunks.json"})
      check_agrees(Dialect::openai_chat, test::sse_body(Json::parse(test::read_format(name))),
                   true);
  }
  SUBCASE("the bench responder's completion, whole and streamed") {
    const std::string body = responder_body(256);
    CHECK(taken(body));
    check_agrees(Dialect::openai_chat, body, false);
    Json chunks = Json::array();
    Json whole = Json::parse(body);
    for (const Json& entry : whole["choices"][0]["logprobs"]["content"])
      chunks.push_back({{"model", "bench-model"},
                        {"choices",
                         {{{"index", 0},
                           {"delta", {{"content", entry["token"]}}},
                           {"logprobs", {{"content", {entry}}}},
                           {"finish_reason", nullptr}}}}});
    check_agrees(Dialect::openai_chat, test::sse_body(chunks), true);
  }
  SUBCASE("the values and shapes it reads, and those it leaves to the tape") {
    const std::vector<std::pair<std::string, bool>> lists = {
        {k_entries, true},
        {"[]", true},
        {R"([ { "token" : "a" , "logprob" : -1 , "id" : 7 , "x" : "y" , "t" : true } ])", true},
        {R"([{"tok\u0065n":"a","logprob":1e400,"bytes":[],"top_logprobs":null}])", true},
        {R"([{"token":"a","logprob":-1e-400,"top_logprobs":[]}])", true},
        {R"([{"token":"\ud800","logprob":-0.0,"bytes":[0,255,10]}])", true},
        {R"([{"token":"a","logprob":-12345678901234567890.5}])", true},
        {R"([{"token":"a","logprob":-0.1,"bytes":[256]}])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":[-1]}])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":[97.0]}])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":"a"}])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":[1e2]}])", false},
        {R"([{"token":"a","token":"b","logprob":-0.1}])", false},
        {R"([{"token":"a","logprob":-0.1,"logprob":-0.2}])", false},
        {R"([{"token":"a","logprob":-0.1,"extra":{"k":1}}])", false},
        {R"([{"token":"a","logprob":"-0.1"}])", false},
        {R"([{"token":7,"logprob":-0.1}])", false},
        {R"([{"logprob":-0.1}])", false},
        {R"([{"token":"a"}])", false},
        {R"([{"token":"a","logprob":-0.1,"top_logprobs":{}}])", false},
        {R"([{"token":"a","logprob":-0.1,"top_logprobs":[null]}])", false},
        {R"([{"token":"a","logprob":-0.1,"top_logprobs":[{"token":"b","logprob":-1,)"
         R"("top_logprobs":[]}]}])",
         false},
        {R"([null])", false},
        {R"([{"token":"a","logprob":-0.1},])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":[01]}])", false},
        // Byte lists that begin to spell the text (read in place) and then part from it.
        {R"([{"token":"a","logprob":-0.1,"bytes":[097]}])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":[975]}])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":[97.5]}])", false},
        {R"([{"token":"a","logprob":-0.1,"bytes":[9,7]}])", true},
        {R"([{"token":"\u0001","logprob":-0.1,"bytes":[10]}])", true}, // "1" begins "10"
        {R"([{"token":"ab","logprob":-0.1,"bytes":[97 , 98 ]}])", true},
        {R"([{"token":"ab","logprob":-0.1,"bytes":[97]}])", true},
        {R"([{"token":"a","logprob":-0.1,"bytes":[97,98]}])", true},
        {R"([{"token":"a","logprob":-0.1,"bytes":[97,0]}])", true},
        {R"([{"token":"ÿ","logprob":-0.1,"bytes":[195,191]}])", true},
        {R"([{"token":"ÿ","logprob":-0.1,"bytes":[195,19]}])", true},
        {R"([{"token":" w0","logprob":-0.1,"bytes":[32,119,48]}])", true},
        {R"([{"token":"0","logprob":-0.1,"bytes":[48)", false},
        {R"([{"token":"a","logprob":01}])", false},
        {R"([{"token":"a\x","logprob":-0.1}])", false},
    };
    for (const auto& [list, reads] : lists) {
      const std::string body = chat_with(list);
      INFO("list: ", list);
      // Malformed text is the tape's to refuse (taken() throws its message).
      bool took = false;
      bool parses = true;
      try {
        took = taken(body);
      } catch (const detail::ParseFailure&) {
        parses = false;
      }
      CHECK(took == reads);
      CHECK((parses || !reads));
      check_agrees(Dialect::openai_chat, body, false);
      check_agrees(Dialect::openai_completions, body, false);
    }
  }
  SUBCASE("where in the document the list is") {
    const std::string entries = R"([{"token":"a","logprob":-0.5}])";
    const std::vector<std::string> bodies = {
        // The second content, logprobs or choices counts, as on the tape.
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":)" + entries +
            R"(,"content":[{"token":"b","logprob":-1}]}}]})",
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":)" + entries +
            R"(},"logprobs":{"content":[{"token":"b","logprob":-1}]}}]})",
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":)" + entries +
            R"(}}],"choices":[{"message":{"content":"b"},"logprobs":null}]})",
        // Only choices[0] of the root's choices.
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":[]}},)"
        R"({"logprobs":{"content":)" +
            entries + "}}]}",
        R"({"x":{"choices":[{"logprobs":{"content":)" + entries +
            R"(}}]},"choices":[{"message":{"content":"a"}}]})",
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":null}}]})",
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":{"a":1}}}]})",
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":)" + entries +
            R"(}}],"error":{"message":"no"}})",
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":)" + entries + R"(}}]})" +
            " x",
        R"({"choices":[{"message":{"content":"a"},"logprobs":{"content":)" + entries};
    for (const std::string& body : bodies) {
      check_agrees(Dialect::openai_chat, body, false);
      check_agrees(Dialect::openai_completions, body, false);
    }
  }
  SUBCASE("random lists of the shapes it takes") {
    std::mt19937 random(5);
    for (int i = 0; i < 500; ++i) {
      std::string list = "[";
      for (int k = static_cast<int>(random() % 5); k > 0; --k)
        list += random_entry(random, 0) + (k > 1 ? "," : "");
      const std::string body = chat_with(list + "]");
      CHECK(taken(body));
      check_agrees(Dialect::openai_chat, body, false);
    }
  }
  SUBCASE("mutations of a response, whole and streamed") {
    check_mutations(Dialect::openai_chat, chat_with(k_entries), false, 3000);
    const std::string stream =
        std::string(R"(data: {"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},)") +
        R"("logprobs":{"content":)" + k_entries + R"(},"finish_reason":null}]})" +
        "\n\ndata: [DONE]\n\n";
    check_mutations(Dialect::openai_chat, stream, true, 2000);
  }
  SUBCASE("a body nested deeper than the limit is refused the same way") {
    // The list is 5 deep, a token's object 6: a value 58 lists deep inside it is the deepest the
    // tape takes.
    for (std::size_t depth = 55; depth <= 62; ++depth) {
      const std::string list = R"([{"token":"a","logprob":-0.5,"x":)" + std::string(depth, '[') +
                               std::string(depth, ']') + "}]";
      check_agrees(Dialect::openai_chat, chat_with(list), false);
    }
  }
}

TEST_CASE("json_number_value reads a literal as strtod does") {
  std::mt19937 random(3);
  for (int i = 0; i < 20000; ++i) {
    std::string literal = random() % 2 == 0 ? "-" : "";
    const int digits = 1 + static_cast<int>(random() % 25);
    const int point = static_cast<int>(random() % static_cast<unsigned>(digits + 1));
    for (int d = 0; d < digits; ++d) {
      if (d == point && d > 0) literal += '.';
      literal += static_cast<char>('0' + (d == 0 && point != 1 ? 1 + random() % 9 : random() % 10));
    }
    if (random() % 4 == 0) literal += "e" + std::to_string(static_cast<int>(random() % 40) - 20);
    INFO("literal: ", literal);
    CHECK(same_number(detail::json_number_value(literal), std::strtod(literal.c_str(), nullptr)));
  }
  for (const char* literal :
       {"9007199254740992", "9007199254740993", "-0", "0.0", "1234567890123456789",
        "0.0000000000000000000001", "0.00000000000000000000001", "4.9406564584124654e-324"})
    CHECK(same_number(detail::json_number_value(literal), std::strtod(literal, nullptr)));
}

} // namespace llmrepro::probes
