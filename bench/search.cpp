// bench/search.cpp: how a run spends its GPU time: screens, re-timed screens, finalists (search.hpp).
#include "search.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <system_error>
#include <tuple>

#include "names.hpp"
#include "retest.hpp"

namespace ktune::bench {

void set_timing(BenchResult& r, const Timed& t) {
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.max_us = t.max_us;
  r.samples = t.samples;
  r.batch = t.batch;
  r.spread = t.median_us > 0 ? (t.max_us - t.min_us) / t.median_us : 0;
  r.pruned = t.abandoned;
}

TimingSettings full_timing() { return TimingSettings{}; }

TimingSettings quick_timing() {
  TimingSettings t;
  t.warmup = 1;
  t.min_samples = 4;
  t.max_samples = 12;
  t.stable_rel = 0.02;
  t.max_seconds = 0.2;
  t.graph_sample_us = 200.0;
  return t;
}

TimingSettings screen_timing(bool quick) {
  if (quick) return quick_timing();
  TimingSettings t;
  // No warm-up launch: the gate ran the call twice just before, and the probes that size the graph replay
  // warm it up too.
  t.warmup = 0;
  // Three samples first (a screen stopped past its limit was above it three times), then one at a time until
  // the median settles: at three when the next sample could not move it by 1% (median_settled). A screen
  // only has to rank a variant within the finalists' 10% reach, which the rounds then time.
  t.min_samples = 3;
  t.max_samples = 30;
  t.stable_rel = 0.01;
  t.max_seconds = 0.5;
  // Shorter replays were tried on an H100 (100 us, ten ops, two independent tunes): 12 s less timing out
  // of 224 s, but the regret of the first tune in the second rose from p95 0.9% to 1.4% (docs/scale.md).
  t.graph_sample_us = 250.0;
  // A call of 100 us or more is probed once (TimingOptions::probe_alone_us): three probes of a 250 us call
  // took as long as its first three samples.
  t.probe_alone_us = 100.0;
  return t;
}

SearchSettings search_settings(bool quick) {
  SearchSettings s;
  if (quick) {
    s.rounds = 3;
    s.min_rounds = 2;
    s.tight_samples = s.loose_samples = 4;
  }
  return s;
}

double typical_spread(const std::vector<BenchResult>& results) {
  std::vector<double> spreads;
  for (const BenchResult& r : results)
    if (r.ok() && r.samples > 0 && !r.pruned) spreads.push_back(r.spread);
  return median(spreads);
}

bool out_of_line(const BenchResult& r, double typical, const SearchSettings& s) {
  return r.ok() && r.samples > 0 && !r.pruned && r.spread > s.noise_abs && r.spread > s.noise_rel * typical;
}

namespace {
bool competes(const BenchResult& r) { return r.ok() && r.samples > 0 && r.id != "original"; }
}  // namespace

double effective(const BenchResult& r) { return r.noisy ? r.min_us : r.median_us; }

std::vector<std::size_t> pick_finalists(const std::vector<BenchResult>& screened, const std::vector<std::string>& always,
                                        const SearchSettings& s) {
  double best_clean = std::numeric_limits<double>::infinity(), best_any = best_clean;
  for (const BenchResult& r : screened) {
    if (!competes(r)) continue;
    best_any = std::min(best_any, effective(r));
    if (!r.noisy) best_clean = std::min(best_clean, r.median_us);
  }
  const double best = std::isfinite(best_clean) ? best_clean : best_any;
  std::set<std::size_t> keep;
  std::vector<std::pair<double, std::size_t>> in_reach;
  for (std::size_t i = 0; i < screened.size(); ++i) {
    const BenchResult& r = screened[i];
    if (!r.ok() || r.samples == 0) continue;
    if (r.id == "original") {  // the baseline: never a winner, always timed alike
      keep.insert(i);
      continue;
    }
    if (std::find(always.begin(), always.end(), r.id) != always.end()) keep.insert(i);  // and competes like the others
    if (effective(r) > best * (1 + s.reach)) continue;
    if (r.noisy) keep.insert(i);  // never dropped on a disturbed measurement
    else in_reach.emplace_back(r.median_us, i);
  }
  std::sort(in_reach.begin(), in_reach.end(), [&](const auto& a, const auto& b) {
    return std::tie(a.first, screened[a.second].id) < std::tie(b.first, screened[b.second].id);
  });
  for (std::size_t k = 0; k < in_reach.size() && static_cast<int>(k) < s.top_k; ++k) keep.insert(in_reach[k].second);
  return {keep.begin(), keep.end()};
}

std::vector<std::string> general_ranking(const std::vector<const std::vector<BenchResult>*>& groups, std::size_t keep) {
  if (groups.empty()) return {};
  std::map<std::string, std::pair<double, std::size_t>> logs;  // id -> (sum of logs, groups passed)
  for (const std::vector<BenchResult>* g : groups) {
    std::set<std::string> seen;
    for (const BenchResult& r : *g) {
      if (!competes(r) || !(r.median_us > 0) || !seen.insert(r.id).second) continue;
      auto& [sum, n] = logs[r.id];
      sum += std::log(r.median_us);
      ++n;
    }
  }
  std::vector<std::pair<double, std::string>> means;  // (mean log, id): equal means go to the smaller id
  for (const auto& [id, v] : logs)
    if (v.second == groups.size()) means.emplace_back(v.first / static_cast<double>(groups.size()), id);
  std::sort(means.begin(), means.end());
  std::vector<std::string> out;
  for (std::size_t k = 0; k < means.size() && k < keep; ++k) out.push_back(means[k].second);
  return out;
}

std::string general_of(const std::vector<const std::vector<BenchResult>*>& groups) {
  const std::vector<std::string> best = general_ranking(groups, 1);
  return best.empty() ? std::string() : best.front();
}

namespace {
/// A shape's width: its dimensions after the first (the token count) and its scalars.
std::string width_of(const Shape& s) {
  std::string w;
  for (std::size_t i = 1; i < s.dims.size(); ++i) w += s.dims[i].first + "=" + std::to_string(s.dims[i].second) + ",";
  for (const auto& [n, v] : s.scalars) w += n + "=" + std::to_string(v) + ",";
  return w;
}
}  // namespace

std::vector<ScreenGuide> screen_guides(const std::vector<const Shape*>& unit, bool pair_anchors) {
  std::vector<std::string> widths(unit.size()), distinct;
  for (std::size_t i = 0; i < unit.size(); ++i) {
    widths[i] = width_of(*unit[i]);
    if (std::find(distinct.begin(), distinct.end(), widths[i]) == distinct.end()) distinct.push_back(widths[i]);
  }
  std::vector<ScreenGuide> guide(unit.size());
  for (std::size_t i = 0; i < unit.size(); ++i) guide[i].by = i;
  if (distinct.size() < 2) return guide;
  // Groups of about three neighbouring widths (plan order), each guided by its middle one.
  const std::size_t n = distinct.size(), groups = (n + 2) / 3;
  std::vector<std::string> anchor_of(n);
  for (std::size_t g = 0, first = 0; g < groups; ++g) {
    std::size_t end = first;
    while (end < n && end * groups / n == g) ++end;
    for (std::size_t k = first; k < end; ++k) anchor_of[k] = distinct[first + (end - first) / 2];
    first = end;
  }
  auto anchor_width = [&](std::size_t i) {
    return anchor_of[static_cast<std::size_t>(std::find(distinct.begin(), distinct.end(), widths[i]) - distinct.begin())];
  };
  auto tokens = [&](std::size_t i) { return unit[i]->dims.front().second; };
  std::map<std::string, std::vector<std::size_t>> anchors;  // anchor width -> its shapes by token count
  for (std::size_t j = 0; j < unit.size(); ++j)
    if (widths[j] == anchor_width(j) && !unit[j]->dims.empty()) anchors[widths[j]].push_back(j);
  for (auto& [w, list] : anchors)
    std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) { return tokens(a) < tokens(b); });
  for (std::size_t i = 0; i < unit.size(); ++i) {
    if (unit[i]->dims.empty() || widths[i] == anchor_width(i)) continue;
    for (std::size_t j : anchors[anchor_width(i)])
      if (tokens(j) == tokens(i)) {
        guide[i].by = j;
        break;
      }
  }
  if (pair_anchors)
    for (const auto& [w, list] : anchors)
      for (std::size_t k = 1; k < list.size(); k += 2) guide[list[k]] = {list[k - 1], true};
  return guide;
}

