// tools/ktune/shapes.cpp: model configs -> the shapes of ktune's ops, and the catalogue's tune grid (shapes.hpp).
#include "shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "io.hpp"

namespace ktune::tool {

namespace {

using json = nlohmann::json;

std::int64_t positive(const json& c, const std::string& key, const std::string& where) {
  auto it = c.find(key);
  if (it == c.end() || !it->is_number_integer() || it->get<std::int64_t>() <= 0)
    throw ToolError(fmt::format("{}: \"{}\" must be a positive integer", where, key));
  return it->get<std::int64_t>();
}

std::int64_t positive_or(const json& c, const std::string& key, std::int64_t fallback, const std::string& where) {
  auto it = c.find(key);
  if (it == c.end() || it->is_null()) return fallback;
  return positive(c, key, where);
}

/// The MLP's activation: Gemma 2/3 name it hidden_activation (hidden_act is then legacy), the others hidden_act.
std::string activation(const json& c, const std::string& where) {
  for (const char* key : {"hidden_activation", "hidden_act"})
    if (auto it = c.find(key); it != c.end() && it->is_string()) return it->get<std::string>();
  throw ToolError(where + ": neither \"hidden_activation\" nor \"hidden_act\" names the MLP's activation");
}

std::string act_op(const std::string& act, const std::string& where) {
  if (act == "silu" || act == "swish") return "silu_and_mul";
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast" || act == "gelu_tanh") return "gelu_tanh_and_mul";
  if (act == "gelu") return "gelu_and_mul";
  throw ToolError(fmt::format("{}: the activation \"{}\" is none of ktune's gated activations (silu, gelu, "
                              "gelu_pytorch_tanh)", where, act));
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

const std::map<std::string, std::string>& catalogue_width_dims() {
  static const std::map<std::string, std::string> dims = {
      {"rmsnorm", "h"},      {"fused_add_rmsnorm", "h"},     {"gemma_rmsnorm", "h"},
      {"gemma_fused_add_rmsnorm", "h"}, {"silu_and_mul", "d"}, {"gelu_and_mul", "d"},
      {"gelu_tanh_and_mul", "d"},       {"merge_attn_states_lse", "heads"}, {"rotary_embedding", "q_heads"},
      {"rotary_embedding_set_kv", "q_heads"}};
  return dims;
}

std::vector<OpUse> derive_uses(const ModelConfig& m, int tp) {
  const std::string where = m.name.empty() ? std::string("config") : m.name;
  const json& c = m.config;
  if (!c.is_object()) throw ToolError(where + ": the config is not a JSON object");
  if (tp < 1) throw usage_error(fmt::format("{}: the tensor-parallel degree must be >= 1, not {}", where, tp));
  const std::string type = c.value("model_type", std::string());
  const std::int64_t hidden = positive(c, "hidden_size", where);
  const std::int64_t heads = positive(c, "num_attention_heads", where);
  const std::int64_t kv = positive_or(c, "num_key_value_heads", heads, where);
  if (!c.contains("head_dim") && hidden % heads)
    throw ToolError(fmt::format("{}: no \"head_dim\", and hidden_size {} is not a multiple of {} heads", where, hidden, heads));
  const std::int64_t head_dim = positive_or(c, "head_dim", hidden / heads, where);
  const bool gemma = starts_with(type, "gemma");

  std::vector<OpUse> out;
  auto use = [&](const std::string& op, std::int64_t width, std::string role, std::int64_t rows = 1,
                 std::vector<std::pair<std::string, std::int64_t>> extra = {}) {
    out.push_back({op, width, tp, m.name, std::move(role), std::move(extra), rows});
  };

  // Norms: every layer's input and post-attention norms (the first plain, the rest fused with the residual
  // add), at the hidden size on every rank.
  use(gemma ? "gemma_rmsnorm" : "rmsnorm", hidden, "hidden_size");
  use(gemma ? "gemma_fused_add_rmsnorm" : "fused_add_rmsnorm", hidden, "hidden_size");
  // Per-head query/key norms: one row per head of each token.
  if (type == "qwen3" || type == "qwen3_moe")
    if (heads % tp == 0) use("rmsnorm", head_dim, "head_dim (q/k norm, rows = tokens x heads)", heads / tp);
  if (starts_with(type, "gemma3"))
    if (heads % tp == 0) use("gemma_rmsnorm", head_dim, "head_dim (q/k norm, rows = tokens x heads)", heads / tp);
  // Multi-head latent attention: the query and key-value compressions are normalised, replicated on every rank.
  if (c.contains("q_lora_rank") && !c.at("q_lora_rank").is_null())
    use("rmsnorm", positive(c, "q_lora_rank", where), "q_lora_rank (MLA)");
  if (c.contains("kv_lora_rank")) use("rmsnorm", positive(c, "kv_lora_rank", where), "kv_lora_rank (MLA)");

  // The gated MLP: dense layers, routed experts (rows = tokens x top-k) and shared experts, split over the ranks.
  const std::string act = act_op(activation(c, where), where);
  const std::int64_t intermediate = positive(c, "intermediate_size", where);
  const std::int64_t top_k = positive_or(c, "num_experts_per_tok", 1, where);
  const bool all_moe = type == "qwen3_moe" || type == "qwen2_moe";
  if (c.contains("num_local_experts")) {  // Mixtral: intermediate_size is each expert's
    if (intermediate % tp == 0) use(act, intermediate / tp, "intermediate_size / tp (expert, rows = tokens x top-k)", top_k);
  } else if (!all_moe && intermediate % tp == 0) {
    use(act, intermediate / tp, "intermediate_size / tp");
  }
  if (c.contains("moe_intermediate_size")) {
    const std::int64_t expert = positive(c, "moe_intermediate_size", where);
    if (expert % tp == 0) use(act, expert / tp, "moe_intermediate_size / tp (expert, rows = tokens x top-k)", top_k);
    const std::int64_t shared = positive_or(c, "n_shared_experts", 0, where) * expert;
    if (shared && shared % tp == 0 && shared != expert)
      use(act, shared / tp, "n_shared_experts x moe_intermediate_size / tp (shared expert)");
  }

  // Attention: the heads of one rank. MLA ropes only its rope part, with one key head; its merged states have
  // v_head_dim (or the latent) per head.
  if (heads % tp == 0) {
    const std::int64_t q_heads = heads / tp;
    const std::int64_t v_dim = positive_or(c, "v_head_dim", head_dim, where);
    use("merge_attn_states_lse", q_heads, "num_attention_heads / tp", 1, {{"head_size", v_dim}});
    if (c.contains("qk_rope_head_dim")) {
      const std::int64_t rope = positive(c, "qk_rope_head_dim", where);
      use("rotary_embedding", q_heads, "num_attention_heads / tp (MLA rope part)", 1,
          {{"kv_heads", 1}, {"head_size", rope}, {"rotary_dim", rope}});
    } else {
      double factor = 1.0;
      if (auto f = c.find("partial_rotary_factor"); f != c.end() && f->is_number()) factor = f->get<double>();
      if (!(factor > 0 && factor <= 1)) throw ToolError(where + ": \"partial_rotary_factor\" must be in (0, 1]");
      const auto rotary = static_cast<std::int64_t>(std::llround(factor * static_cast<double>(head_dim)));
      use("rotary_embedding", q_heads, "num_attention_heads / tp", 1,
          {{"kv_heads", std::max<std::int64_t>(1, kv / tp)}, {"head_size", head_dim}, {"rotary_dim", rotary}});
      // SGLang's fused path: the same rope writing the bf16 KV cache (MLA keeps a latent cache instead).
      use("rotary_embedding_set_kv", q_heads, "num_attention_heads / tp (rope + KV cache store)", 1,
          {{"kv_heads", std::max<std::int64_t>(1, kv / tp)}, {"head_size", head_dim}, {"rotary_dim", rotary}});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const OpUse& a, const OpUse& b) { return a.op < b.op; });
  return out;
}

Catalogue parse_catalogue(const json& j, const std::string& where) {
  if (!j.is_object() || j.value("schema", std::string()) != "ktune.catalogue" || j.value("schema_version", 0) != 1)
    throw ToolError(where + ": not a ktune catalogue (\"schema\": \"ktune.catalogue\", \"schema_version\": 1)");
  Catalogue c;
  auto ints = [&](const json& v, const std::string& key) {
    std::vector<std::int64_t> out;
    if (!v.is_array() || v.empty()) throw ToolError(fmt::format("{}: \"{}\" must be a non-empty array", where, key));
    for (const json& x : v) {
      if (!x.is_number_integer() || x.get<std::int64_t>() <= 0 || (!out.empty() && x.get<std::int64_t>() <= out.back()))
        throw ToolError(fmt::format("{}: \"{}\" must hold positive integers in increasing order", where, key));
      out.push_back(x.get<std::int64_t>());
    }
    return out;
  };
  for (std::int64_t t : ints(j.value("tensor_parallel", json()), "tensor_parallel")) c.tensor_parallel.push_back(static_cast<int>(t));
  c.tokens = ints(j.value("tokens", json()), "tokens");
  const json tune = j.value("tune", json::object());
  c.tune.tokens = ints(tune.value("tokens", json()), "tune.tokens");
  const json max_widths = tune.value("max_widths", json::object());
  for (const auto& [op, n] : max_widths.items()) {
    if (!n.is_number_integer() || n.get<int>() < 2)
      throw ToolError(fmt::format("{}: tune.max_widths.{} must be an integer >= 2", where, op));
    c.tune.max_widths[op] = n.get<int>();
  }
  if (!c.tune.max_widths.count("default")) throw ToolError(where + ": tune.max_widths needs a \"default\"");
  c.tune.held_out_every = tune.value("held_out_every", 5);
  c.tune.held_out_offset = tune.value("held_out_offset", 2);
  if (c.tune.held_out_every < 2 || c.tune.held_out_offset < 0 || c.tune.held_out_offset >= c.tune.held_out_every)
    throw ToolError(where + ": \"tune\" needs held_out_every >= 2 and 0 <= held_out_offset < every");
  std::set<std::string> names;
  for (const json& m : j.value("models", json::array())) {
    ModelConfig mc{m.value("name", std::string()), m.value("family", std::string()), m.value("config", json())};
    if (mc.name.empty() || !names.insert(mc.name).second)
      throw ToolError(fmt::format("{}: every model needs a \"name\" of its own ({})", where, mc.name.empty() ? "one has none" : mc.name));
    for (int tp : c.tensor_parallel) derive_uses(mc, tp);  // every model must derive: fail here, naming it
    c.models.push_back(std::move(mc));
  }
  if (c.models.empty()) throw ToolError(where + ": no \"models\"");
  return c;
}

Catalogue load_catalogue(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw ToolError(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  return parse_catalogue(j, path);
}

std::vector<std::int64_t> choose_widths(const std::map<std::int64_t, int>& uses, int k) {
  std::vector<std::int64_t> w;
  std::vector<double> x, weight;
  for (const auto& [width, n] : uses) {
    w.push_back(width);
    x.push_back(std::log(static_cast<double>(width)));
    weight.push_back(n);
  }
  const std::size_t n = w.size();
  if (n <= static_cast<std::size_t>(k)) return w;
  // cost[a][b]: the widths a..b served by the best one of them; centre[a][b]: which.
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0));
  std::vector<std::vector<std::size_t>> centre(n, std::vector<std::size_t>(n, 0));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a; b < n; ++b) {
      cost[a][b] = 1e300;
      for (std::size_t c = a; c <= b; ++c) {
        double sum = 0;
        for (std::size_t i = a; i <= b; ++i) sum += weight[i] * std::fabs(x[i] - x[c]);
        if (sum < cost[a][b] - 1e-12) cost[a][b] = sum, centre[a][b] = c;
      }
    }
  // best[m][j]: the widths 0..j-1 in m groups; from[m][j]: where the last group starts.
  const auto K = static_cast<std::size_t>(k);
  std::vector<std::vector<double>> best(K + 1, std::vector<double>(n + 1, 1e300));
  std::vector<std::vector<std::size_t>> from(K + 1, std::vector<std::size_t>(n + 1, 0));
  best[0][0] = 0;
  for (std::size_t m = 1; m <= K; ++m)
    for (std::size_t j = 1; j <= n; ++j)
      for (std::size_t a = m - 1; a < j; ++a)
        if (best[m - 1][a] + cost[a][j - 1] < best[m][j] - 1e-12) best[m][j] = best[m - 1][a] + cost[a][j - 1], from[m][j] = a;
  std::vector<std::int64_t> chosen;
  for (std::size_t m = K, j = n; m > 0; j = from[m][j], --m) chosen.push_back(w[centre[from[m][j]][j - 1]]);
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

std::vector<std::int64_t> held_out_widths(const std::vector<std::int64_t>& chosen, const std::map<std::int64_t, int>& uses,
                                          int every) {
  if (chosen.size() < 3) return {};
  std::vector<std::int64_t> interior(chosen.begin() + 1, chosen.end() - 1);
  std::stable_sort(interior.begin(), interior.end(), [&](std::int64_t a, std::int64_t b) { return uses.at(a) < uses.at(b); });
  interior.resize(std::min(interior.size(), chosen.size() / static_cast<std::size_t>(every)));
  std::sort(interior.begin(), interior.end());
  return interior;
}

std::vector<std::int64_t> held_out_values(const std::vector<std::int64_t>& sorted, int every, int offset) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 1; i + 1 < sorted.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(every)) == offset) out.push_back(sorted[i]);
  return out;
}

