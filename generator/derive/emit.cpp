// generator/derive/emit.cpp: the derived files of a kernel folder (emit.hpp), in order. Each text is written
// in the shape of the hand-written folders (kernels/silu_and_mul/), with the op's names and shapes filled in:
// emit_args.cpp (args.hpp, original.cuh), emit_harness.cpp (harness.hpp), emit_api.cpp (family_base.cuh,
// <op>.hpp, <op>.cuh, <op>.cu), from the helpers of emit_text.cpp.
#include "generator/derive/emit.hpp"

#include "generator/derive/emit_detail.hpp"

namespace ktune::gen::derive {

std::vector<DerivedFile> emit_files(const Model& m) {
  return {{"spec.json", m.spec_json},
          {"args.hpp", detail::args_hpp(m)},
          {"original.cuh", detail::original_cuh(m)},
          {"harness.hpp", detail::harness_hpp(m)},
          {"family_base.cuh", detail::family_base_cuh(m)},
          {m.op + ".hpp", detail::op_hpp(m)},
          {m.op + ".cuh", detail::op_cuh(m)},
          {m.op + ".cu", detail::op_cu(m)}};
}

}  // namespace ktune::gen::derive
