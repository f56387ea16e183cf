// bench/measure_group.cu: a shape group's device side: the seed of its inputs, the host side taken from
// the workers (or computed here), the inputs uploaded from pinned memory, the rotation arena, the
// pristine copy and its digests, the reference on the device and the gate's guarded set; and their release.
#include "measure_detail.cuh"

#include <exception>

#include <ktune/fill.cuh>
#include <ktune/random.hpp>

namespace ktune::bench {

std::uint64_t shape_seed(std::uint64_t run_seed, const std::string& op, DType dtype, const std::string& shape_key) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const std::string& s : {op, std::string(name(dtype)), shape_key}) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ '/') * 0x100000001b3ull;
  }
  return mix64(run_seed ^ h) & ((std::uint64_t{1} << 53) - 1);
}

Status GpuMeasurer::State::upload(void* dst, const void* src, std::size_t bytes) {
  if (bytes < (std::size_t{4} << 20))
    return Status::from_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
  KTUNE_CUDA_TRY(kept_staging.reserve(2 * staging_half));
  for (cudaEvent_t& e : staged)
    if (!e) KTUNE_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (std::size_t off = 0, k = 0; off < bytes; off += staging_half, ++k) {
    const std::size_t n = std::min(staging_half, bytes - off);
    char* half = kept_staging.data() + (k % 2) * staging_half;
    KTUNE_CUDA_TRY(cudaEventSynchronize(staged[k % 2]));  // the copy engine is done with this half
    copy_on_threads(half, static_cast<const char*>(src) + off, n);
    KTUNE_CUDA_TRY(cudaMemcpyAsync(static_cast<char*>(dst) + off, half, n, cudaMemcpyHostToDevice, stream));
    KTUNE_CUDA_TRY(cudaEventRecord(staged[k % 2], stream));
  }
  return Status::success();
}

Status GpuMeasurer::State::restore_rotation() {
  // Guard zones around the sets: a write past them in a timed call must land where check_rotation looks.
  for (char* zone : {arena - guard_bytes, arena + rotations * set_bytes})
    KTUNE_TRY(fill_bits(reinterpret_cast<float*>(zone), guard_bytes / 4, guard_word, stream));
  // Set 0 as drawn, then every other set a copy of it, made by doubling (sets [0, k) onto [k, 2k)): a cold
  // L2 takes thousands of sets of a small shape, and a copy or a fill per tensor and set came to about 1.3
  // million launches in a ten-op tune. The sets' outputs start alike; each check of timed calls refills its own.
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const TensorInfo& ti = tensors[t];
    if (ti.access != Access::write) {
      KTUNE_CUDA_TRY(cudaMemcpyAsync(tensor_ptr(0, t), pristine + offsets[t], ti.bytes(), cudaMemcpyDeviceToDevice, stream));
    } else {
      KTUNE_TRY(visit_tensor_type(ti, dtype, [&](auto e) {
        using T = decltype(e);
        return fill_uniform(static_cast<T*>(tensor_ptr(0, t)), ti.elements, mix64(seed + 1), -1.f, 1.f, stream);
      }));
    }
  }
  for (std::size_t done = 1; done < rotations; done *= 2)
    KTUNE_CUDA_TRY(cudaMemcpyAsync(arena + done * set_bytes, arena, std::min(done, rotations - done) * set_bytes,
                                   cudaMemcpyDeviceToDevice, stream));
  return Status::success();
}

