"""Rank script for test_faults.py's bad-input catalogue: `bad_inputs.py CASE MANIFEST` provokes one
bad input and prints `CAUGHT <exception type>: <message>` (exit 0), or `NO ERROR` (exit 1)."""
import os
import sys

import numpy as np

import strata

case, manifest = sys.argv[1], sys.argv[2]


def expect_error(label, call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the test asserts on the type
        print(f"CAUGHT {label} {type(e).__name__}: {e}", flush=True)
        return e
    print(f"NO ERROR {label}", flush=True)
    sys.exit(1)


if case == "missing_manifest":
    missing = os.path.join(os.path.dirname(os.path.abspath(manifest)), "no-such-manifest.json")
    e = expect_error("init", lambda: strata.init(missing))
    print(f"status {getattr(e, 'status', None)}", flush=True)
elif case == "buffers":
    expect_error("before_init", lambda: strata.allreduce(np.ones(4, np.float32)))
    strata.init(manifest)
    import torch
    expect_error("numpy_strided", lambda: strata.allreduce_(np.arange(10.0)[::2]))
    expect_error("numpy_fortran",
                 lambda: strata.allreduce(np.asfortranarray(np.ones((3, 4), np.float32))))
    expect_error("torch_transposed", lambda: strata.allreduce_(torch.ones(3, 4).t()))
    expect_error("python_list", lambda: strata.allreduce([1.0, 2.0]))
    expect_error("python_list_allgather", lambda: strata.allgather([1.0, 2.0]))
    expect_error("python_list_broadcast", lambda: strata.broadcast([1.0, 2.0]))
    expect_error("complex_dtype", lambda: strata.allreduce(np.ones(3, np.complex64)))
    expect_error("bad_op", lambda: strata.allreduce(np.ones(3, np.float32), op="prod"))
    read_only = np.ones(3, np.float32)
    read_only.setflags(write=False)
    expect_error("read_only", lambda: strata.broadcast_(read_only))
    strata.shutdown()
elif case == "unsupported_optimizer":
    import torch
    import strata.torch as st
    model = torch.nn.Linear(4, 2)
    expect_error("optimizer", lambda: st.DistributedOptimizer(
        torch.optim.RMSprop(model.parameters(), lr=0.01), model, manifest=manifest))
elif case.startswith("stage3_"):
    # A module changed after wrapping, or a partitioned parameter read outside a forward.
    import torch
    import strata.torch as st
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2))
    opt = st.DistributedOptimizer(None, model, manifest=manifest, overrides={
        "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}})
    if case == "stage3_replaced":
        model[1].weight = torch.nn.Parameter(torch.zeros(2, 3))
    elif case == "stage3_data":
        model[0].bias.data = torch.zeros(7)
    if case == "stage3_state_dict":
        expect_error("state_dict", lambda: model.state_dict())
    else:
        expect_error("forward", lambda: model(torch.ones(1, 4)))
else:
    sys.exit(f"bad_inputs.py: unknown case {case!r}")
print("done", flush=True)
