// bench/measure_gate.cu: the judge's gate (docs/judge.md): can_implement, the device check, then the call
// twice on the guarded gate set with shared memory scribbled, each run checked for writes outside its
// tensors, changed inputs, unwritten outputs and wrong values (on the device, or copied back and compared
// on the host), the two runs bitwise equal; the outputs' digests kept for the checks of timed calls.
#include "measure_detail.cuh"

#include <cmath>
#include <cstdio>
#include <functional>
#include <system_error>
#include <thread>

#include <ktune/device_check.hpp>
#include <ktune/fill.cuh>
#include <ktune/judge.hpp>

#include "plan.hpp"

namespace ktune::bench {

namespace {

constexpr std::size_t compare_chunk = reference_chunk;

/// ktune::compare over chunks on several threads. Merging is exact for passing outputs; for failing
/// ones rel_l2 can differ slightly from a single pass (the failure itself is exact).
template <class T>
Comparison compare_parallel(const T* out, const std::vector<double>& ref, const std::vector<double>& ref2_chunks,
                            Tolerance tol) {
  const std::size_t n = ref.size();
  const std::size_t chunks = (n + compare_chunk - 1) / compare_chunk;
  if (chunks <= 1) return compare(out, ref.data(), n, tol);
  std::vector<Comparison> part(chunks);
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = std::min<std::size_t>({chunks, hw, 32});
  auto work = [&](std::size_t w) {
    for (std::size_t c = w; c < chunks; c += workers) {
      const std::size_t begin = c * compare_chunk;
      part[c] = compare(out + begin, ref.data() + begin, std::min(compare_chunk, n - begin), tol);
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t w = 1; w < workers; ++w) pool.emplace_back(work, w);
  work(0);
  for (std::thread& t : pool) t.join();

  Comparison c;
  double err2 = 0, ref2 = 0;
  for (std::size_t k = 0; k < chunks; ++k) {
    const Comparison& p = part[k];
    c.count += p.count;
    c.unwritten += p.unwritten;
    c.mismatched += p.mismatched;
    if (c.first_unwritten == static_cast<std::size_t>(-1) && p.first_unwritten != static_cast<std::size_t>(-1))
      c.first_unwritten = k * compare_chunk + p.first_unwritten;
    if (c.first_bad == static_cast<std::size_t>(-1) && p.first_bad != static_cast<std::size_t>(-1)) {
      c.first_bad = k * compare_chunk + p.first_bad;
      c.first_bad_value = p.first_bad_value;
      c.first_bad_ref = p.first_bad_ref;
    }
    c.max_abs = std::max(c.max_abs, p.max_abs);
    err2 += squared_error(p.rel_l2, ref2_chunks[k], std::min(compare_chunk, n - k * compare_chunk), tol.l2_floor());
    ref2 += ref2_chunks[k];
  }
  c.rel_l2 = relative_l2(err2, ref2, n, tol.l2_floor());
  c.passed = c.mismatched == 0 && c.rel_l2 <= tol.rel_l2;
  return c;
}

/// Whether two comparisons of one output say the same (rel_l2 summed in another order: last bits).
bool same_verdict(const Comparison& a, const Comparison& b) {
  const double scale = std::max({std::fabs(a.rel_l2), std::fabs(b.rel_l2), 1e-300});
  return a.passed == b.passed && a.count == b.count && a.unwritten == b.unwritten && a.mismatched == b.mismatched &&
         a.first_bad == b.first_bad && a.first_unwritten == b.first_unwritten && a.max_abs == b.max_abs &&
         (std::fabs(a.rel_l2 - b.rel_l2) <= 1e-6 * scale || (std::isnan(a.rel_l2) && std::isnan(b.rel_l2)));
}

}  // namespace

Status GpuMeasurer::State::reset_gate() {
  if (gate_dirty && gate_arena)
    KTUNE_TRY(fill_bits(reinterpret_cast<float*>(gate_arena), gate_arena_bytes / 4, guard_word, stream));
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const TensorInfo& ti = tensors[t];
    if (ti.access == Access::write) {
      KTUNE_TRY(visit_tensor_type(ti, dtype, [&](auto e) {
        using T = decltype(e);
        return fill_bits(reinterpret_cast<T*>(gate_ptr[t]), ti.elements, poison_bits<T>(), stream);
      }));
    } else if ((ti.access == Access::read_write || gate_dirty) && ti.bytes()) {
      KTUNE_CUDA_TRY(cudaMemcpyAsync(gate_ptr[t], pristine + offsets[t], ti.bytes(), cudaMemcpyDeviceToDevice, stream));
    }
  }
  gate_dirty = false;
  return Status::success();
}

Status GpuMeasurer::State::check_buffers(const std::string& when, std::string& verdict, std::vector<std::uint64_t>& output_digests,
                                         const std::function<Status()>& also) {
  verdict.clear();
  CheckBatch batch;  // the guard zones, then the read-only inputs' digests, then the outputs'
  std::vector<std::size_t> zone_of;  // the tensor of each zone pair
  if (gate_arena)
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      const std::size_t bytes = tensors[t].bytes();
      const std::size_t after = (bytes + tensor_alignment - 1) / tensor_alignment * tensor_alignment - bytes + guard_bytes;
      batch.first_difference({gate_ptr[t] - guard_bytes, guard_bytes, 0});
      batch.first_difference({gate_ptr[t] + bytes, after, static_cast<std::size_t>(gate_ptr[t] + bytes - gate_arena) % 4});
      zone_of.push_back(t);
    }
  std::vector<std::size_t> inputs;
  for (std::size_t t = 0; t < tensors.size(); ++t)
    if (tensors[t].access == Access::read) {
      inputs.push_back(t);
      batch.digest({gate_ptr[t], tensors[t].bytes(), 0});
    }
  for (std::size_t t : outputs) batch.digest({gate_ptr[t], tensors[t].bytes(), 0});
  KTUNE_TRY(batch.enqueue(stream, check_scratch));
  if (also) KTUNE_TRY(also());
  KTUNE_CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<unsigned long long> r;
  batch.collect(check_scratch, r);

