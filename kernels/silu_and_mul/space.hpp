// kernels/silu_and_mul/space.hpp: the tunable parameters θ of the silu_and_mul family, their
// feasibility rules, and the family's named points (default, unaligned, original S).
//
// The parameters, rules and named points are the act-and-mul family's (kernels/common/act_and_mul/space.hpp,
// shared with gelu_and_mul and gelu_tanh_and_mul); this op sets the widest width of its spec.
// No CUDA types and no device code: g++ and nvcc both compile it (the `ktune` tool, CPU tests).
#pragma once

#include "../common/act_and_mul/space.hpp"

namespace ktune::ops::silu_and_mul {

/// The act-and-mul space with silu_and_mul's widest spec row, d = 28672 (spec.json, from shapes/catalogue.json: Llama-3.1-70B at tp 1):
/// a block step wider than that leaves threads idle at every spec shape. How the kernel maps work to threads, and
/// what each parameter means: kernels/common/act_and_mul/space.hpp.
struct Space : act_and_mul::ActAndMulSpace<28672> {};

/// The configuration type of Space::unaligned_point(ElementBytes).
template <int ElementBytes>
using unaligned_config_t =
    Space::Config<Space::unaligned_point(ElementBytes)[0], Space::unaligned_point(ElementBytes)[1],
                  Space::unaligned_point(ElementBytes)[2], Space::unaligned_point(ElementBytes)[3],
                  Space::unaligned_point(ElementBytes)[4], Space::unaligned_point(ElementBytes)[5]>;

/// The configuration type of Space::original_point (the family kernel on S's access pattern).
using original_config_t = Space::Config<Space::original_point[0], Space::original_point[1], Space::original_point[2],
                                        Space::original_point[3], Space::original_point[4], Space::original_point[5]>;

}  // namespace ktune::ops::silu_and_mul
