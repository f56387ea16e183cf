// ktune/overlap.hpp: whether two strided tensors share an element, decided by element (the check the
// PyTorch binding of examples/02_pytorch_extension and the RMS norms' validate() make). Every answer of
// the exact test is compared with the byte sets themselves, on the layouts a serving engine passes and
// on random ones.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <kernels/common/norm_rows/checks.hpp>
#include <ktune/overlap.hpp>

namespace {
using ktune::ByteRows;

/// A tensor as PyTorch describes it: element address, element size, sizes and strides in elements.
struct View {
  std::int64_t address = 0, element_size = 2;
  std::vector<std::int64_t> sizes, strides;
};

/// `buffer` viewed as [rows, cols] (row stride `row_stride`), from element `offset`: buf[r0:, c0:c0+cols].
View slice(std::int64_t base, std::int64_t element_size, std::int64_t offset, std::int64_t rows, std::int64_t cols,
           std::int64_t row_stride) {
  return View{base + offset * element_size, element_size, {rows, cols}, {row_stride, 1}};
}

View transposed(View v) {
  std::swap(v.sizes[0], v.sizes[1]);
  std::swap(v.strides[0], v.strides[1]);
  return v;
}

bool may_share(const View& a, const View& b) {
  return ktune::may_share_an_element(a.address, a.element_size, static_cast<int>(a.sizes.size()), a.sizes.data(),
                                     a.strides.data(), b.address, b.element_size, static_cast<int>(b.sizes.size()),
                                     b.sizes.data(), b.strides.data());
}

std::set<std::int64_t> bytes_of(const ByteRows& t) {
  std::set<std::int64_t> s;
  if (t.empty()) return s;
  for (std::int64_t i = 0; i < t.rows; ++i)
    for (std::int64_t j = 0; j < t.length; ++j) s.insert(t.base + i * t.stride + j);
  return s;
}

std::set<std::int64_t> bytes_of(const View& v) {
  std::set<std::int64_t> s;
  const std::size_t rank = v.sizes.size();
  for (std::int64_t n : v.sizes)
    if (n == 0) return s;
  std::vector<std::int64_t> index(rank, 0);
  for (;;) {
    std::int64_t at = v.address;
    for (std::size_t d = 0; d < rank; ++d) at += index[d] * v.strides[d] * v.element_size;
    for (std::int64_t j = 0; j < v.element_size; ++j) s.insert(at + j);
    std::size_t d = rank;
    while (d > 0 && ++index[d - 1] == v.sizes[d - 1]) index[--d] = 0;
    if (d == 0) return s;
  }
}

bool intersect(const std::set<std::int64_t>& a, const std::set<std::int64_t>& b) {
  for (std::int64_t x : a)
    if (b.count(x)) return true;
  return false;
}

constexpr std::int64_t base = 1 << 20;  // a buffer's address (bf16 elements unless said otherwise)

TEST(Overlap, InterleavedSlicesOfOnePackedQkvShareNothing) {
  // SGLang: qkv [T, (Hq + 2 Hkv) D]; q, k, v = qkv.split([Hq D, Hkv D, Hkv D], dim=-1). LLaMA-3-8B.
  const std::int64_t T = 8192, D = 128, hq = 32, hkv = 8, w = (hq + 2 * hkv) * D;
  const View q = slice(base, 2, 0, T, hq * D, w), k = slice(base, 2, hq * D, T, hkv * D, w);
  const View v = slice(base, 2, (hq + hkv) * D, T, hkv * D, w);
  EXPECT_FALSE(may_share(q, k));
  EXPECT_FALSE(may_share(k, q));
  EXPECT_FALSE(may_share(q, v));
  EXPECT_FALSE(may_share(k, v));
  // The same as 3-D views [T, heads, D] (qkv.view(T, Hq + 2 Hkv, D).split(...) along the heads).
  const View q3{base, 2, {T, hq, D}, {w, D, 1}}, k3{base + hq * D * 2, 2, {T, hkv, D}, {w, D, 1}};
  EXPECT_FALSE(may_share(q3, k3));
  // k one element, or one head, to the left: it takes q's last element (head) of every token.
  EXPECT_TRUE(may_share(q, slice(base, 2, hq * D - 1, T, hkv * D, w)));
  EXPECT_TRUE(may_share(q3, View{base + (hq - 1) * D * 2, 2, {T, hkv, D}, {w, D, 1}}));
  // k one element to the right of its place: it leaves a gap after q and takes v's first element.
  EXPECT_FALSE(may_share(q, slice(base, 2, hq * D + 1, T, hkv * D, w)));
  EXPECT_TRUE(may_share(v, slice(base, 2, hq * D + 1, T, hkv * D, w)));
  // One byte of difference counts: a view one byte into q's last element (element sizes of one byte).
  EXPECT_TRUE(may_share(q, View{base + hq * D * 2 - 1, 1, {T, 2 * hkv * D}, {2 * w, 1}}));
}

TEST(Overlap, HalvesAndOtherStridesInterleaveWithoutSharing) {
  const std::int64_t T = 1000, h = 4096;
  // The halves of a [T, 2h] buffer: fused_add_rmsnorm's input and residual in one allocation.
  EXPECT_FALSE(may_share(slice(base, 2, 0, T, h, 2 * h), slice(base, 2, h, T, h, 2 * h)));
  EXPECT_TRUE(may_share(slice(base, 2, 0, T, h, 2 * h), slice(base, 2, h - 1, T, h, 2 * h)));
  // Different row strides whose rows interleave: a = buf[:, :h] of rows of 4h; b = rows of 2h from h on,
  // i.e. [h, 2h) and [3h, 4h) of buf's rows. Their extents intersect; they share nothing.
  const View a = slice(base, 2, 0, T, h, 4 * h), b = slice(base, 2, h, T, h, 2 * h);
  EXPECT_FALSE(may_share(a, b));
  EXPECT_FALSE(may_share(b, a));
  EXPECT_TRUE(may_share(a, slice(base, 2, h - 1, T, h, 2 * h)));   // b's row 0 takes a's element h - 1
  // b moved to start at a row of a's past the first: only its last rows can meet a's.
  EXPECT_TRUE(may_share(a, slice(base, 2, 2 * h * (T - 1) - 1, T, h, 2 * h)));
  EXPECT_FALSE(may_share(a, slice(base, 2, 4 * h * T, T, h, 2 * h)));  // after a's extent: the fast path
  // Every other row against the rows between them (x[::2] and x[1::2]).
  EXPECT_FALSE(may_share(slice(base, 2, 0, T, h, 2 * h), slice(base, 2, h, T, h, 2 * h)));
  // The RMS norms' own check (kernels/common/norm_rows/checks.hpp) answers the same, for rows of both.
  namespace nr = ktune::ops::norm_rows;
  auto* p = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(base));
  auto* p_h = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(base + 2 * h));
  auto* p_h1 = reinterpret_cast<const void*>(static_cast<std::uintptr_t>(base + 2 * (h - 1)));
  EXPECT_FALSE(nr::rows_overlap(p, 4 * h, p_h, 2 * h, T, h, 2));
  EXPECT_TRUE(nr::rows_overlap(p, 4 * h, p_h1, 2 * h, T, h, 2));
  EXPECT_FALSE(nr::rows_overlap(p, 2 * h, p_h, 2 * h, T, h, 2));
  EXPECT_TRUE(nr::rows_overlap(p, 2 * h, p_h1, 2 * h, T, h, 2));
  EXPECT_TRUE(nr::rows_overlap(p, 2 * h, p, h, T, h, 2));
}

