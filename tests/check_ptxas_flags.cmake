# check_ptxas_flags.cmake — run by ctest (test build_ptxas_reports_only_on_request):
# the CUDA kernels are compiled with -Xptxas=-v (hundreds of "ptxas info"
# lines in every build) only under -DMDNL_PTXAS_VERBOSE=ON.
# Inputs: HAS (whether mdnl_kernels' compile options hold -Xptxas=-v at
# configure time), VERBOSE (the option).
if(VERBOSE AND NOT HAS)
  message(FATAL_ERROR "MDNL_PTXAS_VERBOSE=ON but the kernels are compiled without -Xptxas=-v")
elseif(HAS AND NOT VERBOSE)
  message(FATAL_ERROR "MDNL_PTXAS_VERBOSE=OFF but the kernels are compiled with -Xptxas=-v")
endif()
