// generator/derive/emit.hpp: the texts of the derived files, from a checked model (derive.cpp checks).
#pragma once

#include <vector>

#include "generator/derive/derive.hpp"
#include "generator/derive/model.hpp"

namespace ktune::gen::derive {

/// spec.json, args.hpp, original.cuh, harness.hpp, family_base.cuh, <op>.hpp, <op>.cuh, <op>.cu.
std::vector<DerivedFile> emit_files(const Model& m);

}  // namespace ktune::gen::derive
