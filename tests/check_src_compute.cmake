# The command line is libmdnl's client (ARCHITECTURE.md): src/ computes
# through the public header include/mdnl/mdnl.h, never through the kernels'
# headers, libmdnl's internal engine (lib/engine.h) or core's geometry
# directly; `mdnl run`'s pipeline and its MPI split through the header's
# streams, its device and work limit through the context's options. Fails
# naming the file and the include or call that breaks it.
#
# Every file of src/ is checked: `mdnl bench` (cmd_bench.c) too, whose
# benchmark drivers live in bench/, which times the kernels and their test
# hooks directly, as tests/ does, and is not checked here.
#   cmake -DSRC=<src dir> -DKERNELS=<kernels dir> -P check_src_compute.cmake
# kernels/ headers a client may include for types only: the list kind and
# method names (nlist.h) and the RDF accumulator the writers take (rdf.h).
set(MDNL_TYPE_HEADERS nlist.h rdf.h)

file(GLOB kernel_headers RELATIVE ${KERNELS} ${KERNELS}/*.h ${KERNELS}/*.cuh)
set(forbidden engine.h)
foreach(h ${kernel_headers})
  list(FIND MDNL_TYPE_HEADERS ${h} allowed)
  if(allowed EQUAL -1)
    list(APPEND forbidden ${h})
  endif()
endforeach()

file(GLOB sources RELATIVE ${SRC} ${SRC}/*.c ${SRC}/*.h)
set(bad "")
foreach(f ${sources})
  file(STRINGS ${SRC}/${f} lines)
  foreach(line IN LISTS lines)
    if(line MATCHES "^#include \"([^\"]+)\"")
      list(FIND forbidden ${CMAKE_MATCH_1} hit)
      if(NOT hit EQUAL -1)
        string(APPEND bad "  src/${f}: includes ${CMAKE_MATCH_1}\n")
      endif()
    endif()
    if(line MATCHES "(mdnl_geom_[a-z_]+|mdnl_engine_[a-z_]+|mdnl_nlist_build[a-z_]*|mdnl_[a-z]+_frame_(cpu|cuda)|mdnl_work_check[a-z_]*|mdnl_cuda_[a-z_]+)\\(")
      if(NOT CMAKE_MATCH_1 MATCHES "^mdnl_cuda_(devices|built)$") # public
        string(APPEND bad "  src/${f}: calls ${CMAKE_MATCH_1}\n")
      endif()
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "src/ computes only through include/mdnl/mdnl.h; found:\n${bad}")
endif()
