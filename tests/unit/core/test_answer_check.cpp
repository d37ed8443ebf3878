#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/analysis.hpp"
#include "core/answer_check.hpp"
#include "core/random.hpp"

using namespace llmrepro::core;

TEST_CASE("extract_answer") {
  SUBCASE("none collapses whitespace") {
    CHECK(extract_answer({}, "  Paris \n\n is  nice ") == "Paris is nice");
    CHECK_FALSE(extract_answer({}, " \n ").has_value());
    CHECK(extract_answer({}, "\ta\vb\fc\rd") == "a b c d");
    CHECK(extract_answer({}, std::string("x\0y z", 5)) ==
          std::string("x\0y z", 5)); // NUL is no space
    // Against words split on the six white space bytes and joined by one space, over random text.
    SplitMix64 random(5);
    const char alphabet[] = {' ', '\t', '\n', '\v', '\f', '\r', 'a', 'b', '\0', '\xe2'};
    for (int trial = 0; trial < 2000; ++trial) {
      std::string text(random.below(12), ' ');
      for (char& c : text) c = alphabet[random.below(sizeof alphabet)];
      std::string expected;
      std::string word;
      for (const char c : text + " ") {
        if (std::string_view(" \t\n\v\f\r").find(c) == std::string_view::npos) {
          word += c;
        } else if (!word.empty()) {
          expected += (expected.empty() ? "" : " ") + word;
          word.clear();
        }
      }
      const auto answer = extract_answer({}, text);
      CHECK(answer.value_or("") == expected);
      CHECK(answer.has_value() == !expected.empty());
    }
  }
  SUBCASE("number takes the last number, normalised") {
    const Extraction number{Extraction::Kind::number, ""};
    CHECK(extract_answer(number, "17 * 23 = 391") == "391");
    CHECK(extract_answer(number, "It costs 1,000.50 dollars.") == "1000.5");
    CHECK(extract_answer(number, "minus -4 degrees") == "-4");
    CHECK_FALSE(extract_answer(number, "no digits here").has_value());
  }
  SUBCASE("choice finds the committed letter") {
    const Extraction choice{Extraction::Kind::choice, ""};
    CHECK(extract_answer(choice, "B") == "B");
    CHECK(extract_answer(choice, "(C) Venus") == "C");
    CHECK(extract_answer(choice, "I think the answer is D.") == "D");
    CHECK_FALSE(extract_answer(choice, "jupiter").has_value());
  }
  SUBCASE("regex returns the first group") {
    const Extraction regex{Extraction::Kind::regex, "city: (\\w+)"};
    CHECK(extract_answer(regex, "The city: Lyon, France") == "Lyon");
    CHECK_FALSE(extract_answer(regex, "nothing").has_value());
  }
  SUBCASE("json_path reads JSON inside prose") {
    const Extraction path{Extraction::Kind::json_path, "$.answer.cities[1]"};
    CHECK(extract_answer(path, "Sure: {\"answer\": {\"cities\": [\"Oslo\", \"Kyoto\"]}} done") ==
          "Kyoto");
    CHECK_FALSE(extract_answer(path, "{\"answer\": 3}").has_value());
    CHECK_FALSE(extract_answer(path, "not json").has_value());
  }
  SUBCASE("last_line") {
    CHECK(extract_answer({Extraction::Kind::last_line, ""}, "work\n  42  \n\n") == "42");
  }
}

TEST_CASE("check_answer") {
  CHECK_FALSE(check_answer({}, "x").has_value());
  CHECK(*check_answer({Expectation::Kind::contains, "Paris"}, "It is Paris."));
  CHECK_FALSE(*check_answer({Expectation::Kind::contains, "Paris"}, "It is Lyon."));
  CHECK(*check_answer({Expectation::Kind::equals, "Paris"}, "  Paris\n"));
  CHECK(*check_answer({Expectation::Kind::regex, "^\\s*(hot|warm)\\b"}, " hot"));
  CHECK(*check_answer({Expectation::Kind::choice, "B"}, "Answer: B"));
  CHECK_FALSE(*check_answer({Expectation::Kind::choice, "B"}, "Answer: C"));
  Expectation number{Expectation::Kind::number, "", "", 100.0, 0.5};
  CHECK(*check_answer(number, "about 100.4 degrees"));
  CHECK_FALSE(*check_answer(number, "about 101 degrees"));
  Expectation path{Expectation::Kind::json_path, "Tokyo", "$.answer", 0, 0};
  CHECK(*check_answer(path, "{\"answer\": \"Tokyo\"}"));
  CHECK_FALSE(*check_answer(path, "{\"answer\": \"Kyoto\"}"));
  // The suite loader stores the expected value as compact JSON text.
  Expectation quoted{Expectation::Kind::json_path, "\"Tokyo\"", "$.answer", 0, 0};
  CHECK(*check_answer(quoted, "```json\n{\"answer\": \"Tokyo\"}\n```"));
  Expectation number_path{Expectation::Kind::json_path, "3", "$.n", 0, 0};
  CHECK(*check_answer(number_path, "{\"n\": 3}"));
}

