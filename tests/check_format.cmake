# Fails when a C++ source under src/, tests/, bench/ or examples/ differs from .clang-format.
# Run by CTest as Style.ClangFormat: cmake -DCLANG_FORMAT=... -DSOURCE_DIR=... -P check_format.cmake
file(GLOB_RECURSE sources
  ${SOURCE_DIR}/src/*.cc ${SOURCE_DIR}/src/*.h
  ${SOURCE_DIR}/tests/*.cc ${SOURCE_DIR}/tests/*.h
  ${SOURCE_DIR}/bench/*.cc ${SOURCE_DIR}/examples/*.cc)
list(FILTER sources EXCLUDE REGEX "/node_modules/")
execute_process(COMMAND ${CLANG_FORMAT} --dry-run -Werror ${sources}
                RESULT_VARIABLE result ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "clang-format: these places differ from .clang-format "
                      "(fix with: clang-format -i <file>):\n${errors}")
endif()
