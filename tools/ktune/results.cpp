// tools/ktune/results.cpp: the selection rule: per shape the ranking, the noise band and the winner, per
// dtype the general configuration (results.hpp), and the small queries on a selection.
#include "results.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "io.hpp"

namespace ktune::tool {

using ojson = nlohmann::ordered_json;

// ---- small queries --------------------------------------------------------------------------------

const VariantResult* ShapeResult::find(const std::string& id) const {
  for (const VariantResult& v : variants)
    if (v.id == id) return &v;
  return nullptr;
}

std::optional<double> ShapeResult::time_of(const std::string& id) const {
  const VariantResult* v = find(id);
  if (!v || v->verdict != Verdict::ok) return std::nullopt;
  if (band_source == "retest" && v->retest) return v->retest->median_us;
  if (v->sweep) return v->sweep->median_us;
  return std::nullopt;
}

const DTypeResult* Selection::find(const std::string& dtype) const {
  for (const DTypeResult& d : dtypes)
    if (d.dtype == dtype) return &d;
  return nullptr;
}

std::vector<std::pair<std::string, std::int64_t>> parse_id(const std::string& id) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  if (id == "original") return out;
  std::size_t pos = 0;
  while (pos <= id.size()) {
    std::size_t end = id.find('.', pos);
    if (end == std::string::npos) end = id.size();
    const std::string field = id.substr(pos, end - pos);
    const std::size_t us = field.rfind('_');
    if (us == std::string::npos || us == 0 || us + 1 == field.size()) return {};
    std::int64_t v = 0;
    bool neg = field[us + 1] == '-';
    for (std::size_t i = us + 1 + (neg ? 1 : 0); i < field.size(); ++i) {
      if (field[i] < '0' || field[i] > '9') return {};
      v = v * 10 + (field[i] - '0');
    }
    out.emplace_back(field.substr(0, us), neg ? -v : v);
    pos = end + 1;
  }
  return out;
}

std::string results_path(const std::string& results_dir, const std::string& slug, const std::string& op) {
  return join_path(join_path(results_dir, slug), op + ".json");
}

// ---- selection ------------------------------------------------------------------------------------

namespace {
std::vector<const ShapeResult*> general_shapes(const DTypeResult& d) {
  std::vector<const ShapeResult*> shapes;
  for (const ShapeResult& s : d.shapes)
    if (s.in_spec && !s.held_out) shapes.push_back(&s);
  if (shapes.empty())
    for (const ShapeResult& s : d.shapes) shapes.push_back(&s);
  return shapes;
}

GeneralChoice best_geomean(const std::vector<const ShapeResult*>& shapes, int keep);
}  // namespace

GeneralChoice general_configuration(const DTypeResult& d, int keep) { return best_geomean(general_shapes(d), keep); }

GeneralChoice general_across_dtypes(const Selection& sel, int keep) {
  std::vector<const ShapeResult*> shapes;
  for (const DTypeResult& d : sel.dtypes)
    for (const ShapeResult* s : general_shapes(d)) shapes.push_back(s);
  return best_geomean(shapes, keep);
}

namespace {
GeneralChoice best_geomean(const std::vector<const ShapeResult*>& shapes, int keep) {
  GeneralChoice g;
  g.shapes = static_cast<int>(shapes.size());
  if (shapes.empty()) return g;

  std::set<std::string> ids;
  for (const VariantResult& v : shapes.front()->variants)
    if (v.id != "original") ids.insert(v.id);
  std::vector<std::pair<std::string, double>> means;
  for (const std::string& id : ids) {
    double log_sum = 0;
    bool all = true;
    for (const ShapeResult* s : shapes) {
      const VariantResult* v = s->find(id);
      if (!v || v->verdict != Verdict::ok || !v->sweep) { all = false; break; }
      log_sum += std::log(v->sweep->median_us);
    }
    if (all) means.emplace_back(id, std::exp(log_sum / static_cast<double>(shapes.size())));
  }
  std::sort(means.begin(), means.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second, a.first) < std::tie(b.second, b.first);
  });
  if (means.empty()) return g;
  g.id = means.front().first;
  g.geomean_us = means.front().second;
  means.resize(std::min<std::size_t>(means.size(), static_cast<std::size_t>(keep)));
  g.ranking = std::move(means);
  return g;
}
}  // namespace

