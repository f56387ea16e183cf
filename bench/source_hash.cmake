# bench/source_hash.cmake: the content hash of a kernel folder, which keys the benchmark's result
# cache (bench/cache.hpp). Included by bench/build_info.cmake; also a script for tests:
#   cmake -DKTUNE_HASH_DIR=kernels/<op> [-DKTUNE_HASH_EXTRA="f1;f2"] -P bench/source_hash.cmake
# prints the hash.
#
# Hashed: every file under the folder by relative path and content (so renames, additions and edits
# count, timestamps do not), except dotfiles and tuned.cuh, which `ktune tables` regenerates from the
# results and which no variant compiles (only the public API reads it): retuning must not invalidate the
# cache it came from. KTUNE_HASH_EXTRA adds shared files the kernels compile (the framework's device
# headers), by file name.

function(ktune_source_hash out dir)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${dir}" "${dir}/*")
  list(SORT files)
  set(manifest "")
  foreach(f IN LISTS files)
    get_filename_component(name "${f}" NAME)
    if(name MATCHES "^\\." OR name STREQUAL "tuned.cuh")
      continue()
    endif()
    file(SHA256 "${dir}/${f}" h)
    string(APPEND manifest "${f}\t${h}\n")
  endforeach()
  foreach(f IN LISTS ARGN)
    get_filename_component(name "${f}" NAME)
    file(SHA256 "${f}" h)
    string(APPEND manifest "extra/${name}\t${h}\n")
  endforeach()
  string(SHA256 total "${manifest}")
  string(SUBSTRING "${total}" 0 16 total)
  set(${out} "${total}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT DEFINED KTUNE_HASH_DIR OR NOT IS_DIRECTORY "${KTUNE_HASH_DIR}")
    message(FATAL_ERROR "source_hash.cmake: set -DKTUNE_HASH_DIR=<a kernel folder>")
  endif()
  ktune_source_hash(h "${KTUNE_HASH_DIR}" ${KTUNE_HASH_EXTRA})
  execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${h}")
endif()
