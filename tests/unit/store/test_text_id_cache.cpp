// TextIdCache (store/text_id_cache.cpp): the interner's ids by text, through growth and the
// forgetting of a rolled-back transaction's texts.
#include <doctest/doctest.h>

#include <string>

#include "store/detail/text_id_cache.hpp"

using llmrepro::store::detail::TextIdCache;

namespace {

// Texts of every length about the hash's 8-byte words, and the empty one.
std::string text_of(int i) {
  return std::string(static_cast<std::size_t>(i % 19), 'x') + std::to_string(i);
}

} // namespace

TEST_CASE("TextIdCache") {
  TextIdCache cache;
  CHECK_FALSE(cache.find(""));
  SUBCASE("finds every text it was given, and no other, as it grows") {
    cache.insert("", 1, false);
    cache.insert(std::string("\xff\0b", 3), 2, false);
    for (int i = 0; i < 5000; ++i)
      cache.insert(text_of(i), 10 + static_cast<std::uint64_t>(i), false);
    CHECK(cache.find("") == 1);
    CHECK(cache.find(std::string("\xff\0b", 3)) == 2);
    CHECK_FALSE(cache.find(std::string("\xff\0c", 3)));
    CHECK_FALSE(cache.find("\xff"));
    for (int i = 0; i < 5000; ++i) {
      CAPTURE(i);
      CHECK(cache.find(text_of(i)) == 10 + static_cast<std::uint64_t>(i));
    }
    CHECK_FALSE(cache.find(text_of(5000)));
  }
  SUBCASE("forgets what a rolled-back transaction added, and keeps what it found") {
    cache.insert("committed", 1, true);
    cache.keep_added();
    cache.insert("added", 2, true);
    cache.insert("found", 3, false);
    for (int i = 0; i < 3000; ++i)
      cache.insert(text_of(i), 10 + static_cast<std::uint64_t>(i), i % 2 == 0);
    cache.forget_added();
    CHECK(cache.find("committed") == 1);
    CHECK_FALSE(cache.find("added"));
    CHECK(cache.find("found") == 3);
    for (int i = 0; i < 3000; ++i) {
      CAPTURE(i);
      if (i % 2 == 0)
        CHECK_FALSE(cache.find(text_of(i)));
      else
        CHECK(cache.find(text_of(i)) == 10 + static_cast<std::uint64_t>(i));
    }
    // The same texts added again, with the ids the next transaction gives them.
    cache.insert("added", 4, true);
    cache.keep_added();
    cache.forget_added();
    CHECK(cache.find("added") == 4);
  }
}
