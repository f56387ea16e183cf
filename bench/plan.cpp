// bench/plan.cpp: which benchmarks a run covers, their expected cost and the run's slices (plan.hpp).
#include "plan.hpp"

#include <algorithm>
#include <regex>

#include "names.hpp"

namespace ktune::bench {

int variant_arch(const Registry& registry, const std::string& op, DType dtype, int device_arch) {
  int best = 0;
  for (const Variant* v : registry.select(op, dtype, 0))
    if ((device_arch == 0 || v->arch <= device_arch) && v->arch > best) best = v->arch;
  return best;
}

const Variant* variant_of(const WorkItem& item, const Registry& registry, int device_arch) {
  if (item.variant) return item.variant;
  return registry.find(item.op, item.dtype, variant_arch(registry, item.op, item.dtype, device_arch), item.id);
}

std::vector<ShapeGroup> plan_sweep(const std::map<std::string, Spec>& specs, const Registry& registry,
                                   int device_arch, const Options& opts,
                                   const std::function<std::string(const WorkItem&)>& key_of) {
  const std::regex shapes_re(opts.shapes.empty() ? std::string(".") : opts.shapes);
  const std::regex variants_re(opts.variants.empty() ? std::string(".") : opts.variants);
  std::vector<ShapeGroup> groups;
  for (const auto& [op, spec] : specs) {
    for (DType dtype : spec.dtypes) {
      if (!opts.dtypes.empty() &&
          std::find(opts.dtypes.begin(), opts.dtypes.end(), std::string(name(dtype))) == opts.dtypes.end())
        continue;
      const int arch = variant_arch(registry, op, dtype, device_arch);
      if (arch == 0) continue;
      std::vector<const Variant*> variants;
      for (const Variant* v : registry.select(op, dtype, arch))
        if (std::regex_search(v->id, variants_re)) variants.push_back(v);
      if (variants.empty()) continue;
      for (const Shape& shape : spec.shapes()) {
        const std::string key = shape.key();
        if (!std::regex_search(key, shapes_re)) continue;
        ShapeGroup g{op, dtype, shape, {}, {}, {}};
        g.copy = WorkItem{op, dtype, shape, std::string(copy_same_size_id), copy_same_size_name(op, dtype, key), {}};
        g.copy.key = key_of(g.copy);
        for (const Variant* v : variants) {
          WorkItem it{op, dtype, shape, v->id, benchmark_name(op, dtype, key, v->id), {}, v};
          it.key = key_of(it);
          g.items.push_back(std::move(it));
        }
        groups.push_back(std::move(g));
      }
    }
  }
  return groups;
}

double expected_cost_s(const ShapeGroup& g, const Spec& spec) {
  const double bytes = static_cast<double>(spec.bytes(g.shape, g.dtype));
  const double per_variant = 1e-3 + 40 * bytes / 3e12;
  return static_cast<double>(g.items.size()) * per_variant + bytes * 2e-9;
}

std::vector<ShapeGroup> slice_groups(const std::vector<ShapeGroup>& groups, const std::map<std::string, Spec>& specs,
                                     int k, int n) {
  if (n <= 1) return groups;
  // A slice's unit is an op and element size: the dtypes of one size guide one another's screens
  // (SearchSettings::dtype_guide_ratio), so a slice searches them as a one-GPU run does.
  struct Unit {
    std::string op;
    int size = 0;
    double cost = 0;
  };
  auto same = [](const Unit& u, const ShapeGroup& g) { return u.op == g.op && u.size == size_of(g.dtype); };
  std::vector<Unit> units;
  for (const ShapeGroup& g : groups) {  // in plan order: equal costs keep it (stable sort below)
    auto u = std::find_if(units.begin(), units.end(), [&](const Unit& x) { return same(x, g); });
    if (u == units.end()) u = units.insert(units.end(), Unit{g.op, size_of(g.dtype), 0});
    const auto spec = specs.find(g.op);
    u->cost += spec == specs.end() ? 1.0 : expected_cost_s(g, spec->second);
  }
  std::stable_sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) { return a.cost > b.cost; });
  std::vector<double> load(static_cast<std::size_t>(n), 0.0);
  std::vector<Unit> mine;
  for (const Unit& u : units) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();
    load[static_cast<std::size_t>(least)] += u.cost;
    if (least == k) mine.push_back(u);
  }
  std::vector<ShapeGroup> out;
  for (const ShapeGroup& g : groups)
    if (std::any_of(mine.begin(), mine.end(), [&](const Unit& u) { return same(u, g); })) out.push_back(g);
  return out;
}

}  // namespace ktune::bench
