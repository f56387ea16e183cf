// The host side of a run prepared ahead (bench/prefetch.hpp, bench/host_inputs.hpp): groups come back
// as the work computes them, in any order of readiness, never more in flight than the look-ahead and
// the memory budget allow, skipped ones dropped, unexpected ones computed in line.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "host_inputs.hpp"
#include "prefetch.hpp"

namespace ktune::bench {
namespace {

HostRequest request(int tokens, bool reference = true) {
  HostRequest r;
  r.op = "toy";
  r.dtype = DType::f32;
  r.shape.dims = {{"tokens", tokens}};
  r.seed = 7;
  r.reference = reference;
  return r;
}

/// Requests of these token counts, each costing its tokens.
std::vector<HostRequest> costing_their_tokens(std::initializer_list<int> tokens) {
  std::vector<HostRequest> out;
  for (int t : tokens) {
    out.push_back(request(t));
    out.back().cost = t;
  }
  return out;
}

/// A group whose one input holds `tokens` bytes, tagged with the computing thread.
struct CountingWork {
  // running, most_running: calls on the workers only; a group take() computes itself (in line, on the
  // measuring thread) is outside the workers' look-ahead, and may overlap it on a loaded machine.
  std::atomic<int> calls{0}, running{0}, most_running{0};
  std::mutex m;
  std::condition_variable cv;
  bool open = true;  // false: calls block until released
  std::thread::id main = std::this_thread::get_id();
  std::atomic<int> off_main{0};

  HostGroup operator()(const HostRequest& r) {
    ++calls;
    const bool worker = std::this_thread::get_id() != main;
    if (worker) {
      ++off_main;
      const int now = ++running;
      for (int seen = most_running; now > seen && !most_running.compare_exchange_weak(seen, now);) {}
    }
    {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return open; });
    }
    if (worker) --running;
    if (r.shape.at("tokens") < 0) throw std::runtime_error("negative tokens");
    HostGroup g;
    g.inputs.assign(1, std::vector<std::byte>(static_cast<std::size_t>(r.shape.at("tokens"))));
    g.bytes_moved = static_cast<double>(r.shape.at("tokens"));
    return g;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(m);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(HostPrefetcher, WithoutThreadsEverythingIsComputedInLine) {
  CountingWork w;
  HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 0, 4, 1 << 20);
  p.expect({request(1), request(2)});
  EXPECT_EQ(p.take(request(1)).bytes_moved, 1);
  EXPECT_EQ(p.take(request(2)).bytes_moved, 2);
  EXPECT_EQ(w.off_main, 0);
  EXPECT_EQ(p.stats().in_line, 2u);
  EXPECT_EQ(p.stats().ahead, 0u);
}

TEST(HostPrefetcher, ExpectedGroupsArePreparedByTheWorkersAndTakenInOrder) {
  CountingWork w;
  HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 3, 8, 1 << 20);
  std::vector<HostRequest> order;
  for (int t = 1; t <= 10; ++t) order.push_back(request(t));
  p.expect(order);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the GPU timing an earlier group
  for (int t = 1; t <= 10; ++t) {
    const HostGroup g = p.take(request(t));
    ASSERT_TRUE(g.error.empty());
    EXPECT_EQ(g.bytes_moved, t);
    ASSERT_EQ(g.inputs.size(), 1u);
    EXPECT_EQ(g.inputs[0].size(), static_cast<std::size_t>(t));
  }
  const HostPrefetcher::Stats s = p.stats();
  EXPECT_EQ(s.ahead + s.in_line, 10u);
  EXPECT_GE(s.ahead, 8u);  // the look-ahead's worth was ready before the first take
  EXPECT_GE(w.off_main, 8);
  EXPECT_EQ(w.calls, 10);  // nothing computed twice
  EXPECT_EQ(s.dropped, 0u);
}