void GpuMeasurer::State::release() {
  settle_cross_check();  // its thread reads the group's buffers (the search has settled it already)
  prepared.clear();  // the graphs hold pointers into the arena
  reference_dev.clear();
  cross_checked = false;
  args.clear();  // Args may own nothing on the device, but drop them before the memory they point to
  arena = pristine = host_out = nullptr;  // their kept buffers stay for the next group
  gate_args.reset();
  for (void* p : gate_allocs) cudaFree(p);
  gate_arena = nullptr;
  gate_arena_bytes = 0;
  gate_allocs.clear();
  gate_ptr.clear();
  input_digest.clear();
  gate_dirty = true;
  if (prefetch) {  // the group's host memory is freed by a worker, not on the measuring thread
    HostGroup old;
    old.inputs = std::move(host_inputs);
    old.reference = std::move(reference);
    old.norms = std::move(ref_norms);
    prefetch->discard(std::move(old));
  }
  host_inputs.clear();
  reference.clear();
  ref_norms.clear();
  tensors.clear();
  offsets.clear();
  outputs.clear();
  host_offsets.clear();
  harness = nullptr;
  on_device = nullptr;
  checked = nullptr;
  bytes_moved = 0;
  batch_for_us = 0;
  seed = 0;
  set_bytes = 0;
  rotations = 1;
}

