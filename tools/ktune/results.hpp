// tools/ktune/results.hpp: selection of winners and the normalised results file (docs/results-schema.md).
//
// `ktune select` turns Google Benchmark JSON (raw.hpp) into one Selection per (GPU, op): per dtype and
// shape every variant's verdict and measurements, the ranking, the noise band (DESIGN.md contract 7),
// the chosen winner, and the general configuration (best geometric mean of time over the spec's shapes
// among the variants correct on all of them). The results file is the Selection written as JSON;
// `ktune tables` and `ktune report` read it back and never look at the raw files.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "raw.hpp"
#include "targets.hpp"  // the run-to-run goals (stability_goal_*, regret_goal_*)

namespace ktune { struct Spec; }

namespace ktune::tool {

inline constexpr int results_schema_version = 1;
inline constexpr double min_noise_band = 0.01;  ///< contract 7: never narrower than 1%

/// One timing of a variant on a shape (a sweep row or a retest row).
struct Measure {
  double median_us = 0;
  double spread = 0;                       ///< (max - min) / median of the samples or per-round medians
  std::int64_t samples = 0;
  std::map<std::string, double> counters;  ///< the benchmark's counters, by name
};

struct VariantResult {
  std::string id;
  Verdict verdict = Verdict::ok;
  std::string error;
  std::optional<Measure> sweep, retest;
  bool correct() const { return verdict == Verdict::ok && (sweep || retest); }
};

struct ShapeResult {
  std::string key;                                          ///< "tokens=16,d=11008"
  std::vector<std::pair<std::string, std::int64_t>> dims;   ///< in the spec's order
  std::int64_t tokens = 0, width = 0, bytes = 0;
  bool in_spec = true;                                      ///< one of the spec's shapes
  /// A value of the spec's `held_out`: measured and reported, never selected on (no table row, no say in
  /// the general configuration); the reports judge the tables' choice here (issue 42's held-out set).
  bool held_out = false;
  /// The same-size copy (bench: half the spec bytes read, half written, timed like the variants);
  /// nullopt when the benchmark did not time one.
  std::optional<double> copy_same_size_us;
  std::vector<VariantResult> variants;                      ///< "original" first, then by id

  // Derived by select_dtype().
  std::vector<std::string> ranking;      ///< eligible variants (not "original"), fastest first
  std::string fastest, winner, reason;   ///< winner: the id the tuned table uses for this shape
  std::string band_source;               ///< "retest" or "sweep": where the compared times come from
  double noise_band = min_noise_band;
  std::vector<std::string> within_band;  ///< ids whose time is within the band of the fastest

  const VariantResult* find(const std::string& id) const;
  /// The time used to compare `id` on this shape (from band_source, else the sweep); nullopt if none.
  std::optional<double> time_of(const std::string& id) const;
};

struct GeneralChoice {
  std::string id;                                      ///< empty: no variant is correct on every shape
  double geomean_us = 0;
  int shapes = 0;                                      ///< how many shapes the mean is over
  std::vector<std::pair<std::string, double>> ranking; ///< best few (id, geomean_us)
};

struct Excluded {
  std::string id;
  Verdict verdict = Verdict::error;
  std::string error;                  ///< the first message seen
  std::vector<std::string> shapes;    ///< shapes it was excluded on, in shape order
};

struct DTypeResult {
  std::string dtype;                  ///< fp32, fp16, bf16
  std::vector<ShapeResult> shapes;    ///< sorted by (width, tokens, key)
  GeneralChoice general;
  std::vector<Excluded> excluded;     ///< by id
};

struct Reference {
  double time_us = 0;
  std::map<std::string, double> counters;
};

struct Source {
  std::string file, mode, hash, date;
};

/// The halving search's account of an op's screens (bench/search.hpp); present when a raw input was a
/// search file (context mode "search"), absent for exhaustive sweeps.
struct SearchSummary {
  std::int64_t screened = 0;     ///< passing screens (sweep measures)
  std::int64_t remeasured = 0;   ///< of those, timed again because their spread was out of line
  std::int64_t still_noisy = 0;  ///< of those, out of line after every retry: kept among the finalists
  std::int64_t finalists = 0;    ///< variants timed in interleaved rounds (retest measures)
  std::int64_t pruned = 0;       ///< passing screens stopped early, clearly slower than their shape's best
  std::int64_t guided_out = 0;   ///< (variant, shape) pairs not screened: out of reach at their anchor shape
  /// The settings it ran with (bench::SearchSettings, its raw file's context keys search_<field> without the
  /// prefix: guide_ratio, rounds, ...); empty for a search recorded before 2026-11-27.
  std::map<std::string, double> settings;
};

/// One shape's regret: the other run's winner (the committed tune's) timed in this run against this run's
/// fastest variant at the same level (regret.hpp).
struct Regret {
  std::optional<double> value;  ///< t(winner_before) / t(fastest) - 1, never negative; nullopt: see `none`
  std::string level;            ///< "rounds" (retest medians) or "screens" (sweep medians: not a finalist here)
  std::string fastest;          ///< this run's fastest variant at `level`
  double winner_before_us = 0, fastest_us = 0;  ///< their medians at `level` in this run
  /// Their spreads at `level` in this run: a regret whose winner's spread is far above the fastest's comes
  /// from a disturbed measurement of the winner, not from a slower kernel.
  double winner_before_spread = 0, fastest_spread = 0;
  std::string none;             ///< why there is no value (the winner not measured, or not correct, here)
};

/// One shape of a run compared with another run of the same op on the same GPU (`ktune compare`).
struct StabilityRow {
  std::string dtype, shape;
  std::string winner_before, winner;       ///< the other run's winner, this run's
  double time_before_us = 0, time_us = 0;  ///< each winner's time in its own run (its band source)
  double band_before = 0, band = 0;        ///< each run's noise band on the shape
  bool held = false;                       ///< the same winner
  bool within_band = false;                ///< another winner, but each run's winner is within the other's band
  double variation = 0;                    ///< |time - time_before| / time_before
  std::optional<double> copy_variation;    ///< the same-size copy's, when both runs timed it
  std::optional<double> original_variation;  ///< S's (on each run's band source)
  bool meets_goal = false;                 ///< (held or within band) and variation <= stability_goal_variation
  std::string note;                        ///< why not, when it does not
  /// winner_before judged in this run; from_json() derives it for sections written before regret existed.
  std::optional<Regret> regret;
};

struct Stability {
  Source against;                   ///< the other run's results file: name, "results", hash, date
  std::vector<StabilityRow> rows;   ///< in the order of dtypes[] and their shapes[]
};

/// Everything known about one op on one GPU.
struct Selection {
  std::string op;
  std::string gpu;        ///< device name, e.g. "NVIDIA H200"
  std::string gpu_slug;   ///< "nvidia-h200"
  int arch = 0;
  std::map<std::string, std::string> environment;  ///< context strings kept for provenance
  std::string space_hash;                          ///< "0x..." as the benchmark reported it
  std::vector<Source> sources;
  std::string tokens_dim, width_dim;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> spec_dims;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> spec_held_out;  ///< Spec::held_out
  std::map<std::string, Reference> references;     ///< copy_ceiling, empty_kernel
  nlohmann::ordered_json build;                    ///< build/ktune-build.json when given, else null
  std::vector<DTypeResult> dtypes;                 ///< fp32, fp16, bf16 order
  /// Profile of the winners (profile_section.hpp, `ktune profile-attach`); null when not profiled.
  nlohmann::ordered_json profile;
  std::optional<SearchSummary> search;   ///< from the counters of a search file
  std::optional<Stability> stability;    ///< `ktune compare --attach`: against another run