TEST_CASE("TextAnswers: each text read once, the same answers and checks as reading every run") {
  // Texts with repeats, texts that differ only in white space (the same answer, separate
  // entries), and texts with no answer; each extraction and checker kind.
  const std::vector<std::string> texts = {"Answer: B\n",
                                          "Answer: B\n",
                                          "answer:  b",
                                          "{\"answer\": \"Tokyo\"}",
                                          "",
                                          "  ",
                                          "It is 100.4 degrees",
                                          "It is 100.4 degrees",
                                          "hot and  warm",
                                          "Answer: B\n",
                                          "(C)"};
  const std::vector<Extraction> extractions = {{},
                                               {Extraction::Kind::regex, "([a-z]+)"},
                                               {Extraction::Kind::number, ""},
                                               {Extraction::Kind::choice, ""},
                                               {Extraction::Kind::json_path, "$.answer"},
                                               {Extraction::Kind::last_line, ""}};
  const std::vector<Expectation> expectations = {
      {},
      {Expectation::Kind::contains, "B"},
      {Expectation::Kind::equals, "Answer: B"},
      {Expectation::Kind::regex, "^\\s*(hot|warm)\\b"},
      {Expectation::Kind::choice, "B"},
      {Expectation::Kind::number, "", "", 100.0, 0.5},
      {Expectation::Kind::json_path, "Tokyo", "$.answer", 0, 0}};
  for (const Extraction& extraction : extractions)
    for (const Expectation& expectation : expectations) {
      // The second pass reads copies, which outlive `read` as its texts must: entries are found
      // by a text's bytes, not by where they are.
      const std::vector<std::string> copies = texts;
      TextAnswers read(extraction, expectation);
      for (const std::vector<std::string>* pass : {&texts, &copies})
        for (const std::string& text : *pass) {
          CAPTURE(text);
          CHECK(read.answer(text) == extract_answer(extraction, text));
          CHECK(read.passes(text) == check_answer(expectation, text).value_or(false));
        }
    }
}

TEST_CASE("analyse answers and checks") {
  Suite suite;
  Prompt math{.id = "math", .text = "17*23?"};
  math.expect = {Expectation::Kind::number, "", "", 391.0, 0.0};
  math.extract = {Extraction::Kind::number, ""};
  suite.prompts = {math, Prompt{.id = "free", .text = "x"}};
  const auto record = [](int prompt, int concurrency, int repeat, const char* text) {
    RequestRecord r;
    r.planned = {0, prompt, concurrency, ProbeKind::sweep, repeat};
    r.outcome.ok = true;
    r.outcome.completion.text = text;
    return r;
  };
  // math: raw texts differ, answers agree at c=1; at c=8 one run answers 392.
  std::vector<RequestRecord> records{record(0, 1, 0, "391"), record(0, 1, 1, "It is 391."),
                                     record(0, 8, 0, "391"), record(0, 8, 1, "392"),
                                     record(1, 1, 0, "a"),   record(1, 1, 1, "a"),
                                     record(1, 8, 0, "a"),   record(1, 8, 1, "a")};
  auto analysis = analyse(suite, records, AnalysisConfig{});
  const auto& p = analysis.prompts[0];
  CHECK(p.passes == 3);
  CHECK(p.checked_runs == 4);
  CHECK_FALSE(p.answers_agree);
  REQUIRE(p.answers.size() == 2);
  CHECK(p.answers[0] == std::pair<std::string, int>{"391", 3});
  CHECK_FALSE(analysis.prompts[1].passes.has_value());
  CHECK(analysis.prompts[1].answers_agree);
  CHECK(analysis.summary.tarr == doctest::Approx(0.5));
  CHECK(analysis.summary.tara == doctest::Approx(0.5));
  REQUIRE(analysis.summary.checks.has_value());
  const auto& checks = *analysis.summary.checks;
  CHECK(checks.prompts_checked == 1);
  REQUIRE(checks.per_run.size() == 4);
  CHECK(checks.per_run[3].concurrency == 8);
  CHECK(checks.per_run[3].repeat == 1);
  CHECK(checks.per_run[3].accuracy == doctest::Approx(0.0));
  CHECK(checks.mean_accuracy == doctest::Approx(0.75));
  CHECK(checks.best_possible == doctest::Approx(1.0));
  CHECK(checks.worst_possible == doctest::Approx(0.0));
  CHECK(checks.spread == doctest::Approx(1.0));

  records[3].outcome.completion.text = "391";
  analysis = analyse(suite, records, AnalysisConfig{});
  CHECK(analysis.prompts[0].answers_agree);
  CHECK(analysis.summary.tara == doctest::Approx(1.0));
  CHECK(analysis.summary.tarr == doctest::Approx(0.5));
}
