# Tests that train on the real Fashion-MNIST data (Debian package dataset-fashion-mnist).
#
# They are always registered. Each runs through require_fashion_mnist.sh, which checks the four
# idx files in STRATA_FASHION_MNIST_DIR when the test runs: if one is missing it prints
#   SKIPPED: Fashion-MNIST data not found in <dir> (...); install the Debian package dataset-fashion-mnist
# and exits 77, which SKIP_RETURN_CODE turns into "Not Run (Skipped)" in ctest, never a pass;
# otherwise it execs the test's own command unchanged. Installing the package later needs no
# reconfigure.
#
#   include(${PROJECT_SOURCE_DIR}/tests/cmake/fashion_mnist_data.cmake)
#   strata_add_fashion_mnist_test(<name> <command> [args...])   # add_test(NAME <name> COMMAND ...)
#   ... -DDATA_DIR=${STRATA_FASHION_MNIST_DIR} ...               # where the tests read the data
# Included from several folders: everything it sets is a cache variable or a function, and the
# configure-time note is printed once.

set(STRATA_FASHION_MNIST_DIR /usr/share/datasets/fashion-mnist CACHE PATH
    "Fashion-MNIST idx files for the tests (Debian package dataset-fashion-mnist)")

get_property(strata_fashion_mnist_checked GLOBAL PROPERTY STRATA_FASHION_MNIST_CHECKED)
if(NOT strata_fashion_mnist_checked)
  set_property(GLOBAL PROPERTY STRATA_FASHION_MNIST_CHECKED TRUE)
  foreach(file train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz
               t10k-labels-idx1-ubyte.gz)
    if(NOT EXISTS ${STRATA_FASHION_MNIST_DIR}/${file})
      message(STATUS "Fashion-MNIST data not found in ${STRATA_FASHION_MNIST_DIR} (no ${file}): "
                     "the tests that train on it will be skipped; install the Debian package "
                     "dataset-fashion-mnist or set STRATA_FASHION_MNIST_DIR")
      break()
    endif()
  endforeach()
endif()

# strata_add_fashion_mnist_test(<name> <command> [args...]): add_test with the data check in
# front; set further properties with set_tests_properties as usual (SKIP_RETURN_CODE is set here).
function(strata_add_fashion_mnist_test name)
  set(skip_code 77)
  add_test(NAME ${name}
    COMMAND /bin/sh ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/require_fashion_mnist.sh
            ${STRATA_FASHION_MNIST_DIR} ${skip_code} ${ARGN})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${skip_code})
endfunction()