// The stage hook (GpuMeasurer's pinned copy): each take() has a worker stage the group taken next, whether it
// was prepared already or is still being prepared (then the worker preparing it stages it); take() returns a
// group only once its staging is done. The first group taken was never the next one: it is not staged.
TEST(HostPrefetcher, EachTakeHasTheNextGroupStagedBeforeItIsTaken) {
  CountingWork w;
  std::atomic<int> staged{0};
  std::thread::id main = std::this_thread::get_id();
  std::atomic<int> on_main{0};
  auto stage = [&](HostGroup& g) {
    if (std::this_thread::get_id() == main) ++on_main;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the copy takes a while
    static const char pinned[1] = {0};
    g.staged.base = pinned;
    g.staged.hold = std::make_shared<int>(static_cast<int>(g.bytes_moved));
    ++staged;
  };
  HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 3, 8, 1 << 20, stage);
  std::vector<HostRequest> order;
  for (int t = 1; t <= 6; ++t) order.push_back(request(t));
  p.expect(order);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int t = 1; t <= 6; ++t) {
    const HostGroup g = p.take(request(t));
    EXPECT_EQ(g.bytes_moved, t);
    EXPECT_EQ(g.staged.base != nullptr, t > 1) << t;
    if (t > 1) EXPECT_EQ(*std::static_pointer_cast<int>(g.staged.hold), t);
  }
  EXPECT_EQ(p.stats().staged, 5u);
  EXPECT_EQ(on_main, 0);  // staged off the measuring thread
  EXPECT_LE(staged, 6);   // and only the group taken next (the last take's next is none)
  // A group still being prepared when it was asked for is staged by its worker once done.
  CountingWork slow;
  slow.open = false;
  HostPrefetcher q([&](const HostRequest& r) { return slow(r); }, 2, 8, 1 << 20, stage);
  q.expect({request(1), request(2)});
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    slow.release();
  });
  EXPECT_EQ(q.take(request(1)).staged.base, nullptr);
  EXPECT_NE(q.take(request(2)).staged.base, nullptr);
  release.join();
}

