// ktune/space.hpp: tunable parameters θ, spaces of them, feasibility verdicts, variant ids.
//
// Everything here is value-level and constexpr (C++17), so a space of thousands of points is
// enumerated and filtered by the compiler's constant evaluator in about a second; only the feasible
// points ever become types (see instantiate.hpp). The type-level alternative — a Hana cartesian
// product of integral constants, then a filter — grows too fast: DESIGN.md measured 10 s for 625
// points and no result in 300 s for 3125.
//
// A kernel family (kernels/<op>/space.hpp) declares
//
//   struct Family {
//     static constexpr auto space = ktune::make_space(ktune::param("tpb", "threads", {128, 256}), ...);
//     using Point = decltype(space)::Point;
//     static constexpr ktune::Verdict feasible(const Point&, const ktune::ArchLimits&, int element_bytes);
//     static constexpr Point default_point = {...};
//     template <int Tpb, ...> struct Config;   // the type view, one int per parameter, in order
//   };
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arch.hpp"

namespace ktune {

inline constexpr int max_param_values = 8;

/// One tunable dimension: a short name (used in ids), its unit, and its candidate values in the
/// order they are listed. Booleans are 0/1.
struct Param {
  const char* name = "";
  const char* unit = "";
  int count = 0;
  int values[max_param_values] = {};

  constexpr int index_of(int v) const noexcept {
    for (int i = 0; i < count; ++i)
      if (values[i] == v) return i;
    return -1;
  }
  constexpr bool has(int v) const noexcept { return index_of(v) >= 0; }
};

namespace detail {
// Not constexpr on purpose: reaching it makes a constant evaluation fail with its name in the error.
inline int param_has_more_than_max_param_values_candidates() { return 0; }
inline int param_has_no_candidate_values() { return 0; }
}  // namespace detail

constexpr Param param(const char* name, const char* unit, std::initializer_list<int> values) {
  Param p{name, unit, 0, {}};
  if (values.size() > static_cast<std::size_t>(max_param_values))
    detail::param_has_more_than_max_param_values_candidates();
  if (values.size() == 0) detail::param_has_no_candidate_values();
  for (int v : values) p.values[p.count++] = v;
  return p;
}

/// Outcome of a feasibility check: feasible, or the first rule that prunes the point. Rules are
/// chained with require(); the rule text is kept so reports can say why a point was pruned.
struct Verdict {
  const char* rule = nullptr;

  constexpr bool ok() const noexcept { return rule == nullptr; }
  constexpr Verdict require(bool holds, const char* rule_text) const noexcept {
    return (!ok() || holds) ? *this : Verdict{rule_text};
  }
};

template <std::size_t N>
struct ParsedId {
  bool ok = false;
  const char* error = "empty id";
  std::array<int, N> point{};
};

namespace detail {
constexpr std::uint64_t fnv1a(std::uint64_t h, std::string_view s) noexcept {
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}
constexpr std::uint64_t fnv1a(std::uint64_t h, long long v) noexcept {
  for (int i = 0; i < 8; ++i) {
    h ^= static_cast<unsigned char>(static_cast<unsigned long long>(v) >> (8 * i));
    h *= 0x100000001b3ull;
  }
  return h;
}
constexpr bool parse_int(std::string_view s, int& out) noexcept {
  if (s.empty()) return false;
  bool neg = s[0] == '-';
  std::size_t i = neg ? 1 : 0;
  if (i == s.size()) return false;
  long long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
    if (v > 2147483647ll) return false;
  }
  out = static_cast<int>(neg ? -v : v);
  return true;
}
}  // namespace detail

/// A space of N parameters: the cartesian product of their candidate values.
template <std::size_t N>
struct Space {
  using Point = std::array<int, N>;
  static constexpr std::size_t rank = N;

  std::array<Param, N> params;

  /// Number of points (before feasibility).
  constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (const Param& p : params) n *= static_cast<std::size_t>(p.count);
    return n;
  }

  /// The point at `index` in declaration order: the last parameter varies fastest.
  constexpr Point point(std::size_t index) const noexcept {
    Point pt{};
    for (std::size_t k = N; k-- > 0;) {
      const auto c = static_cast<std::size_t>(params[k].count);
      pt[k] = params[k].values[index % c];
      index /= c;
    }
    return pt;
  }

  constexpr int find(std::string_view name) const noexcept {
    for (std::size_t k = 0; k < N; ++k)
      if (name == params[k].name) return static_cast<int>(k);
    return -1;
  }

  constexpr bool contains(const Point& pt) const noexcept {
    for (std::size_t k = 0; k < N; ++k)
      if (!params[k].has(pt[k])) return false;
    return true;
  }

  /// Changes whenever a name, unit, value or the order of either changes. Tuned tables and the
  /// result cache store it.
  constexpr std::uint64_t hash() const noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const Param& p : params) {
      h = detail::fnv1a(h, std::string_view(p.name));
      h = detail::fnv1a(h, std::string_view("|"));
      h = detail::fnv1a(h, std::string_view(p.unit));
      for (int i = 0; i < p.count; ++i) h = detail::fnv1a(h, static_cast<long long>(p.values[i]));
      h = detail::fnv1a(h, std::string_view(";"));
    }
    return h;
  }

  /// Parses an id such as "tpb_256.vb_16.rpb_2". Every parameter must appear exactly once, in any
  /// order, with one of its candidate values.
  constexpr ParsedId<N> parse(std::string_view id) const noexcept {
    ParsedId<N> r{};
    bool seen[N > 0 ? N : 1] = {};
    std::size_t pos = 0;
    std::size_t fields = 0;
    while (pos <= id.size()) {
      std::size_t end = id.find('.', pos);
      if (end == std::string_view::npos) end = id.size();
      const std::string_view field = id.substr(pos, end - pos);
      const std::size_t us = field.rfind('_');
      if (us == std::string_view::npos || us == 0) return {false, "a field is not name_value", {}};
      const int k = find(field.substr(0, us));
      if (k < 0) return {false, "unknown parameter name", {}};
      if (seen[k]) return {false, "parameter given twice", {}};
      int v = 0;
      if (!detail::parse_int(field.substr(us + 1), v)) return {false, "value is not an integer", {}};
      if (!params[static_cast<std::size_t>(k)].has(v)) return {false, "value is not a candidate", {}};
      seen[k] = true;
      r.point[static_cast<std::size_t>(k)] = v;
      ++fields;
      pos = end + 1;
    }
    if (fields != N) return {false, "a parameter is missing", {}};
    r.ok = true;
    r.error = nullptr;
    return r;
  }

  /// The stable id of a point: name_value pairs in declaration order joined by '.'.
  std::string id(const Point& pt) const {
    std::string s;
    for (std::size_t k = 0; k < N; ++k) {
      if (k) s += '.';
      s += params[k].name;
      s += '_';
      s += std::to_string(pt[k]);
    }
    return s;
  }
};

