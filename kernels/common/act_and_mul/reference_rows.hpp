// kernels/common/act_and_mul/reference_rows.hpp: the float64 reference of an act_and_mul op computed in blocks
// of rows, the blocks of a large output on threads of their own. Host-only (g++ and nvcc).
//
// A benchmark's host workers prepare one group each; the largest act_and_mul groups (8192 x 28672 outputs, an
// erfc or a tanh per element) took one worker seconds, and the GPU waited for them (docs/scale.md). Each row of
// the reference depends on its own input row alone, so blocks of rows computed apart and put side by side are
// bitwise what one pass gives (tests/kernels/common/act_and_mul/reference_rows_test.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace ktune::ops::act_and_mul {

/// Outputs of at least this many elements are split over threads.
inline constexpr std::int64_t parallel_reference_elements = std::int64_t{1} << 24;

/// The [tokens, d] reference, row-major: `rows(first, count)` returns rows [first, first + count) (count x d
/// values). On up to eight threads from `parallel_from` elements (and as many as the host has), else in one call.
template <class Rows>
std::vector<double> reference_in_row_blocks(std::int64_t tokens, std::int64_t d, Rows&& rows,
                                            std::int64_t parallel_from = parallel_reference_elements) {
  const std::int64_t hw = std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  const std::int64_t blocks = tokens * d < parallel_from ? 1 : std::min<std::int64_t>({8, hw, tokens});
  if (blocks <= 1) return rows(0, tokens);
  std::vector<double> out(static_cast<std::size_t>(tokens * d));
  const std::int64_t per = (tokens + blocks - 1) / blocks;
  auto block = [&](std::int64_t b) {
    const std::int64_t first = b * per, count = std::min(per, tokens - first);
    if (count <= 0) return;
    const std::vector<double> part = rows(first, count);
    std::memcpy(out.data() + first * d, part.data(), part.size() * sizeof(double));
  };
  std::vector<std::thread> helpers;
  for (std::int64_t b = 1; b < blocks; ++b) helpers.emplace_back(block, b);
  block(0);
  for (std::thread& t : helpers) t.join();
  return out;
}

}  // namespace ktune::ops::act_and_mul
