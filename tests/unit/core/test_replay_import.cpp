// `llmrepro import`'s reading: one replay line into one request, rows into one model's audit, and
// files with their line numbers. The chain-determinism lines follow the shape of
// chain-determinism-bench v1's raw_chains_v72 rows (tests/data/chain-determinism-bench-v1/).
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "core/replay_import.hpp"
#include "tests/support/temp_dir.hpp"

using namespace llmrepro::core;
using llmrepro::testing::TempDir;

namespace {

ReplayRow row_of(ReplayFormat format, const std::string& line) {
  auto row = parse_replay_line(format, line);
  REQUIRE_MESSAGE(row, (row ? "" : row.error().message));
  return *row;
}

std::string error_of(ReplayFormat format, const std::string& line) {
  auto row = parse_replay_line(format, line);
  REQUIRE_FALSE(row);
  return row.error().message;
}

const char* const k_chain_line =
    R"({"model": "o3", "query_id": "q1", "query_type": "t", "kb_id": "k", "run_idx": 3,)"
    R"( "temperature": 0.0, "final_answer_raw": "X", "final_answer_norm": "X", "rationale": "",)"
    R"( "tool_call_sequence": [{"name": "filter_beliefs", "args": {"term": "t"}, "bound_to": "v1"},)"
    R"( {"name": "final_answer", "args": {"answer": "X"}}], "n_tool_calls": 2,)"
    R"( "error_category": null, "latency_s": 5.25})";

} // namespace

TEST_CASE("parse_replay_format") {
  CHECK(parse_replay_format("jsonl").value() == ReplayFormat::jsonl);
  CHECK(parse_replay_format("chain-determinism").value() == ReplayFormat::chain_determinism);
  auto bad = parse_replay_format("csv");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::usage);
  CHECK(bad.error().message == "unknown --format 'csv' (expected jsonl or chain-determinism)");
}

TEST_CASE("parse_replay_line: chain-determinism") {
  SUBCASE("a success: the final answer is the text, name and args the calls") {
    const ReplayRow row = row_of(ReplayFormat::chain_determinism, k_chain_line);
    CHECK(row.model == "o3");
    CHECK(row.prompt_id == "q1");
    CHECK(row.repeat == 3);
    CHECK(row.level == 1);
    REQUIRE(row.outcome.ok);
    CHECK(row.outcome.completion.text == "X");
    CHECK(row.outcome.finished_ms == 5250);
    CHECK(tool_calls_json(row.outcome.completion.tool_calls) ==
          R"([{"arguments":{"term":"t"},"name":"filter_beliefs"},)"
          R"({"arguments":{"answer":"X"},"name":"final_answer"}])");
  }
  SUBCASE("a number or a list as the final answer is its canonical JSON") {
    std::string line = k_chain_line;
    line.replace(line.find(R"("final_answer_norm": "X")"), 24,
                 R"("final_answer_norm": [ "b", 2 ])");
    CHECK(row_of(ReplayFormat::chain_determinism, line).outcome.completion.text == R"(["b",2])");
  }
  SUBCASE("an error row is a failure carrying its category") {
    const ReplayRow row = row_of(
        ReplayFormat::chain_determinism,
        R"({"model": "gemini-2.5-flash", "query_id": "q1", "run_idx": 0, "final_answer_norm": "",)"
        R"( "tool_call_sequence": [], "error_category": "refusal_no_tool_no_text", "latency_s": 0.5})");
    CHECK_FALSE(row.outcome.ok);
    CHECK(row.outcome.error == "refusal_no_tool_no_text");
    CHECK(row.outcome.completion.text.empty());
  }
  SUBCASE("missing and mistyped fields are named") {
    CHECK(error_of(ReplayFormat::chain_determinism, R"({"query_id": "q", "run_idx": 0})") ==
          "missing `model`");
    CHECK(error_of(ReplayFormat::chain_determinism,
                   R"({"model": "m", "query_id": "q", "run_idx": 0.5})") ==
          "`run_idx` must be an integer of at least 0");
    CHECK(error_of(ReplayFormat::chain_determinism,
                   R"({"model": "m", "query_id": "q", "run_idx": 0, "error_category": null,)"
                   R"( "tool_call_sequence": [{"args": {}}], "final_answer_norm": ""})") ==
          "`tool_call_sequence[0].name` must be a non-empty string");
    CHECK(error_of(ReplayFormat::chain_determinism, "[1]") == "expected a JSON object");
  }
}

