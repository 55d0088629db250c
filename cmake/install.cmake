# SPDX-License-Identifier: MIT
# What `cmake --install` puts under the prefix: the libraries, headers,
# tools, fmx.pc, the CMake package (find_package(fmx)), the man pages; the
# provider goes to FMX_FI_DIR (CMakeLists.txt).
include(CMakePackageConfigHelpers)

# fmx.pc finds the prefix from its own place (${pcfiledir}), so
# `cmake --install build --prefix P` works without reconfiguring: the path
# from <libdir>/pkgconfig back up to the prefix depends only on libdir.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(FMX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH FMX_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" FMX_PC_UP "${FMX_PC_UP}")
  set(FMX_PC_PREFIX "\${pcfiledir}/${FMX_PC_UP}")
endif()
configure_file(fmx.pc.in fmx.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/fmx.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The tools find libfmx.so next to them once installed (outside the system's
# own directories: see FMX_RPATH).
set(FMX_INSTALLED_TOOLS fmx_info fmx_perf fmx_counters fmx_tune)
if(FMX_RPATH)
  set_property(TARGET ${FMX_INSTALLED_TOOLS} fmx-mpi APPEND PROPERTY INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  if(FMX_WITH_MX_ENABLED)
    set_property(TARGET myriexpress APPEND PROPERTY INSTALL_RPATH "$ORIGIN")
  endif()
endif()
install(TARGETS ${FMX_INSTALLED_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS fmx-mpi LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The libraries, exported as fmx::fmx and fmx::myriexpress for
# find_package(fmx) under <libdir>/cmake/fmx: one file of targets each, so
# that a distribution can ship the MX face in packages of its own.
set(FMX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fmx)
install(TARGETS fmx EXPORT fmxTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT fmxTargets NAMESPACE fmx:: DESTINATION ${FMX_CMAKE_DIR})
if(FMX_WITH_MX_ENABLED)
  install(TARGETS myriexpress EXPORT fmxMXTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT fmxMXTargets NAMESPACE fmx:: DESTINATION ${FMX_CMAKE_DIR})
endif()
configure_package_config_file(cmake/fmxConfig.cmake.in ${CMAKE_BINARY_DIR}/fmxConfig.cmake
                              INSTALL_DESTINATION ${FMX_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/fmxConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/fmxConfig.cmake ${CMAKE_BINARY_DIR}/fmxConfigVersion.cmake
        DESTINATION ${FMX_CMAKE_DIR})

if(FMX_WITH_MX_ENABLED)
  install(FILES ${FMX_MX_A} DESTINATION ${CMAKE_INSTALL_LIBDIR})
  foreach(tool ${FMX_OMX_TOOLS})
    install(PROGRAMS tools/omx/${tool} DESTINATION ${CMAKE_INSTALL_BINDIR})
  endforeach()
  install(CODE "file(CREATE_LINK omx_info \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/mx_info SYMBOLIC)")
endif()

# Man pages: man/NAME.SECTION.scd turned into roff by scdoc, into build/man;
# the omx_* tools share one page (a .so link each).
if(FMX_WITH_MAN_ENABLED)
  file(GLOB FMX_MAN_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/man/*.scd)
  if(NOT FMX_WITH_MX_ENABLED) # the omx_* tools are the MX face's
    list(FILTER FMX_MAN_SOURCES EXCLUDE REGEX "/omx_tools\\.1\\.scd$")
  endif()
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/man)
  set(FMX_MAN_PAGES)
  foreach(src ${FMX_MAN_SOURCES})
    get_filename_component(page ${src} NAME_WLE) # fmx_info.1
    string(REGEX MATCH "[0-9]$" section ${page})
    set(out ${CMAKE_BINARY_DIR}/man/${page})
    add_custom_command(OUTPUT ${out} COMMAND ${FMX_SCDOC} < ${src} > ${out} DEPENDS ${src}
                       COMMENT "man page ${page}" VERBATIM)
    list(APPEND FMX_MAN_PAGES ${out})
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
  endforeach()
  add_custom_target(man ALL DEPENDS ${FMX_MAN_PAGES})
  if(FMX_WITH_MX_ENABLED)
    foreach(tool ${FMX_OMX_TOOLS} mx_info)
      file(WRITE ${CMAKE_BINARY_DIR}/man/${tool}.1 ".so man1/omx_tools.1\n")
      install(FILES ${CMAKE_BINARY_DIR}/man/${tool}.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
    endforeach()
  endif()
endif()
