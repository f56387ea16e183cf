// bench/prefetch.cpp: the host sides of the next groups, prepared on other cores while the GPU times (prefetch.hpp).
#include "prefetch.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>

namespace ktune::bench {

HostPrefetcher::HostPrefetcher(Work work, unsigned threads, std::size_t lookahead, std::size_t budget_bytes, Stage stage)
    : work_(std::move(work)), stage_(std::move(stage)), lookahead_(std::max<std::size_t>(lookahead, 1)), budget_(budget_bytes) {
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { work_loop(); });
  if (stage_ && threads > 0) stager_ = std::thread([this] { stage_loop(); });
}

HostPrefetcher::~HostPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    for (auto& s : queue_) s->abandoned = true;
    queue_.clear();
  }
  changed_.notify_all();
  for (std::thread& t : workers_) t.join();
  if (stager_.joinable()) stager_.join();
}

HostGroup HostPrefetcher::compute(const HostRequest& r) {
  try {
    return work_(r);
  } catch (const std::exception& e) {
    HostGroup g;
    g.error = std::string("preparing ") + r.describe() + ": " + e.what();
    return g;
  }
}

HostGroup HostPrefetcher::compute_in_line(const HostRequest& r) {
  const auto t0 = std::chrono::steady_clock::now();
  HostGroup g = compute(r);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(mutex_);
  record_wait(took, r.describe() + " (in line)");
  return g;
}

void HostPrefetcher::record_wait(double seconds, std::string what) {
  stats_.wait_s += seconds;
  auto& top = stats_.longest_waits;
  top.emplace_back(seconds, std::move(what));
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (top.size() > 5) top.pop_back();
}

std::shared_ptr<HostPrefetcher::Slot> HostPrefetcher::next_to_start() {
  if (stop_ || running_ >= lookahead_) return nullptr;
  const std::size_t n = std::min(queue_.size(), lookahead_);
  std::size_t first = 0;  // the first group no worker has begun
  while (first < n && queue_[first]->state != Slot::queued) ++first;
  if (first == n) return nullptr;
  // The next few groups in order first, even over the budget (a few groups' memory more, at most): the
  // budget is for what the workers prepare far ahead, and a near group that no worker began is computed by
  // take() itself, on the measuring thread, while the GPU waits.
  if (first < workers_.size() / 4 + 1) return queue_[first];
  if (held_ >= budget_) return nullptr;
  // Then the costliest within the look-ahead. In order, a worker began the largest groups (the float64
  // reference of 235M elements is seconds on one thread) only when their turn came near, and the GPU waited
  // seconds for them; the rounds of those shapes then spread 4-10% on an H200 (0.2% with the costliest
  // first: docs/scale.md). But not on every worker: a quarter keep to the order.
  if (out_of_order_ >= workers_.size() - workers_.size() / 4) return queue_[first];
  std::shared_ptr<Slot> best = queue_[first];
  for (std::size_t i = first + 1; i < n; ++i)
    if (queue_[i]->state == Slot::queued && queue_[i]->request.cost > best->request.cost) best = queue_[i];
  best->out_of_order = best != queue_[first];
  return best;
}

void HostPrefetcher::work_loop() {
  // Below the measuring thread: the GPU's timing must not wait for a core.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    std::shared_ptr<Slot> slot;
    changed_.wait(lock, [&] { return stop_ || !trash_.empty() || (slot = next_to_start()) != nullptr; });
    if (stop_) return;
    if (!trash_.empty()) {
      HostGroup g = std::move(trash_.front());
      trash_.pop_front();
      lock.unlock();
      g = HostGroup();  // freed here, off the measuring thread
      lock.lock();
      continue;
    }
    slot->state = Slot::running;
    ++running_;
    out_of_order_ += slot->out_of_order;
    lock.unlock();
    HostGroup g = compute(slot->request);
    lock.lock();
    --running_;
    out_of_order_ -= slot->out_of_order;
    stats_.worker_cpu_s += g.cpu_s;
    slot->state = Slot::done;
    if (!slot->abandoned) {
      held_ += g.held_bytes();
      slot->group = std::move(g);
      if (slot->stage_wanted && slot->group.error.empty()) {  // wanted while it was being prepared
        slot->staging = true;
        to_stage_.push_back(slot);
      }
    }
    changed_.notify_all();
  }
}

