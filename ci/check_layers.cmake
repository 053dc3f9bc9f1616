# The dependency order of dtnn's folders, enforced on every build (target `layer_check`) and by ctest
# `house.layer_order`:
#
#   engine  <-  results  <-  analysis  <-  experiments (and the CLI)
#
# A folder's sources may include headers of their own folder and of the folders to its left, never of one to
# its right: the engine knows nothing of stores, results nothing of analysis, analysis nothing of the runner.
# suites/ (the benchmarks) may include the engine only; tests/ may include anything.
#   cmake -DSRC=<source root> -P ci/check_layers.cmake
# Prints one line per offending include and fails; prints nothing when the order holds.
cmake_minimum_required(VERSION 3.16)
if(NOT SRC)
  message(FATAL_ERROR "check_layers: usage: cmake -DSRC=<source root> -P ci/check_layers.cmake")
endif()
set(order engine results analysis experiments)
set(allowed_suites engine suites)

# The folder an include names: its first component when that is a top folder, else the engine's include
# root (engine/core/..., engine/conv/...), else the including file's own folder; "" for system headers.
function(include_owner inc from_dir top out)
  string(REGEX MATCH "^[^/]+" first "${inc}")
  if(first MATCHES "^(engine|results|analysis|experiments|suites|tests)$")
    set(${out} "${first}" PARENT_SCOPE)
  elseif(EXISTS "${SRC}/engine/${inc}")
    set(${out} engine PARENT_SCOPE)
  elseif(EXISTS "${from_dir}/${inc}")
    set(${out} "${top}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

set(bad 0)
foreach(top engine results analysis experiments suites)
  if(top STREQUAL "suites")
    set(may ${allowed_suites})
  else()
    list(FIND order ${top} level)
    math(EXPR last "${level}")
    set(may "")
    foreach(i RANGE 0 ${last})
      list(GET order ${i} folder)
      list(APPEND may ${folder})
    endforeach()
  endif()
  file(GLOB_RECURSE sources "${SRC}/${top}/*.h" "${SRC}/${top}/*.cpp" "${SRC}/${top}/*.cu" "${SRC}/${top}/*.cuh")
  foreach(path ${sources})
    get_filename_component(dir "${path}" DIRECTORY)
    file(STRINGS "${path}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" inc "${line}")
      include_owner("${inc}" "${dir}" ${top} owner)
      if(owner AND NOT owner IN_LIST may)
        file(RELATIVE_PATH rel "${SRC}" "${path}")
        string(REPLACE ";" ", " may_text "${may}")
        message("check_layers: ${rel} includes ${inc} (${owner}/): ${top}/ may include ${may_text} only "
                "(order: engine <- results <- analysis <- experiments)")
        math(EXPR bad "${bad} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(bad GREATER 0)
  message(FATAL_ERROR "check_layers: ${bad} include(s) against the folders' dependency order")
endif()
