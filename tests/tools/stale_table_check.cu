// Must NOT compile: includes a tuned table generated from the toy results next to a changed toy space
// (tests/tools/data/kernels/toyop/space_changed.hpp dropped tpb 64, which the table names). The ctest
// expects the compiler's message to give the command that regenerates the table.
#include "toyop/tuned.cuh"

ktune::Status instantiate_every_dtype() {
  namespace tuned = ktune::ops::toyop::tuned;
  auto f = [](auto) { return ktune::Status::success(); };
  ktune::Status a = tuned::with_variant<float>(0, f);
  ktune::Status b = tuned::with_variant<__nv_bfloat16>(3, f);
  return a.ok() ? b : a;
}