template <class... P>
constexpr Space<sizeof...(P)> make_space(P... p) {
  return Space<sizeof...(P)>{{{p...}}};
}

/// The feasible points of a family for one target architecture and element size, enumerated at
/// compile time. `count` and `total` are compile-time values; `points` holds the feasible points in
/// space order.
template <class Family, int Arch, int ElementBytes>
struct FeasibleSet {
  using family = Family;
  using Point = typename decltype(Family::space)::Point;
  static constexpr int arch = Arch;
  static constexpr int element_bytes = ElementBytes;
  static_assert(arch_limits(Arch).known(), "FeasibleSet: the architecture has no row in ktune/arch.hpp.");

  static constexpr std::size_t total = Family::space.size();

 private:
  static constexpr std::size_t count_points() {
    std::size_t n = 0;
    for (std::size_t i = 0; i < total; ++i)
      if (Family::feasible(Family::space.point(i), arch_limits(Arch), ElementBytes).ok()) ++n;
    return n;
  }

 public:
  static constexpr std::size_t count = count_points();

 private:
  static constexpr std::array<Point, count> collect() {
    std::array<Point, count> out{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < total; ++i) {
      const Point p = Family::space.point(i);
      if (Family::feasible(p, arch_limits(Arch), ElementBytes).ok()) out[n++] = p;
    }
    return out;
  }

 public:
  static constexpr std::array<Point, count> points = collect();
};

/// Why each point of a space is feasible or not, at run time (for `ktune list` and reports).
template <class Family>
struct PointVerdict {
  typename decltype(Family::space)::Point point;
  Verdict verdict;
};

template <class Family>
std::vector<PointVerdict<Family>> explain(const ArchLimits& arch, int element_bytes) {
  std::vector<PointVerdict<Family>> out;
  const std::size_t n = Family::space.size();
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto p = Family::space.point(i);
    out.push_back({p, Family::feasible(p, arch, element_bytes)});
  }
  return out;
}

namespace detail {
template <class Family, const auto& Point, std::size_t... J>
auto config_of(std::index_sequence<J...>) -> typename Family::template Config<Point[J]...>;

template <class Set, std::size_t I, std::size_t... J>
auto config_at(std::index_sequence<J...>) ->
    typename Set::family::template Config<Set::points[I][J]...>;

template <class Family, class Named, int Arch, int ElementBytes>
struct VariantFromId {
  static constexpr auto parsed = Family::space.parse(Named::id);
  static_assert(parsed.ok,
                "A tuned table names a variant id that this kernel's space no longer has. The table is "
                "stale: regenerate it with 'make tune' (or 'ktune tables' from existing results).");
  static constexpr bool feasible =
      parsed.ok && Family::feasible(parsed.point, arch_limits(Arch), ElementBytes).ok();
  static_assert(!parsed.ok || feasible,
                "A tuned table names a variant that the space's feasibility rules now prune for this "
                "architecture. The table is stale: regenerate it with 'make tune' (or 'ktune tables').");
  static constexpr auto point = feasible ? parsed.point : Family::default_point;
  using type = decltype(config_of<Family, point>(std::make_index_sequence<decltype(Family::space)::rank>{}));
};
}  // namespace detail

/// The configuration type of the I-th feasible point of a FeasibleSet.
template <class Set, std::size_t I>
using config_at_t =
    decltype(detail::config_at<Set, I>(std::make_index_sequence<decltype(Set::family::space)::rank>{}));

/// The configuration type named by `Named::id` (a `static constexpr char id[]`), checked at compile
/// time against the family's space and its feasibility rules for `Arch`. Used by tuned tables.
template <class Family, class Named, int Arch, int ElementBytes>
using variant_from_id_t = typename detail::VariantFromId<Family, Named, Arch, ElementBytes>::type;

/// The family's default configuration type (valid on every supported architecture).
template <class Family>
using default_config_t = decltype(detail::config_of<Family, Family::default_point>(
    std::make_index_sequence<decltype(Family::space)::rank>{}));

}  // namespace ktune
