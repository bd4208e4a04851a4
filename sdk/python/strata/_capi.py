"""ctypes declarations of the host C API (runtime/include/strata/strata.h), and loading libstrata.

The structs mirror the header field for field; each starts with struct_size, which is set to the
size ctypes computes for the struct as declared here (the header's own sizeof on this platform).
The runtime accepts any size from a struct's first released size up, so this file only has to grow
when the binding wants a field a later API minor appends.
"""
import ctypes
import ctypes.util
import os
import shutil

c_size_t, c_int32, c_uint32, c_uint64, c_double = (
    ctypes.c_size_t, ctypes.c_int32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_double)
c_char_p, c_void_p = ctypes.c_char_p, ctypes.c_void_p

# strata_status, strata_dtype, reduction ops, gather flags, step outcomes (plugin_api.h, strata.h).
OK = 0
ERR_INVALID_ARGUMENT, ERR_MISMATCH, ERR_INTERNAL = 1, 5, 7
STATUS_NAMES = {
    0: "STRATA_OK", 1: "STRATA_ERR_INVALID_ARGUMENT", 2: "STRATA_ERR_UNSUPPORTED",
    3: "STRATA_ERR_OUT_OF_MEMORY", 4: "STRATA_ERR_COMM", 5: "STRATA_ERR_MISMATCH",
    6: "STRATA_ERR_NUMERIC", 7: "STRATA_ERR_INTERNAL", 8: "STRATA_ERR_ABI",
}
F32, F16, BF16, F64, I32, I64, U8 = range(7)
DTYPE_NAMES = {F32: "f32", F16: "f16", BF16: "bf16", F64: "f64", I32: "i32", I64: "i64", U8: "u8"}
OPS = {"sum": 0, "avg": 1, "min": 2, "max": 3}
GATHER_FOR_BACKWARD = 1
GATHER_FOR_WRITE = 2  # API 1.9
OUTCOMES = {0: "accumulated", 1: "applied", 2: "skipped"}
DEVICE_HOST = 0
MEM_CATEGORIES = ("params", "grads", "master", "optimizer_state", "comm_buffers", "other")
MEM_LOCATIONS = ("host", "host_pinned", "device", "disk")
ERROR_MESSAGE_MAX = 1024


class Error(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("code", c_int32),
                ("message", ctypes.c_char * ERROR_MESSAGE_MAX)]


class CreateOptions(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("manifest_path", c_char_p),
                ("manifest_json", c_char_p), ("base_dir", c_char_p),
                ("overrides_json", c_char_p)]


class WorldInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("rank", c_int32), ("size", c_int32),
                ("local_rank", c_int32), ("local_size", c_int32)]


class TrainingInfo(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("train_batch_size", c_uint64),
                ("micro_batch_size", c_uint64), ("gradient_accumulation_steps", c_uint64),
                ("gradient_clipping", c_double), ("model_dtype", c_int32)]


class Device(ctypes.Structure):
    _fields_ = [("type", c_int32), ("index", c_int32)]


class ParamDesc(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("dtype", c_int32),
                ("device", Device), ("count", c_uint64), ("data", c_void_p), ("grad", c_void_p)]


class ParamView(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("data", c_void_p), ("grad", c_void_p),
                ("count", c_uint64), ("dtype", c_int32)]


class StepResult(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("outcome", c_int32), ("loss_scale", c_double),
                ("grad_norm", c_double), ("global_steps", c_uint64), ("skipped_steps", c_uint64),
                ("wall_seconds", c_double), ("host_seconds", c_double),
                ("comm_wait_seconds", c_double), ("optimizer_seconds", c_double),
                ("gather_seconds", c_double), ("runtime_other_seconds", c_double)]


class MemoryReport(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t),
                ("current", c_uint64 * len(MEM_CATEGORIES)),
                ("peak", c_uint64 * len(MEM_CATEGORIES)),
                ("located", (c_uint64 * len(MEM_CATEGORIES)) * len(MEM_LOCATIONS))]


class SaveArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("dir", c_char_p), ("tag", c_char_p),
                ("extra_json", c_char_p), ("blocking", c_int32)]


class LoadArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("dir", c_char_p), ("tag", c_char_p)]


class LoadResult(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("tag", c_char_p), ("extra_json", c_char_p),
                ("global_steps", c_uint64), ("skipped_steps", c_uint64)]


def sized(struct_type):
    """A zeroed struct with struct_size set, as every versioned struct needs."""
    s = struct_type()
    s.struct_size = ctypes.sizeof(struct_type)
    return s


_rt = c_void_p  # strata_runtime*, opaque
_err = ctypes.POINTER(Error)
_SIGNATURES = {
    "strata_create": ([ctypes.POINTER(CreateOptions), ctypes.POINTER(_rt), _err], c_int32),
    "strata_destroy": ([_rt], None),
    "strata_world": ([_rt, ctypes.POINTER(WorldInfo)], c_int32),
    "strata_training": ([_rt, ctypes.POINTER(TrainingInfo)], c_int32),
    "strata_register_param": ([_rt, ctypes.POINTER(ParamDesc), ctypes.POINTER(c_uint32), _err],
                              c_int32),
    "strata_finalize": ([_rt, _err], c_int32),
    "strata_grad_ready": ([_rt, c_uint32, _err], c_int32),
    "strata_step": ([_rt, ctypes.POINTER(StepResult), _err], c_int32),
    "strata_define_group": ([_rt, c_char_p, ctypes.POINTER(c_uint32), c_size_t,
                             ctypes.POINTER(c_uint32), _err], c_int32),
    "strata_gather": ([_rt, c_uint32, c_uint32, _err], c_int32),
    "strata_release": ([_rt, c_uint32, _err], c_int32),
    "strata_view_param": ([_rt, c_uint32, ctypes.POINTER(ParamView), _err], c_int32),
    "strata_loss_scale": ([_rt, ctypes.POINTER(c_double)], c_int32),
    "strata_allreduce": ([_rt, c_void_p, c_void_p, c_uint64, c_int32, c_int32, _err], c_int32),
    "strata_allgather": ([_rt, c_void_p, c_void_p, c_uint64, c_int32, _err], c_int32),
    "strata_broadcast": ([_rt, c_void_p, c_uint64, c_int32, c_int32, _err], c_int32),
    "strata_barrier": ([_rt, _err], c_int32),
    "strata_memory": ([_rt, ctypes.POINTER(MemoryReport)], c_int32),
    "strata_save": ([_rt, ctypes.POINTER(SaveArgs), _err], c_int32),
    "strata_save_wait": ([_rt, _err], c_int32),
    "strata_load": ([_rt, ctypes.POINTER(LoadArgs), ctypes.POINTER(LoadResult), _err], c_int32),
    "strata_lr": ([_rt, ctypes.POINTER(c_double)], c_int32),
    "strata_set_lr": ([_rt, c_double, _err], c_int32),
    "strata_set_stream": ([_rt, c_void_p, _err], c_int32),  # API 1.7: a cudaStream_t or None
    "strata_status_name": ([c_int32], c_char_p),
    "strata_version": ([], c_char_p),  # API 1.8
    "strata_api_version": ([], c_uint32),  # API 1.10
    "strata_set_host_state": ([_rt, c_char_p, _err], c_int32),  # API 1.11
    "strata_resumed": ([_rt, ctypes.POINTER(LoadResult), _err], c_int32),  # API 1.11
    "strata_join": ([_rt, ctypes.POINTER(ctypes.c_uint64), _err], c_int32),  # API 1.12
    # API 1.13: sub-groups of ranks
    "strata_group_create": ([_rt, c_int32, c_int32, ctypes.POINTER(c_void_p), _err], c_int32),
    "strata_group_rank": ([c_void_p, ctypes.POINTER(c_int32), ctypes.POINTER(c_int32)], c_int32),
    "strata_group_allreduce": ([c_void_p, c_void_p, c_void_p, c_uint64, c_int32, c_int32, _err],
                               c_int32),
    "strata_group_allgather": ([c_void_p, c_void_p, c_void_p, c_uint64, c_int32, _err], c_int32),
    "strata_group_broadcast": ([c_void_p, c_void_p, c_uint64, c_int32, c_int32, _err], c_int32),
    "strata_group_barrier": ([c_void_p, _err], c_int32),
    "strata_group_alltoallv": ([c_void_p, c_void_p, ctypes.POINTER(c_uint64),
                                ctypes.POINTER(c_uint64), c_void_p, ctypes.POINTER(c_uint64),
                                ctypes.POINTER(c_uint64), c_int32, _err], c_int32),
    "strata_group_destroy": ([_rt, c_void_p, _err], c_int32),
}

