#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/resume_check.hpp"

using namespace llmrepro::core;

namespace {

Prompt text_prompt(const std::string& id, const std::string& text) {
  Prompt prompt;
  prompt.id = id;
  prompt.text = text;
  return prompt;
}

Suite suite_of(std::vector<Prompt> prompts, const std::string& source) {
  Suite suite;
  suite.source = source;
  suite.prompts = std::move(prompts);
  return suite;
}

// A stand-in for the endpoint module's URL rules: trailing slashes and "user@" are dropped.
UrlForms test_url_forms() {
  const auto shown = [](const std::string& url) {
    const auto at = url.find('@');
    return at == std::string::npos ? url : "http://" + url.substr(at + 1);
  };
  return {[shown](const std::string& url) {
            std::string out = shown(url);
            while (!out.empty() && out.back() == '/') out.pop_back();
            return out;
          },
          shown};
}

AuditData stored_audit() {
  AuditData stored;
  stored.suite = suite_of({text_prompt("a", "one"), text_prompt("b", "two")}, "suite.jsonl");
  stored.endpoints.push_back(EndpointInfo{.url = "http://host:1"});
  stored.endpoints.push_back(EndpointInfo{.url = "http://other:2"});
  return stored;
}

std::vector<std::string> texts(const std::vector<PlanDifference>& differences) {
  std::vector<std::string> out;
  for (const auto& difference : differences) out.push_back(to_string(difference));
  return out;
}

} // namespace

TEST_CASE("prompt_difference") {
  const Prompt base = text_prompt("a", "one");
  SUBCASE("the same prompt, from another line") {
    Prompt other = base;
    other.source_line = 9;
    CHECK(prompt_difference(base, other).empty());
  }
  SUBCASE("each field is named as the suite line names it") {
    Prompt other = base;
    other.id = "z";
    CHECK(prompt_difference(base, other) == "id");
    other = base;
    other.text = "uno";
    CHECK(prompt_difference(base, other) == "prompt");
    other = base;
    other.text.reset();
    other.messages.push_back({"user", "one"});
    CHECK(prompt_difference(base, other) == "prompt or messages");
    other = base;
    other.max_tokens = 4;
    CHECK(prompt_difference(base, other) == "max_tokens");
    other = base;
    other.tags = {"t"};
    CHECK(prompt_difference(base, other) == "tags");
    other = base;
    other.expect.kind = Expectation::Kind::contains;
    CHECK(prompt_difference(base, other) == "expect");
    other = base;
    other.extract.kind = Extraction::Kind::last_line;
    CHECK(prompt_difference(base, other) == "extract");
    other = base;
    other.response_format_json = R"({"type":"json_object"})";
    CHECK(prompt_difference(base, other) == "response_format");
  }
  SUBCASE("chat messages compare by role and content") {
    Prompt chat;
    chat.id = "c";
    chat.messages = {{"user", "hi"}};
    Prompt other = chat;
    other.messages[0].role = "system";
    CHECK(prompt_difference(chat, other) == "messages");
    other = chat;
    other.messages.push_back({"assistant", "hello"});
    CHECK(prompt_difference(chat, other) == "messages");
  }
}

TEST_CASE("suite_difference") {
  const Suite stored = suite_of({text_prompt("a", "one"), text_prompt("b", "two")}, "s");
  SUBCASE("the same prompts") {
    CHECK(suite_difference(stored, suite_of(stored.prompts, "elsewhere")).empty());
  }
  SUBCASE("another count") {
    CHECK(suite_difference(stored, suite_of({text_prompt("a", "one")}, "s")) ==
          "2 prompts (stored) vs 1 (given)");
  }
  SUBCASE("another id") {
    CHECK(suite_difference(stored, suite_of({text_prompt("a", "one"), text_prompt("c", "two")},
                                            "s")) == "prompt 2 is 'b' (stored) vs 'c' (given)");
  }
  SUBCASE("another field: the first differing prompt is named") {
    CHECK(suite_difference(stored, suite_of({text_prompt("a", "one"), text_prompt("b", "2")},
                                            "s")) == "prompt 2 'b' differs in its prompt");
  }
}

TEST_CASE("to_string(PlanDifference)") {
  CHECK(to_string(PlanDifference{"--runs", "5", "3", {}}) == "--runs 5 (stored) vs 3 (given)");
  CHECK(to_string(
            PlanDifference{"--suite", "a.jsonl", "b.jsonl", "prompt 1 'x' differs in its tags"}) ==
        "--suite 'a.jsonl' (stored) vs 'b.jsonl' (given): prompt 1 'x' differs in its tags");
}

