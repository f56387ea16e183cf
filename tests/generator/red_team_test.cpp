// tests/generator/red_team_test.cpp: the red-team suite's files, everywhere (docs/judge.md). Every attack
// names the verdict the judge must give and the check that gives it, docs/judge.md's table lists every
// attack, and the static check refuses exactly the families whose meta.json says so: it is a first filter,
// and the GPU test (red_team_gpu_test.cpp) builds every family without it, because the GPU checks must
// catch each attack on their own.
#include <gtest/gtest.h>

#include <set>

#include "generator/agents/answer.hpp"
#include "generator/agents/planning.hpp"
#include "red_team_support.hpp"

namespace ktune::gen::test {
namespace {

bool parse_verdict(const std::string& name, Node::Verdict& out) {
  for (int v = Node::pending; v <= Node::reads_before_wait; ++v)
    if (name == to_string(static_cast<Node::Verdict>(v))) {
      out = static_cast<Node::Verdict>(v);
      return true;
    }
  return false;
}

TEST(RedTeam, EveryAttackNamesItsVerdictAndTheCheckThatGivesIt) {
  std::string err;
  const std::vector<Attack> attacks = red_team_attacks(err);
  ASSERT_EQ(err, "");
  // At least the attacks issue 15 names, and two honest families.
  ASSERT_GE(attacks.size(), 16u);
  std::set<std::string> verdicts;
  std::size_t honest = 0;
  for (const Attack& a : attacks) {
    SCOPED_TRACE(a.name);
    EXPECT_EQ(a.meta.value("attack", ""), a.name);
    for (const char* k : {"how_it_cheats", "expected_verdict", "caught_by", "static_check"})
      EXPECT_TRUE(a.meta.contains(k) && a.meta[k].is_string() && !a.meta[k].get<std::string>().empty()) << k;
    const std::string v = a.meta.value("expected_verdict", "");
    if (a.honest()) {
      ++honest;
      continue;
    }
    Node::Verdict parsed{};
    EXPECT_TRUE(parse_verdict(v, parsed)) << "not a verdict of the planner: " << v;
    EXPECT_TRUE(is_failure(parsed)) << v;
    verdicts.insert(v);
  }
  EXPECT_EQ(honest, 2u);
  // implausible_time is defence in depth: no attack here reaches it (launch_elsewhere did before the checked
  // call became a graph refilled after its capture; docs/gpu-log.md).
  for (const char* v : {"out_of_bounds_write", "out_of_bounds_access", "input_modified", "unwritten_output", "work_skipped",
                        "nondeterministic", "incorrect", "timeout", "narrower_than_s", "state_changed", "reads_before_wait"})
    EXPECT_TRUE(verdicts.count(v)) << "no attack is expected to get " << v;
}

TEST(RedTeam, TheStaticCheckRefusesExactlyTheFamiliesMarkedRefused) {
  std::string err;
  for (const Attack& a : red_team_attacks(err)) {
    SCOPED_TRACE(a.name);
    Answer answer;
    answer.kind = "rewrite";
    answer.space_hpp = a.space_hpp;
    answer.family_cuh = a.family_cuh;
    const std::string refusal = check_answer(answer);
    if (a.meta.value("static_check", "") == "refused") EXPECT_NE(refusal, "") << "the static check let it through";
    else EXPECT_EQ(refusal, "") << "the static check refused it";
  }
  EXPECT_EQ(err, "");
}

TEST(RedTeam, TheThreatModelListsEveryAttack) {
  std::string err;
  const std::string doc = read_file(source_dir() / "docs/judge.md", err);
  ASSERT_EQ(err, "");
  for (const Attack& a : red_team_attacks(err)) {
    EXPECT_NE(doc.find("| `" + a.name + "` |"), std::string::npos) << a.name << " is not in docs/judge.md's table";
  }
}

}  // namespace
}  // namespace ktune::gen::test
