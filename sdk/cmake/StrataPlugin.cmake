# strata_add_plugin(<target> SOURCES <files...> [LIBRARIES <libs...>] [ALLOW_UNDEFINED])
#
# Builds a Strata plugin: a MODULE library named lib<target>.so that exports only
# strata_plugin_entry_v1 (hidden visibility plus a version script), fails to link if a symbol is
# unresolved (unless ALLOW_UNDEFINED), and installs into <libdir>/strata/plugins. Works in the
# Strata tree and out of tree after find_package(Strata CONFIG).
set(_STRATA_PLUGIN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(strata_add_plugin target)
  cmake_parse_arguments(ARG "ALLOW_UNDEFINED" "" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  if(TARGET Strata::sdk)
    target_link_libraries(${target} PRIVATE Strata::sdk)
  else()
    target_link_libraries(${target} PRIVATE strata_sdk)
  endif()
  if(ARG_LIBRARIES)
    target_link_libraries(${target} PRIVATE ${ARG_LIBRARIES})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  set(map "${_STRATA_PLUGIN_CMAKE_DIR}/plugin_exports.map")
  target_link_options(${target} PRIVATE "LINKER:--version-script=${map}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${map}")
  if(NOT ARG_ALLOW_UNDEFINED)
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
  if(DEFINED STRATA_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${STRATA_PLUGIN_OUTPUT_DIR})
  endif()
  if(DEFINED STRATA_PLUGIN_INSTALL_DIR)
    install(TARGETS ${target} LIBRARY DESTINATION ${STRATA_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
