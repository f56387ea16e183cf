// generator/derive/derive.hpp: the part of a new kernel folder that follows from the user's S and
// spec.json alone, with no LLM: the argument struct, S wrapped with its glue, the harness that runs S
// as the reference, the family's base, the public API and the default-only tuned table.
//
// The LLM writes only kernels/<op>/space.hpp and kernels/<op>/family.cuh (generator/derive/README.md
// says what they must provide). Everything here is deterministic: the same inputs give the same bytes,
// and every generated file opens with a banner naming its inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ktune::gen {

/// One file of kernels/<op>/: its name inside the folder and its whole content.
struct DerivedFile {
  std::string name;
  std::string content;
};

struct DeriveResult {
  std::vector<DerivedFile> files;  ///< in a fixed order; empty when `error` is set
  std::string error;               ///< what is wrong with the inputs, for the user to fix
  bool ok() const { return error.empty(); }
};

/// The files the LLM writes; derive_kernel_folder() writes every other one except tuned.cuh.
inline constexpr const char* llm_written_files[] = {"space.hpp", "family.cuh"};

/// Derives kernels/<op>/ from S and its spec: spec.json (the user's, verbatim), args.hpp, original.cuh,
/// harness.hpp, family_base.cuh, <op>.hpp, <op>.cuh and <op>.cu. `s_name` is S's file name as the
/// banners and error messages show it (e.g. "my_kernel.cu"). Fails with a message when `op` is not a
/// usable name, the spec is invalid or names another op, a tensor or dimension name cannot be a C++
/// parameter, or S has no launcher of the documented form or one whose parameters disagree with the
/// spec.
DeriveResult derive_kernel_folder(const std::string& op, const std::string& s_source, const std::string& s_name,
                                  const std::string& spec_json);

/// kernels/<op>/tuned.cuh before the first tune: no tuned rows, the general configuration is
/// Space::default_point. Written by the same code as `ktune tables` (tools/ktune/tables.hpp), so a tune
/// regenerates it in the same shape. `space_hash` is Space::space.hash() of the folder's space.hpp,
/// which only compiling it can tell (the candidate build's space probe prints it).
DerivedFile default_tuned_table(const std::string& op, std::uint64_t space_hash);

}  // namespace ktune::gen
