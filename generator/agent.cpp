// generator/agent.cpp: the loop of `ktune agent` (agent.hpp).
#include "generator/agent.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <thread>
#include <stdexcept>

#include "generator/agents/answer.hpp"
#include "generator/agents/generation.hpp"
#include "generator/agents/prompts.hpp"
#include "generator/derive/derive.hpp"
#include "generator/llm/client.hpp"
#include "generator/llm/recording.hpp"
#include "generator/record/files.hpp"
#include "generator/record/run_record.hpp"
#include "generator/toolchain/process.hpp"
#include "ktune/cli.hpp"
#include "ktune/io.hpp"

namespace ktune::gen {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

/// What the loop keeps of each judged family, for later prompts and the summary.
struct FamilyRecord {
  Answer answer;
  std::string findings;
  SpaceProbe probe;
  fs::path root;
  Ranking ranking;
};

bool valid_op_name(const std::string& op) {
  static const std::regex re("[a-z][a-z0-9_]*");
  return std::regex_match(op, re) && op.size() <= 64;
}

/// The kernel folder goes in as a whole or not at all: written beside the target, then renamed.
std::string install_folder(const fs::path& target, const std::vector<PromptFile>& files, bool force) {
  std::error_code ec;
  const fs::path staging = target.parent_path() / ("." + target.filename().string() + ".agent-tmp");
  fs::remove_all(staging, ec);
  for (const PromptFile& f : files)
    if (std::string e = write_file_atomic(staging / f.name, f.content); !e.empty()) {
      fs::remove_all(staging, ec);
      return e;
    }
  const fs::path old = target.parent_path() / ("." + target.filename().string() + ".agent-old");
  if (fs::exists(target)) {
    if (!force) {
      fs::remove_all(staging, ec);
      return target.string() + " appeared while the agent ran; pass --force to replace it";
    }
    fs::remove_all(old, ec);
    fs::rename(target, old, ec);
    if (ec) return "cannot move the existing " + target.string() + " aside: " + ec.message();
  }
  fs::rename(staging, target, ec);
  if (ec) {
    if (fs::exists(old)) fs::rename(old, target, ec);
    return "cannot install " + target.string();
  }
  fs::remove_all(old, ec);
  return {};
}

std::string verdict_json(const Node& n, const std::string& findings) {
  ojson j = {{"node", n.id},
             {"kind", to_string(n.kind)},
             {"summary", n.summary},
             {"verdict", to_string(n.verdict)},
             {"reason", n.reason},
             {"geomean_speedup", n.geomean_speedup ? ojson(*n.geomean_speedup) : ojson(nullptr)},
             {"noise_band", n.noise_band},
             {"best_id", n.best_id},
             {"findings", findings}};
  return j.dump(2) + "\n";
}

std::string summary_markdown(const std::string& op, const Planner& planner, const std::map<int, FamilyRecord>& families,
                             const std::string& outcome, const llm::Usage& usage) {
  std::string s = fmt::format("# ktune agent: {}\n\n{}\n\n", op, outcome);
  s += fmt::format("LLM usage: {} calls, {} prompt + {} completion = {} tokens.\n\n", usage.calls, usage.prompt_tokens,
                   usage.completion_tokens, usage.total_tokens);
  s += "## Rounds\n\n| round | node | kind | from | family | verdict | speedup over S | why |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const Node& n : planner.nodes()) {
    if (n.kind == Node::original) continue;
    std::string why = n.reason;
    for (char& c : why)
      if (c == '|' || c == '\n') c = ' ';
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", n.round, n.id, to_string(n.kind), n.based_on, n.summary,
                     to_string(n.verdict), n.geomean_speedup && is_correct_measured(n) ? fmt::format("{:.3f}x", *n.geomean_speedup) : "-",
                     why);
  }
  s += "\n## Decisions\n\n";
  for (const Decision& d : planner.decisions())
    s += "- " + d.reason + "\n";
  const int best = planner.best();
  if (best > 0 && families.count(best)) {
    const FamilyRecord& f = families.at(best);
    s += fmt::format("\n## The winner: node {} — {}\n\n{}\n\nReasoning the LLM gave:\n\n> {}\n\nPer shape:\n\n```\n{}```\n", best,
                     f.answer.summary, planner.node(best)->reason, f.answer.reasoning, describe_ranking(f.ranking));
  }
  return s;
}

}  // namespace

