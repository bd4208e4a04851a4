# The precision checks (tools/strata-plugin-check/precision), one process: strata_amp passes with
# the configs the checks build themselves (fp16 dynamic and static, bf16, fp32); a copy whose
# clean updates are swallowed (a loss scale that never grows) fails every scenario that expects
# the scale to double, naming the update, the overflow sequence so far, expected and got, while
# the scenarios without growth still pass.
strata_plugin_check_test(precision_amp LIBRARY $<TARGET_FILE:strata_amp> NP 1)
# A plugin-specific key from --config is merged into every scenario's config.
strata_plugin_check_test(precision_amp_threads LIBRARY $<TARGET_FILE:strata_amp> NP 1
  CONFIG "{\"threads\": 2}")

strata_plugin_check_fixture(plugin_check_broken_precision WRAPS strata_amp
  SOURCE fixtures/broken_precision.cpp)
strata_plugin_check_test(broken_precision LIBRARY $<TARGET_FILE:plugin_check_broken_precision>
  NP 1
  EXPECT_FAIL
    "FAIL precision\\.loss_scale\\.growth: update 4 \\(clean; updates 1-4 '\\.\\.\\.\\.'\\): expected scale 8, got 4"
    "FAIL precision\\.loss_scale\\.defaults: update 1001 \\(clean; updates 962-1001 '\\.+'\\): expected scale 131072, got 65536"
    "PASS precision\\.loss_scale\\.min_loss_scale\\.clamp"
    "PASS precision\\.loss_scale\\.static"
    "PASS precision\\.cast\\.f32_to_f16")
