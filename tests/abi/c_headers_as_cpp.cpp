// The same checks as c_headers.c, compiled as C++: the headers must be valid, warning-free C++
// (extern "C" linkage included) for C++ hosts and plugins.
#include "c_headers.c"
