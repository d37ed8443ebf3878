#include <doctest/doctest.h>

#include "gpu/split_policy.hpp"

using namespace llmrepro::gpu;

TEST_CASE("heuristic_split_k") {
  // docs/gpu-probe.md §7.3 E1: s = 4 for M <= 128, 2 for 129..256, 1 beyond at N = K = 4096.
  for (const int m : {1, 2, 17, 64, 128}) CHECK(heuristic_split_k(m, 4096, 4096, 132) == 4);
  for (const int m : {129, 200, 256}) CHECK(heuristic_split_k(m, 4096, 4096, 132) == 2);
  for (const int m : {257, 1024, 2048}) CHECK(heuristic_split_k(m, 4096, 4096, 132) == 1);
  CHECK(heuristic_split_k(1, 14336, 4096, 132) == 1); // 112 tiles already fill 132 SMs
  CHECK(heuristic_split_k(1, 128, 128, 132) == 2);    // capped by the two K tiles
}

TEST_CASE("fa2_decode_splits") {
  // The worked example of docs/gpu-probe.md §4.1 (8 KV heads, 132 SMs).
  const int expected_4096[] = {32, 16, 7, 4, 2, 4, 1};
  const int expected_1024[] = {8, 8, 8, 4, 2, 4, 1};
  const int batches[] = {1, 2, 4, 8, 16, 24, 27};
  for (int i = 0; i < 7; ++i) {
    CAPTURE(batches[i]);
    CHECK(fa2_decode_splits(batches[i], 8, 4096, 132) == expected_4096[i]);
    CHECK(fa2_decode_splits(batches[i], 8, 1024, 132) == expected_1024[i]);
  }
  CHECK(fa2_decode_splits(64, 8, 32768, 132) == 1);
}

TEST_CASE("block_split_bounds") {
  CHECK(block_split_bounds(1024, 1) == std::vector<std::size_t>{0, 1024});
  CHECK(block_split_bounds(1024, 3) == std::vector<std::size_t>{0, 384, 768, 1024});
  // 7 splits of 32 blocks: 5 blocks each, the last split short.
  const auto bounds = block_split_bounds(4096, 7);
  CHECK(bounds.size() == 8);
  CHECK(bounds[1] == 640);
  CHECK(bounds.back() == 4096);
  CHECK(block_split_bounds(300, 8) == std::vector<std::size_t>{0, 128, 256, 300});
}

TEST_CASE("fixed_size_bounds") {
  CHECK(fixed_size_bounds(1000, 256) == std::vector<std::size_t>{0, 256, 512, 768, 1000});
  CHECK(fixed_size_bounds(1024, 2048) == std::vector<std::size_t>{0, 1024});
  CHECK(fixed_size_bounds(512, 256) == std::vector<std::size_t>{0, 256, 512});
}
