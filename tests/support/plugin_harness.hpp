// Test-only names for the minimal plugin host that strata-plugin-check uses
// (tools/strata-plugin-check/plugin_host.hpp): a library loaded by path with dlopen and a
// host-services table with counted allocations. Lets plugin tests and benchmarks exercise a
// plugin directly, without libstrata, as a third-party host would.
#pragma once

#include <plugin_host.hpp>

namespace strata::test {

using PluginLibrary = plugin_check::PluginLibrary;
using FakeHost = plugin_check::PluginHost;

}  // namespace strata::test
