// generator/derive/command.hpp: `ktune derive`, the deterministic half of the generator on its own. A
// person writing a family by hand (examples/03_your_own_kernel) gets the same kernel folder `ktune agent`
// would leave, less the two files an LLM would have written: space.hpp and family.cuh.
#pragma once

#include <string>
#include <vector>

namespace ktune::gen {

/// `ktune derive S.cu --spec SPEC.json --name OP [--kernels DIR] [--toolchain FILE] [--force]` (args after
/// "derive"). Exit codes: 0 written, 1 failed (the message says why; nothing was changed), 2 usage.
int derive_command(const std::vector<std::string>& args);

}  // namespace ktune::gen
