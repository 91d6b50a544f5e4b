# Packaging: the pkg-config file (both builds) and, with VELA_SHARED, the CPack .deb packages.
# Included at the end of the top CMakeLists.txt, after every vela_module() call.

# vela_pc_names(dep out): the pkg-config modules of a CMake dependency target ("" for Threads),
# or a -l flag for one whose .pc file cannot serve `pkg-config --static`: Debian's libpq.pc
# lists the static-only libpgcommon and libpgport, and vela links the shared libpq anyway.
function(vela_pc_names dep out)
  set(map
    fmt::fmt=fmt spdlog::spdlog=spdlog simdjson::simdjson=simdjson OpenSSL::SSL=libssl
    OpenSSL::Crypto=libcrypto ZLIB::ZLIB=zlib PkgConfig::NGHTTP2=libnghttp2
    PkgConfig::BROTLI=libbrotlienc,libbrotlidec PkgConfig::ZSTD=libzstd PkgConfig::LIBPQ=-lpq
    PkgConfig::MARIADB=libmariadb
    PkgConfig::SQLITE3=sqlite3 PkgConfig::HIREDIS=hiredis PkgConfig::CARES=libcares PkgConfig::TOMLPP=tomlplusplus
    PkgConfig::TOMLPLUSPLUS=tomlplusplus PkgConfig::TOML=tomlplusplus)
  set(names "")
  if(NOT dep STREQUAL "Threads::Threads")
    foreach(entry IN LISTS map)
      string(REPLACE "=" ";" pair "${entry}")
      list(GET pair 0 key)
      if(key STREQUAL dep)
        list(GET pair 1 names)
        string(REPLACE "," ";" names "${names}")
      endif()
    endforeach()
    if(NOT names)
      message(WARNING "vela.pc: no pkg-config name known for dependency '${dep}'; add it to "
                      "vela_pc_names in cmake/VelaPackaging.cmake")
    endif()
  endif()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# vela.pc: shared, one -lvela with only the headers' dependencies required (the library links
# the rest itself); static, every layer library, dependents first, and every dependency in
# Requires.private (or Libs.private) for `pkg-config --static --libs vela`.
get_property(vela_deps GLOBAL PROPERTY VELA_MODULE_DEPS)
set(vela_pc_private "")
foreach(dep IN LISTS vela_deps)
  if(NOT dep MATCHES "^vela_" AND NOT dep IN_LIST VELA_HEADER_DEPS)
    vela_pc_names(${dep} names)
    list(APPEND vela_pc_private ${names})
  endif()
endforeach()
list(REMOVE_DUPLICATES vela_pc_private)
set(vela_pc_libs_private ${vela_pc_private})
list(FILTER vela_pc_private EXCLUDE REGEX "^-l")
list(FILTER vela_pc_libs_private INCLUDE REGEX "^-l")
set(VELA_PC_REQUIRES fmt)
if(VELA_SHARED)
  set(VELA_PC_LIBS -lvela)
  set(VELA_PC_REQUIRES_PRIVATE "")
  set(VELA_PC_LIBS_PRIVATE -pthread)
else()
  get_property(vela_static GLOBAL PROPERTY VELA_STATIC_MODULES)
  list(REVERSE vela_static)
  list(TRANSFORM vela_static PREPEND -lvela_)
  list(JOIN vela_static " " VELA_PC_LIBS)
  list(JOIN vela_pc_private " " VELA_PC_REQUIRES_PRIVATE)
  list(JOIN vela_pc_libs_private " " VELA_PC_LIBS_PRIVATE)
  string(APPEND VELA_PC_LIBS_PRIVATE " -pthread")
endif()
file(RELATIVE_PATH VELA_PC_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" VELA_PC_PREFIX "${VELA_PC_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/vela.pc.in ${PROJECT_BINARY_DIR}/vela.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/vela.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(NOT VELA_SHARED)
  return()
endif()

# The .deb packages (cpack -G DEB in a VELA_SHARED build configured with
# -DCMAKE_INSTALL_PREFIX=/usr): libvelaMAJOR.MINOR holds libvela.so.MAJOR.MINOR; libvela-dev the
# headers, the CMake package, vela.pc, the libvela.so link and the `vela` command.
set(vela_soname_version ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME vela)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "vela developers <vela@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Depends from the ELF files (dpkg-shlibdeps: libfmt9, libssl3, libpq5...), a shlibs file for
# programs built against libvela, and ldconfig on install and removal.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Each description's first line is the package's summary.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libvela${vela_soname_version})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "C++20 web framework (shared library)
HTTP/1.1, HTTP/2, WebSocket, TLS, routing, JSON, templates and PostgreSQL, MySQL/MariaDB,
SQLite and Redis clients on coroutine event loops.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libvela-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The headers include fmt; the CMake package finds fmt (and Threads) only.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libvela${vela_soname_version} (= ${PROJECT_VERSION}), libfmt-dev")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake (>= 3.25), g++ (>= 4:12), libgtest-dev, pkg-config")
set(CPACK_DEBIAN_DEV_DESCRIPTION "C++20 web framework (development files and vela new)
Headers, the CMake package (find_package(vela)), vela.pc for pkg-config and the vela
command, which writes a new project that builds against these packages.")
# Swagger UI (served by vela::openapi_ui from /usr/share/vela/swagger-ui) in a package of its
# own: data files shared by every libvela version, so not in the versioned library package.
if(EXISTS ${VELA_SWAGGER_UI_DIR}/swagger-ui-bundle.js)
  list(APPEND CPACK_COMPONENTS_ALL swaggerui)
  set(CPACK_DEBIAN_SWAGGERUI_PACKAGE_NAME libvela-swagger-ui)
  set(CPACK_DEBIAN_SWAGGERUI_PACKAGE_ARCHITECTURE all)
  set(CPACK_DEBIAN_SWAGGERUI_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_SWAGGERUI_PACKAGE_SECTION web)
  set(CPACK_DEBIAN_SWAGGERUI_DESCRIPTION "Swagger UI for vela's /docs page
The swagger-ui-dist files that vela::openapi_ui serves (no CDN).")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS libvela-swagger-ui)
endif()
include(CPack)