int run_agent(const AgentOptions& o, std::ostream& log) {
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) { log << "ktune agent: " << line << "\n" << std::flush; };

  // ---- inputs, checked before anything is written ----
  if (!valid_op_name(o.op)) {
    say("--name '" + o.op + "' is not a valid op name (lowercase letters, digits and '_', starting with a letter)");
    return agent_usage;
  }
  const fs::path target = o.kernels_dir / o.op;
  if (fs::exists(target) && !o.force) {
    say(target.string() + " already exists; pass --force to replace it (the agent never overwrites a kernel folder otherwise)");
    return agent_failed;
  }
  std::string err;
  const std::string s_source = read_file(o.source, err);
  const std::string spec_text = err.empty() ? read_file(o.spec, err) : "";
  if (!err.empty()) {
    say(err);
    return agent_failed;
  }
  if (o.replay.empty()) {
    if (std::string m = llm::missing_setting(o.llm); !m.empty()) {
      say("cannot reach an LLM: " + m);
      return agent_usage;
    }
  }
  if (std::string m = llm::invalid_setting(o.llm); !m.empty()) {
    say("invalid LLM setting: " + m);
    return agent_usage;
  }
  Toolchain tc;
  const fs::path tc_path = toolchain_path(o.toolchain);
  if (std::string e = load_toolchain(tc_path, tc); !e.empty()) {
    say(e);
    return agent_failed;
  }
  const DeriveResult derived = derive_kernel_folder(o.op, s_source, o.source.filename().string(), spec_text);
  if (!derived.ok()) {
    say("cannot derive the kernel folder from S and the spec: " + derived.error);
    return agent_failed;
  }
  std::vector<PromptFile> fixed;  // every file of the folder but the two the LLM writes and tuned.cuh
  for (const DerivedFile& f : derived.files) fixed.push_back({f.name, f.content});

  // ---- the run's record and the LLM ----
  RunRecord record;
  const std::string stamp = utc_stamp();
  if (std::string e = RunRecord::create(o.runs_dir, o.op, stamp, record); !e.empty()) {
    say(e);
    return agent_failed;
  }
  say("recording the run in " + record.dir().string());
  (void)record.write("original/" + o.source.filename().string(), s_source);
  (void)record.write("original/spec.json", spec_text);
  {
    ojson run = {{"op", o.op},
                 {"source", o.source.filename().string()},
                 {"spec_hash", tool::content_hash(spec_text)},
                 {"source_hash", tool::content_hash(s_source)},
                 {"llm", llm::to_json(o.llm)},
                 {"budget", {{"max_rounds", o.budget.max_rounds}, {"max_tokens", o.budget.max_tokens},
                             {"max_wall_s", o.budget.max_wall_s}, {"patience", o.budget.patience}}},
                 {"max_fixes", o.max_fixes},
                 {"tuning", {{"quick", o.tuning.quick}}},
                 {"time_limits_s", {{"gate", o.testing.gate_timeout_s}, {"tune", o.tuning.timeout_s},
                                    {"sanitizer", o.testing.sanitizer_timeout_s}}},
                 {"arch", tc.arch}};
    (void)record.write("run.json", run.dump(2) + "\n");
  }
  std::string transport_error;
  const std::unique_ptr<llm::Transport> transport = llm::open_transport(o.replay, transport_error);
  if (!transport) {
    say("cannot replay " + o.replay.string() + ": " + transport_error);
    return agent_failed;
  }
  llm::Recorder recorder(record.llm_log(), {llm::api_key(o.llm)});
  const llm::Sleeper sleeper = o.replay.empty() ? llm::Sleeper(llm::real_sleep) : llm::Sleeper([](double) {});
  llm::Client client(o.llm, *transport, &recorder, sleeper);

  // ---- what every prompt carries ----
  GenerationContext ctx;
  ctx.op = o.op;
  ctx.derived = fixed;
  {
    PromptFile ex_space{"kernels/silu_and_mul/space.hpp", read_file(fs::path(tc.kernels_dir) / "silu_and_mul" / "space.hpp", err)};
    PromptFile ex_family{"kernels/silu_and_mul/family.cuh", read_file(fs::path(tc.kernels_dir) / "silu_and_mul" / "family.cuh", err)};
    std::vector<PromptFile> shown;
    for (const PromptFile& f : fixed)
      if (f.name == "args.hpp" || f.name == "family_base.cuh") shown.push_back({"kernels/" + o.op + "/" + f.name, f.content});
    ctx.system_prompt = system_prompt(o.op, ex_space, ex_family, shown);
    (void)record.write("system-prompt.md", ctx.system_prompt);
  }

  // ---- the rounds ----
  Planner planner(o.budget);
  planner.add_root();
  std::map<int, FamilyRecord> families;
  const fs::path work = (o.work_dir.empty() ? tc_path.parent_path() / "agent" : o.work_dir) / o.op / record.dir().filename();
  bool gpu_checked = false;
  int rounds = 0;
  std::string outcome;
  int exit_code = agent_failed;
  // Facts of this session that a replay does not reproduce (kept out of the other files, which do).
  ojson session = {{"started", stamp}, {"replay", o.replay.empty() ? "" : o.replay.string()}, {"toolchain", tc_path.string()}};
  ojson timing = ojson::object();
  auto wall = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };

  // A wave: up to one decision per judge (--gpus; one without it). The LLM answers and the builds run in
  // decision order (a replay sees the exchanges in the order they were recorded); the candidates built
  // are then judged and tuned at once, each on its GPU, and their verdicts reach the planner in round
  // order, so a wave of one is the loop as it always was.
  const std::vector<std::string> judges = o.gpus.empty() ? std::vector<std::string>{""} : o.gpus;
  struct Job {  // a built candidate and what its judge found
    int round = 0, node = 0;
    fs::path root;
    Candidate cand;
    FamilyRecord fam;
    std::chrono::steady_clock::time_point t0;
    TuningResult tune;
    Judgement j, prof;
    std::string dtype;
  };
  auto finish_round = [&](int round, int node, std::chrono::steady_clock::time_point t0, Node::Verdict v,
                          const std::string& reason, std::optional<double> speedup, double band, const std::string& best,
                          const std::string& findings) {
    planner.update(node, v, reason, speedup, band, best);
    (void)record.write_round(round, "verdict.json", verdict_json(*planner.node(node), findings));
    (void)record.write("planner.json", planner.to_json().dump(1) + "\n");
    timing[fmt::format("round-{:02}", round)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    say(fmt::format("round {}: node {} {} — {}", round, node, to_string(v), reason));
  };
  bool stopped = false;
  while (!stopped) {
    std::vector<Job> jobs;
    for (std::size_t slot = 0; slot < judges.size() && !stopped; ++slot) {
      const RunUsage used{client.usage().total_tokens, rounds, wall()};
      Decision d = planner.decide(used);
      if (d.action == Decision::stop && !jobs.empty()) break;  // the wave's candidates are judged first
      planner.record(d);
      if (d.action == Decision::stop) {
        say(d.reason);
        (void)record.write(fmt::format("decision-{:02}-stop.json", d.round),
                           ojson({{"round", d.round}, {"action", "stop"}, {"reason", d.reason}}).dump(2) + "\n");
        stopped = true;
        break;
      }
      const int round = d.round;
      ++rounds;
      say(d.reason);
      (void)record.write_round(round, "decision.json",
                               ojson({{"round", round}, {"action", to_string(d.action)}, {"target", d.target}, {"reason", d.reason}})
                                       .dump(2) + "\n");

      RoundPrompt rp;
      rp.round = round;
      rp.action = to_string(d.action);
      rp.planner_reason = d.reason;
      rp.s_name = o.source.filename().string();
      rp.s_source = s_source;
      rp.spec_json = spec_text;
      if (auto it = families.find(d.target); it != families.end()) {
        rp.target_summary = it->second.answer.summary;
        rp.target_space = it->second.answer.space_hpp;
        rp.target_family = it->second.answer.family_cuh;
        rp.findings = it->second.findings;
      }
      // Failures of the latest round are findings too: the next answer should not repeat them.
      for (const Node& n : planner.nodes())
        if (n.round == round - 1 && is_failure(n.verdict))
          rp.findings += fmt::format("Round {} (node {}, \"{}\") failed: {} — {}\n", n.round, n.id, n.summary, to_string(n.verdict), n.reason);
      rp.history = planner.summary_for_prompt(6000);

      const fs::path root = work / fmt::format("round-{:02}", round);
      const auto t0 = std::chrono::steady_clock::now();
      GenerationResult g = generate(ctx, round_prompt(rp), client, tc, root, record, round, o.max_fixes);
      const int node = planner.add_for(d, g.answer.summary.empty() ? "(no usable answer)" : g.answer.summary);
      if (g.llm_failed) {
        finish_round(round, node, t0, Node::rejected, g.error, std::nullopt, 0, "", "");
        outcome = "The run stopped: " + g.error;
        stopped = true;
        break;
      }
      if (!g.ok) {
        finish_round(round, node, t0, Node::compile_error, g.error, std::nullopt, 0, "", g.build.diagnostics);
        continue;
      }
      Job job{round, node, root, Candidate{o.op, root, g.build.binary, g.build.profiler, g.build.probe},
              FamilyRecord{g.answer, "", g.build.probe, root, {}}, t0, {}, {}, {}, {}};

      if (!gpu_checked) {
        ProcessOptions popt;
        popt.timeout_s = 60;
        popt.env = run_environment(tc);
        const ProcessResult r =
            run_process({job.cand.binary.string(), "--kernels", job.cand.kernels_dir().string(), "--print-gpu-slug"}, popt);
        if (!r.ok()) {
          finish_round(round, node, t0, Node::pending, "built; not judged: no GPU", std::nullopt, 0, "", "");
          std::string why = bounded_diagnostics(r.output, 300);
          while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
          outcome = fmt::format("Stopped after generation and compilation: no usable GPU here ({}). Round {}'s family "
                                "compiled; run `ktune agent` on a machine with a GPU to judge and tune it.",
                                why, round);
          exit_code = agent_no_gpu;
          stopped = true;
          break;
        }
        gpu_checked = true;
      }
      jobs.push_back(std::move(job));
    }
    if (exit_code == agent_no_gpu) break;

    // The judge (testing.hpp: the gate, the search, the ranking's verdicts, compute-sanitizer) and the
    // winner's CUPTI profile, each candidate on a GPU of its own. The judges of a wave share the host's cores
    // for their float64 references, as tools/tune.sh shares them between a tune's slices: on two H200s, two
    // judges each preparing on every core ran their rounds 25-33% longer than one alone (docs/scale.md).
    const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
    auto judge = [&](Job& job, const std::string& gpu) {
      Toolchain on = tc;
      on.cuda_visible_devices = gpu;
      if (jobs.size() > 1) on.prep_threads = std::max(1u, (cores - 2) / static_cast<unsigned>(jobs.size()));
      job.j = judge_family(on, job.cand, spec_text, job.root, o.testing, o.tuning, &job.tune);
      if (!job.j.passed) return;
      // The dtype the winner wins first: its profile's; the smallest and the largest shape of that dtype,
      // beside S's: what the next rewrite of this family reads.
      for (const ShapeOutcome& sh : job.tune.ranking.shapes)
        if (sh.winner == job.tune.ranking.best_id && job.dtype.empty()) job.dtype = sh.dtype;
      std::vector<std::string> shapes;
      for (const ShapeOutcome& sh : job.tune.ranking.shapes)
        if (sh.dtype == job.dtype) shapes.push_back(sh.shape);
      if (shapes.size() > 2) shapes = {shapes.front(), shapes.back()};
      job.prof = profile(on, job.cand, job.tune.ranking.best_id, job.dtype, shapes, job.root / "profile");
    };
    if (jobs.size() == 1) {
      judge(jobs[0], judges[0]);
    } else {
      std::vector<std::thread> threads;
      for (std::size_t k = 0; k < jobs.size(); ++k) threads.emplace_back(judge, std::ref(jobs[k]), judges[k]);
      for (std::thread& t : threads) t.join();
    }

    for (Job& job : jobs) {  // in round order
      for (const auto& [name, content] : job.j.files) (void)record.write_round(job.round, name, content);
      job.fam.ranking = job.tune.ranking;
      if (!job.j.passed) {
        const bool ranked = job.j.stage == "ranking" || job.j.stage == "sanitizer";
        finish_round(job.round, job.node, job.t0, job.j.verdict, job.j.reason,
                     ranked ? std::optional<double>(job.tune.ranking.geomean_speedup) : std::nullopt,
                     ranked ? job.tune.ranking.band : 0, job.j.stage == "sanitizer" ? job.tune.ranking.best_id : "",
                     job.j.findings);
        job.fam.findings = job.j.reason + "\n" + job.j.findings;
        if (job.j.stage != "tune") families[job.node] = job.fam;
        continue;
      }
      (void)record.write_round(job.round, "profile.log", job.prof.log);
      job.fam.findings = job.j.findings + job.prof.findings;
      families[job.node] = job.fam;
      finish_round(job.round, job.node, job.t0, job.j.verdict, job.j.reason, job.tune.ranking.geomean_speedup,
                   job.tune.ranking.band, job.tune.ranking.best_id, job.fam.findings);
    }
  }

  // ---- the outcome ----
  const int best = planner.best();
  if (exit_code != agent_no_gpu && outcome.empty()) {
    const Node* b = best > 0 ? planner.node(best) : nullptr;
    if (!b || !b->geomean_speedup || *b->geomean_speedup <= 1.0) {
      outcome = fmt::format("No correct family beat S in {} round(s); kernels/{}/ was not written.", rounds, o.op);
    } else {
      const FamilyRecord& f = families.at(best);
      std::vector<PromptFile> files = fixed;
      files.push_back({"space.hpp", f.answer.space_hpp});
      files.push_back({"family.cuh", f.answer.family_cuh});
      const DerivedFile table = default_tuned_table(o.op, f.probe.hash);
      files.push_back({table.name, table.content});
      if (std::string e = install_folder(target, files, o.force); !e.empty()) {
        outcome = "The winning family could not be installed: " + e;
      } else {
        outcome = fmt::format("Node {} (\"{}\") won: {:.3f}x over S (geometric mean over the spec's shapes, noise band "
                              "{:.1f}%), best variant {}. Written to {}; run `make tune` to tune it fully on this GPU.",
                              best, f.answer.summary, *b->geomean_speedup, 100 * b->noise_band, b->best_id, target.string());
        exit_code = agent_ok;
      }
    }
  }
  (void)record.write("planner.json", planner.to_json().dump(1) + "\n");
  (void)record.write("summary.md", summary_markdown(o.op, planner, families, outcome, client.usage()));
  timing["total_s"] = wall();
  session["wall_s"] = timing;
  (void)record.write("session.json", session.dump(2) + "\n");
  ojson result = {{"exit_code", exit_code}, {"outcome", outcome}, {"best_node", best}, {"rounds", rounds},
                  {"usage", llm::to_json(client.usage())}};
  (void)record.write("result.json", result.dump(2) + "\n");
  say(outcome);
  say(fmt::format("tokens: {} ({} calls); record: {}", client.usage().total_tokens, client.usage().calls, record.dir().string()));
  return exit_code;
}

}  // namespace ktune::gen