  for (std::size_t z = 0; z < 2 * zone_of.size(); ++z) {
    if (r[z] == ULLONG_MAX) continue;
    const TensorInfo& ti = tensors[zone_of[z / 2]];
    const std::size_t first = static_cast<std::size_t>(r[z]);
    verdict = judge::message(judge::Verdict::out_of_bounds_write,
                             z % 2 == 0 ? ti.name + ": the guard zone before it changed, first at byte " +
                                              std::to_string(static_cast<long long>(first) - static_cast<long long>(guard_bytes)) +
                                              " (bytes before its first byte count from -1) " + when
                                        : ti.name + ": the guard zone after it changed, first at byte +" + std::to_string(first) +
                                              " past its end (" + std::to_string(ti.bytes()) + " bytes) " + when);
    gate_dirty = true;
    return Status::success();
  }
  const std::size_t d = 2 * zone_of.size();  // the first digest's slot
  output_digests.assign(r.begin() + static_cast<std::ptrdiff_t>(d + inputs.size()), r.end());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::size_t t = inputs[i];
    if (r[d + i] == input_digest[t]) continue;
    std::size_t first = SIZE_MAX;
    KTUNE_TRY(first_difference(gate_ptr[t], pristine + offsets[t], tensors[t].bytes(), stream, check_scratch, first));
    verdict = judge::message(judge::Verdict::input_modified, tensors[t].name + " is read-only but changed, first at byte " +
                                                                 std::to_string(first) + " of " + std::to_string(tensors[t].bytes()) +
                                                                 " " + when);
    gate_dirty = true;
    break;
  }
  return Status::success();
}

