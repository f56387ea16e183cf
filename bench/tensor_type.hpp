// bench/tensor_type.hpp: the storage type of a spec tensor, for code that fills or reads it by type
// (the measurer, bench/upstream).
#pragma once

#include <utility>

#include <ktune/dtype.hpp>
#include <ktune/harness.hpp>

namespace ktune::bench {

/// Calls f(T{}) with the storage type of a tensor: fp32 tensors are float whatever the op's dtype.
template <class F>
decltype(auto) visit_tensor_type(const TensorInfo& t, DType dtype, F&& f) {
  if (t.element_bytes == 4) return f(float{});
  return visit_dtype(dtype, std::forward<F>(f));
}

}  // namespace ktune::bench
