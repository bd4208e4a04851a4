#!/bin/sh
# require_fashion_mnist.sh DIR SKIP_CODE COMMAND [ARGS...] — runs COMMAND (exec: same process, same
# exit status) when DIR holds the four Fashion-MNIST idx files; otherwise says why and exits
# SKIP_CODE, which the test's SKIP_RETURN_CODE reports as skipped (fashion_mnist_data.cmake).
dir=$1
code=$2
shift 2
for file in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz \
            t10k-labels-idx1-ubyte.gz; do
  if [ ! -r "$dir/$file" ]; then
    echo "SKIPPED: Fashion-MNIST data not found in $dir (no $file); install the Debian package dataset-fashion-mnist (or point STRATA_FASHION_MNIST_DIR at the data)"
    exit "$code"
  fi
done
exec "$@"