TEST(Overlap, TransposedPairs) {
  // buf [64, 64] fp32. Transposes of disjoint column blocks share nothing; of overlapping ones they do.
  const std::int64_t n = 64;
  const View left = transposed(slice(base, 4, 0, n, 32, n)), right = transposed(slice(base, 4, 32, n, 32, n));
  EXPECT_FALSE(may_share(left, right));
  EXPECT_TRUE(may_share(left, transposed(slice(base, 4, 31, n, 32, n))));
  // A tensor and its own transpose, and a transposed view against a row view of the same rows.
  const View whole = slice(base, 4, 0, n, n, n);
  EXPECT_TRUE(may_share(whole, transposed(whole)));
  EXPECT_TRUE(may_share(transposed(slice(base, 4, 0, n / 2, n, n)), slice(base, 4, n * (n / 2 - 1), 1, n, n)));
  EXPECT_FALSE(may_share(transposed(slice(base, 4, 0, n / 2, n, n)), slice(base, 4, n * (n / 2), n / 2, n, n)));
  // A transposed contiguous tensor is one run: it has row form.
  ByteRows r;
  ASSERT_TRUE(ktune::byte_rows_of(whole.address, 4, 2, transposed(whole).sizes.data(), transposed(whole).strides.data(), r));
  EXPECT_EQ(r.rows, 1);
  EXPECT_EQ(r.length, n * n * 4);
}

