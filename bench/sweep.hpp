// bench/sweep.hpp: the order of work in a run and what the cache saves of it, independent of the GPU.
//
// Work comes in shape groups: every variant of one (op, dtype, shape) shares the inputs, the float64
// reference and the rotation arena, which a Measurer prepares once per group (begin_shape) and only
// when at least one of the group's variants is not cached. Each group also has a reference row: a
// plain copy of the same bytes (the same-size copy), timed the same way and cached like a variant, the
// fair floor for that shape (it pays the same launch, ramp, tail and DRAM latency).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>

#include "cache.hpp"
#include "result.hpp"

namespace ktune {
struct Variant;
}

namespace ktune::bench {

struct WorkItem {
  std::string op;
  DType dtype = DType::f32;
  Shape shape;
  std::string id;
  std::string name;  ///< benchmark name
  std::string key;   ///< cache key
  const Variant* variant = nullptr;  ///< as the plan resolved it (plan_sweep); null: looked up by id (variant_of)
};

struct ShapeGroup {
  std::string op;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<WorkItem> items;
  WorkItem copy;  ///< the same-size copy row: id copy_same_size_id, name copy_same_size_name(), its cache key
  std::string incumbent;  ///< the variant an earlier tune chose for this shape (--incumbents), or empty
};

/// A begin_shape (reference: the gate needs the float64 reference) or a begin_rounds (inputs only) that
/// a run will make.
struct Upcoming {
  std::string op;
  DType dtype = DType::f32;
  Shape shape;
  bool reference = true;
};

/// Checks and times the variants of one shape group at a time.
class Measurer {
 public:
  virtual ~Measurer() = default;
  /// The groups the run will begin, in order, so that their host side (inputs, reference) can be
  /// prepared on other cores while earlier groups are timed. A hint: a group begun that was not
  /// expected is prepared when it begins; one expected and never begun costs only host time.
  virtual void expect(const std::vector<Upcoming>& order) { (void)order; }
  /// Prepares inputs, reference and buffers for `g`. Returns an empty string, or why it could not.
  virtual std::string begin_shape(const ShapeGroup& g) = 0;
  /// Correctness gate, device check and timing of one variant of the current group.
  virtual BenchResult measure(const WorkItem& item) = 0;
  /// Frees what begin_shape prepared (called after every begin_shape, also a failed one).
  virtual void end_shape() = 0;
  /// Times a copy of the group's spec bytes (half read, half written) the way variants are timed.
  /// Called outside begin_shape/end_shape, so it needs none of the group's buffers.
  virtual BenchResult measure_copy_same_size(const ShapeGroup& g) = 0;
};

/// Whether any variant of `g` is missing from the cache: the group then needs begin_shape.
bool needs_measuring(const ShapeGroup& g, const ResultCache& cache);

/// Progress with an ETA, one line per update (or one rewritten line on a terminal).
class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  Progress(std::ostream* out, std::size_t to_measure, bool rewrite_line, double min_interval_s = 2.0);
  /// Called before measuring item `name`; prints when `min_interval_s` passed since the last line.
  void before(const std::string& name);
  /// Called after each measured item.
  void after();
  /// An item counted in `to_measure` that the run will not measure after all (a guided screen's).
  void skip();
  void finish();
  /// Seconds left for `remaining` items at the average pace so far (negative: unknown yet).
  static double eta_seconds(double elapsed_s, std::size_t done, std::size_t remaining);

 private:
  std::ostream* out_;
  std::size_t total_, done_ = 0;
  bool rewrite_;
  double min_interval_;
  Clock::time_point start_, last_print_;
  bool printed_ = false;
};

struct SweepOutcome {
  std::vector<BenchResult> results;  ///< in work order; cached ones marked
  std::size_t measured = 0, from_cache = 0;
  bool aborted = false;              ///< stopped after a fatal (context-breaking) result
  std::string abort_reason;
  std::vector<std::string> warnings; ///< e.g. cache write failures
};

/// Runs every item: a cached result is re-emitted, anything else measured and cached. Each group's
/// same-size copy row comes first; its median is set as copy_same_size_us on the group's results.
SweepOutcome run_sweep(const std::vector<ShapeGroup>& groups, ResultCache& cache, Measurer& m, Progress* progress);

}  // namespace ktune::bench
