// generator/subcommands.cpp: the generator's commands in `ktune`'s table (tools/ktune/cli.hpp). The build
// links this file into the `ktune` executable itself (an object library, not the static library, so the
// registrars always run); the tool's core knows nothing of the generator.
#include "generator/agent.hpp"
#include "generator/derive/command.hpp"
#include "ktune/cli.hpp"

namespace {

const ktune::cli::Registrar agent_command{
    {"agent",
     "stage 1: an LLM writes a tunable family of S, judged and tuned here round by round\n"
     "(ktune agent S.cu --spec SPEC.json --name OP)",
     ktune::gen::agent_command}};

const ktune::cli::Registrar derive_command{
    {"derive",
     "the parts of kernels/OP/ that follow from S and its spec (all but space.hpp and family.cuh)\n"
     "(ktune derive S.cu --spec SPEC.json --name OP)",
     ktune::gen::derive_command}};

}  // namespace
