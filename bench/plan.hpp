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

/// The variant an item names: the one the plan resolved (WorkItem::variant), else the one of variant_arch's
/// architecture looked up by id (items made from --retest's candidates); null when it is not compiled in.
/// The plan's resolving saves the measuring thread a scan of the registry per gate and round (about 60 us
/// each, 1.7 s of a ten-op tune).
const Variant* variant_of(const WorkItem& item, const Registry& registry, int device_arch);

/// Shape groups in run order: ops as given in `specs` (sorted), dtypes in spec order, shapes in spec
/// order, variants in registry order (the original first). `key_of` fills each item's cache key.
std::vector<ShapeGroup> plan_sweep(const std::map<std::string, Spec>& specs, const Registry& registry,
                                   int device_arch, const Options& opts,
                                   const std::function<std::string(const WorkItem&)>& key_of);

/// What a group is expected to cost a search, in seconds: per variant a fixed part (gate, device check,
/// launches) and about 40 calls' worth of moving the spec's bytes at 3 TB/s, plus the host's preparation
/// of the group. Only its proportions matter: it balances slices.
double expected_cost_s(const ShapeGroup& g, const Spec& spec);

/// --slice K/N: the groups of slice `k` of `n`, in plan order. The unit is an op's dtypes of one element size,
/// whole (an (op, dtype)'s general configuration is chosen from the screens of all its shapes, and bf16's
/// screens are guided by fp16's: SearchSettings::dtype_guide_ratio); units go longest first onto the
/// slice with the least expected cost so far (ties: the lower slice, the earlier unit), so every slice
/// computes the same split from the same plan.
std::vector<ShapeGroup> slice_groups(const std::vector<ShapeGroup>& groups, const std::map<std::string, Spec>& specs,
                                     int k, int n);

}  // namespace ktune::bench