std::string GpuMeasurer::prepare_group(const ShapeGroup& g, bool with_reference) {
  State& s = *s_;
  PhaseScope phase(s.phases, PhaseTimes::prepare);
  s.release();
  if (const Status st = s.ensure_stream(); !st.ok()) return describe(st);
  s.pinned.adopt();  // staging buffers whose pages a thread faulted in meanwhile
  s.harness = HarnessRegistry::global().find(g.op);
  if (!s.harness) return "no ktune::Harness registered for op " + g.op;
  auto spec = s.specs.find(g.op);
  if (spec == s.specs.end()) return "no spec.json for op " + g.op;
  s.op = g.op;
  s.dtype = g.dtype;
  s.shape = g.shape;
  s.tol = spec->second.tolerance_for(g.dtype);
  s.seed = shape_seed(s.run_seed, g.op, g.dtype, g.shape.key());
  s.on_device = s.device_preparation(g.op);

  // The host side (inputs, float64 reference): prepared ahead on other cores when the run said it
  // would begin this group (expect), else here; the tensors alone when the GPU prepares the group.
  HostGroup hg = s.prefetch->take(s.host_request(g.op, g.dtype, g.shape, with_reference));
  for (std::size_t i = s.upcoming_next; i < s.upcoming.size(); ++i) {
    const Upcoming& u = s.upcoming[i];
    if (u.op == g.op && u.dtype == g.dtype && u.shape.key() == g.shape.key() && u.reference == with_reference) {
      s.upcoming_next = i + 1;
      break;
    }
  }
  if (!hg.error.empty()) return hg.error;
  // The pinned copy the stager made is handed back once the uploads below are done (or abandoned).
  s.group_staged = std::move(hg.staged);
  struct Unstage {
    State& s;
    ~Unstage() { s.group_staged = {}; }
  } unstage{s};
  s.bytes_moved = hg.bytes_moved;
  if (const Status st = s.batch_figure(s.bytes_moved, s.batch_for_us); !st.ok()) return describe(st);
  s.tensors = std::move(hg.tensors);
  s.reference = std::move(hg.reference);
  s.ref_norms = std::move(hg.norms);
  HostTensors host = std::move(hg.inputs);
  for (std::size_t t = 0; t < s.tensors.size(); ++t)
    if (s.tensors[t].is_output()) s.outputs.push_back(t);

  for (const TensorInfo& t : s.tensors) {
    s.offsets.push_back(s.set_bytes);
    s.set_bytes += (t.bytes() + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
  }
  if (s.set_bytes == 0) s.set_bytes = tensor_alignment;  // T = 0: nothing to move, still valid pointers

  // Halve the rotation until it fits: a cold L2 with fewer sets beats no measurement.
  s.rotations = s.cold_l2 ? rotations_for_cold_l2(s.set_bytes, s.l2_bytes) : 1;
  for (;;) {
    const cudaError_t e = s.kept_arena.reserve(s.rotations * s.set_bytes + 2 * guard_bytes);
    if (e == cudaSuccess) {
      s.arena = s.kept_arena.data() + guard_bytes;
      break;
    }
    if (e != cudaErrorMemoryAllocation || s.rotations == 1)
      return "cudaMalloc of " + std::to_string(s.rotations * s.set_bytes) + " bytes: " + cudaGetErrorString(e);
    s.rotations = (s.rotations + 1) / 2;
  }
  if (const cudaError_t e = s.kept_pristine.reserve(s.set_bytes); e != cudaSuccess)
    return std::string("cudaMalloc of the pristine inputs: ") + cudaGetErrorString(e);
  s.pristine = s.kept_pristine.data();

  auto upload_inputs = [&]() -> Status {
    const auto upload0 = std::chrono::steady_clock::now();
    for (std::size_t t = 0; t < s.tensors.size(); ++t)
      if (s.tensors[t].access != Access::write && s.tensors[t].bytes())
        // On the measuring stream, not the legacy one: a pageable cudaMemcpy may return before its DMA
        // lands, and the copies into the rotation sets below must read the inputs, not what was there.
        KTUNE_TRY(s.upload_group_bytes(s.pristine + s.offsets[t], host[t].data(),
                                       t < s.group_staged.input_at.size() ? s.group_staged.input_at[t] : SIZE_MAX, s.tensors[t].bytes()));
    KTUNE_CUDA_TRY(cudaStreamSynchronize(s.stream));
    s.upload_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - upload0).count();
    return Status::success();
  };
  auto prepare = [&]() -> Status {
    if (s.on_device) {
      PartScope part(s.phases, "prepare.on_device");
      KTUNE_TRY(s.prepare_on_device());
      ++s.groups_on_device;
      if (!host.empty()) {  // a small group: the host drew and computed it too
        ++s.groups_on_device_checked;
        if (std::string why = s.check_preparation(host); !why.empty()) {
          // The host's inputs and reference stand; the op is prepared on the host for the rest of the run.
          s.warnings.push_back(g.op + "/" + name(g.dtype) + "/" + g.shape.key() + ": " + why +
                               ": this group and every later one of " + g.op + " are prepared on the host");
          s.preparation_off.insert(g.op);
          s.on_device = nullptr;
          s.reference_dev.clear();
          // The workers prepare the op's later groups on the host from now on, ahead as for any other op.
          expect(std::vector<Upcoming>(s.upcoming.begin() + static_cast<std::ptrdiff_t>(s.upcoming_next), s.upcoming.end()));
        }
      }
    }
    if (!s.on_device) KTUNE_TRY(upload_inputs());
    PartScope sets(s.phases, "prepare.sets");
    KTUNE_TRY(s.restore_rotation());
    for (std::size_t set = 0; set < s.rotations; ++set) {
      std::vector<void*> ptrs;
      for (std::size_t t = 0; t < s.tensors.size(); ++t) ptrs.push_back(s.tensor_ptr(set, t));
      s.args.push_back(s.harness->make_args(s.shape, s.dtype, ptrs));
    }
    KTUNE_CUDA_TRY(cudaStreamSynchronize(s.stream));
    return Status::success();
  };
  Status st;
  try {
    st = prepare();
  } catch (const std::exception& e) {
    return std::string("the harness failed: ") + e.what();
  }
  if (!st.ok()) return "preparing the inputs: " + describe(st);
  // The read-only inputs as drawn: the gate and the checks of timed calls compare with these.
  {
    std::vector<Span> spans;
    for (std::size_t t = 0; t < s.tensors.size(); ++t)  // a write-only tensor's pristine bytes were never written
      spans.push_back({s.pristine + s.offsets[t], s.tensors[t].access == Access::write ? 0 : s.tensors[t].bytes(), 0});
    st = digests(spans, s.stream, s.check_scratch, s.input_digest);
    if (!st.ok()) return "digests of the inputs: " + describe(st);
  }
  // Rounds of timing only need no reference: the finalists passed the gate in this process and their
  // timed calls are checked against its digests. A finalist that did not (a cached screen) is gated
  // first, from the inputs kept here.
  if (!with_reference && !s.wide_values) {
    s.host_inputs = std::move(host);
    return {};
  }
  PartScope gate(s.phases, "prepare.gate");
  const std::string err = prepare_gate(host);
  gate.stop();
  HostGroup used;
  used.inputs = std::move(host);
  s.prefetch->discard(std::move(used));
  return err;
}

