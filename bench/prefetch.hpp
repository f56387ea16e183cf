// bench/prefetch.hpp: the host side of the groups a run will begin next, computed on other cores while
// the GPU times the current one. The float64 reference and the inputs of a group are a pure function
// of its request (host_inputs.hpp), and a run knows its order of groups in advance, so the measuring
// thread only waits when the host falls behind the GPU. Host-only, CPU-tested.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "host_inputs.hpp"

namespace ktune::bench {

class HostPrefetcher {
 public:
  using Work = std::function<HostGroup(const HostRequest&)>;
  /// Copies a prepared group's bytes into pinned memory (HostGroup::staged), or leaves it as it is.
  using Stage = std::function<void(HostGroup&)>;

  struct Stats {
    std::size_t ahead = 0;     ///< groups taken that a worker had prepared (or was preparing)
    std::size_t in_line = 0;   ///< groups computed by take() itself (not expected, or not started yet)
    std::size_t dropped = 0;   ///< expected groups the run skipped (prepared or not)
    std::size_t staged = 0;    ///< groups taken with their bytes in pinned memory (the stage hook)
    double worker_cpu_s = 0;   ///< CPU time the workers spent preparing
    double wait_s = 0;         ///< time take() waited for a worker (its staging included) or computed in line
    double stage_wait_s = 0;   ///< of that, for the staging of a group already prepared
    /// The longest waits (at most five, longest first): which groups the host was behind on ("(in line)":
    /// computed by take() itself).
    std::vector<std::pair<double, std::string>> longest_waits;
  };

  /// `threads` workers (0: take() computes everything itself, in line). Workers start the next
  /// threads / 4 + 1 expected groups in order first, whatever memory the prepared groups hold; then, while
  /// the prepared groups not yet taken hold less than `budget_bytes` of host memory, the costliest within
  /// the next `lookahead` (on at most three quarters of the workers; the others keep to the order); never
  /// more than `lookahead` at once (a group take() waits for counts until it is done).
  /// With `stage` (and workers), each take() has a thread of its own, at the caller's priority, stage the next
  /// expected group once it is prepared (the one take() returns next, while the GPU runs the group just
  /// taken); take() waits for a staging under way.
  HostPrefetcher(Work work, unsigned threads, std::size_t lookahead, std::size_t budget_bytes, Stage stage = nullptr);
  ~HostPrefetcher();  ///< stops the workers; groups in progress are finished and discarded
  HostPrefetcher(const HostPrefetcher&) = delete;
  HostPrefetcher& operator=(const HostPrefetcher&) = delete;

  /// The requests the run will take next, in order; replaces what was expected and not yet taken.
  void expect(std::vector<HostRequest> order);
  /// The group of `r`. Expected requests before it are dropped (the run skipped them); a request that
  /// was not expected is computed here and drops nothing.
  HostGroup take(const HostRequest& r);

  /// Frees `g` on a worker (freeing gigabytes of host memory is not free either); in line without workers.
  void discard(HostGroup g);

  Stats stats() const;
  unsigned threads() const { return static_cast<unsigned>(workers_.size()); }

 private:
  struct Slot {
    HostRequest request;
    enum State { queued, running, done } state = queued;
    bool abandoned = false;  // dropped or taken away while running
    bool stage_wanted = false, staging = false;  // the next to be taken: staged once done
    bool out_of_order = false;  // started before a group ahead of it (the costliest first)
    HostGroup group;
  };
  void work_loop();
  std::shared_ptr<Slot> next_to_start();  // under mutex_
  HostGroup compute(const HostRequest& r);
  HostGroup compute_in_line(const HostRequest& r);   // take()'s own, counted as waited
  void record_wait(double seconds, std::string what);  // under mutex_

  void stage_next();  // under mutex_: asks for the next expected group's staging
  void stage_loop();  // the stager thread: stages what to_stage_ holds

  Work work_;
  Stage stage_;
  std::size_t lookahead_, budget_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Slot>> queue_;  // expected, not yet taken, in order
  std::deque<HostGroup> trash_;              // groups to free
  std::deque<std::shared_ptr<Slot>> to_stage_;  // prepared, staging asked for, no worker on it yet
  std::size_t held_ = 0;                     // bytes of prepared groups not yet taken
  std::size_t running_ = 0;                  // groups the workers are preparing now
  std::size_t out_of_order_ = 0;             // of those, started before a group ahead of them
  bool stop_ = false;
  Stats stats_;
  std::vector<std::thread> workers_;
  std::thread stager_;  // with a stage hook and workers
};

/// Workers for a process that also times on the GPU: every core but two (the measuring thread and the
/// CUDA driver's), at most 32; KTUNE_PREP_THREADS overrides (0: no prefetching).
unsigned default_prefetch_threads();
/// Host memory the prepared groups not yet taken may hold: a quarter of the machine's, at most 32 GiB.
std::size_t default_prefetch_budget();

}  // namespace ktune::bench