void HostPrefetcher::stage_loop() {
  // At the measuring thread's priority, not the workers': take() may be waiting for this copy.
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || !to_stage_.empty(); });
    if (stop_) return;
    std::shared_ptr<Slot> slot = std::move(to_stage_.front());
    to_stage_.pop_front();
    lock.unlock();
    stage_(slot->group);  // take() waits while `staging`: nothing else touches the group
    lock.lock();
    slot->staging = false;
    changed_.notify_all();
  }
}

void HostPrefetcher::stage_next() {
  if (!stager_.joinable() || queue_.empty()) return;
  const std::shared_ptr<Slot>& next = queue_.front();
  if (next->stage_wanted) return;
  next->stage_wanted = true;
  if (next->state == Slot::done && next->group.error.empty()) {
    next->staging = true;
    to_stage_.push_back(next);
  }  // else the worker preparing it stages it when done
}

void HostPrefetcher::expect(std::vector<HostRequest> order) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& s : queue_) {
      s->abandoned = true;
      if (s->state == Slot::done) held_ -= s->group.held_bytes();
    }
    queue_.clear();
    for (HostRequest& r : order) {
      auto s = std::make_shared<Slot>();
      s->request = std::move(r);
      queue_.push_back(std::move(s));
    }
  }
  changed_.notify_all();
}

HostGroup HostPrefetcher::take(const HostRequest& r) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto at = std::find_if(queue_.begin(), queue_.end(), [&](const auto& s) { return s->request == r; });
  if (at == queue_.end()) {
    ++stats_.in_line;
    lock.unlock();
    return compute_in_line(r);
  }
  for (auto it = queue_.begin(); it != at; ++it) {  // skipped by the run
    (*it)->abandoned = true;
    if ((*it)->state == Slot::done) held_ -= (*it)->group.held_bytes();
    ++stats_.dropped;
  }
  std::shared_ptr<Slot> slot = *at;
  queue_.erase(queue_.begin(), at + 1);
  stage_next();  // while the GPU runs this group
  changed_.notify_all();  // the window moved on
  if (slot->state == Slot::queued) {  // no worker got to it: nothing to wait for
    slot->abandoned = true;
    ++stats_.in_line;
    lock.unlock();
    return compute_in_line(r);
  }
  ++stats_.ahead;
  const auto t0 = std::chrono::steady_clock::now();
  changed_.wait(lock, [&] { return slot->state == Slot::done; });
  const auto t1 = std::chrono::steady_clock::now();
  changed_.wait(lock, [&] { return !slot->staging; });
  stats_.stage_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  record_wait(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), r.describe());
  held_ -= slot->group.held_bytes();
  slot->abandoned = true;  // taken: a later expect() must not count it again
  stats_.staged += slot->group.staged.base != nullptr;
  changed_.notify_all();
  return std::move(slot->group);
}

void HostPrefetcher::discard(HostGroup g) {
  if (workers_.empty()) return;  // freed by g's destructor, here
  {
    std::lock_guard<std::mutex> lock(mutex_);
    trash_.push_back(std::move(g));
  }
  changed_.notify_one();
}

HostPrefetcher::Stats HostPrefetcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

unsigned default_prefetch_threads() {
  if (const char* env = std::getenv("KTUNE_PREP_THREADS"); env && *env) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(env, &end, 10);
    if (end && *end == '\0') return static_cast<unsigned>(std::min<unsigned long>(v, 64));
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 2 ? std::min(hw - 2, 32u) : 0;
}

std::size_t default_prefetch_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  const std::size_t quarter = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4
                                                     : std::size_t{4} << 30;
  return std::min(quarter, std::size_t{32} << 30);
}

}  // namespace ktune::bench