TEST(Overlap, ElementSizesEmptyTensorsAndBroadcasts) {
  // merge_state_v2: bf16 values and float32 LSEs; adjacent, then overlapping by one byte.
  const View v{base, 2, {4, 8, 64}, {8 * 64, 64, 1}};
  const std::int64_t end = base + 4 * 8 * 64 * 2;
  EXPECT_FALSE(may_share(v, View{end, 4, {4, 8}, {8, 1}}));
  EXPECT_TRUE(may_share(v, View{end - 1, 1, {4}, {1}}));
  // An empty tensor shares nothing, whatever its address.
  EXPECT_FALSE(may_share(v, View{base, 2, {0, 64}, {64, 1}}));
  // A broadcast dimension (stride 0) repeats the same elements: a row repeated shares that row only.
  const View row_repeated{base + 3 * 8 * 64 * 2, 2, {16, 64}, {0, 1}};
  EXPECT_TRUE(may_share(v, row_repeated));
  EXPECT_FALSE(may_share(View{base, 2, {3, 8 * 64}, {8 * 64, 1}}, row_repeated));
}

TEST(Overlap, LayoutsWithoutRowFormFallBackToTheirExtents) {
  // x[::2, ::2] has three levels of stride: no row form; the answer is then the extents' (conservative).
  const View sparse{base, 2, {8, 8}, {32, 2}};
  ByteRows r;
  EXPECT_FALSE(ktune::byte_rows_of(sparse.address, 2, 2, sparse.sizes.data(), sparse.strides.data(), r));
  EXPECT_TRUE(may_share(sparse, View{base + 2, 2, {8, 8}, {32, 2}}));   // shares nothing, but may
  EXPECT_FALSE(may_share(sparse, View{base + 8 * 32 * 2, 2, {4}, {1}}));  // beyond its extent
}

TEST(Overlap, ExactOnRandomRowSets) {
  std::mt19937_64 rng(20240611);
  int shared = 0;
  for (int it = 0; it < 30000; ++it) {
    auto draw = [&] {
      ByteRows t;
      t.base = static_cast<std::int64_t>(rng() % 300);
      t.length = 1 + static_cast<std::int64_t>(rng() % 12);
      t.rows = 1 + static_cast<std::int64_t>(rng() % 12);
      t.stride = rng() % 3 == 0 ? 1 + static_cast<std::int64_t>(rng() % 10) : t.length + static_cast<std::int64_t>(rng() % 40);
      return t;
    };
    const ByteRows a = draw(), b = draw();
    const bool want = intersect(bytes_of(a), bytes_of(b));
    shared += want;
    ASSERT_EQ(ktune::share_a_byte(a, b), want) << "a = {" << a.base << ", " << a.length << ", " << a.stride << ", "
                                               << a.rows << "}, b = {" << b.base << ", " << b.length << ", "
                                               << b.stride << ", " << b.rows << "}";
  }
  EXPECT_GT(shared, 3000);
  EXPECT_LT(shared, 27000);
  // Larger sets, b placed near a, so that the runs' windows, not the extents, decide.
  for (int it = 0; it < 800; ++it) {
    ByteRows a, b;
    a.base = 50000;
    a.length = 1 + static_cast<std::int64_t>(rng() % 50);
    a.rows = 1 + static_cast<std::int64_t>(rng() % 300);
    a.stride = a.length + static_cast<std::int64_t>(rng() % 200);
    b.length = 1 + static_cast<std::int64_t>(rng() % 50);
    b.rows = 1 + static_cast<std::int64_t>(rng() % 300);
    b.stride = b.length + static_cast<std::int64_t>(rng() % 200);
    b.base = a.base + static_cast<std::int64_t>(rng() % (3 * a.stride)) - static_cast<std::int64_t>(rng() % 100);
    ASSERT_EQ(ktune::share_a_byte(a, b), intersect(bytes_of(a), bytes_of(b)))
        << "a = {" << a.base << ", " << a.length << ", " << a.stride << ", " << a.rows << "}, b = {" << b.base << ", "
        << b.length << ", " << b.stride << ", " << b.rows << "}";
  }
}

