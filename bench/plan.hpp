// bench/plan.hpp: which benchmarks a run covers: ops x spec dtypes x spec shapes x compiled variants,
// narrowed by the command line's filters.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ktune/registry.hpp>

#include "options.hpp"
#include <ktune/spec.hpp>
#include "sweep.hpp"

namespace ktune::bench {

/// The architecture whose variants run on a device of `device_arch`: the newest one compiled in that
/// is not newer than the device (0 when none). `device_arch` 0 means "any": the newest compiled.
int variant_arch(const Registry& registry, const std::string& op, DType dtype, int device_arch);

/// Shape groups in run order: ops as given in `specs` (sorted), dtypes in spec order, shapes in spec
/// order, variants in registry order (the original first). `key_of` fills each item's cache key.
std::vector<ShapeGroup> plan_sweep(const std::map<std::string, Spec>& specs, const Registry& registry,
                                   int device_arch, const Options& opts,
                                   const std::function<std::string(const WorkItem&)>& key_of);

}  // namespace ktune::bench
