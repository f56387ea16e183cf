// ktune/registry.hpp: the variants compiled into a binary, found by op, dtype and architecture.
//
// Each generated translation unit registers its shard of variants at static-initialisation time, so
// the GPU tests and the benchmark link the same objects and every variant is compiled once. Entries
// are type-erased: `args` points to the op's `Args<Element>` for the entry's dtype.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dtype.hpp"
#include "status.hpp"

namespace ktune {

/// What the run-time check needs to know about a variant's kernel for a given call.
struct KernelResources {
  const void* func = nullptr;   ///< the __global__ function
  int threads = 0;              ///< threads per block
  std::size_t smem = 0;         ///< dynamic shared memory per block, bytes
  int cluster = 1;              ///< blocks per cluster
};

struct Variant {
  std::string op;               ///< e.g. "silu_and_mul"
  std::string id;               ///< "tpb_256.vb_16" or "original"
  DType dtype = DType::f32;
  int arch = 0;                 ///< architecture the feasibility rules were checked for
  std::vector<int> point;       ///< θ values in declaration order; empty for the original
  Status (*run)(const void* args, cudaStream_t stream) = nullptr;
  Status (*can_implement)(const void* args) = nullptr;
  KernelResources (*resources)(const void* args) = nullptr;

  bool is_original() const { return id == "original"; }
};

class Registry {
 public:
  static Registry& global() {
    static Registry r;
    return r;
  }

  void add(Variant v) {
    std::lock_guard<std::mutex> lock(mutex_);
    variants_.push_back(std::move(v));
  }

  /// Variants of `op` for `dtype` compiled for `arch` (0: any arch), in registration order sorted by
  /// id with the original first, so test and benchmark order is stable across shard layouts.
  std::vector<const Variant*> select(std::string_view op, DType dtype, int arch = 0) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<const Variant*> out;
    for (const Variant& v : variants_)
      if (v.op == op && v.dtype == dtype && (arch == 0 || v.arch == arch)) out.push_back(&v);
    std::sort(out.begin(), out.end(), [](const Variant* a, const Variant* b) {
      if (a->is_original() != b->is_original()) return a->is_original();
      if (a->point != b->point) return a->point < b->point;
      return a->arch < b->arch;
    });
    return out;
  }

  /// The variant `id` of `op` for `dtype` compiled for `arch` (0: any arch; the first registered), or null.
  const Variant* find(std::string_view op, DType dtype, int arch, std::string_view id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Variant& v : variants_)
      if (v.id == id && v.op == op && v.dtype == dtype && (arch == 0 || v.arch == arch)) return &v;
    return nullptr;
  }

  std::vector<std::string> ops() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const Variant& v : variants_)
      if (std::find(out.begin(), out.end(), v.op) == out.end()) out.push_back(v.op);
    std::sort(out.begin(), out.end());
    return out;
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return variants_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<Variant> variants_;  // deque: pointers handed out stay valid as shards register
};

}  // namespace ktune