namespace ktune::gen {

namespace {

/// A count: a non-negative integer.
const CLI::Validator non_negative_integer(
    [](std::string& v) -> std::string {
      std::size_t used = 0;
      long long n = -1;
      try {
        n = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size() || n < 0) return "needs a non-negative integer, not '" + v + "'";
      return {};
    },
    "");

/// A time limit: seconds, a finite number above zero.
const CLI::Validator seconds_above_zero(
    [](std::string& v) -> std::string {
      std::size_t used = 0;
      double x = 0;
      try {
        x = std::stod(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size() || !std::isfinite(x) || x <= 0)
        return "needs a time limit in seconds above zero, not '" + v + "'";
      return {};
    },
    "");

/// `ktune agent`'s parser, writing into `o` and (the --llm-* flags) `llm`.
std::unique_ptr<CLI::App> agent_app(AgentOptions& o, llm::FlagValues& llm) {
  auto app = std::make_unique<CLI::App>(
      "Stage 1 of ktune: an LLM rewrites the original kernel S into a tunable family (space.hpp, family.cuh);\n"
      "every candidate is built here, judged against S on the GPU (fresh random inputs in guarded buffers, edge\n"
      "and limit shapes, wide values, poisoned outputs, compute-sanitizer on every variant the tuned table can\n"
      "install) and tuned (the search of make tune); the planner decides each next round from the measurements.\n"
      "The best correct family becomes kernels/OP/; runs/OP/<time>/ records every round. S's form and the\n"
      "providers' settings: generator/README.md. Exit codes: 0 written, 1 failed, 2 usage, 4 no GPU here.",
      "ktune agent");
  cli::style(*app);
  app->add_option("S.cu", o.source, "the original kernel S")->required();
  app->add_option("--spec", o.spec, "spec.json of the op (docs/kernel-folder.md)")->required();
  app->add_option("--name", o.op, "the new op's name (lowercase identifier)")->required();
  app->add_option("--kernels", o.kernels_dir, "where kernels/OP/ goes (default: kernels)");
  app->add_option("--runs", o.runs_dir, "where the run record goes (default: runs)");
  app->add_option("--work", o.work_dir, "where candidates are built and run (default: the build tree's agent/)");
  app->add_option("--toolchain", o.toolchain, "the build's toolchain.json (default: the one this binary was built with)");
  app->add_flag("--force", o.force, "replace an existing kernels/OP/");
  app->add_option("--rounds", o.budget.max_rounds, "at most N rounds (default 8)")
      ->check(non_negative_integer)
      ->type_name("N");
  app->add_option("--max-tokens", o.budget.max_tokens, "stop once N tokens are spent (default 2000000)")
      ->check(non_negative_integer)
      ->type_name("N");
  app->add_option("--max-wall", o.budget.max_wall_s, "stop after S seconds (default 14400)")
      ->check(non_negative_integer)
      ->type_name("S");
  app->add_option("--patience", o.budget.patience, "stop after N rounds without gain beyond the noise band (default 3)")
      ->check(non_negative_integer)
      ->type_name("N");
  app->add_option("--fixes", o.max_fixes, "follow-ups per round after a failed build or refused answer (default 2)")
      ->check(non_negative_integer)
      ->type_name("N");
  app->add_flag("--quick", o.tuning.quick, "fewer timing samples (smoke runs)");
  app->add_option_function<std::uint64_t>(
         "--seed", [&o](std::uint64_t seed) { o.testing.seed = o.tuning.seed = seed; },
         "seed of the judge's random inputs (default: fresh per run)")
      ->check(non_negative_integer)
      ->type_name("N");
  app->add_option("--gate-timeout", o.testing.gate_timeout_s,
                  "seconds for all the gate runs of one family together: edge shapes, wide values, limit shapes "
                  "(default 300); a family still running then is rejected as timeout")
      ->check(seconds_above_zero)
      ->type_name("S");
  app->add_option("--tune-timeout", o.tuning.timeout_s, "seconds for each process of a family's search (default 900)")
      ->check(seconds_above_zero)
      ->type_name("S");
  app->add_option("--sanitizer-timeout", o.testing.sanitizer_timeout_s,
                  "seconds for each compute-sanitizer process (default 600)")
      ->check(seconds_above_zero)
      ->type_name("S");
  app->add_flag_callback("--no-sanitizer", [&o] { o.testing.sanitizer = false; },
                         "skip compute-sanitizer (memcheck, racecheck, initcheck on every variant the tuned table can "
                         "install)");
  app->add_option("--replay", o.replay, "answer from a recorded llm.jsonl instead of the network (no endpoint needed)");
  app->add_option_function<std::string>(
         "--gpus", [&o](const std::string& v) { o.gpus = cli::split_list(v); },
         "judge and tune up to that many candidates at once, one per GPU (the planner decides as many rounds before "
         "their verdicts; the answers still come in round order); a GPU may be named twice (two judges sharing it: a "
         "check, not a speed-up)")
      ->type_name("0,1")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            const std::vector<std::string> gpus = cli::split_list(v);
            bool ok = !gpus.empty() && gpus.size() == static_cast<std::size_t>(std::count(v.begin(), v.end(), ',') + 1);
            for (const std::string& g : gpus) ok = ok && g.find_first_not_of("0123456789") == std::string::npos;
            return ok ? "" : "needs device numbers such as 0,1, not '" + v + "'";
          },
          ""));
  llm::add_flags(*app, llm);
  return app;
}