std::string GpuMeasurer::prepare_gate(const HostTensors& host) {
  State& s = *s_;
  if (s.on_device) return s.prepare_gate_set();  // the GPU computed the reference with the inputs
  if (s.reference.empty() && !s.outputs.empty()) {  // a reference the host workers did not compute
    try {
      s.reference = s.harness->reference(s.shape, s.dtype, host);
    } catch (const std::exception& e) {
      return std::string("the harness failed: ") + e.what();
    }
    s.ref_norms.clear();
  }
  if (s.reference.size() != s.outputs.size())
    return "the harness's reference has " + std::to_string(s.reference.size()) + " outputs, its tensors " +
           std::to_string(s.outputs.size());
  const bool norms_known = s.ref_norms.size() == s.reference.size();
  if (!norms_known) s.ref_norms.clear();
  for (std::size_t o = 0; o < s.outputs.size(); ++o) {
    const TensorInfo& t = s.tensors[s.outputs[o]];
    if (s.reference[o].size() != t.elements)
      return "the harness's reference of " + t.name + " has " + std::to_string(s.reference[o].size()) +
             " elements, the tensor " + std::to_string(t.elements);
    if (!norms_known) s.ref_norms.push_back(chunk_norms(s.reference[o]));
  }
  if (s.device_compare && !s.device_compare_off) {
    if (const Status st = s.reserve_reference_dev(); !st.ok()) return "the reference on the device: " + describe(st);
    const auto upload0 = std::chrono::steady_clock::now();
    for (std::size_t o = 0; o < s.outputs.size(); ++o) {
      // On the measuring stream: ordered before the comparisons (see the inputs' upload).
      const Status up = s.upload_group_bytes(s.reference_dev[o], s.reference[o].data(),
                                             o < s.group_staged.reference_at.size() ? s.group_staged.reference_at[o] : SIZE_MAX,
                                             s.reference[o].size() * sizeof(double));
      if (!up.ok()) return "copying the reference to the device: " + describe(up);
    }
    if (const cudaError_t e = cudaStreamSynchronize(s.stream); e != cudaSuccess)
      return std::string("copying the reference to the device: ") + cudaGetErrorString(e);
    s.upload_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - upload0).count();
  }
  return s.prepare_gate_set();
}

std::string GpuMeasurer::State::prepare_gate_set() {
  // Where each output lands in the pinned staging of the host's comparisons (reserved by the first copy back).
  std::size_t host_bytes = 0;
  host_offsets.clear();
  for (std::size_t t : outputs) {
    host_offsets.push_back(host_bytes);
    host_bytes += tensors[t].bytes();
  }

  // The gate set: [guard | tensor | guard] per tensor in one allocation, or each tensor alone.
  gate_ptr.assign(tensors.size(), nullptr);
  if (separate_allocations) {
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      void* p = nullptr;
      const cudaError_t e = cudaMalloc(&p, std::max<std::size_t>(tensors[t].bytes(), 1));
      if (e != cudaSuccess) return std::string("cudaMalloc of the gate's ") + tensors[t].name + ": " + cudaGetErrorString(e);
      gate_allocs.push_back(p);
      gate_ptr[t] = static_cast<char*>(p);
    }
  } else {
    std::vector<std::size_t> at;
    for (const TensorInfo& t : tensors) {
      at.push_back(gate_arena_bytes + guard_bytes);
      gate_arena_bytes += guard_bytes + (t.bytes() + tensor_alignment - 1) / tensor_alignment * tensor_alignment + guard_bytes;
    }
    if (gate_arena_bytes == 0) gate_arena_bytes = 2 * guard_bytes;
    const cudaError_t e = kept_gate.reserve(gate_arena_bytes);
    if (e != cudaSuccess) return "cudaMalloc of the gate's guarded buffers (" + std::to_string(gate_arena_bytes) + " bytes): " + cudaGetErrorString(e);
    gate_arena = kept_gate.data();
    for (std::size_t t = 0; t < tensors.size(); ++t) gate_ptr[t] = gate_arena + at[t];
  }
  gate_dirty = true;
  try {
    gate_args = harness->make_args(shape, dtype, std::vector<void*>(gate_ptr.begin(), gate_ptr.end()));
  } catch (const std::exception& ex) {
    return std::string("the harness failed: ") + ex.what();
  }
  return {};
}

