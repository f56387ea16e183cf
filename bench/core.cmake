# ktune_bench_core: the benchmark's host-only logic, shared by ktune_bench and the CPU tests
# (tests/bench). Included by bench/CMakeLists.txt, and by tests/bench when the benchmark is off.
if(TARGET ktune_bench_core)
  return()
endif()
find_package(nlohmann_json REQUIRED)
find_package(Threads REQUIRED)
set(ktune_bench_dir ${CMAKE_CURRENT_LIST_DIR})
add_library(ktune_bench_core STATIC
  ${ktune_bench_dir}/cache.cpp ${ktune_bench_dir}/names.cpp ${ktune_bench_dir}/options.cpp ${ktune_bench_dir}/plan.cpp ${ktune_bench_dir}/result.cpp ${ktune_bench_dir}/retest.cpp
  ${ktune_bench_dir}/search.cpp ${ktune_bench_dir}/sweep.cpp ${ktune_bench_dir}/host_inputs.cpp
  ${ktune_bench_dir}/prefetch.cpp ${ktune_bench_dir}/incumbents.cpp ${ktune_bench_dir}/trace_analysis.cpp)
target_include_directories(ktune_bench_core PUBLIC ${ktune_bench_dir})
target_link_libraries(ktune_bench_core PUBLIC ktune::ktune nlohmann_json::nlohmann_json Threads::Threads)
target_compile_features(ktune_bench_core PUBLIC cxx_std_17)
set_target_properties(ktune_bench_core PROPERTIES POSITION_INDEPENDENT_CODE ON)