std::size_t guide_depth(const std::vector<ScreenGuide>& guides, std::size_t i) {
  std::size_t depth = 0;
  for (; guides[i].by != i && depth < guides.size(); ++depth) i = guides[i].by;
  return depth;
}

std::vector<std::size_t> screen_order(const std::vector<ScreenGuide>& guides) {
  std::vector<std::size_t> order(guides.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return guide_depth(guides, a) < guide_depth(guides, b); });
  return order;
}

bool guided_in(const std::string& id, const std::vector<BenchResult>& anchor, const std::vector<std::string>& always,
               double ratio, const std::vector<std::string>& left_out) {
  if (id == "original" || std::find(always.begin(), always.end(), id) != always.end()) return true;
  if (std::find(left_out.begin(), left_out.end(), id) != left_out.end()) return false;
  double best = std::numeric_limits<double>::infinity();
  const BenchResult* mine = nullptr;
  for (const BenchResult& r : anchor) {
    if (competes(r)) best = std::min(best, effective(r));
    if (r.id == id) mine = &r;
  }
  if (!mine || !competes(*mine)) return true;
  return effective(*mine) <= best * ratio;
}

std::vector<std::size_t> finalists_again(const std::vector<BenchResult>& screened, const std::vector<std::size_t>& fin,
                                         const std::vector<BenchResult>& refined, const std::vector<std::string>& always,
                                         const SearchSettings& s) {
  if (s.contradicted <= 0) return {};
  std::vector<BenchResult> corrected = screened;
  bool any = false;
  for (std::size_t k = 0; k < fin.size() && k < refined.size(); ++k) {
    const BenchResult& r = refined[k];
    BenchResult& screen = corrected[fin[k]];
    if (!r.ok() || r.rounds == 0 || screen.id == "original" || !(r.median_us > effective(screen) * (1 + s.contradicted))) continue;
    screen.median_us = screen.min_us = r.median_us;  // its rounds' figure in its screen's place
    screen.noisy = false;
    any = true;
  }
  if (!any) return {};
  std::vector<std::size_t> more;
  for (std::size_t i : pick_finalists(corrected, always, s))
    if (std::find(fin.begin(), fin.end(), i) == fin.end()) more.push_back(i);
  return more;
}

