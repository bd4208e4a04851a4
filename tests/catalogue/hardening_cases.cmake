# Issue 10's catalogue cases: the plugin loader refuses a file before dlopen could crash on it or
# run a stranger's code, manifests end in an error whatever their size, depth or numbers, every
# unknown key is an error with a suggestion, and ds_config keys Strata does not act on are warned
# about rather than silently accepted. Included at the end of CMakeLists.txt (its functions and
# variables, strata_catalogue_case and amp_key among them, are in scope).

# ---- the loader: bad plugin files built at test time by hardening_case.cmake ---------------------
add_executable(strata_elf_fixture elf_fixture.cpp)
add_dependencies(strata_probe_host strata_elf_fixture)

# strata_hardening_case(<name> <setup> <expected regex>): the offload stratum names ./plugin.so,
# which <setup> (see hardening_case.cmake) has made bad in one way.
function(strata_hardening_case name setup expect)
  add_test(NAME catalogue.${name}
    COMMAND ${CMAKE_COMMAND} -DCASE=${setup} -DWORK=${CMAKE_CURRENT_BINARY_DIR}/hardening/${name}
            "-DEXPECT=${expect}" -DPLUGIN=$<TARGET_FILE:strata_offload>
            -DFIXTURE=$<TARGET_FILE:strata_elf_fixture>
            -P ${CMAKE_CURRENT_SOURCE_DIR}/hardening_case.cmake --
            ${STRATA_MPIRUN} -np 1 $<TARGET_FILE:strata_probe_host>)
  set_tests_properties(catalogue.${name} PROPERTIES TIMEOUT 60 LABELS "catalogue;mpi")
endfunction()

set(refused "manifest.json: /offload/library: refusing to load [^ ]*/plugin.so: it ")
strata_hardening_case(plugin_is_a_directory directory
  "manifest.json: /offload/library: refusing to load [^ ]*/plugin.so: it is a directory, not a shared library")
strata_hardening_case(plugin_not_elf text
  "${refused}is not an ELF shared object: it does not start with the ELF magic number")
strata_hardening_case(plugin_elf32 elf32
  "${refused}is a 32-bit ELF file \\(ELFCLASS32\\), but this runtime is 64-bit")
strata_hardening_case(plugin_other_machine other-machine
  "${refused}is built for [^(]+ \\(e_machine [0-9]+\\), but this machine is [^(]+ \\(e_machine [0-9]+\\)")
strata_hardening_case(plugin_big_endian big-endian
  "${refused}is a big-endian ELF file, but this machine is little-endian")
strata_hardening_case(plugin_truncated truncated
  "${refused}is truncated: [^\n]* ends at byte [0-9]+, but the file has [0-9]+ bytes \\(an incomplete copy or a full disk\\?\\)")
strata_hardening_case(plugin_world_writable world-writable-file
  "${refused}is world-writable \\(mode 0666\\): anyone on this machine could change the code it runs")
strata_hardening_case(plugin_in_world_writable_folder world-writable-folder
  "manifest.json: /offload/library: refusing to load [^ ]*/open/plugin.so: it is in the folder [^ ]*/open, which is world-writable without the sticky bit \\(mode 0777\\)")

# ---- manifest bounds ---------------------------------------------------------------------------
strata_hardening_case(manifest_too_large too-large
  "manifest.json: manifest is [0-9]+ bytes. the limit is 16777216 bytes \\(16 MiB\\)")
strata_hardening_case(manifest_million_levels_deep very-deep
  "manifest.json: /zero_optimization/stage/0/0/[0/]*: nested more than 64 levels deep")
strata_catalogue_case(manifest_too_deep 1 too_deep.json
  "too_deep.json: /zero_optimization/stage/0/0/[0/]*: nested more than 64 levels deep \\(objects and arrays\\)")
strata_catalogue_case(number_too_large_for_double 1 number_too_large.json
  "number_too_large.json: /optimizer/params/lr: number 1e400 is out of range \\(beyond a double's largest, about 1.8e308\\) at line 3, column 49")
strata_catalogue_case(override_number_too_large_for_double 1 good.json
  "good.json: overrides: /gradient_clipping: number -1e400 is out of range"
  --overrides "{\"gradient_clipping\": -1e400}")
strata_catalogue_case(integer_too_large_for_uint64 1 good.json
  "good.json: /train_batch_size: expected a positive integer, got 1.8446744073709552e\\+19"
  --overrides "{\"train_batch_size\": 18446744073709551616}")

