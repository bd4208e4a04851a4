# Issue 12's catalogue cases: a timeline path (manifest "timeline" or STRATA_TIMELINE) that is not
# a non-empty string, in a folder that does not exist, or a folder itself, fails strata_create on
# every rank with one sentence naming where the path came from. Included from CMakeLists.txt (its
# strata_catalogue_case and catalogue_manifests are in scope).

# The control: with a path that can be written, the probe runs and the trace is written.
add_test(NAME catalogue.timeline_control_writable_path
  COMMAND ${STRATA_MPIRUN} -np 2 $<TARGET_FILE:strata_probe_host> ${catalogue_manifests}/good.json)
set_tests_properties(catalogue.timeline_control_writable_path PROPERTIES TIMEOUT 60
  LABELS "catalogue;mpi;timeline"
  ENVIRONMENT "STRATA_TIMELINE=${CMAKE_CURRENT_BINARY_DIR}/timeline_control.json"
  PASS_REGULAR_EXPRESSION "timeline: wrote [^\n]*timeline_control.json"
  FAIL_REGULAR_EXPRESSION "error|terminate called")

set(timeline_key "good.json: /timeline: expected the path of the Chrome trace JSON to write \\(a non-empty string\\), got ")
strata_catalogue_case(timeline_not_a_string 2 good.json "${timeline_key}5"
  --overrides "{\"timeline\": 5}")
strata_catalogue_case(timeline_empty_string 1 good.json "${timeline_key}\"\""
  --overrides "{\"timeline\": \"\"}")

set(timeline_missing /nonexistent-strata-folder/trace.json)
set(timeline_cannot_write "cannot write the timeline next to '${timeline_missing}' \\(${timeline_missing}\\.rank[01]\\.part: No such file or directory\\). expected a path in a folder that exists and is writable")
strata_catalogue_case(timeline_env_folder_missing 2 good.json "STRATA_TIMELINE: ${timeline_cannot_write}")
set_tests_properties(catalogue.timeline_env_folder_missing PROPERTIES
  ENVIRONMENT "STRATA_PLUGIN_PATH=${STRATA_TEST_FIXTURE_DIR};STRATA_TIMELINE=${timeline_missing}")
strata_catalogue_case(timeline_manifest_folder_missing 2 good.json "/timeline: ${timeline_cannot_write}"
  --overrides "{\"timeline\": \"${timeline_missing}\"}")

set(timeline_is_folder "'${CMAKE_CURRENT_BINARY_DIR}' is a folder. expected the path of the timeline's Chrome trace JSON file to write")
strata_catalogue_case(timeline_env_is_a_folder 2 good.json "STRATA_TIMELINE: ${timeline_is_folder}")
set_tests_properties(catalogue.timeline_env_is_a_folder PROPERTIES
  ENVIRONMENT "STRATA_PLUGIN_PATH=${STRATA_TEST_FIXTURE_DIR};STRATA_TIMELINE=${CMAKE_CURRENT_BINARY_DIR}")
strata_catalogue_case(timeline_manifest_is_a_folder 1 good.json "/timeline: ${timeline_is_folder}"
  --overrides "{\"timeline\": \"${CMAKE_CURRENT_BINARY_DIR}\"}")

foreach(case timeline_not_a_string timeline_empty_string timeline_env_folder_missing
             timeline_manifest_folder_missing timeline_env_is_a_folder timeline_manifest_is_a_folder)
  set_tests_properties(catalogue.${case} PROPERTIES LABELS "catalogue;mpi;timeline")
endforeach()
