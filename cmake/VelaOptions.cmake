# Warnings, sanitizers and the module helper live here, in one place.

# Everything installed without a component belongs to the -dev package (the shared library
# itself goes to "runtime"; cmake/VelaPackaging.cmake).
if(VELA_SHARED)
  set(CMAKE_INSTALL_DEFAULT_COMPONENT_NAME dev)
endif()

# vela_set_options(target): warnings (+ -Werror with VELA_WERROR) and the chosen sanitizer.
function(vela_set_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(VELA_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(VELA_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  # clang 14 cannot assemble -fsanitize=function's prologue data for coroutines (see below).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options(-fno-sanitize=function)
    # With VELA_BUILD_FUZZ the libraries also carry libFuzzer's coverage, so the fuzz targets
    # build in the same tree as the ASan tests (CI compiles the library once for both).
    if(VELA_BUILD_FUZZ)
      set(VELA_LIBRARY_COVERAGE -fsanitize=fuzzer-no-link)
    endif()
  endif()
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
# With VELA_SHARED the sources go into the one shared library instead (vela_shared_module).
# Modules are declared after the layers they use: the pkg-config file lists the static
# libraries in the reverse of this order.
function(vela_module name)
  cmake_parse_arguments(M "" "" "PUBLIC;PRIVATE" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  set_property(GLOBAL APPEND PROPERTY VELA_MODULES ${name})
  set_property(GLOBAL APPEND PROPERTY VELA_MODULE_DEPS ${M_PUBLIC} ${M_PRIVATE})
  if(srcs)
    set_property(GLOBAL APPEND PROPERTY VELA_STATIC_MODULES ${name})
  endif()
  if(VELA_SHARED AND srcs)
    vela_shared_module(${name} "${srcs}" "${M_PUBLIC};${M_PRIVATE}")
    return()
  endif()
  if(NOT srcs)
    # Headers only (so far): an interface library with the same name and dependencies.
    add_library(vela_${name} INTERFACE)
    add_library(vela::${name} ALIAS vela_${name})
    set_target_properties(vela_${name} PROPERTIES EXPORT_NAME ${name})
    target_include_directories(vela_${name} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    target_link_libraries(vela_${name} INTERFACE ${M_PUBLIC})
    target_compile_features(vela_${name} INTERFACE cxx_std_20)
    return()
  endif()
  add_library(vela_${name} STATIC ${srcs})
  add_library(vela::${name} ALIAS vela_${name})
  # Installed as vela::<name> too (find_package(vela) users write what the tree's code writes).
  set_target_properties(vela_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(vela_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(vela_${name} PUBLIC ${M_PUBLIC} PRIVATE ${M_PRIVATE})
  target_compile_features(vela_${name} PUBLIC cxx_std_20)
  vela_set_options(vela_${name})
  if(VELA_LIBRARY_COVERAGE)
    target_compile_options(vela_${name} PRIVATE ${VELA_LIBRARY_COVERAGE})
  endif()
endfunction()

# The external libraries vela's public headers use: a program using vela links them itself.
# Every other dependency stays private to the shared library.
set(VELA_HEADER_DEPS fmt::fmt Threads::Threads)

# With VELA_SHARED: vela_<name> becomes an interface target onto one shared library,
# vela_shared (libvela.so.MAJOR.MINOR), which compiles the module's sources. The layer targets
# and vela::vela keep their names, so find_package(vela) users see no difference.
function(vela_shared_module name srcs deps)
  if(NOT TARGET vela_shared)
    add_library(vela_shared SHARED)
    set_target_properties(vela_shared PROPERTIES OUTPUT_NAME vela VERSION ${PROJECT_VERSION}
      SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR} EXPORT_NAME shared)
    target_include_directories(vela_shared
      PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
      PRIVATE ${PROJECT_SOURCE_DIR}/src)
    target_compile_features(vela_shared PUBLIC cxx_std_20)
    target_link_libraries(vela_shared PUBLIC ${VELA_HEADER_DEPS})
    vela_set_options(vela_shared)
    # The runtime package holds the library; the -dev package the libvela.so link.
    install(TARGETS vela_shared EXPORT velaTargets
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
  endif()
  target_sources(vela_shared PRIVATE ${srcs})
  add_library(vela_${name} INTERFACE)
  add_library(vela::${name} ALIAS vela_${name})
  set_target_properties(vela_${name} PROPERTIES EXPORT_NAME ${name})
  target_link_libraries(vela_${name} INTERFACE vela_shared)
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^vela_")
      target_link_libraries(vela_${name} INTERFACE ${dep})
    elseif(NOT dep IN_LIST VELA_HEADER_DEPS)
      target_link_libraries(vela_shared PRIVATE ${dep})
    endif()
  endforeach()
endfunction()