int TuneSettings::widths_for(const std::string& op) const {
  auto it = max_widths.find(op);
  return it != max_widths.end() ? it->second : max_widths.at("default");
}

std::int64_t OpGrid::covering(std::int64_t width) const {
  std::int64_t best = widths.front();
  double best_ratio = 1e300;
  for (std::int64_t w : widths) {
    if (std::find(held_out_widths.begin(), held_out_widths.end(), w) != held_out_widths.end()) continue;
    const double r = std::max(w, width) / static_cast<double>(std::min(w, width));
    if (r < best_ratio) best = w, best_ratio = r;
  }
  return best;
}

std::map<std::string, OpGrid> tune_grids(const Catalogue& c) {
  std::map<std::string, OpGrid> grids;
  for (const ModelConfig& m : c.models)
    for (int tp : c.tensor_parallel)
      for (OpUse& u : derive_uses(m, tp)) grids[u.op].uses.push_back(std::move(u));
  for (auto& [op, g] : grids) {
    g.op = op;
    g.width_dim = catalogue_width_dims().at(op);
    std::map<std::int64_t, std::set<std::string>> models;
    for (const OpUse& u : g.uses) models[u.width].insert(u.model);
    std::map<std::int64_t, int> uses;
    for (const auto& [w, m] : models) uses[w] = static_cast<int>(m.size());
    g.widths = choose_widths(uses, c.tune.widths_for(op));
    g.tokens = c.tune.tokens;
    g.held_out_widths = held_out_widths(g.widths, uses, c.tune.held_out_every);
    g.held_out_tokens = held_out_values(g.tokens, c.tune.held_out_every, c.tune.held_out_offset);
  }
  return grids;
}