/// The provider settings from the --llm-* flags. The agent asks for JSON answers, so JSON mode is on
/// unless the flags or the file turn it off (a server without it, such as some llama.cpp builds).
std::string apply_llm_flags(const llm::FlagValues& values, AgentOptions& o) {
  llm::ProviderConfig base;
  base.json_mode = true;
  const llm::FlagParse flags = llm::resolve_flags(values, base);
  if (flags.ok()) o.llm = flags.config;
  return flags.error;
}

}  // namespace

std::string parse_agent_args(const std::vector<std::string>& args, AgentOptions& o) {
  llm::FlagValues llm_flags;
  const cli::Parsed parsed = cli::parse_args(*agent_app(o, llm_flags), args);
  if (!parsed.error.empty()) return parsed.error;
  return apply_llm_flags(llm_flags, o);
}

int agent_command(const std::vector<std::string>& args) {
  AgentOptions o;
  llm::FlagValues llm_flags;
  const auto app = agent_app(o, llm_flags);
  const cli::Parsed parsed = cli::parse_args(*app, args);
  if (parsed.help) {
    std::cout << app->help();
    return agent_ok;
  }
  const std::string error = parsed.error.empty() ? apply_llm_flags(llm_flags, o) : parsed.error;
  if (!error.empty()) {
    std::cerr << "ktune agent: " << error << "\n(ktune agent --help lists its options)\n";
    return agent_usage;
  }
  return run_agent(o, std::cout);
}

}  // namespace ktune::gen