# ---- keys: unknown ones, Strata's own, and the amp plugin's min_loss_scale -----------------------
strata_catalogue_case(unknown_key_with_suggestion 1 unknown_key_typo.json
  "unknown_key_typo.json: /train_batch_szie: unknown key. did you mean train_batch_size\\?")
strata_catalogue_case(unknown_key_without_suggestion 1 good.json
  "good.json: /my_comment: unknown key \\(neither DeepSpeed nor Strata defines it\\)"
  --overrides "{\"my_comment\": \"tuned on Tuesday\"}")
strata_catalogue_case(amp_min_loss_scale_above_initial 1 good.json
  "${amp_key}fp16.min_loss_scale: 32 is above the initial loss scale 16 \\(2\\^fp16.initial_scale_power, initial_scale_power = 4\\). expected min_loss_scale <= 2\\^initial_scale_power"
  --overrides "{\"fp16\": {\"enabled\": true, \"initial_scale_power\": 4, \"min_loss_scale\": 32}}")

set(stall_seconds "expected a number of seconds from 0 to 1e9")
strata_catalogue_case(stall_warning_negative 1 good.json
  "good.json: /stall_inspector/warning_seconds: ${stall_seconds} \\(0 = no warning\\), got -1"
  --overrides "{\"stall_inspector\": {\"warning_seconds\": -1}}")
strata_catalogue_case(stall_shutdown_not_a_number 1 good.json
  "good.json: /stall_inspector/shutdown_seconds: ${stall_seconds} \\(0 = never end the job\\), got \"5 min\""
  --overrides "{\"stall_inspector\": {\"shutdown_seconds\": \"5 min\"}}")
strata_catalogue_case(stall_shutdown_before_warning 1 good.json
  "good.json: /stall_inspector: shutdown_seconds 30 \\(/stall_inspector/shutdown_seconds\\) is less than warning_seconds 60 \\(/stall_inspector/warning_seconds\\)"
  --overrides "{\"stall_inspector\": {\"warning_seconds\": 60, \"shutdown_seconds\": 30}}")
strata_catalogue_case(stall_unknown_key 1 good.json
  "good.json: /stall_inspector/warning_second: unknown key \\(expected warning_seconds or shutdown_seconds\\). did you mean warning_seconds\\?"
  --overrides "{\"stall_inspector\": {\"warning_second\": 5}}")
strata_catalogue_case(stall_not_an_object 1 good.json
  "good.json: /stall_inspector: expected an object with warning_seconds and shutdown_seconds, got 60"
  --overrides "{\"stall_inspector\": 60}")
strata_catalogue_case(stall_env_not_a_number 1 good.json
  "good.json: environment variable STRATA_STALL_SHUTDOWN_SECONDS: ${stall_seconds} \\(0 = never end the job\\), got \"soon\"")
set_property(TEST catalogue.stall_env_not_a_number PROPERTY
  ENVIRONMENT_MODIFICATION "STRATA_STALL_SHUTDOWN_SECONDS=set:soon")
strata_catalogue_case(stall_env_below_manifest_warning 1 good.json
  "good.json: /stall_inspector: shutdown_seconds 10 \\(STRATA_STALL_SHUTDOWN_SECONDS\\) is less than warning_seconds 60 \\(/stall_inspector/warning_seconds\\)"
  --overrides "{\"stall_inspector\": {\"warning_seconds\": 60}}")
set_property(TEST catalogue.stall_env_below_manifest_warning PROPERTY
  ENVIRONMENT_MODIFICATION "STRATA_STALL_SHUTDOWN_SECONDS=set:10")
strata_catalogue_case(max_consecutive_skips_zero 1 good.json
  "good.json: /max_consecutive_skips: expected a positive integer \\(non-finite steps in a row, with no loss scale left to lower, before the run ends\\), got 0"
  --overrides "{\"max_consecutive_skips\": 0}")
strata_catalogue_case(max_consecutive_skips_fraction 1 good.json
  "good.json: /max_consecutive_skips: expected a positive integer .*, got 2.5"
  --overrides "{\"max_consecutive_skips\": 2.5}")

# ---- ds_config honesty: accepted, with a warning naming the key --------------------------------
# strata_warning_case(<name> <manifest> <expected regex> <rejected regex or ""> [probe flags...]):
# the probe succeeds, its output matches the first regex and not the second.
function(strata_warning_case name manifest expect reject)
  add_test(NAME catalogue.${name}
    COMMAND ${CMAKE_COMMAND} "-DEXPECT=${expect}" "-DREJECT=${reject}"
            -P ${CMAKE_CURRENT_SOURCE_DIR}/expect_warning.cmake --
            ${STRATA_MPIRUN} -np 1 $<TARGET_FILE:strata_probe_host> ${catalogue_manifests}/${manifest} ${ARGN})
  set_tests_properties(catalogue.${name} PROPERTIES TIMEOUT 60 LABELS "catalogue;mpi")