namespace {
std::string int_list(const std::vector<std::int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

/// The line of a top-level key (`  "key": ...`) in a spec's text, or npos.
std::size_t key_line(const std::vector<std::string>& lines, const std::string& key) {
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("  \"" + key + "\":", 0) == 0) return i;
  return std::string::npos;
}
}  // namespace

std::string spec_with_grid(const std::string& spec_text, const OpGrid& g, const std::string& where) {
  nlohmann::ordered_json spec;
  try {
    spec = nlohmann::ordered_json::parse(spec_text);
  } catch (const std::exception& e) {
    throw ToolError(fmt::format("{}: not JSON: {}", where, e.what()));
  }
  const std::string tokens_dim = spec.value("tokens_dim", std::string());
  if (spec.value("width_dim", std::string()) != g.width_dim || !spec.contains("dims") ||
      !spec["dims"].contains(tokens_dim) || !spec["dims"].contains(g.width_dim))
    throw ToolError(fmt::format("{}: the catalogue sets dims.{} and the token dimension; the spec has no such "
                                "width_dim and tokens_dim", where, g.width_dim));
  std::vector<std::string> parts, held;
  for (auto& [name, values] : spec["dims"].items()) {
    std::vector<std::int64_t> v = values.get<std::vector<std::int64_t>>();
    if (name == tokens_dim) v = g.tokens;
    if (name == g.width_dim) v = g.widths;
    parts.push_back(fmt::format("\"{}\": {}", name, int_list(v)));
  }
  if (!g.held_out_tokens.empty()) held.push_back(fmt::format("\"{}\": {}", tokens_dim, int_list(g.held_out_tokens)));
  if (!g.held_out_widths.empty()) held.push_back(fmt::format("\"{}\": {}", g.width_dim, int_list(g.held_out_widths)));

  std::vector<std::string> lines;
  for (std::size_t from = 0; from < spec_text.size();) {
    const std::size_t end = std::min(spec_text.find('\n', from), spec_text.size());
    lines.push_back(spec_text.substr(from, end - from));
    from = end + 1;
  }
  if (std::size_t h = key_line(lines, "held_out"); h != std::string::npos) lines.erase(lines.begin() + static_cast<long>(h));
  const std::size_t d = key_line(lines, "dims");
  if (d == std::string::npos || lines[d].find('}') == std::string::npos || lines[d].back() != ',')
    throw ToolError(where + ": \"dims\" must be written on one line of its own, ending with a comma");
  lines[d] = fmt::format("  \"dims\": {{{}}},", fmt::join(parts, ", "));
  if (!held.empty())
    lines.insert(lines.begin() + static_cast<long>(d) + 1, fmt::format("  \"held_out\": {{{}}},", fmt::join(held, ", ")));
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() || spec_text.back() == '\n' ? "\n" : "");
  return out;
}

