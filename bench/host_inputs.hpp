// bench/host_inputs.hpp: the host side of one shape group, computed without the GPU: its tensors, the
// inputs as drawn (or widened to the judge's wide value range) and the float64 reference. Pure
// functions of the request, so any thread may compute them ahead of the group's GPU work
// (bench/prefetch.hpp); host-compiled, CPU-tested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>
#include <ktune/spec.hpp>

namespace ktune::bench {

/// The gate compares outputs with the reference in chunks of this many elements (on several threads).
constexpr std::size_t reference_chunk = std::size_t{1} << 20;

/// Σ ref² over the finite elements of each reference_chunk: what the comparison divides by.
std::vector<double> chunk_norms(const std::vector<double>& ref);

/// What a group's host side depends on. Two equal requests give equal groups.
struct HostRequest {
  std::string op;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t seed = 0;
  bool reference = true;  ///< the gate needs it; rounds of timing only do not
  /// false: the tensors alone, neither inputs nor reference (the GPU draws and computes them: a
  /// DevicePreparation, ktune/harness.hpp).
  bool inputs = true;
  bool wide = false;      ///< --value-range wide (implies the reference: it bounds the widening)
  /// What preparing it costs, roughly (bytes of its inputs and float64 references): workers start the
  /// costliest within their look-ahead first. Not part of what the group is.
  double cost = 0;

  bool operator==(const HostRequest& o) const {
    return op == o.op && dtype == o.dtype && shape.key() == o.shape.key() && seed == o.seed &&
           reference == o.reference && inputs == o.inputs && wide == o.wide;
  }
  /// "op/dtype/shape" and the kind: for messages.
  std::string describe() const;
};

struct HostGroup {
  std::string error;                            ///< why the group cannot run (nothing else is valid then)
  std::vector<TensorInfo> tensors;
  HostTensors inputs;                           ///< every tensor; write-only ones sized, not filled
  std::vector<std::vector<double>> reference;   ///< of each output, in tensors() order; empty unless asked
  std::vector<std::vector<double>> norms;       ///< chunk_norms of each reference
  double bytes_moved = 0;                       ///< per call, from the spec
  double cpu_s = 0;                             ///< the thread's CPU time computing it

  /// The bytes the GPU needs, copied by a worker into pinned memory (HostPrefetcher's stage hook), so that
  /// their upload is the copy engine's alone: each read tensor's and each reference's offset from `base`
  /// (SIZE_MAX: not there). Null `base`: not staged. Dropping `hold` hands the memory back.
  struct Staged {
    const char* base = nullptr;
    std::vector<std::size_t> input_at, reference_at;
    std::shared_ptr<void> hold;
  } staged;

  /// Host memory the group holds.
  std::size_t held_bytes() const;
};

/// The group of `r`: tensors, inputs, their check against the spec's bytes, and the reference (with
/// `r.wide`, inputs scaled until the reference stays finite in the outputs' storage type). Never throws:
/// a harness's exception becomes `error`.
HostGroup prepare_host(const Harness& harness, const Spec& spec, const HostRequest& r);

/// Where inputs and references the GPU drew and computed (`gpu_inputs`, `gpu_reference`: copied back) differ
/// from the host's (`host`, `reference`) for the same request, or empty when they agree: every read tensor
/// bitwise (the same uniform_at, ktune/random.hpp), every reference element equal, both NaN, or within 1e-12 of
/// the larger of the two and the output's rms: the two sides' libms and sums differ in their last bits, which
/// terms that cancel (x cos - y sin, a weighted mean of values of both signs) lift above 1e-12 of a small
/// result, never of the output's scale. The tolerances of every spec are 1e-9 and wider.
std::string preparation_disagreement(const std::vector<TensorInfo>& tensors, const HostTensors& host,
                                     const std::vector<std::vector<double>>& reference, const HostTensors& gpu_inputs,
                                     const std::vector<std::vector<double>>& gpu_reference);

/// --value-range wide: every input scaled so its largest magnitude reaches `reach`, and one element in
/// sixteen (a fixed, seed-dependent pick) set to exactly zero. Write-only tensors and index tensors (the
/// spec's int32/int64 tensors, whose values are positions inside a promised range) are left alone.
void widen(HostTensors& host, const std::vector<TensorInfo>& tensors, const Spec& spec, DType dtype, std::uint64_t seed,
           double reach);

}  // namespace ktune::bench
