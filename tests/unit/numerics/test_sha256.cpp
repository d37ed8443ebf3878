#include <doctest/doctest.h>

#include <string>

#include "numerics/sha256.hpp"

using namespace llmrepro::numerics;

TEST_CASE("sha256_hex") {
  // FIPS 180-4 / NIST example messages.
  SUBCASE("empty message") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }
  SUBCASE("abc") {
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  }
  SUBCASE("448-bit message (two blocks after padding)") {
    CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  }
  SUBCASE("a million 'a', in one piece and in uneven pieces") {
    const char* expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    CHECK(sha256_hex(std::string(1000000, 'a')) == expected);
    Sha256 hash;
    const std::string piece(997, 'a');
    std::size_t left = 1000000;
    while (left > 0) {
      const std::size_t take = left < piece.size() ? left : piece.size();
      hash.update(piece.data(), take);
      left -= take;
    }
    const auto digest = hash.digest();
    CHECK(digest[0] == 0xcd);
    CHECK(digest[1] == 0xc7);
    CHECK(digest[31] == 0xd0);
  }
}
