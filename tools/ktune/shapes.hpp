// tools/ktune/shapes.hpp: the shapes a serving model calls ktune's ops with (docs/shapes.md).
//
// A model is the part of its Hugging Face config.json that decides those shapes (hidden and intermediate
// sizes, heads, the activation, MoE and MLA fields). derive_uses() says which of the shipped ops a model's
// layers call (as SGLang's model code calls them) and at which row width, at one tensor-parallel degree. The
// catalogue (shapes/catalogue.json) lists the model families a serving engine runs; tune_grids() draws from it
// each op's tuned widths (at most `max_widths`, chosen so that every catalogue width is as near as can be to
// one of them) and token counts, and holds a fixed share of both out of selection.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ktune::tool {

/// One model as the catalogue or a config.json gives it.
struct ModelConfig {
  std::string name, family;
  nlohmann::json config;  ///< the config.json fields (a whole config.json is fine: the rest is ignored)
};

/// One call a model makes: op `op` at row width `width` (the op's spec `width_dim`), with the other
/// dimensions it implies (`extra`, e.g. head_size) and what the width is in the model (`role`).
struct OpUse {
  std::string op;
  std::int64_t width = 0;
  int tp = 1;
  std::string model, role;
  std::vector<std::pair<std::string, std::int64_t>> extra;  ///< other dimensions of the call, by spec name
  std::int64_t rows_per_token = 1;  ///< rows of the call per token of the batch (heads for a qk-norm, top-k for MoE)
};

/// The spec dimension that is each shipped op's row width ("h", "d", "heads", "q_heads").
const std::map<std::string, std::string>& catalogue_width_dims();

/// The calls `m` makes at tensor-parallel degree `tp`, in op order. Throws ToolError when a field it needs is
/// missing or not a positive integer (the message names it). A width `tp` does not divide is left out (the
/// layer cannot be split that way).
std::vector<OpUse> derive_uses(const ModelConfig& m, int tp);

/// How the catalogue's tune grid is drawn (its "tune" object).
struct TuneSettings {
  std::vector<std::int64_t> tokens;  ///< the token counts tuned
  std::map<std::string, int> max_widths;  ///< widths tuned per op, at most; "default" for ops not named
  int widths_for(const std::string& op) const;
  /// Held out: token counts i (ascending) with i % every == held_out_offset, not the first or last; one width
  /// in `every` (held_out_widths()).
  int held_out_every = 5, held_out_offset = 2;
};

struct Catalogue {
  std::vector<int> tensor_parallel;
  std::vector<std::int64_t> tokens;  ///< the token counts serving calls (the dispatch's validation grid)
  TuneSettings tune;
  std::vector<ModelConfig> models;
};

/// Reads and checks shapes/catalogue.json. Throws ToolError naming the file and the field.
Catalogue load_catalogue(const std::string& path);
Catalogue parse_catalogue(const nlohmann::json& j, const std::string& where);

/// One op's grid for a tune: the values of its width and token dimensions, and those held out.
struct OpGrid {
  std::string op, width_dim;
  std::vector<std::int64_t> widths, tokens;                  ///< tuned, ascending (held-out values included)
  std::vector<std::int64_t> held_out_widths, held_out_tokens;
  std::vector<OpUse> uses;                                   ///< every catalogue call of the op
  /// The selected (tuned, not held-out) width nearest (in ratio) to `width`.
  std::int64_t covering(std::int64_t width) const;
};

/// Every op's grid, by op name. Deterministic.
std::map<std::string, OpGrid> tune_grids(const Catalogue& c);

/// At most `k` of the catalogue's widths (width -> how many models call it), ascending: those that minimise
/// the sum over the catalogue's calls of the ratio (on a log scale) between the call's width and the nearest
/// chosen one (a weighted k-median, exact by dynamic programming in one dimension). The widths most models
/// call are measured exactly; the rare ones are near one that is.
std::vector<std::int64_t> choose_widths(const std::map<std::int64_t, int>& uses, int k);

/// The values of `sorted` (ascending) at i % every == offset, neither the first nor the last.
std::vector<std::int64_t> held_out_values(const std::vector<std::int64_t>& sorted, int every, int offset);

/// The held-out widths among `chosen` (ascending): one in `every` of them (rounded down), those the fewest
/// models call (ties: the narrower), never the narrowest or the widest (a table is not left to extrapolate).
/// Popular widths stay in selection, where their own measurements decide.
std::vector<std::int64_t> held_out_widths(const std::vector<std::int64_t>& chosen, const std::map<std::int64_t, int>& uses,
                                          int every);

/// `spec_text` (a kernels/<op>/spec.json) with its "dims" of the width and token dimensions set to the grid's
/// and its "held_out" line written after "dims". Each of those keys must be on a line of its own (as every
/// shipped spec writes them); throws ToolError otherwise.
std::string spec_with_grid(const std::string& spec_text, const OpGrid& g, const std::string& where);

/// shapes/catalogue.md: per op, every catalogue width, the models and degrees it comes from and the tuned
/// width that covers it. Deterministic.
std::string catalogue_markdown(const Catalogue& c, const std::map<std::string, OpGrid>& grids);

}  // namespace ktune::tool
