// The shapes catalogue: what a model's config implies for each op, how the tune grid is drawn, the specs and
// shapes/catalogue.md regenerating identically, held-out values in specs, results and tables.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <ktune/spec.hpp>

#include "ktune/cli.hpp"
#include "ktune/io.hpp"
#include "ktune/shapes.hpp"
#include "ktune/tables.hpp"

namespace {

using namespace ktune::tool;
using ktune::cli::run_ktune;
using json = nlohmann::json;
namespace fs = std::filesystem;

ModelConfig model(const std::string& name, const std::string& config) { return {name, "", json::parse(config)}; }

const OpUse* find(const std::vector<OpUse>& uses, const std::string& op, std::int64_t width) {
  for (const OpUse& u : uses)
    if (u.op == op && u.width == width) return &u;
  return nullptr;
}
std::int64_t extra(const OpUse& u, const std::string& name) {
  for (const auto& [n, v] : u.extra)
    if (n == name) return v;
  return -1;
}

const char* llama_8b = R"({"model_type": "llama", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
                          "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 500000.0})";

TEST(Shapes, LlamaAtEachDegree) {
  const auto tp1 = derive_uses(model("Llama-3.1-8B", llama_8b), 1);
  ASSERT_EQ(tp1.size(), 6u);
  EXPECT_TRUE(find(tp1, "rmsnorm", 4096) && find(tp1, "fused_add_rmsnorm", 4096));
  EXPECT_TRUE(find(tp1, "silu_and_mul", 14336));
  ASSERT_TRUE(find(tp1, "merge_attn_states_lse", 32));
  EXPECT_EQ(extra(*find(tp1, "merge_attn_states_lse", 32), "head_size"), 128);  // 4096 / 32
  const OpUse* rope = find(tp1, "rotary_embedding", 32);
  ASSERT_TRUE(rope);
  EXPECT_EQ(extra(*rope, "kv_heads"), 8);
  EXPECT_EQ(extra(*rope, "rotary_dim"), 128);
  // SGLang's fused rope + KV cache store at the same widths.
  const OpUse* rope_kv = find(tp1, "rotary_embedding_set_kv", 32);
  ASSERT_TRUE(rope_kv);
  EXPECT_EQ(rope_kv->extra, rope->extra);
  // tp 8: the MLP and the heads split, the norms do not; one kv head per rank.
  const auto tp8 = derive_uses(model("Llama-3.1-8B", llama_8b), 8);
  EXPECT_TRUE(find(tp8, "rmsnorm", 4096));
  EXPECT_TRUE(find(tp8, "silu_and_mul", 1792));
  ASSERT_TRUE(find(tp8, "rotary_embedding", 4));
  EXPECT_EQ(extra(*find(tp8, "rotary_embedding", 4), "kv_heads"), 1);
  // A degree that does not divide the heads leaves attention out (the layer cannot be split so).
  const auto tp3 = derive_uses(model("Llama-3.1-8B", llama_8b), 3);
  EXPECT_FALSE(find(tp3, "merge_attn_states_lse", 32 / 3));
  EXPECT_TRUE(find(tp3, "rmsnorm", 4096));
}

TEST(Shapes, GemmaQwenMoeAndMla) {
  const auto gemma2 = derive_uses(model("Gemma-2-2B", R"({"model_type": "gemma2", "hidden_act": "gelu_pytorch_tanh",
      "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304, "intermediate_size": 9216,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256})"), 1);
  EXPECT_TRUE(find(gemma2, "gemma_rmsnorm", 2304) && find(gemma2, "gemma_fused_add_rmsnorm", 2304));
  EXPECT_FALSE(find(gemma2, "rmsnorm", 2304));
  EXPECT_TRUE(find(gemma2, "gelu_tanh_and_mul", 9216));
  EXPECT_FALSE(find(gemma2, "gemma_rmsnorm", 256)) << "Gemma 2 has no query/key norm";
  const auto gemma3 = derive_uses(model("Gemma-3-1B", R"({"model_type": "gemma3_text", "hidden_activation":
      "gelu_pytorch_tanh", "hidden_size": 1152, "intermediate_size": 6912, "num_attention_heads": 4,
      "num_key_value_heads": 1, "head_dim": 256})"), 1);
  ASSERT_TRUE(find(gemma3, "gemma_rmsnorm", 256));
  EXPECT_EQ(find(gemma3, "gemma_rmsnorm", 256)->rows_per_token, 4);

  const auto moe = derive_uses(model("Qwen3-30B-A3B", R"({"model_type": "qwen3_moe", "hidden_act": "silu",
      "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts_per_tok": 8,
      "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128})"), 2);
  EXPECT_FALSE(find(moe, "silu_and_mul", 3072)) << "every layer is MoE: intermediate_size is unused";
  ASSERT_TRUE(find(moe, "silu_and_mul", 384));
  EXPECT_EQ(find(moe, "silu_and_mul", 384)->rows_per_token, 8);
  EXPECT_TRUE(find(moe, "rmsnorm", 128)) << "Qwen3's query/key norm";

  const auto mla = derive_uses(model("DeepSeek-V3", R"({"model_type": "deepseek_v3", "hidden_act": "silu",
      "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_shared_experts": 2,
      "num_experts_per_tok": 8, "num_attention_heads": 128, "num_key_value_heads": 128, "q_lora_rank": 1536,
      "kv_lora_rank": 512, "qk_rope_head_dim": 64, "v_head_dim": 128})"), 8);
  EXPECT_TRUE(find(mla, "rmsnorm", 1536) && find(mla, "rmsnorm", 512) && find(mla, "rmsnorm", 7168));
  EXPECT_TRUE(find(mla, "silu_and_mul", 18432 / 8) && find(mla, "silu_and_mul", 256) && find(mla, "silu_and_mul", 512));
  ASSERT_TRUE(find(mla, "rotary_embedding", 16));
  EXPECT_EQ(extra(*find(mla, "rotary_embedding", 16), "head_size"), 64);
  EXPECT_EQ(extra(*find(mla, "rotary_embedding", 16), "kv_heads"), 1);
  EXPECT_FALSE(find(mla, "rotary_embedding_set_kv", 16)) << "MLA keeps a latent cache: no fused k/v store";
}

TEST(Shapes, BadConfigsAreNamed) {
  auto message = [](const std::string& config) {
    try {
      derive_uses(model("m", config), 1);
    } catch (const ToolError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(R"({"hidden_act": "silu", "intermediate_size": 8, "num_attention_heads": 2})").find("\"hidden_size\""),
            std::string::npos);
  EXPECT_NE(message(R"({"hidden_act": "relu", "hidden_size": 64, "intermediate_size": 8, "num_attention_heads": 2})")
                .find("\"relu\""), std::string::npos);
  EXPECT_NE(message(R"({"hidden_act": "silu", "hidden_size": 64, "intermediate_size": -8, "num_attention_heads": 2})")
                .find("\"intermediate_size\""), std::string::npos);
  EXPECT_NE(message(R"({"hidden_act": "silu", "hidden_size": 64, "intermediate_size": 8, "num_attention_heads": 3})")
                .find("head_dim"), std::string::npos);
  EXPECT_NE(message(R"({"hidden_act": "silu", "hidden_size": 64, "intermediate_size": 8, "num_attention_heads": 2,
                        "partial_rotary_factor": 1.5})").find("partial_rotary_factor"), std::string::npos);
  EXPECT_NE(message("[1, 2]").find("not a JSON object"), std::string::npos);
}

TEST(Shapes, WidthsAreAWeightedKMedian) {
  // Everything fits: all of it.
  EXPECT_EQ(choose_widths({{128, 1}, {4096, 3}}, 5), (std::vector<std::int64_t>{128, 4096}));
  // Two clusters, one pick each: the most used width of each cluster, not its middle.
  EXPECT_EQ(choose_widths({{1000, 1}, {1100, 5}, {1200, 1}, {8000, 1}, {9000, 1}, {10000, 9}}, 2),
            (std::vector<std::int64_t>{1100, 10000}));
  // Three picks of four: the lone far width keeps its own.
  EXPECT_EQ(choose_widths({{100, 1}, {4000, 2}, {4096, 9}, {5120, 9}}, 3), (std::vector<std::int64_t>{100, 4096, 5120}));
}

TEST(Shapes, HeldOutValues) {
  const std::vector<std::int64_t> tokens = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  EXPECT_EQ(held_out_values(tokens, 5, 2), (std::vector<std::int64_t>{4, 128, 4096}));
  EXPECT_EQ(held_out_values({1, 2, 4}, 5, 2), (std::vector<std::int64_t>{})) << "never the last value";
  // Widths: the fewest-used interior width, never the narrowest or the widest.
  const std::map<std::int64_t, int> uses = {{128, 1}, {1024, 3}, {2048, 4}, {4096, 5}, {8192, 2}, {16384, 1}};
  EXPECT_EQ(held_out_widths({128, 2048, 4096, 8192, 16384}, uses, 5), (std::vector<std::int64_t>{8192}));
  EXPECT_EQ(held_out_widths({128, 1024, 2048, 4096, 8192, 16384}, uses, 3), (std::vector<std::int64_t>{1024, 8192}));
  EXPECT_EQ(held_out_widths({128, 4096, 16384}, uses, 5), (std::vector<std::int64_t>{})) << "one in five of three: none";
}

TEST(Shapes, TheShippedSpecsAndCatalogueMdAreTheCataloguesGrid) {
  const std::string root = KTUNE_SOURCE_DIR;
  const Catalogue cat = load_catalogue(root + "/shapes/catalogue.json");
  const auto grids = tune_grids(cat);
  ASSERT_EQ(grids.size(), 10u) << "every shipped SGLang op is called by some catalogue model";
  for (const auto& [op, g] : grids) {
    const std::string path = root + "/kernels/" + op + "/spec.json";
    const std::string text = read_file(path);
    EXPECT_EQ(spec_with_grid(text, g, path), text) << path << " is not the catalogue's grid: run `ktune shapes --write-specs`";
    const ktune::Spec spec = ktune::parse_spec_text(text, path);
    EXPECT_EQ(spec.values(spec.width_dim), g.widths) << op;
    EXPECT_EQ(spec.values(spec.tokens_dim), cat.tune.tokens) << op;
    // Every catalogue width is within 2x of a measured width (but the narrowest experts at tp 8, 4x), and the
    // held-out ones are measured.
    for (const OpUse& u : g.uses) {
      std::int64_t ratio = INT64_MAX;
      for (std::int64_t w : g.widths) ratio = std::min(ratio, std::max(w, u.width) * 1000 / std::min(w, u.width));
      EXPECT_LE(ratio, u.tp == 8 && u.rows_per_token > 1 ? 4000 : 2000) << op << " " << u.model << " " << u.width;
    }
    for (std::int64_t w : g.held_out_widths) EXPECT_TRUE(spec.held_out_value(spec.width_dim, w)) << op << " " << w;
  }
  EXPECT_EQ(catalogue_markdown(cat, grids), read_file(root + "/shapes/catalogue.md"))
      << "shapes/catalogue.md is out of date: run `ktune shapes --write-specs`";
  // The gemma ops at Gemma's widths, and Gemma-2-2B's own among them.
  for (const char* op : {"gemma_rmsnorm", "gemma_fused_add_rmsnorm"}) {
    const OpGrid& g = grids.at(op);
    EXPECT_NE(std::find(g.widths.begin(), g.widths.end(), 2304), g.widths.end()) << op;
    for (const OpUse& u : g.uses) EXPECT_EQ(u.model.rfind("Gemma", 0), 0u) << op << " " << u.model;
  }
}

TEST(Shapes, SpecWithGridRewritesOnlyDimsAndHeldOut) {
  OpGrid g;
  g.width_dim = "d";
  g.widths = {1024, 2048, 4096};
  g.tokens = {1, 8, 64};
  g.held_out_tokens = {8};
  const std::string spec = "{\n  \"op\": \"toyop\",\n  \"dims\": {\"tokens\": [1], \"d\": [5], \"x\": [3]},\n"
                           "  \"held_out\": {\"d\": [5]},\n  \"tokens_dim\": \"tokens\",\n  \"width_dim\": \"d\"\n}\n";
  EXPECT_EQ(spec_with_grid(spec, g, "s"),
            "{\n  \"op\": \"toyop\",\n  \"dims\": {\"tokens\": [1, 8, 64], \"d\": [1024, 2048, 4096], \"x\": [3]},\n"
            "  \"held_out\": {\"tokens\": [8]},\n  \"tokens_dim\": \"tokens\",\n  \"width_dim\": \"d\"\n}\n");
  const std::string spread = "{\n  \"dims\": {\n    \"tokens\": [1], \"d\": [5]},\n  \"tokens_dim\": \"tokens\",\n"
                             "  \"width_dim\": \"d\"\n}\n";
  EXPECT_THROW(spec_with_grid(spread, g, "s"), ToolError);
}

TEST(Shapes, SpecHeldOutMustBeMeasuredValues) {
  const std::string base = R"({"op": "t", "dims": {"tokens": [1, 16, 128], "d": [8, 16]}, "tokens_dim": "tokens",
    "width_dim": "d", "dtypes": ["fp32"], "tolerance": {"fp32": {"rel_l2": 1e-6, "atol": 1e-6, "rtol": 1e-6}},
    "tensors": [{"name": "out", "shape": ["tokens", "d"], "dtype": "element", "access": "write"}], "held_out": )";
  const ktune::Spec s = ktune::parse_spec_text(base + R"({"tokens": [16]}})", "ok");
  EXPECT_TRUE(s.held_out_value("tokens", 16));
  EXPECT_FALSE(s.held_out_value("tokens", 1));
  EXPECT_FALSE(s.held_out_value("d", 16));
  EXPECT_THROW(ktune::parse_spec_text(base + R"({"tokens": [17]}})", "unmeasured"), std::exception);
  EXPECT_THROW(ktune::parse_spec_text(base + R"({"e": [1]}})", "no such dim"), std::exception);
  EXPECT_THROW(ktune::parse_spec_text(base + R"({"d": [8, 16]}})", "all held out"), std::exception);
}

/// The toy fixtures selected with tokens = 16 held out: measured and reported, in no table row.
TEST(Shapes, HeldOutShapesGetNoTableRow) {
  const fs::path dir = fs::temp_directory_path() / ("ktune_shapes_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "kernels/toyop");
  const std::string data = KTUNE_TOOL_TEST_DATA;
  std::string spec = read_file(data + "/kernels/toyop/spec.json");
  const std::string dims = "\"dims\": {\"tokens\": [1, 16, 128], \"d\": [1024, 4096]},";
  ASSERT_NE(spec.find(dims), std::string::npos);
  spec.replace(spec.find(dims), dims.size(), dims + "\n  \"held_out\": {\"tokens\": [16]},");
  std::ofstream(dir / "kernels/toyop/spec.json") << spec;
  ASSERT_EQ(run_ktune({"select", "--raw", data + "/raw/sweep.json", data + "/raw/retest.json", "--kernels",
                       (dir / "kernels").string(), "--results", (dir / "reports").string(), "--build-json", "none"}),
            exit_ok);
  const auto all = load_all_results((dir / "reports").string());
  ASSERT_EQ(all.size(), 1u);
  int held = 0;
  for (const DTypeResult& d : all[0].second[0].selection.dtypes)
    for (const ShapeResult& s : d.shapes) {
      EXPECT_EQ(s.held_out, s.tokens == 16) << s.key;
      held += s.held_out;
      EXPECT_FALSE(s.winner.empty()) << "a held-out shape still names its measured winner";
    }
  EXPECT_EQ(held, 4);  // 2 widths x 2 dtypes
  for (const TableRow& r : table_rows(all[0].second))
    for (const std::string& p : r.provenance) EXPECT_EQ(p.find("tokens=16,"), std::string::npos) << p;
  fs::remove_all(dir);
}

TEST(Shapes, CommandFromConfigWritesTheModelsSpecs) {
  const fs::path dir = fs::temp_directory_path() / ("ktune_shapes_cmd_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << llama_8b;
  const std::string root = KTUNE_SOURCE_DIR;
  ASSERT_EQ(run_ktune({"shapes", "--catalogue", root + "/shapes/catalogue.json", "--kernels", root + "/kernels",
                       "--from-config", (dir / "config.json").string(), "--tp", "2", "--spec-dir", (dir / "specs").string()}),
            exit_ok);
  const ktune::Spec silu = ktune::parse_spec_text(read_file((dir / "specs/silu_and_mul/spec.json").string()), "silu");
  EXPECT_EQ(silu.values("d"), (std::vector<std::int64_t>{7168}));
  EXPECT_TRUE(silu.held_out.empty());
  const ktune::Spec rope = ktune::parse_spec_text(read_file((dir / "specs/rotary_embedding/spec.json").string()), "rope");
  EXPECT_EQ(rope.values("q_heads"), (std::vector<std::int64_t>{16}));
  EXPECT_EQ(rope.values("kv_heads"), (std::vector<std::int64_t>{8})) << "the spec's: tables key on tokens and q_heads";
  EXPECT_FALSE(fs::exists(dir / "specs/gemma_rmsnorm")) << "a Llama calls no gemma op";
  EXPECT_EQ(run_ktune({"shapes", "--from-config", (dir / "missing.json").string()}), exit_failure);
  EXPECT_EQ(run_ktune({"shapes", "--check"}), exit_usage);
  fs::remove_all(dir);
}

}  // namespace
