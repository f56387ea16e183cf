// tests/generator/planning_test.cpp: the planning agent's tree, decision rules, prompt summary and JSON.
#include "generator/agents/planning.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

namespace ktune::gen {
namespace {

// gmock is not linked into this executable: a plain substring check with the whole text on failure.
#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "missing: " << (part) << "\nin: " << (text)

// A judged candidate in one call: add under `of` as `kind`, then record the verdict.
int judged(Planner& p, Node::Kind kind, int of, int round, Node::Verdict verdict, std::optional<double> speedup,
           double band = 0.01, std::string reason = "judged") {
  const int id = kind == Node::rewrite ? p.add_rewrite(of, round, "candidate of round " + std::to_string(round))
                                       : p.add_reparam(of, round, "candidate of round " + std::to_string(round));
  EXPECT_GE(id, 0);
  EXPECT_TRUE(p.update(id, verdict, std::move(reason), speedup, band, "v" + std::to_string(id)));
  return id;
}

Budget roomy(int patience = 10) { return Budget{100, 1'000'000, 1e6, patience}; }

bool valid_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

TEST(Planning, FirstDecisionIsARewriteOfS) {
  Planner p(roomy());
  EXPECT_EQ(p.add_root(), 0);
  EXPECT_EQ(p.add_root(), 0);  // idempotent
  ASSERT_EQ(p.nodes().size(), 1u);
  EXPECT_EQ(p.nodes()[0].kind, Node::original);
  EXPECT_EQ(p.nodes()[0].geomean_speedup, 1.0);

  const Decision d = p.decide({});
  EXPECT_EQ(d.action, Decision::rewrite);
  EXPECT_EQ(d.target, 0);
  EXPECT_EQ(d.round, 1);
  EXPECT_HAS(d.reason, "round 1: rewrite S");
}

TEST(Planning, WithoutRootItStops) {
  Planner p(roomy());
  const Decision d = p.decide({});
  EXPECT_EQ(d.action, Decision::stop);
  EXPECT_EQ(d.target, -1);
  EXPECT_HAS(d.reason, "no root");
  EXPECT_EQ(p.best(), -1);
  EXPECT_EQ(p.add_rewrite(0, 1, "x"), -1);
}

TEST(Planning, StopsWhenEachBudgetIsSpent) {
  Planner p(Budget{3, 1000, 3600.0, 0});
  p.add_root();

  const Decision rounds = p.decide({.tokens = 10, .rounds = 3, .wall_s = 1.0});
  EXPECT_EQ(rounds.action, Decision::stop);
  EXPECT_HAS(rounds.reason, "the rounds budget (3 of 3 rounds done) is spent");

  const Decision tokens = p.decide({.tokens = 1500, .rounds = 1, .wall_s = 1.0});
  EXPECT_EQ(tokens.action, Decision::stop);
  EXPECT_HAS(tokens.reason, "the token budget (1500 of 1000 tokens used) is spent");

  const Decision wall = p.decide({.tokens = 10, .rounds = 1, .wall_s = 3600.5});
  EXPECT_EQ(wall.action, Decision::stop);
  EXPECT_HAS(wall.reason, "the wall-time budget (3600.5 s of 3600.0 s) is spent");

  const Decision both = p.decide({.tokens = 1000, .rounds = 3, .wall_s = 0.0});
  EXPECT_HAS(both.reason, "rounds budget (3 of 3 rounds done) and the token budget (1000 of 1000 tokens used) are spent");
  EXPECT_HAS(both.reason, "the best is S itself");

  // Just below every limit: go on.
  EXPECT_EQ(p.decide({.tokens = 999, .rounds = 2, .wall_s = 3599.9}).action, Decision::rewrite);

  // A limit <= 0 is off.
  Planner unlimited(Budget{0, 0, 0.0, 0});
  unlimited.add_root();
  EXPECT_EQ(unlimited.decide({.tokens = 1'000'000'000, .rounds = 500, .wall_s = 1e9}).action, Decision::rewrite);
}

TEST(Planning, BudgetStopNamesTheBest) {
  Planner p(Budget{2, 0, 0.0, 0});
  p.add_root();
  const int a = judged(p, Node::rewrite, 0, 1, Node::measured, 1.42);
  const Decision d = p.decide({.tokens = 0, .rounds = 2, .wall_s = 0});
  EXPECT_EQ(d.action, Decision::stop);
  EXPECT_HAS(d.reason, "the best is node " + std::to_string(a) + " at 1.42x over S");
}

TEST(Planning, RewriteIsAChildReparamIsASibling) {
  Planner p(roomy());
  p.add_root();
  const int a = p.add_rewrite(0, 1, "one row per block, vectorised loads");
  const int b = p.add_reparam(a, 2, "wider vectors");
  const int c = p.add_rewrite(b, 3, "shared-memory staging");
  const int d = p.add_reparam(c, 4, "deeper pipeline");
  const int e = p.add_reparam(b, 4, "more rows per block");
  ASSERT_EQ(a, 1);
  ASSERT_EQ(b, 2);
  ASSERT_EQ(c, 3);
  ASSERT_EQ(d, 4);
  ASSERT_EQ(e, 5);

  const auto& n = p.nodes();
  EXPECT_EQ(n[1].parent, 0);
  EXPECT_EQ(n[1].based_on, 0);
  EXPECT_EQ(n[1].kind, Node::rewrite);
  EXPECT_EQ(n[2].parent, 0) << "a re-parameterisation sits beside the node it re-parameterises";
  EXPECT_EQ(n[2].based_on, 1);
  EXPECT_EQ(n[2].kind, Node::reparam);
  EXPECT_EQ(n[3].parent, 2) << "a rewrite is a child of what it rewrites";
  EXPECT_EQ(n[4].parent, 2);
  EXPECT_EQ(n[4].based_on, 3);
  EXPECT_EQ(n[5].parent, 0);
  EXPECT_EQ(n[5].based_on, 2);

  EXPECT_EQ(n[0].children_rewrite, 1);
  EXPECT_EQ(n[0].children_reparam, 0);
  EXPECT_EQ(n[1].children_reparam, 1);
  EXPECT_EQ(n[2].children_rewrite, 1);
  EXPECT_EQ(n[2].children_reparam, 1);
  EXPECT_EQ(n[3].children_reparam, 1);
  EXPECT_EQ(p.path_to(4), (std::vector<int>{0, 2, 4}));

  // Nodes that do not fit the tree are refused.
  EXPECT_EQ(p.add_reparam(0, 5, "S has no θ"), -1);
  EXPECT_EQ(p.add_rewrite(42, 5, "unknown parent"), -1);
  Node wrong_base;
  wrong_base.kind = Node::rewrite;
  wrong_base.parent = 1;
  wrong_base.based_on = 2;
  EXPECT_EQ(p.add(wrong_base), -1);
  Node wrong_parent;
  wrong_parent.kind = Node::reparam;
  wrong_parent.parent = 1;
  wrong_parent.based_on = 3;  // 3's parent is 2
  EXPECT_EQ(p.add(wrong_parent), -1);
  Node second_root;
  second_root.kind = Node::original;
  second_root.parent = 0;
  EXPECT_EQ(p.add(second_root), -1);
  EXPECT_EQ(p.nodes().size(), 6u);

  // add_for follows the decision.
  const Decision rw{Decision::rewrite, 3, 5, "r"};
  const Decision rp{Decision::reparam, 3, 5, "r"};
  const int f = p.add_for(rw, "f");
  const int g = p.add_for(rp, "g");
  EXPECT_EQ(p.nodes()[static_cast<std::size_t>(f)].parent, 3);
  EXPECT_EQ(p.nodes()[static_cast<std::size_t>(g)].parent, 2);
  EXPECT_EQ(p.nodes()[static_cast<std::size_t>(g)].round, 5);
  EXPECT_EQ(p.add_for(Decision{}, "stop"), -1);
  EXPECT_FALSE(p.update(99, Node::measured, "", 2.0, 0.01, ""));
}

TEST(Planning, CorrectRewriteIsReparameterisedNext) {
  Planner p(roomy());
  p.add_root();
  const int a = judged(p, Node::rewrite, 0, 1, Node::measured, 1.42);
  const Decision d = p.decide({.tokens = 0, .rounds = 1, .wall_s = 0});
  EXPECT_EQ(d.action, Decision::reparam);
  EXPECT_EQ(d.target, a);
  EXPECT_HAS(d.reason, "round 2: re-parameterise node 1 (1.42x over S");
  EXPECT_HAS(d.reason, "the best so far");
  EXPECT_HAS(d.reason, "created by a rewrite in round 1 and its θ has not been searched yet");
}

TEST(Planning, PatienceCountsOnlyGainsBeyondTheBand) {
  // Round 1 gains (1.50x over S); round 2 reaches 1.51x, inside the 1% band (needs > 1.515x).
  auto base = [] {
    Planner p(Budget{100, 0, 0.0, 2});
    p.add_root();
    judged(p, Node::rewrite, 0, 1, Node::measured, 1.50);
    judged(p, Node::reparam, 1, 2, Node::measured, 1.51);
    return p;
  };
  {
    const Planner p = base();
    EXPECT_NE(p.decide({.tokens = 0, .rounds = 2, .wall_s = 0}).action, Decision::stop)
        << "round 1's gain is inside the window";
  }
  {  // Round 3 inside the band of 1.51x (needs > 1.5251x): two rounds without gain, stop.
    Planner p = base();
    judged(p, Node::rewrite, 2, 3, Node::measured, 1.52);
    const Decision d = p.decide({.tokens = 0, .rounds = 3, .wall_s = 0});
    EXPECT_EQ(d.action, Decision::stop);
    EXPECT_HAS(d.reason, "the last 2 rounds (2 to 3) brought no gain beyond the noise band");
    EXPECT_HAS(d.reason, "node 2 at 1.510x did not pass 1.515x");
    EXPECT_HAS(d.reason, "node 3 at 1.520x did not pass 1.525x");
    EXPECT_HAS(d.reason, "the best stays node 3 at 1.52x");
  }
  {  // Round 3 beyond the band: it counts, go on.
    Planner p = base();
    judged(p, Node::rewrite, 2, 3, Node::measured, 1.53);
    EXPECT_NE(p.decide({.tokens = 0, .rounds = 3, .wall_s = 0}).action, Decision::stop);
  }
  {  // A wider measured band raises the bar: 1.55x with a 5% band needs > 1.5855x over 1.51x.
    Planner p = base();
    judged(p, Node::rewrite, 2, 3, Node::measured, 1.55, 0.05);
    EXPECT_EQ(p.decide({.tokens = 0, .rounds = 3, .wall_s = 0}).action, Decision::stop);
  }
  {  // A band below 1% is read as 1%: 1.52x with a 0.1% band still does not pass 1.5251x.
    Planner p = base();
    judged(p, Node::rewrite, 2, 3, Node::measured, 1.52, 0.001);
    EXPECT_EQ(p.decide({.tokens = 0, .rounds = 3, .wall_s = 0}).action, Decision::stop);
  }
  {  // Failures and empty rounds bring no gain either.
    Planner p(Budget{100, 0, 0.0, 2});
    p.add_root();
    judged(p, Node::rewrite, 0, 1, Node::compile_error, std::nullopt);
    const Decision d = p.decide({.tokens = 0, .rounds = 2, .wall_s = 0});
    EXPECT_EQ(d.action, Decision::stop);
    EXPECT_HAS(d.reason, "round 1: node 1 compile_error; round 2: no candidate");
    EXPECT_HAS(d.reason, "the best stays S itself");
  }
}

TEST(Planning, FailedNodeSendsItsOriginBackWithARewrite) {
  Planner p(roomy());
  p.add_root();
  judged(p, Node::rewrite, 0, 1, Node::compile_error, std::nullopt, 0.01, "error: identifier \"vec_t\" is undefined");
  Decision d = p.decide({.tokens = 0, .rounds = 1, .wall_s = 0});
  EXPECT_EQ(d.action, Decision::rewrite);
  EXPECT_EQ(d.target, 0);
  EXPECT_HAS(d.reason, "node 1");
  EXPECT_HAS(d.reason, "failed with compile_error");
  EXPECT_HAS(d.reason, "vec_t");

  // A failed re-parameterisation, "faster" but incorrect: its origin gets a rewrite, it is not expanded.
  const int a = judged(p, Node::rewrite, 0, 2, Node::measured, 1.30);
  const int bad = judged(p, Node::reparam, a, 3, Node::incorrect, 2.5, 0.01, "max abs error 0.5 > atol 1e-3");
  d = p.decide({.tokens = 0, .rounds = 3, .wall_s = 0});
  EXPECT_EQ(d.action, Decision::rewrite);
  EXPECT_EQ(d.target, a);
  EXPECT_HAS(d.reason, "failed with incorrect: max abs error 0.5");
  EXPECT_NE(d.target, bad);
}

TEST(Planning, RepeatedFailuresSetTheOriginAside) {
  Planner p(roomy());
  p.add_root();
  const int a = judged(p, Node::rewrite, 0, 1, Node::measured, 1.30);
  judged(p, Node::rewrite, a, 2, Node::race, std::nullopt);
  EXPECT_EQ(p.decide({.tokens = 0, .rounds = 2, .wall_s = 0}).target, a);
  judged(p, Node::rewrite, a, 3, Node::timeout, std::nullopt);
  EXPECT_EQ(p.decide({.tokens = 0, .rounds = 3, .wall_s = 0}).target, a);
  judged(p, Node::rewrite, a, 4, Node::rejected, std::nullopt);
  const Decision d = p.decide({.tokens = 0, .rounds = 4, .wall_s = 0});
  EXPECT_EQ(d.action, Decision::rewrite);
  EXPECT_EQ(d.target, 0) << d.reason;
  EXPECT_HAS(d.reason, "node 1 is set aside this round after 3 failed expansions in a row");
}

TEST(Planning, FailedNodesAreNeverExpanded) {
  // Every kind of failure, each reported "faster" than anything correct (patience off: no stop).
  Planner p(roomy(0));
  p.add_root();
  const int a = judged(p, Node::rewrite, 0, 1, Node::measured, 1.20);
  std::set<int> failed;
  const Node::Verdict kinds[] = {Node::compile_error, Node::incorrect, Node::race, Node::timeout, Node::rejected};
  int round = 2;
  for (Node::Verdict v : kinds) {
    failed.insert(judged(p, Node::rewrite, 0, round++, v, 9.0));
    failed.insert(judged(p, Node::reparam, a, round++, v, 9.0));
  }
  // Whatever comes last (failure, success, pending), no decision targets a failed node.
  for (int extra = 0; extra < 6; ++extra) {
    const Decision d = p.decide({.tokens = 0, .rounds = round - 1, .wall_s = 0});
    ASSERT_NE(d.action, Decision::stop) << d.reason;
    EXPECT_EQ(failed.count(d.target), 0u) << d.reason;
    const int id = p.add_for(d, "next");
    if (extra % 2 == 0) {
      p.update(id, Node::incorrect, "wrong", 20.0, 0.01, "");
      failed.insert(id);
    } else {
      p.update(id, Node::measured, "ok", 1.1 + 0.01 * extra, 0.01, "");
    }
    ++round;
  }
}

TEST(Planning, MostPromisingIsChosenOverTheLatest) {
  Planner p(roomy());
  p.add_root();
  const int strong = judged(p, Node::rewrite, 0, 1, Node::measured, 1.60);
  const int latest = judged(p, Node::rewrite, 0, 2, Node::measured, 1.10);
  const Decision d = p.decide({.tokens = 0, .rounds = 2, .wall_s = 0});
  EXPECT_EQ(d.target, strong);
  EXPECT_NE(d.target, latest);
  EXPECT_EQ(d.action, Decision::reparam);
  EXPECT_HAS(d.reason, "re-parameterise node 1 (1.60x over S, 0 expansions, score 2.40, the best so far; "
                      "next node 2 scores 1.65)");

  // Among close nodes the bonus explores: the best, expanded three times, yields to a fresh one.
  Planner q(roomy());
  q.add_root();
  const int best = judged(q, Node::rewrite, 0, 1, Node::measured, 1.50);
  for (int r = 2; r <= 4; ++r) judged(q, Node::rewrite, best, r, Node::slower, 0.9);
  const int fresh = judged(q, Node::rewrite, 0, 5, Node::measured, 1.40);
  const Decision e = q.decide({.tokens = 0, .rounds = 5, .wall_s = 0});
  EXPECT_EQ(e.target, fresh) << e.reason;
  EXPECT_HAS(e.reason, "the best, node 1 at 1.50x, scores 1.88 after 3 expansions");
}

TEST(Planning, ReparamRulesLeadToARewriteWhenThetaIsExhausted) {
  {  // Twice without gain (slower beyond the band): rewrite.
    Planner p(roomy());
    p.add_root();
    const int a = judged(p, Node::rewrite, 0, 1, Node::measured, 1.50);
    judged(p, Node::reparam, a, 2, Node::measured, 1.10);
    Decision d = p.decide({.tokens = 0, .rounds = 2, .wall_s = 0});
    EXPECT_EQ(d.target, a);
    EXPECT_EQ(d.action, Decision::reparam) << "one slower try: one more θ";
    EXPECT_HAS(d.reason, "1 of 2 tries without gain");
    judged(p, Node::reparam, a, 3, Node::measured, 1.15);
    d = p.decide({.tokens = 0, .rounds = 3, .wall_s = 0});
    EXPECT_EQ(d.target, a);
    EXPECT_EQ(d.action, Decision::rewrite);
    EXPECT_HAS(d.reason, "re-parameterised 2 times without gain beyond the noise band");
  }
  {  // The last re-parameterisation landed inside the band: rewrite.
    Planner p(roomy());
    p.add_root();
    const int a = judged(p, Node::rewrite, 0, 1, Node::measured, 2.00);
    judged(p, Node::reparam, a, 2, Node::measured, 1.75, 0.15);
    const Decision d = p.decide({.tokens = 0, .rounds = 2, .wall_s = 0});
    EXPECT_EQ(d.target, a);
    EXPECT_EQ(d.action, Decision::rewrite);
    EXPECT_HAS(d.reason, "moved it by -12.5%, inside the 15.0% noise band");
  }
  {  // A re-parameterisation that gained beyond the band is searched further ...
    Planner p(roomy());
    p.add_root();
    const int a = judged(p, Node::rewrite, 0, 1, Node::measured, 1.50);
    const int b = judged(p, Node::reparam, a, 2, Node::measured, 1.70);
    Decision d = p.decide({.tokens = 0, .rounds = 2, .wall_s = 0});
    EXPECT_EQ(d.target, b);
    EXPECT_EQ(d.action, Decision::reparam);
    EXPECT_HAS(d.reason, "gain of +13.3%");
    // ... and one that gained only inside the band gets a rewrite.
    const int c = judged(p, Node::reparam, b, 3, Node::measured, 1.705);
    d = p.decide({.tokens = 0, .rounds = 3, .wall_s = 0});
    EXPECT_EQ(d.target, c);
    EXPECT_EQ(d.action, Decision::rewrite);
    EXPECT_HAS(d.reason, "no gain beyond the 1.0% noise band (+0.3%)");
  }
}

TEST(Planning, BestIgnoresIncorrectAndRacyNodes) {
  Planner p(roomy());
  p.add_root();
  EXPECT_EQ(p.best(), 0);
  judged(p, Node::rewrite, 0, 1, Node::incorrect, 3.0);
  judged(p, Node::rewrite, 0, 2, Node::race, 2.5);
  judged(p, Node::rewrite, 0, 3, Node::slower, 0.8);
  EXPECT_EQ(p.best(), 0) << "nothing correct beats S";
  const int first = judged(p, Node::rewrite, 0, 4, Node::measured, 1.20);
  judged(p, Node::rewrite, 0, 5, Node::measured, 1.20);  // tie: the earlier stays
  judged(p, Node::rewrite, 0, 6, Node::pending, std::nullopt);
  const int no_time = p.add_rewrite(0, 7, "measured without a speedup");
  p.update(no_time, Node::measured, "", std::nullopt, 0.01, "");
  EXPECT_EQ(p.best(), first);
  const int tie_with_s = judged(p, Node::rewrite, 0, 8, Node::measured, 1.0);
  EXPECT_NE(p.best(), tie_with_s);
}

TEST(Planning, SummaryForPromptFitsAndKeepsTheBest) {
  Planner p(roomy());
  p.add_root();
  int last = 0;
  int best = -1;
  for (int r = 1; r <= 12; ++r) {
    const Node::Verdict v = r % 4 == 0 ? Node::incorrect : Node::measured;
    const double s = 1.0 + 0.05 * r - (r == 12 ? 0.3 : 0.0);
    const int id = r % 3 == 0 && last > 0 ? p.add_reparam(last, r, "θ: wider vectors, 4 rows per block — step " + std::to_string(r))
                                          : p.add_rewrite(last, r, "structure " + std::to_string(r) + ": shared-memory staging of the row, warp reductions");
    p.update(id, v, std::string(300, 'r'), s, 0.012, "variant_" + std::to_string(id));
    if (v == Node::measured) last = id;
    if (v == Node::measured && r != 12) best = id;
  }
  ASSERT_EQ(p.best(), best);
  const std::string full = p.summary_for_prompt(1'000'000);
  EXPECT_HAS(full, "Best: node " + std::to_string(best));
  EXPECT_HAS(full, "How the best was derived, from S:\nnode 0 (original, round 0)");
  EXPECT_HAS(full, "Latest rounds:\nround 10:");
  EXPECT_HAS(full, "Older rounds:\nround 1: node 1");
  EXPECT_EQ(full, p.summary_for_prompt(1'000'000)) << "deterministic";

  for (std::size_t max : {0u, 10u, 60u, 200u, 400u, 800u, 1500u, 3000u, 6000u, 12000u}) {
    const std::string s = p.summary_for_prompt(max);
    EXPECT_LE(s.size(), max);
    EXPECT_TRUE(valid_utf8(s)) << max;
    if (max >= 200) {
      EXPECT_HAS(s, "Best: node " + std::to_string(best)) << max;
    }
  }
  // Older rounds give way first, then detail.
  const std::string mid = p.summary_for_prompt(full.size() - 100);
  EXPECT_HAS(mid, "older round");
  EXPECT_HAS(mid, "  reason: ");
}

TEST(Planning, JsonRoundTripIsExact) {
  Planner p(Budget{7, 123'456'789'012, 1234.5678, 4});
  p.add_root();
  p.update(0, Node::measured, "the baseline", 1.0, 0.0037, "S");
  Decision d = p.decide({});
  p.record(d);
  const int a = p.add_for(d, "one row per block, \"quoted\", θ and — unicode");
  p.update(a, Node::measured, "ok", 1.0 / 3.0 + 1.0, 0.1 + 0.2, "silu_and_mul_v7");
  d = p.decide({.tokens = 1000, .rounds = 1, .wall_s = 12.5});
  p.record(d);
  const int b = p.add_for(d, "wider");
  p.update(b, Node::race, "racecheck: 3 hazards", 2.718281828459045, 0.01, "");
  const int c = p.add_rewrite(a, 3, "pending one");
  (void)c;
  p.record(p.decide({.tokens = 2000, .rounds = 3, .wall_s = 99.0}));

  const nlohmann::json j = p.to_json();
  const nlohmann::json reparsed = nlohmann::json::parse(j.dump());
  const Planner q = Planner::from_json(reparsed);
  EXPECT_EQ(q.to_json(), j);
  EXPECT_EQ(q.to_json().dump(), j.dump());
  EXPECT_EQ(q.nodes(), p.nodes());
  EXPECT_EQ(q.decisions(), p.decisions());
  EXPECT_EQ(q.budget(), p.budget());
  EXPECT_EQ(q.summary_for_prompt(5000), p.summary_for_prompt(5000));
  EXPECT_EQ(q.decide({.tokens = 3000, .rounds = 3, .wall_s = 100.0}), p.decide({.tokens = 3000, .rounds = 3, .wall_s = 100.0}));
  EXPECT_FALSE(q.nodes()[3].geomean_speedup.has_value());

  // Malformed input throws std::invalid_argument naming the problem.
  auto throws = [](nlohmann::json bad, const std::string& what) {
    try {
      Planner::from_json(bad);
      ADD_FAILURE() << "no throw for " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_HAS(std::string(e.what()), what);
    }
  };
  throws(nlohmann::json::array(), "not an object");
  nlohmann::json bad = j;
  bad["nodes"][1].erase("verdict");
  throws(bad, "verdict");
  bad = j;
  bad["nodes"][1]["verdict"] = "great";
  throws(bad, "unknown verdict \"great\"");
  bad = j;
  bad["nodes"][2]["id"] = 5;
  throws(bad, "out of order");
  bad = j;
  bad["nodes"][1]["children_reparam"] = 0;
  throws(bad, "expansion counters");
  bad = j;
  bad["nodes"][2]["parent"] = 1;
  throws(bad, "beside");
  bad = j;
  bad["budget"]["patience"] = "three";
  throws(bad, "planner JSON");
  bad = j;
  bad["decisions"][0]["target"] = 17;
  throws(bad, "target 17");
}

}  // namespace
}  // namespace ktune::gen
