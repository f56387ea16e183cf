// tools/ktune/shapes_command.cpp: `ktune shapes` (shapes.hpp, docs/shapes.md).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "cli.hpp"
#include "commands.hpp"
#include "list.hpp"
#include "shapes.hpp"

namespace ktune::tool {

namespace {

using ojson = nlohmann::ordered_json;

/// A model's calls as `ktune_bench --kernels DIR` takes them: per op, the shipped spec with its width and token
/// dims set to the model's widths and the catalogue's tune token counts. A tuned table keys on those two alone, so
/// the spec's other dims stay (a model's head_size of 256 is timed at the spec's 128): `notes` says where.
ojson model_spec(const std::string& spec_text, const std::vector<const OpUse*>& uses,
                 const std::vector<std::int64_t>& tokens, std::vector<std::string>& notes) {
  ojson spec = ojson::parse(spec_text);
  const std::string tokens_dim = spec.at("tokens_dim").get<std::string>();
  const std::string width_dim = spec.at("width_dim").get<std::string>();
  std::set<std::int64_t> widths;
  for (const OpUse* u : uses) widths.insert(u->width);
  ojson dims = ojson::object();
  for (auto& [name, values] : spec.at("dims").items()) {
    if (name == tokens_dim) dims[name] = tokens;
    else if (name == width_dim) dims[name] = std::vector<std::int64_t>(widths.begin(), widths.end());
    else dims[name] = values;
  }
  for (const OpUse* u : uses)
    for (const auto& [name, v] : u->extra)
      if (dims.contains(name) && dims[name] != ojson::array({v}))
        notes.push_back(fmt::format("{}: the model's {}={} is timed at the spec's {}={} (a tuned table keys on {} and "
                                    "{} alone)", spec.at("op").get<std::string>(), name, v, name, dims[name].dump(),
                                    tokens_dim, width_dim));
  spec["dims"] = dims;
  spec.erase("held_out");
  spec.erase("edge_dims");
  return spec;
}

}  // namespace

int cmd_shapes(const std::vector<std::string>& argv) {
  CLI::App app{"The shapes a serving model calls ktune's ops with (docs/shapes.md). Without --from-config: every op's\n"
               "tune grid drawn from the catalogue (tuned widths and token counts, the held-out values). With\n"
               "--from-config: the calls one model's config.json implies at one tensor-parallel degree.",
               "ktune shapes"};
  cli::style(app);
  std::string catalogue_path = "shapes/catalogue.json", config_path, kernels_dir, spec_dir, only_op;
  int tp = 1;
  bool write_specs = false, check = false, as_json = false;
  app.add_option("--catalogue", catalogue_path, "default: shapes/catalogue.json");
  app.add_option("--from-config", config_path, "a Hugging Face config.json: that model's shapes");
  app.add_option("--tp", tp, "the tensor-parallel degree (with --from-config; default 1)");
  app.add_option("--op", only_op, "one op only");
  app.add_flag("--json", as_json, "print JSON instead of a table");
  app.add_option("--spec-dir", spec_dir,
                 "with --from-config: write DIR/<op>/spec.json for each op the model calls, its dims the model's shapes "
                 "(ktune_bench --kernels DIR times them)");
  app.add_flag("--write-specs", write_specs,
               "set every catalogue op's kernels/<op>/spec.json dims and held_out from the catalogue, and write "
               "shapes/catalogue.md");
  app.add_flag("--check", check, "with --write-specs: change nothing, fail (exit 1) if any file differs");
  app.add_option("--kernels", kernels_dir, "default: where the build found each op");
  if (auto done = cli::parse(app, argv)) return *done;
  if (check && !write_specs) throw usage_error("--check goes with --write-specs");
  if (!spec_dir.empty() && config_path.empty()) throw usage_error("--spec-dir goes with --from-config");
  if (write_specs && !config_path.empty()) throw usage_error("--write-specs draws from the catalogue, not from --from-config");

  const Catalogue cat = load_catalogue(catalogue_path);
  if (!config_path.empty()) {
    ModelConfig m;
    try {
      m.config = nlohmann::json::parse(read_file(config_path));
    } catch (const nlohmann::json::exception& e) {
      throw ToolError(fmt::format("{}: not JSON: {}", config_path, e.what()));
    }
    m.name = m.config.value("_name_or_path", std::string());
    if (m.name.empty()) m.name = config_path;
    const std::vector<OpUse> uses = derive_uses(m, tp);
    std::map<std::string, std::vector<const OpUse*>> by_op;
    for (const OpUse& u : uses)
      if (only_op.empty() || u.op == only_op) by_op[u.op].push_back(&u);
    if (by_op.empty()) throw ToolError(fmt::format("{} calls no op {}", config_path, only_op));
    if (!spec_dir.empty()) {
      std::vector<std::string> notes;
      for (const auto& [op, list] : by_op) {
        const ojson spec = model_spec(read_file(kernel_folder(op, kernels_dir) + "/spec.json"), list, cat.tune.tokens, notes);
        const std::string path = join_path(join_path(spec_dir, op), "spec.json");
        write_atomic(path, spec.dump(2) + "\n");
        fmt::print("{} written\n", path);
      }
      for (const std::string& n : notes) fmt::print("note: {}\n", n);
      return exit_ok;
    }
    if (as_json) {
      ojson j = {{"model", m.name}, {"tp", tp}, {"tokens", cat.tune.tokens}, {"ops", ojson::object()}};
      for (const auto& [op, list] : by_op)
        for (const OpUse* u : list) {
          ojson call = {{"width", u->width}, {"role", u->role}, {"rows_per_token", u->rows_per_token}};
          for (const auto& [name, v] : u->extra) call[name] = v;
          j["ops"][op].push_back(call);
        }
      fmt::print("{}\n", j.dump(2));
      return exit_ok;
    }
    fmt::print("{} at tp {}: token counts {}\n\n", m.name, tp, fmt::join(cat.tune.tokens, ", "));
    fmt::print("{:<26} {:>7}  {:<26} {}\n", "op", "width", "other dimensions", "what the width is");
    for (const auto& [op, list] : by_op)
      for (const OpUse* u : list) {
        std::string extra;
        for (const auto& [name, v] : u->extra) extra += fmt::format("{}{}={}", extra.empty() ? "" : ",", name, v);
        fmt::print("{:<26} {:>7}  {:<26} {}\n", op, u->width, extra.empty() ? "-" : extra, u->role);
      }
    return exit_ok;
  }

  const std::map<std::string, OpGrid> grids = tune_grids(cat);
  if (write_specs) {
    int stale = 0;
    auto put = [&](const std::string& path, const std::string& text) {
      if (check) {
        const bool same = file_exists(path) && read_file(path) == text;
        if (!same) ++stale;
        fmt::print("{} {}\n", path, same ? "is up to date" : "is out of date: run `ktune shapes --write-specs`");
      } else {
        fmt::print("{} {}\n", path, write_atomic(path, text) ? "written" : "unchanged");
      }
    };
    for (const auto& [op, g] : grids) {
      const std::string path = kernel_folder(op, kernels_dir) + "/spec.json";
      put(path, spec_with_grid(read_file(path), g, path));
    }
    const std::string md = catalogue_path.substr(0, catalogue_path.rfind('.')) + ".md";
    put(md, catalogue_markdown(cat, grids));
    return stale ? exit_failure : exit_ok;
  }
  if (as_json) {
    ojson j = ojson::object();
    for (const auto& [op, g] : grids)
      if (only_op.empty() || op == only_op)
        j[op] = {{"width_dim", g.width_dim}, {"widths", g.widths}, {"held_out_widths", g.held_out_widths},
                 {"tokens", g.tokens}, {"held_out_tokens", g.held_out_tokens}};
    fmt::print("{}\n", j.dump(2));
    return exit_ok;
  }
  std::size_t total = 0;
  for (const auto& [op, g] : grids) {
    if (!only_op.empty() && op != only_op) continue;
    std::set<std::int64_t> distinct;
    for (const OpUse& u : g.uses) distinct.insert(u.width);
    const std::size_t shapes = g.widths.size() * g.tokens.size();
    total += shapes;
    fmt::print("{}: {} catalogue widths of {} -> tuned {} (held out {}); tokens {} (held out {}); {} shapes per dtype\n",
               op, distinct.size(), g.width_dim, fmt::join(g.widths, ","), fmt::join(g.held_out_widths, ","),
               fmt::join(g.tokens, ","), fmt::join(g.held_out_tokens, ","), shapes);
  }
  fmt::print("{} shapes per dtype in all\n", total);
  return exit_ok;
}

}  // namespace ktune::tool