// One worker: the group taken next first, then the costliest within the look-ahead.
TEST(HostPrefetcher, TheCostliestGroupsWithinTheLookAheadStartFirst) {
  std::mutex m;
  std::vector<int> started;
  std::condition_variable cv;
  bool open = false;
  auto work = [&](const HostRequest& r) {
    std::unique_lock<std::mutex> lock(m);
    started.push_back(r.shape.at("tokens"));
    cv.wait(lock, [&] { return open; });
    HostGroup g;
    g.bytes_moved = static_cast<double>(r.shape.at("tokens"));
    return g;
  };
  HostPrefetcher p(work, 1, 8, 1 << 20);
  p.expect(costing_their_tokens({1, 2, 10, 3, 5, 4}));
  {
    std::unique_lock<std::mutex> lock(m);
    open = true;
  }
  cv.notify_all();
  for (int waited = 0; waited < 5000; ++waited) {  // every group prepared before any is taken
    {
      std::lock_guard<std::mutex> lock(m);
      if (started.size() == 6) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  {
    std::lock_guard<std::mutex> lock(m);
    EXPECT_EQ(started, (std::vector<int>{1, 10, 5, 4, 3, 2}));  // the head, then by cost
  }
  for (int t : {1, 2, 10, 3, 5, 4}) EXPECT_EQ(p.take(request(t)).bytes_moved, t);
}

// Four workers: the next two groups in order, then three may start far groups by cost while the fourth keeps
// to the order. With every worker on a far group, the groups in between found none free when their turn came
// and were computed in line.
TEST(HostPrefetcher, AQuarterOfTheWorkersKeepToTheOrder) {
  std::mutex m;
  std::vector<int> started;
  std::condition_variable cv;
  bool open = false;
  auto work = [&](const HostRequest& r) {
    const int t = r.shape.at("tokens");
    std::unique_lock<std::mutex> lock(m);
    started.push_back(t);
    cv.notify_all();
    if (t >= 50) cv.wait(lock, [&] { return open; });  // the far, costly groups hold their worker
    return HostGroup{};
  };
  HostPrefetcher p(work, 4, 16, 1 << 20);
  p.expect(costing_their_tokens({1, 2, 3, 4, 50, 60, 70, 80}));
  bool all_started = false;
  {
    std::unique_lock<std::mutex> lock(m);
    all_started = cv.wait_for(lock, std::chrono::seconds(5), [&] { return started.size() == 8; });
    open = true;  // before any assertion: the workers must finish for the prefetcher to stop
  }
  cv.notify_all();
  ASSERT_TRUE(all_started) << "every worker on a far group: 2, 3 and 4 never started";
  // 80, 70 and 60 held three workers; the fourth took 2, 3 and 4 in order before 50.
  auto at = [&](int t) { return std::find(started.begin(), started.end(), t) - started.begin(); };
  EXPECT_LT(at(4), at(50));
  for (int t : {1, 2, 3, 4, 50, 60, 70, 80}) EXPECT_TRUE(p.take(request(t)).error.empty());
  EXPECT_EQ(p.stats().in_line, 0u);
}

// Over the budget no group starts but the next in order (one, with one worker): the budget is for what the
// workers prepare far ahead.
// A group computed in line counts as waited for, named as such.
TEST(HostPrefetcher, TheGroupTakenNextStartsOverTheBudgetAndInLineTimeCountsAsWaited) {
  CountingWork w;
  HostPrefetcher p([&](const HostRequest& r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return w(r);
  }, 1, 16, 100);
  std::vector<HostRequest> order{request(1), request(2), request(200)};
  order[2].cost = 100;  // started before 2: the costliest
  p.expect(order);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(w.calls, 2);  // 1, then 200, which holds the budget: 2 waits
  EXPECT_EQ(p.take(request(1)).bytes_moved, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the GPU timing 1
  EXPECT_EQ(p.take(request(2)).bytes_moved, 2);  // the head now: started though 200 holds the budget
  EXPECT_EQ(p.take(request(200)).bytes_moved, 200);
  EXPECT_EQ(p.stats().in_line, 0u);
  EXPECT_EQ(p.take(request(99)).bytes_moved, 99);  // not expected: in line
  const HostPrefetcher::Stats s = p.stats();
  EXPECT_EQ(s.in_line, 1u);
  EXPECT_GE(s.wait_s, 0.015);
  bool named = false;
  for (const auto& [seconds, what] : s.longest_waits) named = named || what.find("(in line)") != std::string::npos;
  EXPECT_TRUE(named);
}

TEST(HostPrefetcher, SkippedGroupsAreDroppedAndUnexpectedOnesComputedWithoutDroppingAny) {
  CountingWork w;
  HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 2, 8, 1 << 20);
  p.expect({request(1), request(2), request(3), request(4)});
  EXPECT_EQ(p.take(request(99)).bytes_moved, 99);  // not expected: in line, the queue stays
  EXPECT_EQ(p.stats().dropped, 0u);
  EXPECT_EQ(p.take(request(3)).bytes_moved, 3);  // 1 and 2 were skipped by the run
  EXPECT_EQ(p.stats().dropped, 2u);
  EXPECT_EQ(p.take(request(4)).bytes_moved, 4);
  // Inputs only and inputs with the reference are different groups.
  p.expect({request(5, true)});
  EXPECT_EQ(p.take(request(5, false)).bytes_moved, 5);
  EXPECT_EQ(p.stats().dropped, 2u);
}

TEST(HostPrefetcher, NeverRunsMoreThanTheLookAheadAtOnce) {
  CountingWork w;
  w.open = false;
  HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 6, 2, 1 << 20);
  std::vector<HostRequest> order;
  for (int t = 1; t <= 8; ++t) order.push_back(request(t));
  p.expect(order);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(w.running, 2);  // six threads, a look-ahead of two
  w.release();
  for (int t = 1; t <= 8; ++t) EXPECT_EQ(p.take(request(t)).bytes_moved, t);
  EXPECT_LE(w.most_running, 2);  // on the workers; take() may compute a group not yet started in line
}

TEST(HostPrefetcher, StopsPreparingWhilePreparedGroupsHoldTheBudget) {
  CountingWork w;
  HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 4, 16, 100);
  std::vector<HostRequest> order;
  for (int t = 0; t < 6; ++t) order.push_back(request(150));  // each one alone exceeds the budget
  order[5] = request(151);
  p.expect(order);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Every worker may start while nothing is held; once one group is held, none starts.
  EXPECT_LE(w.calls, 4);
  EXPECT_GE(w.calls, 1);
  EXPECT_EQ(p.take(request(151)).bytes_moved, 151);  // the five before it dropped, memory freed
  EXPECT_EQ(p.stats().dropped, 5u);
}

TEST(HostPrefetcher, AFailingGroupBecomesAnErrorNotACrash) {
  CountingWork w;
  HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 2, 4, 1 << 20);
  p.expect({request(-1), request(2)});
  const HostGroup bad = p.take(request(-1));
  EXPECT_NE(bad.error.find("negative tokens"), std::string::npos);
  EXPECT_NE(bad.error.find("toy/fp32/tokens=-1"), std::string::npos);
  EXPECT_EQ(p.take(request(2)).bytes_moved, 2);
}

