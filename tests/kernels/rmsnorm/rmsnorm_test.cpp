// CPU tests of rmsnorm's host-side pieces: the checks every RMS norm op with a separate output shares
// (tests/kernels/common/norm_rows/output_norm_cpu.hpp: the float64 reference, validate() with in place and
// overlaps, the space, the harness and spec.json), with the weight used as stored. Compiled by the host
// compiler.
#include <gtest/gtest.h>

#include "../common/norm_rows/output_norm_cpu.hpp"
#include "kernels/rmsnorm/args.hpp"
#include "kernels/rmsnorm/harness.hpp"
#include "kernels/rmsnorm/reference.hpp"
#include "kernels/rmsnorm/space.hpp"

namespace {

struct Rmsnorm {
  KTUNE_NORM_ROWS_HOST_OP(rmsnorm)
  using Weight = ktune::test::norm_rows::PlainWeight;
};

KTUNE_OUTPUT_NORM_CPU_TESTS(Rmsnorm)

}  // namespace