bool clearly_out(const std::vector<double>& mine, const std::vector<double>& leader, const SearchSettings& s) {
  if (mine.empty() || leader.empty()) return false;
  const RoundStats l = round_stats(leader);
  const double margin = std::max(s.out_margin, 2 * l.spread);
  return *std::min_element(mine.begin(), mine.end()) > l.median * (1 + margin);
}

std::vector<std::pair<std::string, std::string>> settings_context(const SearchSettings& s) {
  auto number = [](double v) {  // the shortest text that reads back as v: 0.1, 1.3, 50
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
  };
  return {{"search_top_k", number(s.top_k)},
          {"search_reach", number(s.reach)},
          {"search_noise_abs", number(s.noise_abs)},
          {"search_noise_rel", number(s.noise_rel)},
          {"search_noise_retries", number(s.noise_retries)},
          {"search_rounds", number(s.rounds)},
          {"search_min_rounds", number(s.min_rounds)},
          {"search_out_margin", number(s.out_margin)},
          {"search_far_out", number(s.far_out)},
          {"search_contradicted", number(s.contradicted)},
          {"search_tight_spread", number(s.tight_spread)},
          {"search_tight_samples", number(s.tight_samples)},
          {"search_loose_samples", number(s.loose_samples)},
          {"search_prune_ratio", number(s.prune_ratio)},
          {"search_prune_min_us", number(s.prune_min_us)},
          {"search_guide_ratio", number(s.guide_ratio)},
          {"search_general_keep", number(s.general_keep)},
          {"search_anchor_guide_ratio", number(s.anchor_guide_ratio)},
          {"search_dtype_guide_ratio", number(s.dtype_guide_ratio)}};
}

std::string refined_key(const std::string& screen_key) { return screen_key + "/refined"; }

WorkCount count_work(const std::vector<ShapeGroup>& groups, const ResultCache& cache) {
  WorkCount c;
  for (const ShapeGroup& g : groups) {
    for (const WorkItem& it : g.items) {
      ++c.variants;
      c.cached_variants += !it.key.empty() && cache.find(it.key) != nullptr;
    }
    if (!g.copy.name.empty()) {
      ++c.copies;
      c.cached_copies += !g.copy.key.empty() && cache.find(g.copy.key) != nullptr;
    }
  }
  return c;
}

