# SPDX-License-Identifier: MIT
# The MX face (src/mx, docs/mx.md): libmyriexpress.so over libfmx.so, with
# Open-MX's symbol versions, and the MX headers; libmyriexpress.a; Open-MX's
# tool names.
file(GLOB FMX_MX_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/mx/*.c)
add_library(myriexpress_obj OBJECT ${FMX_MX_SOURCES})
set_target_properties(myriexpress_obj PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
target_include_directories(myriexpress_obj PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
add_library(myriexpress SHARED $<TARGET_OBJECTS:myriexpress_obj>)
set_target_properties(myriexpress PROPERTIES C_VISIBILITY_PRESET hidden VERSION ${PROJECT_VERSION} SOVERSION 0
                      PUBLIC_HEADER "include/myriexpress.h;include/mx_extensions.h"
                      LINK_DEPENDS ${CMAKE_SOURCE_DIR}/src/mx/libmyriexpress.version)
target_include_directories(myriexpress PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(myriexpress PRIVATE fmx)
target_link_options(myriexpress PRIVATE "-Wl,--version-script=${CMAKE_SOURCE_DIR}/src/mx/libmyriexpress.version")
# libmyriexpress.a, as MX shipped one: the MX face and the whole library in
# one relocatable object whose hidden symbols are made local (cc -r, then
# objcopy --localize-hidden), so a program linked with it sees only the
# mx_* and fmx_* calls and none of the library's own names can clash with
# its own. It needs -lhwloc -lpthread (docs/mx.md).
set(FMX_MX_A ${CMAKE_BINARY_DIR}/libmyriexpress.a)
if(CMAKE_INTERPROCEDURAL_OPTIMIZATION)
  # The objects hold LTO bytecode: optimised now into machine code.
  string(TOUPPER "${CMAKE_BUILD_TYPE}" FMX_BT)
  separate_arguments(FMX_MX_A_LTO UNIX_COMMAND "${CMAKE_C_FLAGS_${FMX_BT}} -flto=auto -flinker-output=nolto-rel")
endif()
add_custom_command(OUTPUT ${FMX_MX_A}
  COMMAND ${CMAKE_C_COMPILER} ${FMX_MX_A_LTO} -r -nostdlib -o myriexpress_all.o
          $<TARGET_OBJECTS:myriexpress_obj> $<TARGET_OBJECTS:fmx_obj>
  COMMAND ${CMAKE_OBJCOPY} --localize-hidden myriexpress_all.o
  COMMAND ${CMAKE_COMMAND} -E rm -f ${FMX_MX_A}
  COMMAND ${CMAKE_AR} rcs ${FMX_MX_A} myriexpress_all.o
  DEPENDS myriexpress_obj fmx_obj $<TARGET_OBJECTS:myriexpress_obj> $<TARGET_OBJECTS:fmx_obj>
  COMMAND_EXPAND_LISTS VERBATIM
  COMMENT "libmyriexpress.a: the MX face and libfmx, internal names local")
add_custom_target(myriexpress_static ALL DEPENDS ${FMX_MX_A})
# Open-MX's tool names (docs/mx.md): thin scripts over the fmx tools next
# to them, and mx_info, MX's name for omx_info.
set(FMX_OMX_TOOLS omx_info omx_counters omx_endpoint_info omx_hostname omx_init_peers)
foreach(tool ${FMX_OMX_TOOLS})
  configure_file(tools/omx/${tool} ${CMAKE_BINARY_DIR}/${tool} COPYONLY)
endforeach()
file(CREATE_LINK omx_info ${CMAKE_BINARY_DIR}/mx_info SYMBOLIC)