Status GpuMeasurer::State::reserve_reference_dev() {
  reference_dev.clear();
  std::vector<std::size_t> at;
  std::size_t bytes = 0;
  for (std::size_t t : outputs) {
    at.push_back(bytes);
    bytes += (tensors[t].elements * sizeof(double) + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
  }
  KTUNE_CUDA_TRY(kept_reference.reserve(bytes));
  for (std::size_t a : at) reference_dev.push_back(reinterpret_cast<double*>(kept_reference.data() + a));
  return Status::success();
}

Status GpuMeasurer::State::prepare_on_device() {
  KTUNE_TRY(reserve_reference_dev());
  std::vector<void*> ptrs;
  for (std::size_t t = 0; t < tensors.size(); ++t) ptrs.push_back(pristine + offsets[t]);
  KTUNE_TRY(on_device->prepare(shape, dtype, seed, ptrs, reference_dev, stream));
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  return Status::success();
}

std::string GpuMeasurer::State::check_preparation(const HostTensors& host) {
  HostTensors gpu_inputs(tensors.size());
  std::vector<std::vector<double>> gpu_reference;
  Status st = Status::success();
  for (std::size_t t = 0; t < tensors.size() && st.ok(); ++t)
    if (tensors[t].access != Access::write) {
      gpu_inputs[t].resize(tensors[t].bytes());
      st = Status::from_cuda(cudaMemcpy(gpu_inputs[t].data(), pristine + offsets[t], tensors[t].bytes(), cudaMemcpyDeviceToHost),
                             "cudaMemcpy");
    }
  if (st.ok()) st = copy_reference_back(gpu_reference);
  if (!st.ok()) return "the GPU's inputs or reference could not be copied back: " + describe(st);
  if (std::string why = preparation_disagreement(tensors, host, reference, gpu_inputs, gpu_reference); !why.empty()) return why;
  // The host's comparisons (the cross-check of the device's) read what the device's read, to the last bit.
  adopt_reference(std::move(gpu_reference));
  return {};
}

Status GpuMeasurer::State::copy_reference_back(std::vector<std::vector<double>>& out) const {
  out.assign(outputs.size(), {});
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    out[o].resize(tensors[outputs[o]].elements);
    KTUNE_CUDA_TRY(cudaMemcpy(out[o].data(), reference_dev.at(o), out[o].size() * sizeof(double), cudaMemcpyDeviceToHost));
  }
  return Status::success();
}

void GpuMeasurer::State::adopt_reference(std::vector<std::vector<double>> r) {
  reference = std::move(r);
  ref_norms.clear();
  for (const std::vector<double>& v : reference) ref_norms.push_back(chunk_norms(v));
}

Status GpuMeasurer::State::ensure_host_reference() {
  if (reference.size() == outputs.size()) return Status::success();
  std::vector<std::vector<double>> r;
  KTUNE_TRY(copy_reference_back(r));
  adopt_reference(std::move(r));
  return Status::success();
}

}  // namespace ktune::bench