TEST(Overlap, ExactOnRandomStridedTensors) {
  // Random views of rank 1-3, strides of either sign and zero: byte_rows_of is the view's byte set whenever
  // it answers, and may_share_an_element never misses a shared byte, and is exact when both have row form.
  std::mt19937_64 rng(7);
  int answered = 0;
  for (int it = 0; it < 40000; ++it) {
    auto draw = [&](std::int64_t spread, bool signs) {
      View v;
      v.element_size = std::int64_t{1} << (rng() % 3);
      v.address = 1000 + static_cast<std::int64_t>(rng() % spread) + (signs ? 200 : 0);
      const int rank = 1 + static_cast<int>(rng() % 3);
      for (int d = 0; d < rank; ++d) {
        v.sizes.push_back(static_cast<std::int64_t>(rng() % 4) + (rng() % 5 == 0 ? 0 : 1));
        v.strides.push_back(static_cast<std::int64_t>(rng() % 13) - (signs && rng() % 6 == 0 ? 6 : 0));
      }
      return v;
    };
    const View a = draw(40, true), b = draw(60, false);
    const auto sa = bytes_of(a), sb = bytes_of(b);
    ByteRows r;
    if (ktune::byte_rows_of(a.address, a.element_size, static_cast<int>(a.sizes.size()), a.sizes.data(),
                            a.strides.data(), r)) {
      ++answered;
      ASSERT_EQ(bytes_of(r), sa) << "iteration " << it;
    }
    const bool want = intersect(sa, sb);
    const bool got = may_share(a, b);
    ByteRows ra, rb;
    const bool exact = ktune::byte_rows_of(a.address, a.element_size, static_cast<int>(a.sizes.size()), a.sizes.data(),
                                           a.strides.data(), ra) &&
                       ktune::byte_rows_of(b.address, b.element_size, static_cast<int>(b.sizes.size()), b.sizes.data(),
                                           b.strides.data(), rb);
    ASSERT_TRUE(got || !want) << "missed a shared byte, iteration " << it;
    if (exact) {
      ASSERT_EQ(got, want) << "iteration " << it;
    }
  }
  EXPECT_GT(answered, 20000);
}

TEST(Overlap, LargeTensorsAnswerAtOnce) {
  // 2^24 rows a megabyte apart: the answer comes from the extents and Euclid's steps, not from rows.
  const std::int64_t rows = std::int64_t{1} << 24;
  ByteRows a{0, 64, std::int64_t{1} << 20, rows};
  // b drifts 100 bytes a row against a's period: its run k starts (64 + 100 k) mod 2^20 into a period, which
  // reaches 0 (25 k = -16 mod 2^18) at a k below 2^18. 128 bytes a row would never come within 64 of 0.
  ByteRows b{64, 64, (std::int64_t{1} << 20) + 100, rows};
  EXPECT_TRUE(ktune::share_a_byte(a, b));
  b.stride = (std::int64_t{1} << 20) + 128;
  EXPECT_FALSE(ktune::share_a_byte(a, b));
  ByteRows c{64, 64, std::int64_t{1} << 21, rows};  // a's rows and c's never meet: c sits 64 bytes in
  EXPECT_FALSE(ktune::share_a_byte(a, c));
  ByteRows d{(std::int64_t{1} << 20) * 3 + 32, 16, (std::int64_t{1} << 20) * 7, rows};
  EXPECT_TRUE(ktune::share_a_byte(a, d));
}
}  // namespace