bool GpuMeasurer::check(const WorkItem& item, BenchResult& r, bool settled_later) {
  State& s = *s_;
  s.checked = nullptr;
  PhaseScope phase(s.phases, PhaseTimes::gate);
  // Variants compiled for the newest architecture the device runs (sm_90 code on an sm_100 device, say).
  const Variant* v = variant_of(item, Registry::global(), s.arch);
  if (!v) {
    r.error = "cannot implement: variant " + item.id + " is not compiled into this binary for sm_" + std::to_string(s.arch);
    return false;
  }
  const void* args = s.args.at(0).get();
  const Status can = v->can_implement(args);
  if (!can.ok()) {
    r.error = "cannot implement: " + describe(can);
    return false;
  }

  // Before running anything: a kernel that cannot launch here would only fail the gate confusingly.
  // An original S reached only through its own launcher (ops the generator derived from a user's file)
  // has no kernel pointer to ask about: it is gated and timed, not device-checked. Variants always are.
  PartScope device_check(s.phases, "gate.device_check");
  const KernelResources res = v->resources(args);
  if (res.func || !v->is_original()) {
    DeviceCheck dc;
    const Status checked = check_on_device(res, dc);
    if (!checked.ok()) {
      s.cuda_failure(r, "rejected: the device check failed: ", checked);
      return false;
    }
    r.registers = dc.registers;
    r.local_bytes = static_cast<double>(dc.local_bytes);
    r.occupancy = dc.occupancy;
    if (!dc.ok) {
      r.error = "rejected: " + dc.reason;
      return false;
    }
  }

  device_check.stop();
  if (s.gate_ptr.empty()) {  // rounds of a finalist this process did not gate (a cached screen)
    const std::string err = prepare_gate(s.host_inputs);
    if (!err.empty()) {
      r.error = "error: " + err;
      r.cacheable = false;
      return false;
    }
  }
  // The caller's settings before the first call of any variant (what a call leaves behind is compared with them).
  if (const Status st = s.ensure_caller_baseline(); !st.ok()) {
    s.cuda_failure(r, "error: reading the caller's state: ", st);
    r.cacheable = r.fatal;
    return false;
  }
  // One checked run: shared memory scribbled, the call (`chained`: as the second kernel of a dependent chain,
  // its inputs written late by a kernel that released it early), the whole device synchronised (work a variant
  // put on a stream of its own included), the caller's state, guard zones and read-only inputs checked.
  auto checked_run = [&](std::uint32_t scribble, const std::string& when, std::vector<std::uint64_t>& out_digests,
                         const std::function<Status()>& also = nullptr, bool chained = false) -> bool {
    PartScope reset(s.phases, "gate.reset");
    Status st = s.reset_gate();
    if (st.ok()) st = scribble_shared_memory(scribble, s.stream);
    reset.stop();
    if (st.ok() && chained) {
      PartScope part(s.phases, "gate.chain");
      const bool calibrated = s.chain.info().calibrated;
      st = s.chain.enqueue(s.chain_tensors([&](std::size_t t) -> void* { return s.gate_ptr[t]; }), s.dtype, s.stream);
      if (st.ok() && !calibrated && !s.chain.info().effective)
        s.warnings.push_back("the dependent chain: no kernel launched with programmatic dependent launch started before the "
                             "kernel before it was done on this device, so the chain checks stream order only, not reads "
                             "before a griddepcontrol.wait");
    }
    if (!st.ok()) {
      s.cuda_failure(r, "error: resetting the gate's buffers: ", st);
      r.cacheable = r.fatal;
      return false;
    }
    PartScope run(s.phases, "gate.runs");
    st = v->run(s.gate_args.get(), s.stream);
    const bool launched = st.ok();
    if (launched) st = Status::from_cuda(cudaDeviceSynchronize(), "the kernel");
    run.stop();
    // What the call left in the caller's stream, context and device, even where it failed: put back before
    // anything else runs, and a verdict of its own before any other.
    std::string verdict;
    bool fatal = false;
    {
      PartScope part(s.phases, "gate.state");
      const Status state = s.check_caller_state(when, verdict, fatal);
      if (!state.ok() && st.ok()) st = state;
    }
    if (!verdict.empty()) {
      s.gate_dirty = true;
      r.error = verdict;
      r.fatal = fatal;
      return false;
    }
    if (!st.ok()) {
      s.gate_dirty = true;
      if (launched) s.cuda_failure(r, "incorrect: ", st);
      else if (st.code == StatusCode::cuda_error) s.cuda_failure(r, "incorrect: the launch failed: ", st);
      else r.error = "cannot implement: " + describe(st);
      return false;
    }
    PartScope checks(s.phases, "gate.buffer_checks");
    st = s.check_buffers(when, verdict, out_digests, also);
    checks.stop();
    if (!st.ok()) {
      s.cuda_failure(r, "error: checking the gate's buffers: ", st);
      r.cacheable = r.fatal;
      return false;
    }
    r.error = verdict;
    return verdict.empty();
  };
  // The first run's outputs are compared on the device when it may: enqueued after its buffer checks, one
  // synchronisation for both (read below, once the checks passed).
  const bool on_device = s.device_compare && !s.device_compare_off && s.reference_dev.size() == s.outputs.size();
  auto for_each_output = [&](auto&& f) -> Status {
    for (std::size_t o = 0; o < s.outputs.size(); ++o) {
      const std::size_t t = s.outputs[o];
      KTUNE_TRY(visit_tensor_type(s.tensors[t], s.dtype, [&](auto e) {
        using T = decltype(e);
        return f(o, reinterpret_cast<const T*>(s.gate_ptr[t]), s.tensors[t].elements);
      }));
    }
    return Status::success();
  };
  auto enqueue_compare = [&]() -> Status {
    return for_each_output([&](std::size_t o, auto* out, std::size_t n) {
      return compare_enqueue(out, s.reference_dev[o], n, s.tol, s.stream, s.scratch, o);
    });
  };
  std::vector<std::uint64_t> first, second;  // digests of the outputs after each run
  if (!checked_run(smem_scribble_first, "(the gate's first run)", first, on_device ? enqueue_compare : std::function<Status()>()))
    return false;

  // Compared on the device when it may (the first gate of each shape on the host as well, as a check
  // of the device comparison), else copied back and compared on the host.
  auto host_compare = [&](std::vector<Comparison>& out) -> Status {
    KTUNE_TRY(s.ensure_host_reference());
    PartScope copy(s.phases, "gate.host_copy");
    KTUNE_TRY(s.copy_outputs_back());
    KTUNE_CUDA_TRY(cudaStreamSynchronize(s.stream));
    copy.stop();
    PartScope part(s.phases, "gate.host_compare");
    out = s.compare_host_out();
    return Status::success();
  };
  auto compare_on_device = [&](std::vector<Comparison>& out) -> Status {
    PartScope part(s.phases, "gate.device_compare");
    out.assign(s.outputs.size(), Comparison{});
    return for_each_output([&](std::size_t o, auto* p, std::size_t n) {
      return compare_finish(p, s.reference_dev[o], n, s.tol, s.stream, s.scratch, out[o], o);
    });
  };
  std::vector<Comparison> comparisons;
  Status st = Status::success();
  {
    st = on_device ? compare_on_device(comparisons) : host_compare(comparisons);
    // A group the GPU prepared has the host's reference only where the host checked the GPU's (small
    // groups, at their screens): a larger one is not cross-checked (its reference stays on the device).
    if (st.ok() && on_device && !s.cross_checked && s.reference.size() == s.outputs.size()) {
      s.cross_checked = true;
      if (settled_later) {
        st = s.start_cross_check(item.name, comparisons);
      } else {
        std::vector<Comparison> host;
        st = host_compare(host);
        if (const std::string why = st.ok() ? s.disagreement(item.name, comparisons, host) : std::string(); !why.empty()) {
          s.device_compare_off = true;
          s.warnings.push_back(why + ": every later gate compares on the host");
          comparisons = host;
        }
      }
    }
  }
  if (!st.ok()) {
    s.cuda_failure(r, "error: ", st);
    r.cacheable = r.fatal;
    return false;
  }

  std::string unwritten, wrong;
  for (std::size_t o = 0; o < s.outputs.size(); ++o) {
    const TensorInfo& t = s.tensors[s.outputs[o]];
    const Comparison& c = comparisons[o];
    r.rel_l2 = std::max(r.rel_l2, c.rel_l2);
    r.max_abs = std::max(r.max_abs, c.max_abs);
    // A read_write tensor starts as input: only a write-only output can hold the poison.
    if (c.unwritten && t.access == Access::write && unwritten.empty())
      unwritten = t.name + ": " + std::to_string(c.unwritten) + " of " + std::to_string(c.count) +
                  " elements still hold the poison they were filled with, the first at [" + std::to_string(c.first_unwritten) + "]";
    if (!c.passed && wrong.empty()) wrong = t.name + ": " + c.summary();
  }
  const std::string seed = " (seed " + std::to_string(s.seed) + ")";
  if (!unwritten.empty()) {
    r.error = judge::message(judge::Verdict::unwritten_output, unwritten + seed);
    return false;
  }
  if (!wrong.empty()) {
    r.error = judge::message(judge::Verdict::incorrect, wrong + seed);
    return false;
  }

  // The same call again, with other leftovers in shared memory, and as the second kernel of a dependent chain
  // (dependent_chain.cuh): its inputs hold stale values until the kernel before it on the stream, which released
  // it at its start, writes the real ones late. Bitwise the same outputs: a call that reads its inputs before
  // its griddepcontrol.wait computes, in part, from the stale ones.
  if (!checked_run(smem_scribble_second, "(the gate's second run of the same call, behind a kernel that wrote its inputs late)",
                   second, nullptr, /*chained=*/true))
    return false;
  std::size_t differs = s.outputs.size();
  for (std::size_t o = 0; o < s.outputs.size() && differs == s.outputs.size(); ++o)
    if (first[o] != second[o]) differs = o;
  if (differs < s.outputs.size()) {
    // The chain or a race: the call twice more with its inputs in place, with each run's shared-memory leftovers.
    // The first run's outputs both times: the chain made the difference (a race would have to repeat itself
    // twice to look like it).
    std::vector<std::uint64_t> third, fourth;
    if (!checked_run(smem_scribble_second, "(the gate's third run of the same call, its inputs in place)", third)) return false;
    if (third == first && !checked_run(smem_scribble_first, "(the gate's fourth run of the same call, its inputs in place)", fourth))
      return false;
    const std::string& name = s.tensors[s.outputs[differs]].name;
    const ChainInfo& chain = s.chain.info();
    if (third == first && fourth == first && chain.effective) {
      char later[32];
      std::snprintf(later, sizeof later, "%.0f us", chain.delay_us);
      r.error = judge::message(
          judge::Verdict::reads_before_wait,
          name + ": run as the second kernel of a dependent chain, the call gave other outputs: the kernel before it on the "
                 "stream released it at its start (griddepcontrol.launch_dependents) and wrote its inputs " + later +
              " later, so the call read inputs before that kernel was done (before its griddepcontrol.wait, "
              "ktune::pdl_wait, returned, or on a stream of its own); run again with its inputs in place, twice, it gave "
              "the first run's outputs. In a model the kernel before a call writes its inputs: a call launched with PDL "
              "must wait before its first global access" + seed);
    } else {
      r.error = judge::message(judge::Verdict::nondeterministic,
                               name + ": two runs of the same call on the same inputs gave outputs that differ bitwise (a race, "
                                      "an order-dependent reduction, or a read of memory nobody wrote)" + seed);
    }
    return false;
  }
  s.gate_digests[item.name] = first;
  s.checked = v;
  return true;
}