TEST_CASE("parse_replay_line: jsonl") {
  SUBCASE("every field") {
    const ReplayRow row = row_of(
        ReplayFormat::jsonl,
        R"({"prompt_id": "p", "prompt": "Add 2 and 2", "model": "m", "level": 8, "repeat": 1,)"
        R"( "text": "4", "tool_calls": [{"name": "add", "arguments": {"b": 2, "a": 2}}],)"
        R"( "tokens": [{"token": "4", "logprob": -0.5, "top": [{"token": "5", "logprob": -2},)"
        R"( {"token": "4", "logprob": -0.5}]}], "finish_reason": "stop", "latency_ms": 40})");
    CHECK(row.prompt_text == "Add 2 and 2");
    CHECK(row.level == 8);
    CHECK(row.repeat == 1);
    const Completion& completion = row.outcome.completion;
    CHECK(completion.text == "4");
    CHECK(completion.tool_calls == std::vector<ToolCall>{{"add", R"({"a":2,"b":2})"}});
    REQUIRE(completion.tokens.size() == 1);
    CHECK(completion.has_logprobs);
    CHECK(completion.tokens[0].top[0].token == "4"); // sorted, highest first
    CHECK(completion.tokens[0].gap() == doctest::Approx(1.5));
    CHECK(completion.finish_reason == "stop");
    CHECK(row.outcome.finished_ms == 40);
  }
  SUBCASE("the least: an id, a repeat and a text; the level is 1, the prompt its id") {
    const ReplayRow row =
        row_of(ReplayFormat::jsonl, R"({"prompt_id": "p", "repeat": 0, "text": ""})");
    CHECK(row.level == 1);
    CHECK(row.prompt_text == "p");
    CHECK(row.outcome.ok);
    CHECK_FALSE(row.outcome.completion.has_logprobs);
  }
  SUBCASE("an error is a failure") {
    const ReplayRow row =
        row_of(ReplayFormat::jsonl, R"({"prompt_id": "p", "repeat": 0, "error": "HTTP 429"})");
    CHECK_FALSE(row.outcome.ok);
    CHECK(row.outcome.error == "HTTP 429");
  }
  SUBCASE("bad fields are named") {
    CHECK(error_of(ReplayFormat::jsonl, R"({"prompt_id": "p", "repeat": 0})") ==
          "missing `text` (or `tool_calls`, or an `error`)");
    CHECK(error_of(ReplayFormat::jsonl, R"({"prompt_id": "p", "repeat": -1, "text": ""})") ==
          "`repeat` must be an integer of at least 0");
    CHECK(error_of(ReplayFormat::jsonl,
                   R"({"prompt_id": "p", "level": 0, "repeat": 0, "text": ""})") ==
          "`level` must be an integer of at least 1");
    CHECK(error_of(ReplayFormat::jsonl, R"({"prompt_id": "p", "repeat": 0, "error": ""})") ==
          "`error` must be null or a non-empty string");
    CHECK(
        error_of(
            ReplayFormat::jsonl,
            R"({"prompt_id": "p", "repeat": 0, "tool_calls": [{"name": "f", "arguments": {"k": 1, "k": 2}}]})") ==
        "`tool_calls[0].arguments`: JSON: the key 'k' is given twice");
  }
}