# The host API this package is written against (strata.h's STRATA_API_VERSION_MAJOR/MINOR): a
# libstrata of the same major and at least this minor serves it.
API_MAJOR, API_MINOR = 1, 13


def check_api_version(lib, path):
    """Raises OSError naming the library and both versions unless `lib` implements this package's
    host API (same major, minor at least API_MINOR)."""
    packed = lib.strata_api_version()
    major, minor = packed >> 16, packed & 0xffff
    if major != API_MAJOR or minor < API_MINOR:
        raise OSError("strata: %s implements host API %d.%d, but this Python package needs %d.%d "
                      "or a later minor of %d (install a matching libstrata, or point "
                      "STRATA_LIBRARY at one)" % (path, major, minor, API_MAJOR, API_MINOR,
                                                  API_MAJOR))


# Where `pip install .` puts the C++ build inside this package (pyproject.toml's wheel.install-dir):
# strata/lib/libstrata.so, strata/lib/strata/plugins/, strata/bin/strata-run and the other tools.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
BUNDLED_LIBRARY = os.path.join(PACKAGE_DIR, "lib", "libstrata.so")


def _candidates():
    """Where libstrata may be, in the order tried, each with whether it is the one place to use
    (a chosen or bundled library that exists but fails to load is an error, not a reason to try
    another libstrata, whose plugins and version may not match)."""
    env = os.environ.get("STRATA_LIBRARY")
    if env:
        # An explicit choice, or strata-run's: it hands its ranks the libstrata beside itself.
        return [(env, True)]
    if os.path.exists(BUNDLED_LIBRARY):
        return [(BUNDLED_LIBRARY, True)]
    found = []
    # Beside a strata-run on PATH: <prefix>/bin/strata-run, <prefix>/lib/libstrata.so (installed or
    # in a build tree alike), for scripts started by mpirun.
    run = shutil.which("strata-run")
    if run:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(run)))
        for lib in ("lib", "lib64"):
            found.append(os.path.join(prefix, lib, "libstrata.so"))
    name = ctypes.util.find_library("strata")  # the linker's search path (ldconfig)
    if name:
        found.append(name)
    found.append("libstrata.so.0")
    return [(path, False) for path in found]


def load():
    """Loads libstrata and declares its functions; raises OSError naming the file and the loader's
    reason (or, when none was chosen or bundled, every place tried)."""
    tried = []
    for path, only in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            if only:
                raise OSError("strata: cannot load libstrata: %s does not exist (set by "
                              "STRATA_LIBRARY)" % path)
            tried.append(path + " (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            if only:
                where = "bundled with this package" if path == BUNDLED_LIBRARY else \
                    "set by STRATA_LIBRARY"
                raise OSError("strata: cannot load libstrata %s (%s): %s" % (path, where, e)) \
                    from None
            tried.append("%s (%s)" % (path, e))
            continue
        for fn, (argtypes, restype) in _SIGNATURES.items():
            f = getattr(lib, fn, None)
            if f is None:
                raise OSError("strata: %s has no %s(): it is older than this Python package "
                              "(host API %d.%d or later needed)" % (path, fn, API_MAJOR, API_MINOR))
            f.argtypes, f.restype = argtypes, restype
        check_api_version(lib, path)
        return lib, path
    raise OSError("strata: cannot load libstrata; tried " + "; ".join(tried) +
                  ". Set STRATA_LIBRARY to the path of libstrata.so, or put strata-run on PATH.")
