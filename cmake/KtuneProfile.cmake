# ktune::profile: the CUPTI profiling layer (include/ktune/profile/, include/ktune/diagnose.hpp).
#
# Header-only: an INTERFACE target that adds CUPTI (CUDA::cupti, from the CUDA toolkit) and
# nlohmann-json (the metrics' JSON form) to ktune::ktune. libcupti loads the driver and
# libnvperf_host at run time, so binaries linking it still start, and skip GPU work, on machines
# without a GPU. Included from the top-level CMakeLists.txt (or by tests/profile when it is not).
if(TARGET ktune_profile)
  return()
endif()
find_package(CUDAToolkit REQUIRED)
find_package(nlohmann_json REQUIRED)
if(NOT TARGET CUDA::cupti)
  message(FATAL_ERROR "ktune::profile needs CUPTI (CUDA::cupti): install the CUDA toolkit's CUPTI component")
endif()
add_library(ktune_profile INTERFACE)
add_library(ktune::profile ALIAS ktune_profile)
target_link_libraries(ktune_profile INTERFACE ktune::ktune CUDA::cupti nlohmann_json::nlohmann_json)
set_target_properties(ktune_profile PROPERTIES EXPORT_NAME profile)