std::string catalogue_markdown(const Catalogue& c, const std::map<std::string, OpGrid>& grids) {
  std::string o =
      "<!-- Generated by `ktune shapes --write-specs` from shapes/catalogue.json. Do not edit: edit the catalogue "
      "and run it again. -->\n\n# The shapes catalogue\n\n";
  o += fmt::format("{} models, tensor-parallel degrees {}; token counts {} (tuned: {}). Per op, every width a model "
                   "calls it with, where it comes from, and the tuned width nearest to it; held-out values are "
                   "measured in every tune but never used to select (docs/shapes.md).\n",
                   c.models.size(), fmt::join(c.tensor_parallel, ", "), int_list(c.tokens), int_list(c.tune.tokens));
  for (const auto& [op, g] : grids) {
    o += fmt::format("\n## {}\n\nTuned `{}`: {}; held out: {}; tokens held out: {}.\n\n", op, g.width_dim,
                     int_list(g.widths), g.held_out_widths.empty() ? "none" : int_list(g.held_out_widths),
                     g.held_out_tokens.empty() ? "none" : int_list(g.held_out_tokens));
    o += fmt::format("| {} | nearest selected | used by (model (tensor-parallel degrees): what it is) |\n| --- | --- | --- |\n",
                     g.width_dim);
    std::map<std::int64_t, std::vector<std::pair<std::string, std::vector<int>>>> by_width;  // "model: role" -> tps
    for (const OpUse& u : g.uses) {
      auto& v = by_width[u.width];
      const std::string who = u.model + "\t" + u.role;
      auto it = std::find_if(v.begin(), v.end(), [&](const auto& p) { return p.first == who; });
      if (it == v.end()) v.push_back({who, {u.tp}});
      else it->second.push_back(u.tp);
    }
    for (const auto& [w, users] : by_width) {
      std::vector<std::string> cells;
      for (const auto& [who, tps] : users) {
        const std::size_t tab = who.find('\t');
        cells.push_back(fmt::format("{} (tp {}): {}", who.substr(0, tab), fmt::join(tps, ", "), who.substr(tab + 1)));
      }
      const std::int64_t t = g.covering(w);
      const bool held = std::find(g.held_out_widths.begin(), g.held_out_widths.end(), w) != g.held_out_widths.end();
      o += fmt::format("| {}{} | {}{} | {} |\n", w, held ? " (held out)" : "", t,
                       t == w ? "" : fmt::format(" ({:+.0f}%)", 100.0 * (double(t) / double(w) - 1)), fmt::join(cells, "; "));
    }
  }
  return o;
}

}  // namespace ktune::tool
