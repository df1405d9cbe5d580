# allocscope_add_musl_executable(<target> OUTPUT <file name> SOURCE <C source>
#                                [OPTIONS <compiler options>...])
#
# Builds a dynamically linked musl executable <file name> in the current binary directory with
# musl-gcc (the MUSL_GCC program found by the top-level CMakeLists), and a custom target <target>
# that is part of ALL. musl-gcc is a gcc wrapper for C only, so this is a custom command rather
# than a second toolchain. The result runs with musl's dynamic loader (/lib/ld-musl-*.so.1).
include_guard(GLOBAL)

function(allocscope_add_musl_executable target)
  cmake_parse_arguments(ARG "" "OUTPUT;SOURCE" "OPTIONS" ${ARGN})
  if(NOT ARG_OUTPUT OR NOT ARG_SOURCE)
    message(FATAL_ERROR "allocscope_add_musl_executable: OUTPUT and SOURCE are required")
  endif()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${ARG_OUTPUT}")
  set(depfile "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.d")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND "${MUSL_GCC}" -std=gnu11 -O2 -g -Wall -Wextra -pthread ${ARG_OPTIONS}
            -MD -MF "${depfile}" -o "${out}" "${ARG_SOURCE}"
    DEPENDS "${ARG_SOURCE}"
    DEPFILE "${depfile}"
    COMMENT "Building C executable ${ARG_OUTPUT} (musl)"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${out}")
endfunction()
