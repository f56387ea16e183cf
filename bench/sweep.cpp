// bench/sweep.cpp: the order of work in a run and what the cache saves of it (sweep.hpp).
#include "sweep.hpp"

#include "names.hpp"

namespace ktune::bench {

Progress::Progress(std::ostream* out, std::size_t to_measure, bool rewrite_line, double min_interval_s)
    : out_(out), total_(to_measure), rewrite_(rewrite_line), min_interval_(min_interval_s),
      start_(Clock::now()), last_print_(start_) {}

double Progress::eta_seconds(double elapsed_s, std::size_t done, std::size_t remaining) {
  if (done == 0) return -1;
  return elapsed_s / static_cast<double>(done) * static_cast<double>(remaining);
}

void Progress::before(const std::string& name) {
  if (!out_) return;
  const auto now = Clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (printed_ && since < min_interval_ && !rewrite_) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = eta_seconds(elapsed, done_, total_ - done_);
  *out_ << (rewrite_ ? "\r\033[K" : "") << "[" << done_ + 1 << "/" << total_ << "] " << name << "  elapsed "
        << format_duration(elapsed) << ", ETA " << (eta < 0 ? std::string("?") : format_duration(eta))
        << (rewrite_ ? "" : "\n");
  out_->flush();
  last_print_ = now;
  printed_ = true;
}

void Progress::after() { ++done_; }

void Progress::skip() {
  if (total_ > done_) --total_;
}

void Progress::finish() {
  if (!out_) return;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  *out_ << (rewrite_ ? "\r\033[K" : "") << "measured " << done_ << " of " << total_ << " in "
        << format_duration(elapsed) << "\n";
  out_->flush();
}

bool needs_measuring(const ShapeGroup& g, const ResultCache& cache) {
  for (const WorkItem& it : g.items)
    if (it.key.empty() || !cache.find(it.key)) return true;
  return false;
}

SweepOutcome run_sweep(const std::vector<ShapeGroup>& groups, ResultCache& cache, Measurer& m, Progress* progress) {
  SweepOutcome o;
  std::vector<Upcoming> order;
  for (const ShapeGroup& g : groups)
    if (needs_measuring(g, cache)) order.push_back({g.op, g.dtype, g.shape, true});
  m.expect(order);
  for (const ShapeGroup& g : groups) {
    // The copy row first, before the group's buffers exist: the two never share device memory.
    double copy_us = 0;
    if (!g.copy.name.empty()) {
      BenchResult c;
      if (const BenchResult* hit = g.copy.key.empty() ? nullptr : cache.find(g.copy.key)) {
        c = *hit;
        c.cached = true;
        ++o.from_cache;
      } else {
        if (progress) progress->before(g.copy.name);
        c = m.measure_copy_same_size(g);
        if (progress) progress->after();
        ++o.measured;
        if (c.cacheable && !g.copy.key.empty()) {
          const std::string err = cache.store(g.copy.key, c);
          if (!err.empty()) o.warnings.push_back(err);
        }
      }
      if (c.ok()) copy_us = c.median_us;
      const bool fatal = c.fatal;
      o.results.push_back(std::move(c));
      if (fatal) {
        o.aborted = true;
        o.abort_reason = g.copy.name + ": " + o.results.back().error;
        return o;
      }
    }
    std::vector<const BenchResult*> hits;
    bool any_missing = false;
    for (const WorkItem& it : g.items) {
      hits.push_back(cache.find(it.key));
      any_missing = any_missing || !hits.back();
    }
    std::string prepare_error;
    if (any_missing) prepare_error = m.begin_shape(g);
    for (std::size_t i = 0; i < g.items.size(); ++i) {
      const WorkItem& it = g.items[i];
      if (hits[i]) {
        BenchResult r = *hits[i];
        r.cached = true;
        r.copy_same_size_us = copy_us;
        o.results.push_back(std::move(r));
        ++o.from_cache;
        continue;
      }
      if (progress) progress->before(it.name);
      BenchResult r;
      if (!prepare_error.empty()) {
        r.name = it.name;
        r.op = it.op;
        r.dtype = name(it.dtype);
        r.shape = it.shape.key();
        r.id = it.id;
        r.error = "error: " + prepare_error;
        r.cacheable = false;
      } else {
        r = m.measure(it);
      }
      if (progress) progress->after();
      ++o.measured;
      if (r.cacheable) {
        const std::string err = cache.store(it.key, r);
        if (!err.empty()) o.warnings.push_back(err);
      }
      r.copy_same_size_us = copy_us;
      const bool fatal = r.fatal;
      o.results.push_back(std::move(r));
      if (fatal) {
        o.aborted = true;
        o.abort_reason = it.name + ": " + o.results.back().error;
        if (any_missing) m.end_shape();
        return o;
      }
    }
    if (any_missing) m.end_shape();
  }
  return o;
}

}  // namespace ktune::bench
