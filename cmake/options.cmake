# SPDX-License-Identifier: MIT
# The optional parts of fmx: one cache variable each, AUTO, ON or OFF.
#   fmx_option(VAR "what it builds")       declares it (default AUTO)
#   fmx_wanted(VAR OUT) sets OUT to whether VAR asks for the part at all
#     (not OFF): whether to look for its dependency;
#   fmx_feature(VAR FOUND "what is missing") decides it: sets VAR_ENABLED,
#     fails configure when VAR is ON and FOUND is false, and says in one
#     line what is built and why not, so that nothing is dropped silently.

function(fmx_option var doc)
  set(${var} AUTO CACHE STRING "Build ${doc}: AUTO, ON or OFF")
  set_property(CACHE ${var} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${var}}" v)
  if(NOT v MATCHES "^(AUTO|ON|OFF|YES|NO|TRUE|FALSE|1|0)$")
    message(FATAL_ERROR "${var}=${${var}}: give AUTO, ON or OFF")
  endif()
  set(FMX_OPTION_DOC_${var} "${doc}" PARENT_SCOPE)
endfunction()

function(fmx_wanted var out)
  string(TOUPPER "${${var}}" v)
  if(v MATCHES "^(OFF|NO|FALSE|0)$")
    set(${out} FALSE PARENT_SCOPE)
  else()
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

function(fmx_feature var found missing)
  string(TOUPPER "${${var}}" v)
  if(v MATCHES "^(OFF|NO|FALSE|0)$")
    set(${var}_ENABLED OFF PARENT_SCOPE)
    message(STATUS "fmx: ${var}=OFF: not building ${FMX_OPTION_DOC_${var}}")
  elseif(found)
    set(${var}_ENABLED ON PARENT_SCOPE)
    message(STATUS "fmx: ${var}=${${var}}: building ${FMX_OPTION_DOC_${var}}")
  elseif(v STREQUAL "AUTO")
    set(${var}_ENABLED OFF PARENT_SCOPE)
    message(STATUS "fmx: ${var}=AUTO: not building ${FMX_OPTION_DOC_${var}}: ${missing} "
                   "(-D${var}=ON makes this an error)")
  else()
    message(FATAL_ERROR "${var}=${${var}}, but ${missing}. Install it, or configure with -D${var}=OFF.")
  endif()
endfunction()
