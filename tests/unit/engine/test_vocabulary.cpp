#include <doctest/doctest.h>

#include "engine/bigram_prior.hpp"
#include "engine/vocabulary.hpp"

using namespace llmrepro::engine;

TEST_CASE("Vocabulary::split") {
  const auto words = Vocabulary::split("The rain, in spain... don't stop!  ok");
  const std::vector<std::string> expected{"The", "rain", ",",     "in",   "spain", ".",
                                          ".",   ".",    "don't", "stop", "!",     "ok"};
  CHECK(words == expected);
  CHECK(Vocabulary::split("").empty());
  CHECK(Vocabulary::split("  \n\t ").empty());
}

TEST_CASE("Vocabulary::encode") {
  const Vocabulary vocabulary = Vocabulary::from_corpus();
  CHECK(vocabulary.size() > 1000);
  CHECK(vocabulary.word(Vocabulary::k_unk) == "<unk>");
  SUBCASE("known words and marks map to their ids") {
    const auto ids = vocabulary.encode("The weather in the valley.");
    REQUIRE(ids.size() == 6);
    CHECK(ids[0] == vocabulary.id_of("The"));
    CHECK(ids[3] == vocabulary.id_of("the"));
    CHECK(ids[5] == vocabulary.id_of("."));
    for (int id : ids) CHECK(id != Vocabulary::k_unk);
  }
  SUBCASE("unknown words become <unk>, a capitalised word falls back to lower case") {
    const auto ids = vocabulary.encode("Zyzzyva Weather");
    REQUIRE(ids.size() == 2);
    CHECK(ids[0] == Vocabulary::k_unk);
    CHECK(ids[1] == vocabulary.id_of("weather"));
  }
  SUBCASE("token texts put a space before words and none before marks") {
    CHECK(vocabulary.token_text(vocabulary.id_of("rain")) == " rain");
    CHECK(vocabulary.token_text(vocabulary.id_of(",")) == ",");
    CHECK(vocabulary.is_punctuation(vocabulary.id_of(".")));
    CHECK_FALSE(vocabulary.is_punctuation(vocabulary.id_of("rain")));
  }
}

TEST_CASE("BigramPrior::from_corpus") {
  const Vocabulary vocabulary = Vocabulary::from_corpus();
  const BigramPrior prior = BigramPrior::from_corpus(vocabulary);
  const auto& after_boils = prior.successors(vocabulary.id_of("boils"));
  REQUIRE(after_boils.size() == 1);
  CHECK(vocabulary.word(after_boils[0].next) == "at");
  CHECK(after_boils[0].count == 1);
  int the_count = 0;
  for (const auto& entry : prior.successors(vocabulary.id_of("of")))
    if (vocabulary.word(entry.next) == "the") the_count = entry.count;
  CHECK(the_count > 10);
}
