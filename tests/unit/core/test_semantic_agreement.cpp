#include <doctest/doctest.h>

#include <cmath>

#include "core/semantic_agreement.hpp"

using namespace llmrepro::core;

TEST_CASE("cosine_similarity") {
  SUBCASE("exact values") {
    CHECK(*cosine_similarity({3, 4}, {4, 3}) == 24.0 / 25.0);
    CHECK(*cosine_similarity({3, 4}, {6, 8}) == 1.0);
    CHECK(*cosine_similarity({1, 0}, {0, 2}) == 0.0);
    CHECK(*cosine_similarity({1, 0}, {-5, 0}) == -1.0);
  }
  SUBCASE("incomparable vectors are errors") {
    CHECK(cosine_similarity({1, 0}, {1, 0, 0}).error().code == ErrorCode::input);
    CHECK_FALSE(cosine_similarity({}, {}));
    CHECK(cosine_similarity({0, 0}, {1, 0}).error().message ==
          "an embedding of zero norm has no direction to compare");
  }
}

TEST_CASE("prompt_semantics") {
  SUBCASE("pairwise mean, population std and min") {
    auto result = prompt_semantics(4, {{3, 4}, {4, 3}, {6, 8}}, 0.96);
    REQUIRE(result);
    CHECK(result->prompt_index == 4);
    CHECK(result->distinct == 3);
    CHECK(result->pairs == 3);
    // Pairs in order (0,1), (0,2), (1,2): 0.96, 1, 0.96.
    const double mean = (0.96 + 1.0 + 0.96) / 3.0;
    CHECK(result->mean == mean);
    const double d1 = 0.96 - mean;
    const double d2 = 1.0 - mean;
    CHECK(result->std == std::sqrt((d1 * d1 + d2 * d2 + d1 * d1) / 3.0));
    CHECK(result->min == 0.96);
    CHECK(result->agrees);
    CHECK_FALSE(prompt_semantics(4, {{3, 4}, {4, 3}, {6, 8}}, 0.97)->agrees);
  }
  SUBCASE("one distinct completion agrees by definition") {
    auto result = prompt_semantics(0, {{1, 2, 3}}, 0.99);
    REQUIRE(result);
    CHECK(result->pairs == 0);
    CHECK(result->mean == 1.0);
    CHECK(result->std == 0.0);
    CHECK(result->min == 1.0);
    CHECK(result->agrees);
  }
  SUBCASE("errors") {
    CHECK(prompt_semantics(2, {}, 0.9).error().message == "prompt 3 has no completion to embed");
    CHECK_FALSE(prompt_semantics(0, {{1, 0}, {1, 0, 0}}, 0.9));
  }
}

TEST_CASE("summarize") {
  SemanticAgreement agreement;
  summarize(agreement);
  CHECK_FALSE(agreement.agreeing_share);
  agreement.prompts = {PromptSemantics{.agrees = true}, PromptSemantics{.agrees = false},
                       PromptSemantics{.agrees = true}, PromptSemantics{.agrees = true}};
  summarize(agreement);
  CHECK(agreement.agreeing_share == 0.75);
}
