// tools/ktune/list.hpp: `ktune list`, generic over the kernel folders compiled into the tool.
//
// The build generates spaces.inc (tools/CMakeLists.txt), which includes every kernels/<op>/space.hpp
// (host-compilable: no CUDA device code) and lists their Space types; list.cpp turns each into a
// SpaceInfo whose describe() runs the space's own constexpr feasibility rules at run time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ktune/arch.hpp>

namespace ktune::tool {

struct ParamInfo {
  std::string name, unit;
  std::vector<int> values;
};

struct PointInfo {
  std::string id;
  std::string rule;  ///< empty when feasible
};

struct SpaceListing {
  std::size_t total = 0, feasible = 0;
  std::vector<std::pair<std::string, std::size_t>> pruned;  ///< rule text -> points it pruned, in first-seen order
  std::vector<PointInfo> points;                            ///< every point, in space order
};

struct SpaceInfo {
  std::string op;
  std::string folder;  ///< the kernel folder the build found, relative to the source tree (kernels/<op>, or in a
                       ///< KTUNE_KERNEL_ROOTS folder); empty for spaces not from a kernel folder
  std::uint64_t hash = 0;
  std::vector<ParamInfo> params;
  std::string default_id, original_id;  ///< original_id: empty when the space has no original_point
  std::string (*unaligned_id)(int element_bytes) = nullptr;  ///< may depend on the element size
  SpaceListing (*describe)(const ArchLimits& arch, int element_bytes) = nullptr;
};

/// Whether `id` names a point of `space`: its fields are the space's parameters, in order, each with one of
/// its values (feasible or not).
bool names_point(const SpaceInfo& space, const std::string& id);

/// The spaces compiled into this binary, sorted by op.
const std::vector<SpaceInfo>& known_spaces();

/// The folder of `op`: kernels_dir/op when a --kernels DIR was given (non-empty), else the folder the build
/// found it in, else kernels/op. Relative paths are taken from the current directory (the source tree).
std::string kernel_folder(const std::string& op, const std::string& kernels_dir);

/// Builds a SpaceInfo from a kernel folder's Space (used by list.cpp and by tests with a toy space).
template <class S>
SpaceInfo make_space_info(const char* op);

}  // namespace ktune::tool

#include <type_traits>

#include <ktune/space.hpp>

namespace ktune::tool {

namespace detail {
// Spaces declare unaligned_point as a Point, or as a function of the element size when the vector
// width that handles any input depends on it.
template <class S, class = void>
struct unaligned_is_function : std::false_type {};
template <class S>
struct unaligned_is_function<S, std::void_t<decltype(S::unaligned_point(4))>> : std::true_type {};

// original_point (S's own configuration as a point of the space) is optional: a family the generator
// derived from an opaque S need not contain S's configuration.
template <class S, class = void>
struct has_original_point : std::false_type {};
template <class S>
struct has_original_point<S, std::void_t<decltype(S::original_point)>> : std::true_type {};

template <class S>
std::string unaligned_id(int element_bytes) {
  if constexpr (unaligned_is_function<S>::value) return S::space.id(S::unaligned_point(element_bytes));
  else return S::space.id(S::unaligned_point);
}
}  // namespace detail

template <class S>
SpaceListing describe_space(const ArchLimits& arch, int element_bytes) {
  SpaceListing l;
  l.total = S::space.size();
  for (const auto& pv : ktune::explain<S>(arch, element_bytes)) {
    PointInfo p{S::space.id(pv.point), pv.verdict.ok() ? "" : pv.verdict.rule};
    if (pv.verdict.ok()) {
      ++l.feasible;
    } else {
      auto it = l.pruned.begin();
      while (it != l.pruned.end() && it->first != p.rule) ++it;
      if (it == l.pruned.end()) l.pruned.emplace_back(p.rule, 1);
      else ++it->second;
    }
    l.points.push_back(std::move(p));
  }
  return l;
}

template <class S>
SpaceInfo make_space_info(const char* op) {
  SpaceInfo info;
  info.op = op;
  info.hash = S::space.hash();
  for (const auto& p : S::space.params) info.params.push_back({p.name, p.unit, std::vector<int>(p.values, p.values + p.count)});
  info.default_id = S::space.id(S::default_point);
  info.unaligned_id = &detail::unaligned_id<S>;
  if constexpr (detail::has_original_point<S>::value) info.original_id = S::space.id(S::original_point);
  info.describe = &describe_space<S>;
  return info;
}

}  // namespace ktune::tool