Status GpuMeasurer::State::copy_outputs_back() {
  // Pinned when a group first needs it, not when its gate is prepared: a group the GPU prepared past the
  // host's check is compared on the device alone, and pinning its outputs' size (up to a gigabyte, each time
  // the largest group so far grows it) cost the gate's preparation seconds for nothing.
  if (!host_out) {
    std::size_t bytes = 0;
    for (std::size_t t : outputs) bytes += tensors[t].bytes();
    KTUNE_CUDA_TRY(kept_host_out.reserve(bytes));
    host_out = kept_host_out.data();
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const std::size_t t = outputs[o];
    KTUNE_CUDA_TRY(cudaMemcpyAsync(host_out + host_offsets[o], gate_ptr[t], tensors[t].bytes(), cudaMemcpyDeviceToHost, stream));
  }
  return Status::success();
}

std::vector<Comparison> GpuMeasurer::State::compare_host_out() const {
  std::vector<Comparison> out;
  for (std::size_t o = 0; o < outputs.size(); ++o)
    out.push_back(visit_tensor_type(tensors[outputs[o]], dtype, [&](auto e) {
      using T = decltype(e);
      return compare_parallel(reinterpret_cast<const T*>(host_out + host_offsets[o]), reference[o], ref_norms[o], tol);
    }));
  return out;
}

