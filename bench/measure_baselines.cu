// bench/measure_baselines.cu: the device's facts and the references every variant is read against, all
// measured in this process: the copy ceiling and an empty kernel once per run, and per shape a copy of
// the shape's own size (the fair floor where the 1 GiB ceiling is not; bench/README.md).
#include "measure_detail.cuh"

#include <cmath>
#include <exception>
#include <limits>

#include <ktune/fill.cuh>

namespace ktune::bench {

Status query_device_context(DeviceContext& out) {
  out = DeviceContext{};
  KTUNE_CUDA_TRY(cudaGetDevice(&out.ordinal));
  cudaDeviceProp p{};
  KTUNE_CUDA_TRY(cudaGetDeviceProperties(&p, out.ordinal));
  out.name = p.name;
  out.arch = p.major * 10 + p.minor;
  out.sms = p.multiProcessorCount;
  out.l2_bytes = p.l2CacheSize;
  // CUDA 13's cudaDeviceProp has no clock fields (DESIGN.md): ask for the attributes.
  KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&out.sm_clock_khz, cudaDevAttrClockRate, out.ordinal));
  KTUNE_CUDA_TRY(cudaDeviceGetAttribute(&out.mem_clock_khz, cudaDevAttrMemoryClockRate, out.ordinal));
  KTUNE_CUDA_TRY(cudaDriverGetVersion(&out.driver_version));
  KTUNE_CUDA_TRY(cudaRuntimeGetVersion(&out.runtime_version));
  return Status::success();
}

Status measure_baselines(const TimingSettings& timing, Baselines& out) {
  out = Baselines{};
  CopyCeiling copy;
  KTUNE_TRY(measure_copy_ceiling(copy));
  out.copy_bytes = static_cast<double>(copy.bytes);
  out.copy_memcpy_gbps = copy.memcpy_gbps;
  out.copy_kernel_gbps = copy.kernel_gbps;
  const double us = 2.0 * static_cast<double>(copy.bytes) / (copy.best_gbps() * 1e3);
  out.copy = {us, us, us, 10, 1};

  cudaStream_t stream = nullptr;
  KTUNE_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));  // graph capture needs one
  TimingResult r;
  const Status st = time_empty_kernel(stream, to_options(timing), r);
  cudaStreamDestroy(stream);
  KTUNE_TRY(st);
  out.empty = to_timed(r);
  return Status::success();
}

BenchResult GpuMeasurer::measure_copy_same_size(const ShapeGroup& g) {
  State& s = *s_;
  BenchResult r;
  r.name = g.copy.name;
  r.op = g.op;
  r.dtype = name(g.dtype);
  r.shape = g.shape.key();
  r.copy_gbps = s.copy_gbps;
  auto spec = s.specs.find(g.op);
  if (spec == s.specs.end()) {
    r.error = "error: no spec.json for op " + g.op;
    r.cacheable = false;
    return r;
  }
  // Half the spec bytes read, half written, each rounded to whole 16-byte vectors (at least one).
  double moved = 0;
  try {
    moved = static_cast<double>(spec->second.bytes(g.shape, g.dtype));
  } catch (const std::exception& e) {
    r.error = std::string("error: the spec's bytes moved: ") + e.what();
    r.cacheable = false;
    return r;
  }
  const std::size_t half = std::max<std::size_t>(16, static_cast<std::size_t>(std::llround(moved / 32.0)) * 16);
  const std::size_t n = half / 16;
  r.bytes = 2.0 * static_cast<double>(half);
  if ((n + 255) / 256 > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    r.error = "error: a same-size copy of " + std::to_string(half) + " bytes needs more blocks than a grid holds";
    r.cacheable = false;
    return r;
  }
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);

  if (const Status st = s.ensure_stream(); !st.ok()) {
    s.cuda_failure(r, "error: ", st);
    r.cacheable = r.fatal;
    return r;
  }
  // A set is a source and a destination; sets rotate exactly like a variant's input/output sets.
  const std::size_t span = (half + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
  const std::size_t set_bytes = 2 * span;
  std::size_t rotations = s.cold_l2 ? rotations_for_cold_l2(set_bytes, s.l2_bytes) : 1;
  // In the group's rotation arena, which its variants take next: a cudaMalloc and a cudaFree (which waits for
  // the device) of up to gigabytes per shape cost a ten-op tune seconds.
  char* buf = nullptr;
  s.release();
  for (;;) {
    const cudaError_t e = s.kept_arena.reserve(rotations * set_bytes);
    if (e == cudaSuccess) {
      buf = s.kept_arena.data();
      break;
    }
    if (e != cudaErrorMemoryAllocation || rotations == 1) {
      r.error = "error: cudaMalloc of " + std::to_string(rotations * set_bytes) + " bytes: " + cudaGetErrorString(e);
      r.cacheable = false;
      return r;
    }
    rotations = (rotations + 1) / 2;
  }
  r.cold_l2 = s.cold_l2 && rotations * set_bytes > 2 * s.l2_bytes;

  // Its batch sized for the shape's figure, as every variant's (ktune/replay_batch.hpp).
  TimingOptions options = to_options(s.timing);
  if (const Status st = s.batch_figure(moved, options.batch_for_us); !st.ok()) {
    s.cuda_failure(r, "error: ", st);
    r.cacheable = r.fatal;
    return r;
  }
  PhaseScope phase(s.phases, PhaseTimes::timing);
  TimingResult tr;
  Status st = fill_uniform(reinterpret_cast<float*>(buf), rotations * set_bytes / 4, mix64(0xc0b1ull ^ static_cast<std::uint64_t>(moved)), -1.f, 1.f,
                           s.stream);  // random, never zeros: no compression shortcut
  if (st.ok()) st = Status::from_cuda(cudaStreamSynchronize(s.stream), "filling the same-size copy");
  if (st.ok())
    st = time_kernel(
        [&](std::size_t set) -> Status {
          const char* src = buf + set * set_bytes;
          ktune::detail::copy16_kernel<><<<blocks, 256, 0, s.stream>>>(reinterpret_cast<const uint4*>(src),
                                                                  reinterpret_cast<uint4*>(buf + set * set_bytes + span), n);
          return Status::from_cuda(cudaGetLastError(), "the same-size copy kernel");
        },
        rotations, s.stream, options, tr);
  if (!st.ok()) {
    s.cuda_failure(r, "error: timing the same-size copy: ", st);
    r.cacheable = r.fatal;
  } else {
    r.median_us = tr.median_us;
    r.min_us = tr.min_us;
    r.max_us = tr.max_us;
    r.samples = tr.samples;
    r.batch = tr.batch;
    r.spread = tr.median_us > 0 ? (tr.max_us - tr.min_us) / tr.median_us : 0;
  }
  return r;
}

}  // namespace ktune::bench
