// ktune/family.hpp: the one body every family's run shares, said once.
//
// A family (kernels/<op>/family.cuh, docs/kernel-folder.md) writes what differs between its variants:
// can_implement<Cfg, E> (what a configuration can do, no CUDA call) and enqueue<Cfg, E> (the launch
// alone). Running a variant on a call is always the same three steps, so they live here: the benchmark's
// registry, the public API's fallback and the tests all run a variant through ktune::run_variant.
#pragma once

#include <cuda_runtime_api.h>

#include "status.hpp"

namespace ktune {

/// Runs configuration Cfg of Family on one call: can_implement, then an empty call (the op's
/// `is_empty(a)`, found beside its Args) succeeds without launching, then the family's enqueue.
/// Nothing is launched and nothing is written when can_implement refuses the call.
template <class Family, class Cfg, class E>
Status run_variant(const typename Family::template Args<E>& a, cudaStream_t stream) {
  KTUNE_TRY((Family::template can_implement<Cfg, E>(a)));
  if (is_empty(a)) return Status::success();
  return Family::template enqueue<Cfg, E>(a, stream);
}

}  // namespace ktune