  const DTypeResult* find(const std::string& dtype) const;
};

/// The general configuration of `d`: the best geometric mean of sweep time over the spec shapes
/// measured for this dtype (all measured shapes if none is a spec shape), among the variants correct
/// on every one of them; ties go to the smaller id. Does not look at retest times, which exist only
/// for the top-K of each shape.
GeneralChoice general_configuration(const DTypeResult& d, int keep = 5);

/// The general configuration across every dtype of `s`: the best geometric mean of sweep time over the
/// shapes general_configuration() uses for each dtype, among the variants correct on all of them. This
/// is the one configuration a tuned table falls back to (a single type for every dtype).
GeneralChoice general_across_dtypes(const Selection& s, int keep = 5);

/// Ranks and picks the winner of one shape. Within the noise band the preference is, in order: the
/// winner of the neighbouring shape (`neighbour`, merges table buckets), the general configuration
/// (instantiated anyway as the fallback), a variant already chosen for another shape of this dtype
/// (`chosen`, no new kernel in user code), and only then the fastest.
void select_shape(ShapeResult& s, const std::string& general, const std::string& neighbour,
                  const std::set<std::string>& chosen);

/// General configuration, then every shape in (width, tokens) order so that the neighbour of a shape
/// is the one with the next smaller token count at the same width; then the excluded list.
void select_dtype(DTypeResult& d);

/// Builds the selections of every (GPU, op) found in `files` (later files override earlier ones for
/// the same benchmark and mode). Specs come from `<kernel_folder(op, kernels_dir)>/spec.json` (list.hpp).
std::vector<Selection> build_selections(const std::vector<RawFile>& files, const std::string& kernels_dir,
                                        std::vector<std::string>& warnings);

/// The retest candidates: per (op, dtype, shape) "original", the top `k` by sweep time, and the
/// general configuration when it is not among them.
nlohmann::ordered_json candidates_json(const std::vector<Selection>& selections, int k);

nlohmann::ordered_json to_json(const Selection& s);
Selection from_json(const nlohmann::ordered_json& j, const std::string& where);

/// Kernel Tuner's T4 results format (schema_version 1.0.0): every (dtype, shape, variant) measured.
nlohmann::ordered_json to_t4(const Selection& s);

/// JSON text with objects and arrays deeper than `max_depth` on one line each, so the large
/// per-variant lists stay readable and diffable. Deterministic.
std::string dump_json(const nlohmann::ordered_json& j, int max_depth);

/// θ of an id: "tpb_256.vb_16" -> {{"tpb", 256}, {"vb", 16}}; empty for "original" or malformed ids.
std::vector<std::pair<std::string, std::int64_t>> parse_id(const std::string& id);

/// The path of a selection's results file under `results_dir`: <dir>/<slug>/<op>.json.
std::string results_path(const std::string& results_dir, const std::string& slug, const std::string& op);

}  // namespace ktune::tool
