// CPU tests of gemma_rmsnorm's host-side pieces: the checks every RMS norm op with a separate output shares
// (tests/kernels/common/norm_rows/output_norm_cpu.hpp: the float64 reference, validate() with in place and
// overlaps, the space, the harness and spec.json), with the weight used as 1 + w. Compiled by the host
// compiler.
#include <gtest/gtest.h>

#include "../common/norm_rows/output_norm_cpu.hpp"
#include "kernels/gemma_rmsnorm/args.hpp"
#include "kernels/gemma_rmsnorm/harness.hpp"
#include "kernels/gemma_rmsnorm/reference.hpp"
#include "kernels/gemma_rmsnorm/space.hpp"

namespace {

struct GemmaRmsnorm {
  KTUNE_NORM_ROWS_HOST_OP(gemma_rmsnorm)
  using Weight = ktune::test::norm_rows::GemmaWeight;
};

KTUNE_OUTPUT_NORM_CPU_TESTS(GemmaRmsnorm)

}  // namespace
