# Generated translation units: every feasible variant of every kernel family, compiled once and
# shared by the GPU tests and the benchmark (DESIGN.md: "compile each variant once").
#
# For each op and each architecture in CMAKE_CUDA_ARCHITECTURES, KTUNE_SHARDS_PER_OP shard units are
# written to ${CMAKE_BINARY_DIR}/generated/<op>/ from bench/shard.cu.in, each an OBJECT library
# compiled for that one architecture (feasibility is checked for it: contract 9). The original kernel
# S gets a unit of its own. Shards named in KTUNE_SKIP_SHARDS (e.g. "silu_and_mul.sm90.3") are left
# out: `ktune build` uses it to keep a tune going when one shard fails to compile.
#
# Result: the INTERFACE target ktune_variants, whose objects every linking executable receives.

set(KTUNE_SKIP_SHARDS "" CACHE STRING "Variant shards to leave out of the build, as <op>.sm<arch>.<shard>")
set(KTUNE_VARIANT_OPS "" CACHE STRING "Build variants of these ops only (empty: all)")

add_library(ktune_variants INTERFACE)
set(KTUNE_VARIANT_TARGETS "" CACHE INTERNAL "")

function(ktune_variant_archs out)
  set(archs "")
  foreach(a IN LISTS CMAKE_CUDA_ARCHITECTURES)
    string(REGEX REPLACE "-(real|virtual)$" "" a "${a}")
    string(REGEX REPLACE "a$" "" a "${a}")      # 90a: feasibility as for 90
    list(APPEND archs ${a})
  endforeach()
  list(REMOVE_DUPLICATES archs)
  set(${out} ${archs} PARENT_SCOPE)
endfunction()

function(ktune_add_variant_unit target source arch)
  add_library(${target} OBJECT ${source})
  target_link_libraries(${target} PUBLIC ktune::ktune Boost::boost)
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES ${arch} POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-warn-spills --expt-relaxed-constexpr>)
  target_sources(ktune_variants INTERFACE $<TARGET_OBJECTS:${target}>)
  set(KTUNE_VARIANT_TARGETS ${KTUNE_VARIANT_TARGETS} ${target} CACHE INTERNAL "")
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/KtuneOriginalBuilds.cmake)  # KTUNE_ORIGINAL_BUILD_<name>

function(ktune_add_variants op)
  set(gen ${CMAKE_BINARY_DIR}/generated/${op})
  file(READ ${KTUNE_OP_ROOT_${op}}/kernels/${op}/spec.json spec)
  string(JSON build ERROR_VARIABLE no_build GET "${spec}" original_build)
  set(original_flags "")
  if(NOT no_build)
    if(NOT DEFINED KTUNE_ORIGINAL_BUILD_${build})
      message(FATAL_ERROR "kernels/${op}/spec.json: original_build \"${build}\" is not a build ktune knows (cmake/KtuneOriginalBuilds.cmake)")
    endif()
    set(original_flags ${KTUNE_ORIGINAL_BUILD_${build}})
  endif()
  set(KTUNE_OP ${op})
  set(KTUNE_FAMILY "ktune::ops::${op}::Family")
  set(KTUNE_FAMILY_HEADER "kernels/${op}/family.cuh")
  math(EXPR last "${KTUNE_SHARDS_PER_OP} - 1")
  ktune_variant_archs(archs)
  foreach(arch IN LISTS archs)
    set(KTUNE_ARCH ${arch})
    set(KTUNE_SHARDS ${KTUNE_SHARDS_PER_OP})
    configure_file(${PROJECT_SOURCE_DIR}/bench/original.cu.in ${gen}/sm${arch}_original.cu @ONLY)
    ktune_add_variant_unit(ktune_variants_${op}_sm${arch}_original ${gen}/sm${arch}_original.cu ${arch})
    target_compile_options(ktune_variants_${op}_sm${arch}_original PRIVATE ${original_flags})
    foreach(shard RANGE ${last})
      if("${op}.sm${arch}.${shard}" IN_LIST KTUNE_SKIP_SHARDS)
        message(STATUS "ktune: leaving out variant shard ${op}.sm${arch}.${shard} (KTUNE_SKIP_SHARDS)")
        continue()
      endif()
      set(KTUNE_SHARD ${shard})
      configure_file(${PROJECT_SOURCE_DIR}/bench/shard.cu.in ${gen}/sm${arch}_shard${shard}.cu @ONLY)
      ktune_add_variant_unit(ktune_variants_${op}_sm${arch}_${shard} ${gen}/sm${arch}_shard${shard}.cu ${arch})
    endforeach()
  endforeach()
endfunction()

find_package(Boost 1.74 REQUIRED)
foreach(op IN LISTS KTUNE_OPS)
  if(KTUNE_VARIANT_OPS AND NOT op IN_LIST KTUNE_VARIANT_OPS)
    continue()
  endif()
  if(EXISTS ${KTUNE_OP_ROOT_${op}}/kernels/${op}/family.cuh)
    ktune_add_variants(${op})
  endif()
endforeach()