std::string GpuMeasurer::State::disagreement(const std::string& name, const std::vector<Comparison>& device,
                                             const std::vector<Comparison>& host) const {
  for (std::size_t o = 0; o < host.size() && o < device.size(); ++o)
    if (!same_verdict(host[o], device[o]))
      return name + ": the device comparison of " + tensors[outputs[o]].name + " (" + device[o].summary() +
             ") disagrees with the host's (" + host[o].summary() + ")";
  return {};
}

Status GpuMeasurer::State::start_cross_check(const std::string& name, std::vector<Comparison> device) {
  // The copy is on the stream before the gate's second run refills the outputs; the thread reads host_out,
  // the reference and the tensors' facts, which stay until settle_cross_check (release waits for it too).
  KTUNE_TRY(copy_outputs_back());
  if (!cross_copied) KTUNE_CUDA_TRY(cudaEventCreateWithFlags(&cross_copied, cudaEventDisableTiming));
  KTUNE_CUDA_TRY(cudaEventRecord(cross_copied, stream));
  int gpu = 0;
  KTUNE_CUDA_TRY(cudaGetDevice(&gpu));
  auto check = [this, gpu, name, device = std::move(device)] {
    const auto t0 = std::chrono::steady_clock::now();
    CrossCheck c;
    cudaError_t e = cudaSetDevice(gpu);  // a new thread starts on device 0
    if (e == cudaSuccess) e = cudaEventSynchronize(cross_copied);
    if (e != cudaSuccess)
      c.disagreement = name + ": its outputs could not be copied back for the host's check of the device comparison (" +
                       cudaGetErrorString(e) + ")";
    else
      c.disagreement = disagreement(name, device, compare_host_out());
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return c;
  };
  try {
    cross_check = std::async(std::launch::async, check);
  } catch (const std::system_error&) {  // no thread to spare: the check runs when the shape is settled
    cross_check = std::async(std::launch::deferred, check);
  }
  return Status::success();
}

std::string GpuMeasurer::State::settle_cross_check() {
  if (!cross_check.valid()) return {};
  PhaseScope phase(phases, PhaseTimes::gate);
  PartScope wait(phases, "gate.host_check_waited");
  const CrossCheck c = cross_check.get();
  wait.stop();
  phases.part_s["gate.host_check_background"] += c.seconds;  // not in the gate's wall time: the GPU went on
  if (c.disagreement.empty()) return {};
  device_compare_off = true;
  warnings.push_back(c.disagreement + ": every later gate compares on the host");
  return c.disagreement;
}

std::string GpuMeasurer::settle_shape() { return s_->settle_cross_check(); }

}  // namespace ktune::bench