namespace {

BenchResult error_result(const WorkItem& it, const std::string& error) {
  BenchResult r;
  r.name = it.name;
  r.op = it.op;
  r.dtype = name(it.dtype);
  r.shape = it.shape.key();
  r.id = it.id;
  r.error = error;
  r.cacheable = false;
  return r;
}

/// A refined result starts as its screen without the timing.
BenchResult refined_from(const BenchResult& screen) {
  BenchResult r = screen;
  r.cached = false;
  r.median_us = r.min_us = r.max_us = r.spread = 0;
  r.samples = 0;
  r.batch = 1;
  r.rounds = 0;
  r.remeasured = 0;
  r.noisy = false;
  r.refined = true;
  return r;
}

struct GroupState {
  BenchResult copy;
  bool has_copy = false;
  double copy_us = 0;
  std::vector<BenchResult> screens;
  std::vector<std::size_t> items;  ///< screens[j] is the screen of the group's items[items[j]]
  std::vector<BenchResult> refined;
  std::vector<std::string> left_out;  ///< variants its guide found out of reach: not screened here
};

}  // namespace

const DtypeGuides::Unit* DtypeGuides::guide_of(const std::string& op, int element_bytes) const {
  const auto it = units_.find({op, element_bytes});
  return it == units_.end() ? nullptr : &it->second;
}

void DtypeGuides::record(const std::string& op, int element_bytes, std::vector<std::pair<std::string, Shape>> shapes,
                         std::size_t general_keep) {
  Unit& u = units_[{op, element_bytes}];
  std::vector<const std::vector<BenchResult>*> screens;
  for (auto& [key, shape] : shapes) screens.push_back(&(u.shapes[key] = std::move(shape)).screens);
  u.general = general_ranking(screens, general_keep);
}