TEST_CASE("resume_plan_differences") {
  const AuditData stored = stored_audit();
  const UrlForms forms = test_url_forms();

  SUBCASE("nothing given: nothing differs") {
    ResumeRequest wanted;
    wanted.config.plan.runs = 9; // a default that was not given says nothing
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
  }
  SUBCASE("a given flag with the stored value does not differ") {
    ResumeRequest wanted;
    wanted.given.runs = true;
    wanted.given.concurrency = true;
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
  }
  SUBCASE("each plan-defining flag, spelled as the flag spells it") {
    ResumeRequest wanted;
    wanted.given = {true, true, true, true, true, true, true, true, true, true};
    wanted.config.plan.api = "tgi";
    wanted.config.plan.model = "m";
    wanted.config.plan.runs = 3;
    wanted.config.plan.levels = {1, 4};
    wanted.config.plan.max_tokens = 7;
    wanted.config.plan.top_logprobs = 5;
    wanted.config.plan.seed = 42;
    wanted.config.plan.probes = {ProbeKind::sweep, ProbeKind::long_prompt};
    wanted.config.plan.shard_index = 1;
    wanted.config.plan.shard_count = 2;
    wanted.config.plan.stream = true;
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{
              "--api auto (stored) vs tgi (given)", "--model none (detected) (stored) vs m (given)",
              "--runs 5 (stored) vs 3 (given)", "--concurrency 1,8,32 (stored) vs 1,4 (given)",
              "--max-tokens 128 (stored) vs 7 (given)", "--top-logprobs 2 (stored) vs 5 (given)",
              "--seed 0 (stored) vs 42 (given)", "--probe sweep (stored) vs sweep,long (given)",
              "--shard 1/1 (stored) vs 2/2 (given)", "--stream off (stored) vs on (given)"});
  }
  SUBCASE("--logprobs-form, which changes what every openai-chat request asks for") {
    ResumeRequest wanted;
    wanted.given.logprobs_form = true;
    wanted.config.plan.logprobs_form = "auto";
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
    wanted.config.plan.logprobs_form = "together";
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{"--logprobs-form auto (stored) vs together (given)"});
  }
  SUBCASE("--profile, and --max-concurrency as the levels it implies") {
    ResumeRequest wanted;
    wanted.given.profile = true;
    wanted.given.max_concurrency = true;
    wanted.config.plan.profile = AuditProfile::deterministic;
    wanted.config.plan.levels = deterministic_levels(16);
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{"--profile standard (stored) vs deterministic (given)",
                                   "--max-concurrency 1,8,32 (stored) vs 1,2,8,9,16 (given)"});
    // Beside --concurrency, the levels are compared once, as --concurrency.
    wanted.given.concurrency = true;
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{"--concurrency 1,8,32 (stored) vs 1,2,8,9,16 (given)",
                                   "--profile standard (stored) vs deterministic (given)"});
  }
  SUBCASE("the suite is compared by its prompts") {
    ResumeRequest wanted;
    wanted.suite = suite_of(stored.suite.prompts, "copy.jsonl");
    wanted.suite_path = "copy.jsonl";
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
    wanted.suite->prompts[1].tags = {"new"};
    const auto differences = resume_plan_differences(stored, wanted, forms);
    REQUIRE(differences.size() == 1);
    CHECK(
        to_string(differences[0]) ==
        "--suite 'suite.jsonl' (stored) vs 'copy.jsonl' (given): prompt 2 'b' differs in its tags");
  }
  SUBCASE("endpoints: the same ones spelled otherwise agree") {
    ResumeRequest wanted;
    wanted.endpoints_given = true;
    wanted.urls = {"http://host:1/", "http://user@other:2"};
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
  }
  SUBCASE("endpoints: another one is named by its flag, without credentials") {
    ResumeRequest wanted;
    wanted.endpoints_given = true;
    wanted.urls = {"http://host:1", "http://user@third:3"};
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{"--compare http://other:2 (stored) vs http://third:3 (given)"});
    wanted.endpoint_flag_count = 2;
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{"--endpoint http://other:2 (stored) vs http://third:3 (given)"});
  }
  SUBCASE("endpoints: the embedded engine against a URL") {
    ResumeRequest wanted;
    wanted.endpoints_given = true;
    wanted.urls = {"", "http://other:2"};
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{
              "--endpoint http://host:1 (stored) vs the embedded reference engine (given)"});
    AuditData embedded = stored;
    embedded.endpoints[0] = EndpointInfo{.url = "http://127.0.0.1:5", .embedded = true};
    CHECK(resume_plan_differences(embedded, wanted, forms).empty());
    wanted.urls[0] = "http://127.0.0.1:5";
    CHECK(texts(resume_plan_differences(embedded, wanted, forms)) ==
          std::vector<std::string>{
              "--endpoint the embedded reference engine (stored) vs http://127.0.0.1:5 (given)"});
  }
  SUBCASE("endpoints: another count") {
    ResumeRequest wanted;
    wanted.endpoints_given = true;
    wanted.urls = {"http://host:1"};
    CHECK(texts(resume_plan_differences(stored, wanted, forms)) ==
          std::vector<std::string>{"--endpoint/--compare 2 endpoints (stored) vs 1 (given)"});
    AuditData single = stored;
    single.endpoints.pop_back();
    wanted.urls = {"http://host:1", "http://other:2"};
    CHECK(texts(resume_plan_differences(single, wanted, forms)) ==
          std::vector<std::string>{"--endpoint/--compare 1 endpoint (stored) vs 2 (given)"});
  }
  SUBCASE("the embedded engine's flags given are compared with the stored settings") {
    AuditData engine = stored;
    engine.config.plan.engine = EngineSettings{4, true, false, 7};
    ResumeRequest wanted;
    wanted.config.plan.engine = EngineSettings{}; // the flags' defaults: not given, nothing differs
    CHECK(resume_plan_differences(engine, wanted, forms).empty());
    wanted.given.engine_max_num_seqs = true;
    wanted.given.engine_batch_invariant = true;
    wanted.given.engine_prefix_cache = true;
    wanted.given.engine_seed = true;
    wanted.config.plan.engine = EngineSettings{16, true, true, 0};
    CHECK(texts(resume_plan_differences(engine, wanted, forms)) ==
          std::vector<std::string>{"--engine-max-num-seqs 4 (stored) vs 16 (given)",
                                   "--engine-prefix-cache off (stored) vs on (given)",
                                   "--engine-seed 7 (stored) vs 0 (given)"});
    // An audit stored without them (older, or of HTTP endpoints) compares nothing of them.
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
  }
  SUBCASE("the header names are compared as a set, without case, given or not") {
    AuditData headed = stored;
    headed.config.plan.header_names = std::vector<std::string>{"X-Org", "X-Team"};
    ResumeRequest wanted;
    wanted.config.plan.header_names = std::vector<std::string>{"x-team", "X-ORG"};
    CHECK(resume_plan_differences(headed, wanted, forms).empty());
    wanted.config.plan.header_names = std::vector<std::string>{"X-Org"};
    CHECK(texts(resume_plan_differences(headed, wanted, forms)) ==
          std::vector<std::string>{"--header names X-Org, X-Team (stored) vs X-Org (given)"});
    wanted.config.plan.header_names = std::vector<std::string>{};
    CHECK(texts(resume_plan_differences(headed, wanted, forms)) ==
          std::vector<std::string>{"--header names X-Org, X-Team (stored) vs none (given)"});
    // Stored without names (an audit of an older database): nothing is compared.
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
    AuditData none = stored;
    none.config.plan.header_names = std::vector<std::string>{};
    wanted.config.plan.header_names = std::vector<std::string>{"X-Org"};
    CHECK(texts(resume_plan_differences(none, wanted, forms)) ==
          std::vector<std::string>{"--header names none (stored) vs X-Org (given)"});
  }
  SUBCASE("endpoints not given are not compared") {
    ResumeRequest wanted;
    wanted.urls = {"http://elsewhere:9"};
    CHECK(resume_plan_differences(stored, wanted, forms).empty());
  }
  SUBCASE("differences come in the order of the flags") {
    ResumeRequest wanted;
    wanted.given.runs = true;
    wanted.config.plan.runs = 2;
    wanted.endpoints_given = true;
    wanted.urls = {"http://host:1"};
    wanted.suite = suite_of({}, "empty");
    wanted.suite_path = "empty";
    const auto differences = resume_plan_differences(stored, wanted, forms);
    REQUIRE(differences.size() == 3);
    CHECK(differences[0].flag == "--suite");
    CHECK(differences[1].flag == "--endpoint/--compare");
    CHECK(differences[2].flag == "--runs");
  }
}