endfunction()

# The scheduler is acted on (issue 13): logged with its first lr, no "not implemented" warning; a
# bad block is an error naming the key.
strata_warning_case(scheduler_acted_on good.json
  "scheduler: WarmupLR, first lr 0" "/scheduler: not implemented"
  --overrides "{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_num_steps\": 10}}}")
strata_catalogue_case(scheduler_unknown_type 1 good.json
  "good.json: scheduler.type: .*WarmupLRR"
  --overrides "{\"scheduler\": {\"type\": \"WarmupLRR\"}}")
strata_catalogue_case(scheduler_bad_param 1 good.json
  "good.json: scheduler.params.warmup_num_steps: expected a positive integer"
  --overrides "{\"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_num_steps\": -3}}}")
strata_warning_case(checkpoint_block_ignored good.json
  "good.json: /checkpoint/tag_validation: ignored" ""
  --overrides "{\"checkpoint\": {\"tag_validation\": \"Warn\"}}")
strata_warning_case(unused_deepspeed_key_warned good.json
  "good.json: /dump_state: ignored: Strata does not act on this DeepSpeed key" ""
  --overrides "{\"dump_state\": true}")
# Below stage 3 the offload plugin no longer receives offload_param, so no parameter store opens.
strata_warning_case(offload_param_below_stage3_ignored good.json
  "good.json: /zero_optimization/offload_param: ignored below ZeRO stage 3 \\(zero_optimization.stage is 2\\), as in DeepSpeed"
  "parameter partition \\(offload_param"
  --overrides "{\"zero_optimization\": {\"stage\": 2, \"offload_param\": {\"device\": \"cpu\"}}}")
# The control: at stage 3 the same block reaches the offload plugin, whose store stage 3 opens.
strata_warning_case(offload_param_at_stage3_used zero_stage3_groups.json
  "offload: parameter partition \\(offload_param cpu\\): [0-9.]+ [KMG]?i?B of host memory"
  "ignored below ZeRO stage 3"
  --groups --overrides "{\"zero_optimization\": {\"offload_param\": {\"device\": \"cpu\"}}}")

# Deferred values (API 1.9): parameters registered without data are written through FOR_WRITE
# gathers at stage 3 (in memory, offload_param cpu and nvme: the probe reads 0.5 back); below
# stage 3, or outside any group, finalize names the parameter; FOR_WRITE below stage 3 is refused
# naming the group.
strata_warning_case(deferred_values_written_at_stage3 zero_stage3_groups.json
  "group 0 reads back what was written" "" --groups --deferred --write-group 0)
strata_warning_case(deferred_values_written_offload_cpu zero_stage3_groups.json
  "group 1 reads back what was written" ""
  --groups --deferred --write-group 1
  --overrides "{\"zero_optimization\": {\"offload_param\": {\"device\": \"cpu\"}}}")
strata_warning_case(deferred_values_written_offload_nvme zero_stage3_groups.json
  "group 0 reads back what was written" ""
  --groups --deferred --write-group 0
  --overrides "{\"zero_optimization\": {\"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"${CMAKE_CURRENT_BINARY_DIR}\"}}}")
strata_catalogue_case(deferred_values_below_stage3 1 zero_stage3_groups.json
  "finalize: parameter 'w0' f32\\[100\\] was registered without data, but sharding plugin 'zero' \\(stage 1, runtime ABI 1\\.[0-9]+\\) keeps parameters in the host's buffers"
  --groups --deferred --overrides "{\"zero_optimization\": {\"stage\": 1}}")
strata_catalogue_case(deferred_values_in_no_group 1 zero_stage3_groups.json
  "finalize: parameter 'w0' f32\\[100\\] was registered without data but is in no group"
  --deferred)
strata_catalogue_case(write_gather_below_stage3 1 zero_stage3_groups.json
  "gather: STRATA_GATHER_FOR_WRITE of group 'g0': sharding plugin 'zero' \\(stage 2"
  --groups --write-group 0 --overrides "{\"zero_optimization\": {\"stage\": 2}}")
strata_warning_case(deferred_values_written_kept_whole zero_stage3_groups.json
  "group 1 reads back what was written" ""
  --groups --deferred --write-group 1
  --overrides "{\"zero_optimization\": {\"stage3_param_persistence_threshold\": 1000}}")
