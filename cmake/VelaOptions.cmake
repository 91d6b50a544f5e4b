# Warnings, sanitizers and the module helper live here, in one place.

# vela_set_options(target): warnings (+ -Werror with VELA_WERROR) and the chosen sanitizer.
function(vela_set_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(VELA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(VELA_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(VELA_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(VELA_SANITIZE STREQUAL "fuzzer")
  # Coverage instrumentation for every library; the fuzz targets link libFuzzer's main.
  # Not -fsanitize=function: clang 14 cannot assemble its prologue data for coroutines
  # ("Cannot represent a difference across sections" in src/reactor/loop.cpp).
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT VELA_SANITIZE STREQUAL "")
  message(FATAL_ERROR "VELA_SANITIZE must be '', 'address', 'thread' or 'fuzzer'")
endif()

# vela_module(name PUBLIC deps... PRIVATE deps...): static library vela_<name> from src/<name>/*.cpp.
function(vela_module name)
  cmake_parse_arguments(M "" "" "PUBLIC;PRIVATE" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(NOT srcs)
    # Headers only (so far): an interface library with the same name and dependencies.
    add_library(vela_${name} INTERFACE)
    add_library(vela::${name} ALIAS vela_${name})
    target_include_directories(vela_${name} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    target_link_libraries(vela_${name} INTERFACE ${M_PUBLIC})
    target_compile_features(vela_${name} INTERFACE cxx_std_20)
    return()
  endif()
  add_library(vela_${name} STATIC ${srcs})
  add_library(vela::${name} ALIAS vela_${name})
  target_include_directories(vela_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(vela_${name} PUBLIC ${M_PUBLIC} PRIVATE ${M_PRIVATE})
  target_compile_features(vela_${name} PUBLIC cxx_std_20)
  vela_set_options(vela_${name})
endfunction()