TEST(HostPrefetcher, StopsWithWorkStillQueuedOrRunning) {
  CountingWork w;
  w.open = false;
  {
    HostPrefetcher p([&](const HostRequest& r) { return w(r); }, 2, 4, 1 << 20);
    p.expect({request(1), request(2), request(3)});
    // Both workers in a call before the prefetcher stops (a fixed 50 ms was too short on a loaded machine).
    for (int waited = 0; w.calls < 2 && waited < 10000; ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::thread release([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      w.release();
    });
    release.detach();
  }  // the destructor waits for the two running calls and starts no other
  EXPECT_EQ(w.calls, 2);
}

TEST(HostPrefetcher, DiscardedGroupsAreFreedWithAndWithoutWorkers) {
  for (unsigned threads : {0u, 2u}) {
    CountingWork w;
    HostPrefetcher p([&](const HostRequest& r) { return w(r); }, threads, 4, 1 << 20);
    p.expect({request(64), request(65)});
    for (int i = 0; i < 50; ++i) {
      HostGroup g;
      g.inputs.assign(3, std::vector<std::byte>(1 << 16));
      p.discard(std::move(g));
    }
    EXPECT_EQ(p.take(request(64)).bytes_moved, 64);  // freeing never stands in the way of preparing
    EXPECT_EQ(p.take(request(65)).bytes_moved, 65);
  }  // and whatever is left to free goes with the prefetcher
}

// ---- prepare_host ----------------------------------------------------------------------------------

/// out[i] = scale * in[i]^2, one fp32 input and one output; `bytes_per_call` what the spec says.
class SquareHarness final : public Harness {
 public:
  double scale = 1;
  bool throw_in_reference = false;
  const char* op() const override { return "square"; }
  std::vector<TensorInfo> tensors(const Shape& shape, DType) const override {
    const auto n = static_cast<std::size_t>(shape.at("n"));
    return {{"in", n, 4, Access::read}, {"out", n, 4, Access::write}};
  }
  void fill_inputs(const Shape& shape, DType, std::uint64_t seed, HostTensors& host) const override {
    auto* p = reinterpret_cast<float*>(host[0].data());
    for (std::int64_t i = 0; i < shape.at("n"); ++i) p[i] = 0.5f + static_cast<float>((seed + i) % 7) / 8;
  }
  std::vector<std::vector<double>> reference(const Shape& shape, DType, const HostTensors& in) const override {
    if (throw_in_reference) throw std::runtime_error("reference exploded");
    const auto* p = reinterpret_cast<const float*>(in[0].data());
    std::vector<double> out(static_cast<std::size_t>(shape.at("n")));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = scale * double(p[i]) * double(p[i]);
    return {out};
  }
  std::shared_ptr<const void> make_args(const Shape&, DType, const std::vector<void*>&) const override { return nullptr; }
};

/// The spec of SquareHarness; `in_extent` lets a test make it disagree with the harness.
Spec square_spec(const std::string& in_extent = "n") {
  return parse_spec_text(R"({"op": "square", "dims": {"n": [64]}, "tokens_dim": "n", "width_dim": "n",
    "dtypes": ["fp32"], "tolerance": {"fp32": {"rel_l2": 1e-5, "atol": 1e-5, "rtol": 1e-5}},
    "tensors": [{"name": "in", "shape": [")" + in_extent + R"("], "dtype": "element", "access": "read"},
                {"name": "out", "shape": ["n"], "dtype": "element", "access": "write"}]})",
                         "square spec");
}

HostRequest square(std::int64_t n, bool reference, bool wide = false) {
  HostRequest r;
  r.op = "square";
  r.dtype = DType::f32;
  r.shape.dims = {{"n", n}};
  r.seed = 3;
  r.reference = reference;
  r.wide = wide;
  return r;
}

TEST(PrepareHost, DrawsTheInputsAndComputesTheReferenceOnlyWhenAsked) {
  SquareHarness h;
  const Spec spec = square_spec();
  const HostGroup with = prepare_host(h, spec, square(64, true));
  ASSERT_TRUE(with.error.empty()) << with.error;
  EXPECT_EQ(with.bytes_moved, 512);
  ASSERT_EQ(with.reference.size(), 1u);
  EXPECT_EQ(with.reference[0].size(), 64u);
  EXPECT_EQ(with.inputs[1].size(), 256u);  // the output sized, for the layout
  EXPECT_EQ(with.held_bytes(), 2 * 256u + 64 * sizeof(double));
  const HostGroup without = prepare_host(h, spec, square(64, false));
  EXPECT_TRUE(without.reference.empty());
  EXPECT_EQ(without.inputs, with.inputs);  // the same draw: rounds see the gate's inputs
}

