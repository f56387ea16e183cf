// bench/host_inputs.cpp: a shape group's host side (host_inputs.hpp): tensors, fills and the float64 reference, no GPU.
#include "host_inputs.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <utility>

#include <ktune/random.hpp>

namespace ktune::bench {

namespace {

/// Calls f(T{}) with the storage type of a tensor: fp32 tensors are float whatever the op's dtype.
template <class F>
decltype(auto) visit_storage(const TensorInfo& t, DType dtype, F&& f) {
  if (t.element_bytes == 4) return f(float{});
  return visit_dtype(dtype, std::forward<F>(f));
}

/// The largest finite value of an output's storage type.
double max_finite(const TensorInfo& t, DType dtype) {
  if (t.element_bytes == 4 || dtype == DType::f32) return 3.4028234663852886e38;
  return dtype == DType::f16 ? 65504.0 : 3.3895313892515355e38;
}

bool reference_finite(const HostGroup& g, DType dtype) {
  for (std::size_t o = 0, t = 0; t < g.tensors.size(); ++t) {
    if (!g.tensors[t].is_output()) continue;
    const double limit = max_finite(g.tensors[t], dtype);
    if (o < g.reference.size())
      for (double x : g.reference[o])
        if (!(std::fabs(x) <= limit)) return false;
    ++o;
  }
  return true;
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

std::string fill(const Harness& harness, const Spec& spec, const HostRequest& r, HostGroup& g) {
  g.bytes_moved = static_cast<double>(spec.bytes(r.shape, r.dtype));
  g.tensors = harness.tensors(r.shape, r.dtype);
  double harness_bytes = 0;
  for (const TensorInfo& t : g.tensors)
    harness_bytes += static_cast<double>(t.moved_bytes());
  if (harness_bytes != g.bytes_moved)
    return "the harness's tensors move " + std::to_string(static_cast<long long>(harness_bytes)) +
           " bytes per call, spec.json says " + std::to_string(static_cast<long long>(g.bytes_moved));
  if (!r.inputs) return {};
  g.inputs.resize(g.tensors.size());
  for (std::size_t t = 0; t < g.tensors.size(); ++t) g.inputs[t].resize(g.tensors[t].bytes());
  harness.fill_inputs(r.shape, r.dtype, r.seed, g.inputs);
  for (std::size_t t = 0; t < g.tensors.size(); ++t)
    if (g.tensors[t].access != Access::write && g.inputs[t].size() != g.tensors[t].bytes())
      return "the harness filled tensor " + g.tensors[t].name + " with " + std::to_string(g.inputs[t].size()) +
             " bytes, its TensorInfo says " + std::to_string(g.tensors[t].bytes());
  if (r.wide) {
    // Magnitudes in the hundreds, as far as the reference stays finite in the outputs' storage type.
    const HostTensors drawn = g.inputs;
    for (double reach = 300;; reach /= 2) {
      widen(g.inputs, g.tensors, spec, r.dtype, r.seed, reach);
      g.reference = harness.reference(r.shape, r.dtype, g.inputs);
      if (reference_finite(g, r.dtype) || reach < 4) break;
      g.inputs = drawn;
    }
  } else if (r.reference) {
    g.reference = harness.reference(r.shape, r.dtype, g.inputs);
  }
  return {};
}

}  // namespace

std::string HostRequest::describe() const {
  return op + "/" + name(dtype) + "/" + shape.key() +
         (wide ? " (wide values)" : !inputs ? " (on the GPU)" : reference ? "" : " (inputs only)");
}

std::vector<double> chunk_norms(const std::vector<double>& ref) {
  std::vector<double> out((ref.size() + reference_chunk - 1) / reference_chunk, 0.0);
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (std::isfinite(ref[i])) out[i / reference_chunk] += ref[i] * ref[i];
  return out;
}

std::size_t HostGroup::held_bytes() const {
  std::size_t n = 0;
  for (const auto& t : inputs) n += t.size();
  for (const auto& o : reference) n += o.size() * sizeof(double);
  return n;
}

HostGroup prepare_host(const Harness& harness, const Spec& spec, const HostRequest& r) {
  const double cpu0 = thread_cpu_s();
  HostGroup g;
  try {
    g.error = fill(harness, spec, r, g);
  } catch (const std::exception& e) {
    g.error = std::string("the harness failed: ") + e.what();
  }
  if (!g.error.empty()) {
    g.inputs.clear();
    g.reference.clear();
  }
  for (const std::vector<double>& ref : g.reference) g.norms.push_back(chunk_norms(ref));
  g.cpu_s = thread_cpu_s() - cpu0;
  return g;
}

std::string preparation_disagreement(const std::vector<TensorInfo>& tensors, const HostTensors& host,
                                     const std::vector<std::vector<double>>& reference, const HostTensors& gpu_inputs,
                                     const std::vector<std::vector<double>>& gpu_reference) {
  if (host.size() != tensors.size() || gpu_inputs.size() != tensors.size()) return "not every tensor was prepared";
  std::vector<std::string> outputs;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t].is_output()) outputs.push_back(tensors[t].name);
    if (tensors[t].access == Access::write) continue;
    if (host[t].size() != tensors[t].bytes() || gpu_inputs[t].size() != tensors[t].bytes())
      return tensors[t].name + " was drawn with another size";
    const auto diff = std::mismatch(gpu_inputs[t].begin(), gpu_inputs[t].end(), host[t].begin());
    if (diff.first != gpu_inputs[t].end())
      return "the GPU drew " + tensors[t].name + " other than the host, first at byte " +
             std::to_string(diff.first - gpu_inputs[t].begin());
  }
  if (reference.size() != outputs.size() || gpu_reference.size() != outputs.size())
    return "the host computed " + std::to_string(reference.size()) + " references, the GPU " +
           std::to_string(gpu_reference.size()) + ", for " + std::to_string(outputs.size()) + " outputs";
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    if (gpu_reference[o].size() != reference[o].size()) return "the references of " + outputs[o] + " differ in size";
    double squares = 0;
    std::size_t finite = 0;
    for (const double b : reference[o])
      if (std::isfinite(b)) {
        squares += b * b;
        ++finite;
      }
    const double rms = finite ? std::sqrt(squares / static_cast<double>(finite)) : 0;
    for (std::size_t i = 0; i < reference[o].size(); ++i) {
      const double a = gpu_reference[o][i], b = reference[o][i];
      if (a == b || (std::isnan(a) && std::isnan(b)) || std::fabs(a - b) <= 1e-12 * std::max({std::fabs(a), std::fabs(b), rms}))
        continue;
      char what[160];
      std::snprintf(what, sizeof what, " is not the host's at [%zu]: %.17g against %.17g", i, a, b);
      return "the GPU's reference of " + outputs[o] + what;
    }
  }
  return {};
}

void widen(HostTensors& host, const std::vector<TensorInfo>& tensors, const Spec& spec, DType dtype, std::uint64_t seed,
           double reach) {
  auto is_index = [&](const std::string& tensor) {
    for (const SpecTensor& st : spec.tensors)
      if (st.name == tensor) return st.is_index();
    return false;
  };
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const TensorInfo& ti = tensors[t];
    if (ti.access == Access::write || is_index(ti.name)) continue;
    visit_storage(ti, dtype, [&](auto e) {
      using T = decltype(e);
      T* p = reinterpret_cast<T*>(host[t].data());
      double largest = 0;
      for (std::size_t i = 0; i < ti.elements; ++i) largest = std::max(largest, std::fabs(static_cast<double>(to_float(p[i]))));
      const double factor = largest > 0 ? reach / largest : 1.0;
      for (std::size_t i = 0; i < ti.elements; ++i) {
        const bool zero = (mix64(seed ^ (t << 40) ^ i) & 15) == 0;
        p[i] = from_float<T>(zero ? 0.f : static_cast<float>(static_cast<double>(to_float(p[i])) * factor));
      }
      return 0;
    });
  }
}

}  // namespace ktune::bench
