// ktune/harness.hpp: what the benchmark and the generic GPU checks need to know about an op to run
// any of its variants on a spec shape: its tensors, how to draw inputs, its float64 reference, and how
// to build the op's Args<E> from device buffers. One Harness per op (kernels/<op>/harness.hpp),
// registered next to the original kernel, so the tools stay generic over ops.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dtype.hpp"
#include "status.hpp"

namespace ktune {

/// Named dimension values of one problem, in the spec's order: {{"tokens", 16}, {"d", 11008}}, and the
/// values of the op's scalar arguments for it (a bool as 0 or 1), which are no part of its name.
struct Shape {
  std::vector<std::pair<std::string, std::int64_t>> dims;
  std::vector<std::pair<std::string, double>> scalars;

  /// The value of scalar `name`, or `fallback` (the spec's default) when this shape does not set it.
  double scalar(const std::string& name, double fallback) const {
    for (const auto& [n, v] : scalars)
      if (n == name) return v;
    return fallback;
  }

  std::int64_t at(const std::string& name) const {
    for (const auto& [n, v] : dims)
      if (n == name) return v;
    throw std::out_of_range("shape has no dimension '" + name + "'");
  }
  /// "tokens=16,d=11008": the shape part of benchmark names (contract 5).
  std::string key() const {
    std::string s;
    for (const auto& [n, v] : dims) s += (s.empty() ? "" : ",") + n + "=" + std::to_string(v);
    return s;
  }
};

enum class Access { read, write, read_write };

struct TensorInfo {
  std::string name;
  std::size_t elements = 0;
  int element_bytes = 0;     ///< the op's dtype's, or a fixed dtype's (fp32 LSE: 4, int64 positions: 8)
  Access access = Access::read;
  /// Bytes one call moves of the tensor where it moves only part of it (a cache written at scattered rows:
  /// the spec's "moved"); -1: the whole tensor, once per direction.
  std::int64_t part_moved = -1;
  bool is_output() const { return access != Access::read; }
  std::size_t bytes() const { return elements * static_cast<std::size_t>(element_bytes); }
  /// Bytes one call moves of it: part_moved where set, else bytes(), twice for read_write.
  std::size_t moved_bytes() const {
    return part_moved >= 0 ? static_cast<std::size_t>(part_moved) : bytes() * (access == Access::read_write ? 2 : 1);
  }
};

/// Host copies of a call's tensors, raw bytes, in the order of Harness::tensors().
using HostTensors = std::vector<std::vector<std::byte>>;

class Harness {
 public:
  virtual ~Harness() = default;
  virtual const char* op() const = 0;
  /// The op's tensors for `shape`, in a fixed order (inputs and outputs; in-place tensors once).
  virtual std::vector<TensorInfo> tensors(const Shape& shape, DType dtype) const = 0;
  /// Fresh random inputs for `seed` (never zeros), written into every input and read_write tensor.
  virtual void fill_inputs(const Shape& shape, DType dtype, std::uint64_t seed, HostTensors& host) const = 0;
  /// float64 reference values of every output tensor (write or read_write), in tensors() order.
  virtual std::vector<std::vector<double>> reference(const Shape& shape, DType dtype, const HostTensors& inputs) const = 0;
  /// Whether reference() runs on the GPU (S itself, for an op `ktune derive` made). Host-only references
  /// may be computed on any thread, ahead of their group (bench/prefetch.hpp); a GPU one only on the
  /// thread that measures, where it cannot collide with a stream capture.
  virtual bool reference_uses_gpu() const { return false; }
  /// The op's Args<E> for dtype, pointing at `device` buffers (tensors() order), contiguous rows.
  virtual std::shared_ptr<const void> make_args(const Shape& shape, DType dtype, const std::vector<void*>& device) const = 0;
};

/// An op's inputs and float64 reference computed on the GPU, for groups too large to draw and compute on the
/// host quickly (bench/README.md, "Inputs and references on the GPU"): Harness::fill_inputs's values bit for
/// bit, and Harness::reference's formula in float64 (the device's libm instead of the host's: last bits).
/// Registered beside the op's Harness by register_original when its family names one (Family::DevicePreparation).
class DevicePreparation {
 public:
  virtual ~DevicePreparation() = default;
  /// Draws the inputs of `seed` into `tensors` (device memory, Harness::tensors() order; write-only tensors
  /// are left alone) and writes the reference of each output, in tensors() order, into `reference`, on
  /// `stream`. Unsupported shapes and dtypes return an error and write nothing.
  virtual Status prepare(const Shape& shape, DType dtype, std::uint64_t seed, const std::vector<void*>& tensors,
                         const std::vector<double*>& reference, cudaStream_t stream) const = 0;

 protected:
  /// The shape's sizes `names`, in that order, into `out`; an error where one is absent or negative.
  static Status sizes_of(const Shape& shape, std::initializer_list<const char*> names, std::int64_t* out) {
    for (const char* n : names) {
      std::int64_t v = -1;
      for (const auto& [dim, value] : shape.dims)
        if (dim == n) v = value;
      if (v < 0) return Status::invalid("device preparation: the shape lacks one of the op's sizes, or has a negative one");
      *out++ = v;
    }
    return Status::success();
  }
  /// Blocks of a grid-stride loop over `items`: one per `per_block` items, at most `per_sm` on each SM of the
  /// current device, and at least one.
  static Status grid_blocks(std::int64_t items, int per_block, int per_sm, unsigned& blocks) {
    int device = 0, sms = 0;
    KTUNE_CUDA_TRY(cudaGetDevice(&device));
    KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const std::int64_t wanted = (items + per_block - 1) / per_block;
    blocks = static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>(wanted, std::int64_t{sms} * per_sm)));
    return Status::success();
  }
};

class HarnessRegistry {
 public:
  static HarnessRegistry& global() {
    static HarnessRegistry r;
    return r;
  }
  void add(std::unique_ptr<Harness> h) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string op = h->op();
    harnesses_.emplace(op, std::move(h));  // first registration wins (one per op, several archs)
  }
  const Harness* find(const std::string& op) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = harnesses_.find(op);
    return it == harnesses_.end() ? nullptr : it->second.get();
  }
  void add_device_preparation(const std::string& op, std::unique_ptr<DevicePreparation> p) {
    std::lock_guard<std::mutex> lock(mutex_);
    on_device_.emplace(op, std::move(p));  // first registration wins, as for harnesses
  }
  /// The op's DevicePreparation, or null (its groups are drawn and computed on the host).
  const DevicePreparation* device_preparation(const std::string& op) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = on_device_.find(op);
    return it == on_device_.end() ? nullptr : it->second.get();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Harness>> harnesses_;
  std::map<std::string, std::unique_ptr<DevicePreparation>> on_device_;
};

}  // namespace ktune