SearchOutcome run_search(const std::vector<ShapeGroup>& groups, ResultCache& cache, SearchMeasurer& m,
                         const SearchSettings& s, Progress* progress) {
  SearchOutcome o;
  auto store = [&](const std::string& key, const BenchResult& r) {
    if (key.empty() || !r.cacheable) return;
    const std::string err = cache.store(key, r);
    if (!err.empty()) o.warnings.push_back(err);
  };
  auto emit = [&](std::vector<GroupState>& states) {
    for (GroupState& st : states) {
      if (st.has_copy) o.results.push_back(std::move(st.copy));
      for (BenchResult& r : st.screens) o.results.push_back(std::move(r));
      for (BenchResult& r : st.refined) o.results.push_back(std::move(r));
    }
  };
  auto abort_with = [&](const std::string& reason) {
    o.aborted = true;
    o.abort_reason = reason;
  };

  // Guided screens: per op and dtype, the groups screened in full first (their own anchor), then the
  // others, each after its anchor.
  auto unit_end = [&](std::size_t first) {
    std::size_t end = first;
    while (end < groups.size() && groups[end].op == groups[first].op && groups[end].dtype == groups[first].dtype) ++end;
    return end;
  };
  auto guides_of = [&](std::size_t first, std::size_t end) {
    std::vector<ScreenGuide> guide(end - first);
    if (s.guide_ratio <= 0) {
      for (std::size_t i = 0; i < guide.size(); ++i) guide[i].by = i;
      return guide;
    }
    std::vector<const Shape*> shapes;
    for (std::size_t gi = first; gi < end; ++gi) shapes.push_back(&groups[gi].shape);
    return screen_guides(shapes, s.anchor_guide_ratio > 0);
  };

  // The order of begin_shape / begin_rounds below: per op and dtype, the screens of the shapes not in
  // the cache (anchors first), then their rounds (a shape with fewer than two finalists skips its rounds;
  // one whose screens were cached and rounds not prepares them when they begin).
  std::vector<Upcoming> order;
  for (std::size_t first = 0, end = 0; first < groups.size(); first = end) {
    end = unit_end(first);
    for (std::size_t i : screen_order(guides_of(first, end)))
      if (needs_measuring(groups[first + i], cache)) order.push_back({groups[first + i].op, groups[first + i].dtype, groups[first + i].shape, true});
    for (std::size_t gi = first; gi < end; ++gi)
      if (needs_measuring(groups[gi], cache)) order.push_back({groups[gi].op, groups[gi].dtype, groups[gi].shape, false});
  }
  m.expect(order);

  DtypeGuides dtype_guides;
  for (std::size_t first = 0; first < groups.size() && !o.aborted;) {
    const std::size_t end = unit_end(first);
    std::vector<GroupState> states(end - first);
    const std::vector<ScreenGuide> guide = guides_of(first, end);
    std::vector<std::string> forced;  // the best geometric means of the shapes screened in full: screened everywhere
    bool anchors_done = false;
    const int element_bytes = size_of(groups[first].dtype);
    const DtypeGuides::Unit* partner = s.dtype_guide_ratio > 0 ? dtype_guides.guide_of(groups[first].op, element_bytes) : nullptr;
    if (partner) {  // what the partner screened everywhere is screened everywhere here too
      forced = partner->general;
      anchors_done = true;
    }

    // ---- screens, one group at a time: the shapes screened in full, then each guided one after its guide --
    for (std::size_t k : screen_order(guide)) {
      if (o.aborted) break;
      const std::size_t gi = first + k;
      const ShapeGroup& g = groups[gi];
      GroupState& st = states[k];
      const std::size_t by = guide[k].by;
      if (by != k && !anchors_done) {  // the first guided group: every shape screened in full is
        std::vector<const std::vector<BenchResult>*> anchors;
        for (std::size_t j = 0; j < guide.size(); ++j)
          if (guide[j].by == j) anchors.push_back(&states[j].screens);
        forced = general_ranking(anchors, static_cast<std::size_t>(std::max(0, s.general_keep)));
        anchors_done = true;
      }
      std::vector<bool> wanted(g.items.size(), true);
      const DtypeGuides::Shape* across = nullptr;  // the same shape in the partner's dtype
      if (partner)
        if (const auto it = partner->shapes.find(g.shape.key()); it != partner->shapes.end()) across = &it->second;
      if (across || by != k) {
        std::vector<std::string> always = forced;
        always.push_back(g.incumbent);
        const double ratio = across ? s.dtype_guide_ratio : guide[k].across_tokens ? s.anchor_guide_ratio : s.guide_ratio;
        const std::vector<BenchResult>& guide_screens = across ? across->screens : states[by].screens;
        const std::vector<std::string>& guide_left_out = across ? across->left_out : states[by].left_out;
        for (std::size_t i = 0; i < g.items.size(); ++i)
          if (!(wanted[i] = guided_in(g.items[i].id, guide_screens, always, ratio, guide_left_out))) {
            ++o.guided_out;
            st.left_out.push_back(g.items[i].id);
          }
      }
      if (!g.copy.name.empty()) {  // the copy row first, before the group's buffers exist
        if (const BenchResult* hit = g.copy.key.empty() ? nullptr : cache.find(g.copy.key)) {
          st.copy = *hit;
          st.copy.cached = true;
          ++o.from_cache;
        } else {
          if (progress) progress->before(g.copy.name);
          st.copy = m.measure_copy_same_size(g);
          if (progress) progress->after();
          ++o.measured;
          store(g.copy.key, st.copy);
        }
        st.has_copy = true;
        if (st.copy.ok()) st.copy_us = st.copy.median_us;
        if (st.copy.fatal) {
          abort_with(g.copy.name + ": " + st.copy.error);
          break;
        }
      }
      // A group's verdicts are stored only once the measurer settles them (settle_shape: its check of the
      // device comparison may finish after the screens); a group whose verdicts cannot stand is screened again.
      for (int attempt = 0;; ++attempt) {
        Progress* p = attempt == 0 ? progress : nullptr;  // a second screening is not counted twice
        const std::size_t measured_before = o.measured, cached_before = o.from_cache;
        std::vector<std::pair<std::string, BenchResult>> pending;
        std::vector<const BenchResult*> hits;
        bool any_missing = false;
        for (std::size_t i = 0; i < g.items.size(); ++i) {
          const WorkItem& it = g.items[i];
          hits.push_back(it.key.empty() ? nullptr : cache.find(it.key));
          if (!wanted[i] && !hits.back() && p) p->skip();
          any_missing = any_missing || (wanted[i] && !hits.back());
        }
        const std::string prepare_error = any_missing ? m.begin_shape(g) : std::string();
        std::vector<std::size_t> fresh;  // indices into st.screens
        double best = std::numeric_limits<double>::infinity();  // the best median of this shape's screens so far
        auto keep_best = [&](const BenchResult& r) {
          if (r.ok() && r.samples > 0 && !r.pruned) best = std::min(best, r.median_us);
        };
        std::vector<std::size_t> item_of;  // st.screens[j] is the screen of g.items[item_of[j]]
        for (std::size_t i = 0; i < g.items.size(); ++i) {
          if (!wanted[i]) continue;
          const WorkItem& it = g.items[i];
          item_of.push_back(i);
          if (hits[i]) {
            keep_best(*hits[i]);
            BenchResult r = *hits[i];
            r.cached = true;
            r.copy_same_size_us = st.copy_us;
            st.screens.push_back(std::move(r));
            ++o.from_cache;
            continue;
          }
          if (p) p->before(it.name);
          const bool prunable = s.prune_ratio > 0 && std::isfinite(best) && it.id != "original" && it.id != g.incumbent;
          const ScreenLimit limit = prunable ? ScreenLimit{s.prune_ratio * best, s.prune_min_us} : ScreenLimit{};
          BenchResult r = prepare_error.empty() ? m.screen(it, limit) : error_result(it, "error: " + prepare_error);
          keep_best(r);
          if (p) p->after();
          ++o.measured;
          r.copy_same_size_us = st.copy_us;
          if (!r.ok()) pending.emplace_back(it.key, r);  // a failure is final; a passing screen is kept after the noise check
          else fresh.push_back(st.screens.size());
          const bool fatal = r.fatal;
          st.screens.push_back(std::move(r));
          if (fatal) {
            abort_with(it.name + ": " + st.screens.back().error);
            break;
          }
        }
        // Out-of-line screens are timed again while the group's buffers exist, before anything ranks.
        if (any_missing && prepare_error.empty() && !o.aborted) {
          const double typical = typical_spread(st.screens);
          for (std::size_t j : fresh) {
            BenchResult& r = st.screens[j];
            const WorkItem& it = g.items[item_of[j]];
            for (int t = 1; t <= s.noise_retries && out_of_line(r, typical, s); ++t) {
              BenchResult again = m.retime(it, r);
              again.copy_same_size_us = st.copy_us;
              again.remeasured = t;
              if (!again.ok()) {
                const bool fatal = again.fatal;
                r = std::move(again);
                pending.emplace_back(it.key, r);
                if (fatal) abort_with(it.name + ": " + r.error);
                break;
              }
              if (!out_of_line(again, typical, s) || again.spread < r.spread) r = std::move(again);
              else r.remeasured = t;
            }
            if (o.aborted) break;
            r.noisy = out_of_line(r, typical, s);
            if (r.ok()) pending.emplace_back(it.key, r);
          }
        }
        const std::string unsound = any_missing && prepare_error.empty() ? m.settle_shape() : std::string();
        if (!unsound.empty() && attempt == 0 && !o.aborted) {
          o.warnings.push_back(unsound + "; the shape's screens were measured again");
          m.end_shape();
          st.screens.clear();
          o.measured = measured_before;
          o.from_cache = cached_before;
          continue;
        }
        if (unsound.empty())
          for (const auto& [key, r] : pending) store(key, r);
        else if (!o.aborted)
          abort_with(unsound);
        if (any_missing) m.end_shape();
        st.items = std::move(item_of);
        break;
      }
    }
    if (o.aborted) {
      emit(states);
      break;
    }

    // ---- the general configuration of this op and dtype, from the screens -----------------------
    std::vector<const std::vector<BenchResult>*> screens;
    for (const GroupState& st : states) screens.push_back(&st.screens);
    const std::string general = general_of(screens);
    if (s.dtype_guide_ratio > 0 && !partner) {  // the first unit of its op and element size guides the later ones
      std::vector<std::pair<std::string, DtypeGuides::Shape>> shapes;
      for (std::size_t k = 0; k < states.size(); ++k)
        shapes.push_back({groups[first + k].shape.key(), {states[k].screens, states[k].left_out}});
      dtype_guides.record(groups[first].op, element_bytes, std::move(shapes),
                          static_cast<std::size_t>(std::max(0, s.general_keep)));
    }

    // ---- the finalists of each group, in interleaved rounds -------------------------------------
    for (std::size_t gi = first; gi < end && !o.aborted; ++gi) {
      const ShapeGroup& g = groups[gi];
      GroupState& st = states[gi - first];
      // The previous tune's winner (the incumbent) is timed in the rounds as its challengers are: a new
      // tune then compares it round medians with round medians, and keeps it unless something beats it there.
      const std::vector<std::string> always = {general, g.incumbent};
      std::vector<std::size_t> fin = pick_finalists(st.screens, always, s);
      o.finalists += fin.size();
      if (fin.size() < 2) {  // nothing to compare: the screens stand
        if (progress) progress->after();
        continue;
      }
      // The rounds of `fin` into `refined` (a row per finalist, its figures compared within each round), from
      // the cache when it holds them all; false when the rounds cannot begin (the screens stand).
      std::vector<BenchResult> refined;
      bool began = false, cached = false;
      auto time_rounds = [&]() -> bool {
        refined.clear();
        cached = true;
        for (std::size_t i : fin)
          if (const BenchResult* h = cache.find(refined_key(g.items[st.items[i]].key))) {
            refined.push_back(*h);
            refined.back().cached = true;
            refined.back().refined = true;
            refined.back().copy_same_size_us = st.copy_us;
          } else {
            cached = false;
          }
        if (cached) return true;
        refined.clear();
        if (!began) {
          if (progress) progress->before(g.op + "/" + name(g.dtype) + "/" + g.shape.key() + " (" + std::to_string(fin.size()) + " finalists)");
          began = true;  // end_shape() follows, whatever begin_rounds says
          if (const std::string err = m.begin_rounds(g); !err.empty()) {
            // The screens stand for this group; its variants are not excluded for a failure of the run.
            o.warnings.push_back(g.op + "/" + name(g.dtype) + "/" + g.shape.key() + ": no rounds: " + err);
            return false;
          }
        }
        for (std::size_t i : fin) {
          refined.push_back(refined_from(st.screens[i]));
          refined.back().copy_same_size_us = st.copy_us;
        }
        std::vector<std::vector<double>> medians(fin.size());  // as measured; clock_normalised for every decision
        std::vector<bool> live(fin.size(), true), out(fin.size(), false);
        for (int round = 0; round < s.rounds && !o.aborted; ++round) {
          std::vector<RoundEntry> entries;
          std::vector<std::size_t> who;
          for (std::size_t k : round_order(fin.size(), static_cast<std::size_t>(round))) {
            if (!live[k] || out[k]) continue;
            const BenchResult& screen = st.screens[fin[k]];
            RoundEntry e;
            e.item = &g.items[st.items[fin[k]]];
            e.samples = screen.spread <= s.tight_spread ? s.tight_samples : s.loose_samples;
            // A screen stopped at its probe was never captured: its rounds try the graph (and fall back) as any
            // other's.
            e.graph = screen.batch > 1 || screen.pruned;
            e.result = &refined[k];
            entries.push_back(e);
            who.push_back(k);
          }
          // A leader left alone has nothing to be compared with: the rounds stop.
          if (entries.empty() || (entries.size() < 2 && round >= s.min_rounds)) break;
          m.round(entries);
          for (std::size_t j = 0; j < entries.size(); ++j) {
            const std::size_t k = who[j];
            BenchResult& r = refined[k];
            if (!entries[j].ok) {
              live[k] = false;
              if (r.fatal) abort_with(g.items[st.items[fin[k]]].name + ": " + r.error);
              continue;
            }
            const Timed& t = entries[j].timed;
            ++o.rounds_run;
            medians[k].push_back(t.median_us);
            r.min_us = r.samples ? std::min(r.min_us, t.min_us) : t.min_us;
            r.max_us = std::max(r.max_us, t.max_us);
            r.samples += t.samples;
            r.batch = std::max(r.batch, t.batch);
          }
          // Successive halving over rounds: the clearly slower finalists sit out the remaining rounds.
          const bool halving = round + 1 >= s.min_rounds, first = round == 0 && s.far_out > 0;
          if (o.aborted || round + 1 == s.rounds || !(halving || first)) continue;
          const std::vector<std::vector<double>> normal = clock_normalised(medians);
          std::size_t leader = fin.size();
          for (std::size_t k = 0; k < fin.size(); ++k) {
            if (!live[k] || out[k] || normal[k].empty() || st.screens[fin[k]].id == "original") continue;
            if (leader == fin.size() || median(normal[k]) < median(normal[leader])) leader = k;
          }
          if (leader == fin.size()) continue;
          if (first) {  // far behind the leader in the screens and in the first round (SearchSettings::far_out)
            const double far = 1 + s.far_out, leader_screen = effective(st.screens[fin[leader]]);
            std::vector<std::size_t> behind, in;
            for (std::size_t k = 0; k < fin.size(); ++k) {
              if (!live[k] || out[k] || normal[k].empty()) continue;
              in.push_back(k);
              if (normal[k].front() > normal[leader].front() * far && effective(st.screens[fin[k]]) > leader_screen * far)
                behind.push_back(k);
            }
            // The farthest first, while three stay: the later rounds' clocks are compared over what is left, and
            // a median over two cannot tell which one a disturbance hit.
            std::sort(behind.begin(), behind.end(), [&](std::size_t x, std::size_t y) { return normal[x].front() > normal[y].front(); });
            for (std::size_t j = 0; j < behind.size() && in.size() - j > 3; ++j) {
              out[behind[j]] = true;
              ++o.left_out;
            }
          }
          if (!halving) continue;
          // A finalist whose rounds spread out of line with the others' is not left out on them.
          std::vector<BenchResult> spreads;
          for (std::size_t k = 0; k < fin.size(); ++k) {
            BenchResult x;
            x.samples = static_cast<int>(normal[k].size());
            x.spread = normal[k].empty() ? 0 : round_stats(normal[k]).spread;
            if (live[k] && x.samples > 0) spreads.push_back(x);
          }
          const double typical = typical_spread(spreads);
          for (std::size_t k = 0; k < fin.size(); ++k) {
            if (k == leader || !live[k] || out[k] || !clearly_out(normal[k], normal[leader], s)) continue;
            BenchResult x;
            x.samples = static_cast<int>(normal[k].size());
            x.spread = round_stats(normal[k]).spread;
            if (out_of_line(x, typical, s)) continue;
            out[k] = true;
            ++o.left_out;
          }
        }
        const std::vector<std::vector<double>> normal = clock_normalised(medians);
        for (std::size_t k = 0; k < fin.size(); ++k) {
          BenchResult& r = refined[k];
          if (r.ok() && !normal[k].empty()) {
            const RoundStats rs = round_stats(normal[k]);
            r.median_us = rs.median;
            r.spread = rs.spread;
            r.rounds = static_cast<int>(normal[k].size());
          }
        }
        return true;
      };
      bool timed = time_rounds();
      // A finalist whose rounds contradict its screen: the finalists are picked again without that screen, and
      // all of them timed in rounds of their own (once: SearchSettings::contradicted). Only the last rounds'
      // rows are stored: a rerun from the cache finds the contradiction again in them when it held there too.
      if (timed && !o.aborted) {
        const std::vector<std::size_t> more = finalists_again(st.screens, fin, refined, always, s);
        if (!more.empty()) {
          o.warnings.push_back(g.op + "/" + name(g.dtype) + "/" + g.shape.key() + ": a finalist's rounds contradict its screen: " +
                               std::to_string(more.size()) + " more finalist" + (more.size() == 1 ? "" : "s") + " timed");
          ++o.picked_again;
          o.finalists += more.size();
          fin.insert(fin.end(), more.begin(), more.end());
          std::sort(fin.begin(), fin.end());
          timed = time_rounds();
        }
      }
      for (std::size_t k = 0; timed && k < fin.size(); ++k) {
        BenchResult& r = refined[k];
        if (cached) {
          ++o.from_cache;
        } else {
          if ((r.ok() && r.rounds > 0) || (!r.ok() && r.cacheable)) store(refined_key(g.items[st.items[fin[k]]].key), r);
          if (r.ok() && r.rounds == 0) continue;  // never timed (the run stopped first)
        }
        st.refined.push_back(std::move(r));
      }
      if (began) m.end_shape();
      if (progress) progress->after();
    }
    emit(states);
    first = end;
  }
  for (const BenchResult& r : o.results)
    if (!r.refined && !r.id.empty()) {
      o.screened += r.ok();
      o.remeasured += r.remeasured > 0;
      o.still_noisy += r.noisy;
      o.pruned += r.ok() && r.pruned;
    }
  return o;
}

}  // namespace ktune::bench