void select_shape(ShapeResult& s, const std::string& general, const std::string& neighbour,
                  const std::set<std::string>& chosen) {
  s.ranking.clear();
  s.within_band.clear();
  s.fastest.clear();
  s.winner.clear();
  s.reason.clear();
  bool any_retest = false;
  for (const VariantResult& v : s.variants)
    any_retest = any_retest || (v.id != "original" && v.verdict == Verdict::ok && v.retest);
  s.band_source = any_retest ? "retest" : "sweep";

  // The pool is compared on one footing: retest times when the shape was retested, else sweep times.
  std::vector<std::pair<double, std::string>> pool, rest;
  for (const VariantResult& v : s.variants) {
    if (v.id == "original" || v.verdict != Verdict::ok) continue;
    if (any_retest ? bool(v.retest) : bool(v.sweep))
      pool.emplace_back(any_retest ? v.retest->median_us : v.sweep->median_us, v.id);
    else if (v.sweep)
      rest.emplace_back(v.sweep->median_us, v.id);
  }
  std::sort(pool.begin(), pool.end());
  std::sort(rest.begin(), rest.end());
  for (const auto& p : pool) s.ranking.push_back(p.second);
  for (const auto& p : rest) s.ranking.push_back(p.second);
  if (pool.empty()) {
    s.reason = "no correct variant";
    return;
  }
  s.fastest = pool.front().second;
  const VariantResult* best = s.find(s.fastest);
  const Measure& m = any_retest ? *best->retest : *best->sweep;
  s.noise_band = std::max(min_noise_band, m.spread);
  const double limit = pool.front().first * (1.0 + s.noise_band);
  for (const auto& p : pool)
    if (p.first <= limit) s.within_band.push_back(p.second);

  auto in_band = [&](const std::string& id) {
    return !id.empty() && std::find(s.within_band.begin(), s.within_band.end(), id) != s.within_band.end();
  };
  if (in_band(neighbour) && neighbour != s.fastest) {
    s.winner = neighbour;
    s.reason = "within the noise band: same as the neighbouring shape";
  } else if (in_band(general) && general != s.fastest) {
    s.winner = general;
    s.reason = "within the noise band: the general configuration";
  } else {
    s.winner = s.fastest;
    s.reason = "fastest";
    if (!chosen.count(s.fastest))
      for (const std::string& id : s.within_band)
        if (chosen.count(id)) {
          s.winner = id;
          s.reason = "within the noise band: already chosen for another shape";
          break;
        }
  }
}

void select_dtype(DTypeResult& d) {
  std::sort(d.shapes.begin(), d.shapes.end(), [](const ShapeResult& a, const ShapeResult& b) {
    return std::tie(a.width, a.tokens, a.key) < std::tie(b.width, b.tokens, b.key);
  });
  d.general = general_configuration(d);
  std::set<std::string> chosen;
  // Selection shapes first, so that a held-out shape's measured winner (reported, never in a table) cannot
  // steer the preferences within the band of the shapes that select.
  for (const bool held_out : {false, true}) {
    std::string neighbour;
    std::int64_t width = -1;
    for (ShapeResult& s : d.shapes) {
      if (s.held_out != held_out) continue;
      if (s.width != width) neighbour.clear();
      width = s.width;
      select_shape(s, d.general.id, held_out ? std::string() : neighbour, chosen);
      neighbour = s.winner;
      if (!s.winner.empty() && !held_out) chosen.insert(s.winner);
    }
  }
  std::map<std::string, Excluded> by_id;
  for (const ShapeResult& s : d.shapes)
    for (const VariantResult& v : s.variants) {
      if (v.verdict == Verdict::ok) continue;
      Excluded& e = by_id[v.id];
      if (e.shapes.empty()) {
        e.id = v.id;
        e.verdict = v.verdict;
        e.error = v.error;
      }
      e.shapes.push_back(s.key);
    }
  d.excluded.clear();
  for (auto& [id, e] : by_id) d.excluded.push_back(std::move(e));
}

}  // namespace ktune::tool