TEST_CASE("ReplayImport") {
  ReplayImport import("import:o3.jsonl", ReplayFormat::chain_determinism);
  const auto line = [](const std::string& query, int run, const char* error) {
    return std::string(R"({"model": "o3", "query_id": ")") + query + R"(", "run_idx": )" +
           std::to_string(run) + R"(, "final_answer_norm": "A", "tool_call_sequence": [],)" +
           R"( "error_category": )" + error + R"(, "latency_s": 2})";
  };
  REQUIRE(import.add(row_of(ReplayFormat::chain_determinism, line("q1", 0, "null")), "f:1"));
  REQUIRE(import.add(row_of(ReplayFormat::chain_determinism, line("q2", 0, "null")), "f:2"));
  REQUIRE(
      import.add(row_of(ReplayFormat::chain_determinism, line("q1", 1, "\"turn_limit\"")), "f:3"));

  SUBCASE("the same prompt and repeat twice names both lines") {
    auto again = import.add(row_of(ReplayFormat::chain_determinism, line("q1", 1, "null")), "f:4");
    REQUIRE_FALSE(again);
    CHECK(again.error().message == "f:4: prompt 'q1' level 1 repeat 1 was recorded at f:3 already");
  }
  SUBCASE("another model is refused") {
    std::string other = line("q3", 0, "null");
    other.replace(other.find("o3"), 2, "gpt-4.1");
    auto refused = import.add(row_of(ReplayFormat::chain_determinism, other), "g:1");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message == "g:1: model 'gpt-4.1' where f:1 named 'o3': import each "
                                     "model into a database of its own");
  }
  SUBCASE("the audit") {
    auto data = std::move(import).finish(1000);
    REQUIRE(data);
    CHECK(data->config.plan.runs == 2);
    CHECK(data->config.plan.levels == std::vector<int>{1});
    CHECK(data->config.plan.model == "o3");
    CHECK(data->endpoints.at(0).dialect == "import:chain-determinism");
    CHECK(data->endpoints.at(0).url == "import:o3.jsonl");
    REQUIRE(data->suite.prompts.size() == 2);
    CHECK(data->suite.prompts[1].id == "q2");
    CHECK(data->info.status == "partial"); // q2 has no repeat 1
    REQUIRE(data->records.size() == 3);
    CHECK(data->records[2].planned.prompt_index == 0);
    CHECK(data->records[2].planned.repeat == 1);
    CHECK_FALSE(data->records[2].outcome.ok);
    CHECK(data->records[2].outcome.error == "turn_limit");
    CHECK(data->records[1].outcome.started_ms == 2000);
    CHECK(data->records[2].outcome.finished_ms == 6000);
  }
}

TEST_CASE("add_replay_file") {
  TempDir dir;
  SUBCASE("a malformed line names the file and the line") {
    const std::string path = dir.file("r.jsonl");
    std::ofstream(path) << R"({"prompt_id": "p", "repeat": 0, "text": "a"})"
                        << "\n\n"
                        << R"({"prompt_id": "p", "repeat": 1, "text": )"
                        << "\n";
    ReplayImport import("import:r.jsonl", ReplayFormat::jsonl);
    auto added = add_replay_file(path, ReplayFormat::jsonl, import);
    REQUIRE_FALSE(added);
    CHECK(added.error().code == ErrorCode::input);
    CHECK(added.error().message.rfind(path + ":3: JSON: ", 0) == 0);
  }
  SUBCASE("a gzip file is refused with what to do") {
    const std::string path = dir.file("r.jsonl.gz");
    std::ofstream(path, std::ios::binary) << "\x1f\x8b\x08";
    ReplayImport import("import:r.jsonl.gz", ReplayFormat::chain_determinism);
    auto added = add_replay_file(path, ReplayFormat::chain_determinism, import);
    REQUIRE_FALSE(added);
    CHECK(added.error().message == "'" + path +
                                       "' is gzip-compressed: decompress it first (gunzip -k "
                                       "FILE) and import the .jsonl");
  }
  SUBCASE("a missing file") {
    ReplayImport import("import:x", ReplayFormat::jsonl);
    auto added = add_replay_file(dir.file("absent.jsonl"), ReplayFormat::jsonl, import);
    REQUIRE_FALSE(added);
    CHECK(added.error().message.find("cannot read") != std::string::npos);
  }
}
