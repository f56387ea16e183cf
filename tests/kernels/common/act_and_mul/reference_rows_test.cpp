// The act_and_mul ops' float64 references computed in blocks of rows on several threads
// (kernels/common/act_and_mul/reference_rows.hpp) are bitwise the one-pass references, whatever the split.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include <ktune/random.hpp>

#include "kernels/common/act_and_mul/reference_rows.hpp"
#include "kernels/gelu_and_mul/reference.hpp"
#include "kernels/gelu_tanh_and_mul/reference.hpp"
#include "kernels/silu_and_mul/reference.hpp"

namespace {

using namespace ktune::ops;

template <class Reference>
void expect_blocks_equal_one_pass(Reference reference, std::int64_t tokens, std::int64_t d) {
  std::vector<float> in(static_cast<std::size_t>(tokens * 2 * d));
  for (std::size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(static_cast<double>(ktune::mix64(i + 1) >> 11) * 0x1.0p-53 * 16.0 - 8.0);
  const std::vector<double> whole = reference(in.data(), tokens, d, 2 * d);
  // From one element on: every output in blocks, tokens not a multiple of the blocks.
  const std::vector<double> blocks = act_and_mul::reference_in_row_blocks(
      tokens, d, [&](std::int64_t first, std::int64_t rows) { return reference(in.data() + first * 2 * d, rows, d, 2 * d); },
      1);
  ASSERT_EQ(blocks.size(), whole.size());
  EXPECT_EQ(std::memcmp(blocks.data(), whole.data(), whole.size() * sizeof(double)), 0);
}

TEST(ActAndMulReferenceRows, BlocksOfRowsOnThreadsAreBitwiseTheOnePassReference) {
  for (std::int64_t tokens : {1, 7, 13, 64}) {
    expect_blocks_equal_one_pass([](auto... a) { return gelu_and_mul::reference<float>(a...); }, tokens, 96);
    expect_blocks_equal_one_pass([](auto... a) { return gelu_tanh_and_mul::reference<float>(a...); }, tokens, 96);
    expect_blocks_equal_one_pass([](auto... a) { return silu_and_mul::reference<float>(a...); }, tokens, 96);
  }
}

TEST(ActAndMulReferenceRows, ASmallOutputIsOneCall) {
  int calls = 0;
  const std::vector<double> out = act_and_mul::reference_in_row_blocks(4, 8, [&](std::int64_t first, std::int64_t rows) {
    ++calls;
    return std::vector<double>(static_cast<std::size_t>(rows * 8), static_cast<double>(first));
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(out.size(), 32u);
}

}  // namespace
