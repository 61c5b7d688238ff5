# Configures the project with ONEFLOW_WITH_CUDA=OFF in WORK_DIR and checks that it succeeds and
# reports the backend off (the engine must build on machines without the CUDA toolkit).
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR} -DONEFLOW_WITH_CUDA=OFF
          -DONEFLOW_BUILD_TESTS=OFF -DONEFLOW_BUILD_JAVA=OFF
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure with ONEFLOW_WITH_CUDA=OFF failed (${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "CUDA backend: off")
  message(FATAL_ERROR "configure did not report the CUDA backend off:\n${out}")
endif()
file(READ ${WORK_DIR}/CMakeCache.txt cache)
if(cache MATCHES "ONEFLOW_HAVE_CUDA" OR EXISTS ${WORK_DIR}/CMakeFiles/${CMAKE_VERSION}/CMakeCUDACompiler.cmake)
  message(FATAL_ERROR "ONEFLOW_WITH_CUDA=OFF still enabled the CUDA language")
endif()
file(READ ${WORK_DIR}/build.ninja ninja)
if(ninja MATCHES "\\.cu\\.o" OR ninja MATCHES "cuda_device\\.cc")
  message(FATAL_ERROR "ONEFLOW_WITH_CUDA=OFF still compiles CUDA sources")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "ONEFLOW_WITH_CUDA=OFF configures without CUDA sources")