TEST(PrepareHost, TheTensorsAloneWhenTheGpuPreparesTheGroup) {
  SquareHarness h;
  HostRequest r = square(64, false);
  r.inputs = false;  // a group a DevicePreparation draws and computes
  const HostGroup g = prepare_host(h, square_spec(), r);
  ASSERT_TRUE(g.error.empty()) << g.error;
  EXPECT_EQ(g.tensors.size(), 2u);
  EXPECT_EQ(g.bytes_moved, 512);  // still checked against the spec
  EXPECT_TRUE(g.inputs.empty());
  EXPECT_TRUE(g.reference.empty());
  EXPECT_EQ(g.held_bytes(), 0u);
  EXPECT_FALSE(r == square(64, false));  // not the host-drawn group of the same shape
  EXPECT_NE(r.describe().find("(on the GPU)"), std::string::npos);
}

// The benchmark's check of a group the GPU drew and computed (bench/measure_group.cu), on the host's data
// and copies of it altered the ways a wrong device preparation would.
TEST(PreparationDisagreement, InputsMustBeBitwiseAndReferencesWithinTwoLibmsLastBits) {
  SquareHarness h;
  const HostGroup g = prepare_host(h, square_spec(), square(64, true));
  ASSERT_TRUE(g.error.empty()) << g.error;
  auto check = [&](const HostTensors& in, const std::vector<std::vector<double>>& ref) {
    return preparation_disagreement(g.tensors, g.inputs, g.reference, in, ref);
  };
  HostTensors same_in = g.inputs;
  same_in[1].assign(7, std::byte{1});  // a write-only tensor is never compared: the GPU leaves it alone
  EXPECT_EQ(check(same_in, g.reference), "");

  std::vector<std::vector<double>> close = g.reference;
  close[0][5] *= 1 + 4e-16;  // a libm's last bits
  EXPECT_EQ(check(g.inputs, close), "");

  // Terms that cancel: a result far below the output's scale may differ by the terms' last bits, not its own.
  double squares = 0;
  for (const double v : g.reference[0]) squares += v * v;
  const double rms = std::sqrt(squares / static_cast<double>(g.reference[0].size()));
  std::vector<std::vector<double>> small_host = g.reference, small_gpu = g.reference;
  small_host[0][6] = 1e-6 * rms;
  small_gpu[0][6] = small_host[0][6] + 4e-16 * rms;
  EXPECT_EQ(preparation_disagreement(g.tensors, g.inputs, small_host, g.inputs, small_gpu), "");
  small_gpu[0][6] = small_host[0][6] + 1e-9 * rms;  // off by more than last bits of the scale: caught
  EXPECT_NE(preparation_disagreement(g.tensors, g.inputs, small_host, g.inputs, small_gpu), "");

  HostTensors flipped = g.inputs;
  flipped[0][4 * 9 + 1] ^= std::byte{1};  // one bit of element 9 (a fused multiply-add's rounding, say)
  EXPECT_EQ(check(flipped, g.reference), "the GPU drew in other than the host, first at byte 37");

  std::vector<std::vector<double>> off = g.reference;
  off[0][17] *= 1 + 1e-9;  // a wrong formula that still passes a loose tolerance
  EXPECT_NE(check(g.inputs, off).find("the GPU's reference of out is not the host's at [17]"), std::string::npos);

  std::vector<std::vector<double>> nan = g.reference;
  nan[0][3] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(check(g.inputs, nan), "");
  std::vector<std::vector<double>> both = nan;
  EXPECT_EQ(preparation_disagreement(g.tensors, g.inputs, nan, g.inputs, both), "");  // NaN where the host has NaN

  std::vector<std::vector<double>> shorter = g.reference;
  shorter[0].pop_back();
  EXPECT_EQ(check(g.inputs, shorter), "the references of out differ in size");
  EXPECT_NE(check(g.inputs, {}), "");
  HostTensors missing = g.inputs;
  missing[0].pop_back();
  EXPECT_EQ(check(missing, g.reference), "in was drawn with another size");
}

TEST(PrepareHost, RefusesAHarnessThatDisagreesWithTheSpecAndCatchesItsExceptions) {
  SquareHarness h;
  const HostGroup g = prepare_host(h, square_spec("2*n"), square(64, true));
  EXPECT_NE(g.error.find("spec.json says 768"), std::string::npos) << g.error;
  EXPECT_TRUE(g.inputs.empty());
  h.throw_in_reference = true;
  const HostGroup t = prepare_host(h, square_spec(), square(64, true));
  EXPECT_NE(t.error.find("the harness failed: reference exploded"), std::string::npos) << t.error;
}

TEST(PrepareHost, WideValuesReachTheHundredsWithZerosAsFarAsTheReferenceStaysFinite) {
  SquareHarness h;
  const Spec spec = square_spec();
  const HostGroup g = prepare_host(h, spec, square(4096, true, true));
  ASSERT_TRUE(g.error.empty());
  const auto* in = reinterpret_cast<const float*>(g.inputs[0].data());
  float largest = 0;
  int zeros = 0;
  for (int i = 0; i < 4096; ++i) {
    largest = std::max(largest, std::fabs(in[i]));
    zeros += in[i] == 0.f;
  }
  EXPECT_NEAR(largest, 300.f, 1e-3);
  EXPECT_GT(zeros, 4096 / 32);
  EXPECT_LT(zeros, 4096 / 8);
  // 300^2 * 1e33 overflows fp32; the widening halves until the reference is finite in fp32.
  h.scale = 1e33;
  const HostGroup halved = prepare_host(h, spec, square(4096, true, true));
  double ref_max = 0;
  for (double x : halved.reference[0]) ref_max = std::max(ref_max, x);
  EXPECT_LE(ref_max, 3.4028234663852886e38);
  EXPECT_GT(ref_max, 3.4028234663852886e38 / 4.5);  // one halving less would overflow
}

/// out[i] = table[pos[i]]: an fp32 table and int64 positions in [0, n), the shape of a rotary cache's reads.
class GatherHarness final : public Harness {
 public:
  const char* op() const override { return "gather"; }
  std::vector<TensorInfo> tensors(const Shape& shape, DType) const override {
    const auto n = static_cast<std::size_t>(shape.at("n"));
    return {{"pos", n, 8, Access::read}, {"table", n, 4, Access::read}, {"out", n, 4, Access::write}};
  }
  void fill_inputs(const Shape& shape, DType, std::uint64_t seed, HostTensors& host) const override {
    auto* pos = reinterpret_cast<std::int64_t*>(host[0].data());
    auto* table = reinterpret_cast<float*>(host[1].data());
    const std::int64_t n = shape.at("n");
    for (std::int64_t i = 0; i < n; ++i) pos[i] = static_cast<std::int64_t>((seed + 5 * i) % n), table[i] = 1.5f + i;
  }
  std::vector<std::vector<double>> reference(const Shape& shape, DType, const HostTensors& in) const override {
    const auto* pos = reinterpret_cast<const std::int64_t*>(in[0].data());
    const auto* table = reinterpret_cast<const float*>(in[1].data());
    std::vector<double> out(static_cast<std::size_t>(shape.at("n")));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = table[pos[i]];
    return {out};
  }
  std::shared_ptr<const void> make_args(const Shape&, DType, const std::vector<void*>&) const override { return nullptr; }
};

// The judge's wide values scale numbers, never an index tensor's positions: scaled, they would leave the
// range the caller promises and send S and every variant out of bounds.
TEST(PrepareHost, WideValuesLeaveIndexTensorsAlone) {
  GatherHarness h;
  const Spec spec = parse_spec_text(R"({"schema": 2, "op": "gather", "dims": {"n": [64]}, "tokens_dim": "n",
    "width_dim": "n", "dtypes": ["fp32"], "tolerance": {"fp32": {"rel_l2": 1e-5, "atol": 1e-5, "rtol": 1e-5}},
    "tensors": [{"name": "pos", "shape": ["n"], "dtype": "int64", "access": "read", "range": [0, "n"]},
                {"name": "table", "shape": ["n"], "dtype": "fp32", "access": "read"},
                {"name": "out", "shape": ["n"], "dtype": "element", "access": "write"}]})",
                                    "gather spec");
  HostRequest r;
  r.op = "gather";
  r.dtype = DType::f32;
  r.shape.dims = {{"n", 64}};
  r.seed = 3;
  r.reference = true;
  r.wide = true;
  const HostGroup g = prepare_host(h, spec, r);
  ASSERT_TRUE(g.error.empty()) << g.error;
  const auto* pos = reinterpret_cast<const std::int64_t*>(g.inputs[0].data());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(pos[i], (3 + 5 * i) % 64) << i;
  float largest = 0;
  for (int i = 0; i < 64; ++i) largest = std::max(largest, std::fabs(reinterpret_cast<const float*>(g.inputs[1].data())[i]));
  EXPECT_NEAR(largest, 300.f, 1e-3);  // the table itself is widened
}

}  // namespace
}  // namespace ktune::bench
