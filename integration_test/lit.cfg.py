# -*- Python -*-
# The integration suite: programs run under mpirun (feature `mpi`), one test
# at a time, since every test starts several ranks on a small machine.

import os
import shutil
import subprocess
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "DDP-integration"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ddp_obj_root, "integration_test")

# Ranks of two tests at once would share the cores with each other.
lit_config.parallelism_groups["mpi"] = 1
config.parallelism_group = "mpi"

if config.mpirun and os.path.exists(config.mpirun):
    config.available_features.add("mpi")
    mpirun = [config.mpirun]
    # Open MPI refuses root unless told; a CI container often runs as root.
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    # More ranks than cores is the point on a small machine.
    mpirun.append("--oversubscribe")
    config.substitutions.append(("%mpirun", " ".join(mpirun)))

# A sanitized build (utils/test.sh's second stage) runs a representative
# slice: the long mpirun matrices (`UNSUPPORTED: sanitized`) run in the
# Release stage only, where they take a third of the time.
if "-fsanitize" in config.aot_link_flags:
    config.available_features.add("sanitized")

# A GPU turns the CUDA backend from an error into a run.
if shutil.which("nvidia-smi"):
    try:
        if subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0:
            config.available_features.add("cuda-gpu")
    except OSError:
        pass

config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%examples", os.path.join(config.ddp_src_root, "examples")))
config.substitutions.append(("%ddp_runtime_dir", config.ddp_runtime_dir))
config.substitutions.append(("%ddp_launch_lib", os.path.join(config.ddp_runtime_dir, "launcher", "libddp_launch.a")))
config.substitutions.append(("%ddp_include", os.path.join(config.ddp_src_root, "include")))
config.substitutions.append(("%cc", " ".join(filter(None, [config.host_cc, config.aot_link_flags]))))
config.substitutions.append(("%python", sys.executable))

# A collective that hangs ends the job after this many seconds.
config.environment["DDPRT_TIMEOUT"] = "120"
# Under LeakSanitizer (utils/test.sh's sanitizer build), Open MPI's
# allocations kept until exit come from libraries without frame pointers:
# the fast unwinder cannot attribute them to the libraries utils/lsan.supp
# names, and the full one makes ddp-run's (MLIR's) allocations too slow.
# The ranks' leaks are not checked; ddp-opt's are, in check-ddp.
if "LSAN_OPTIONS" in os.environ or "ASAN_OPTIONS" in os.environ:
    config.environment["LSAN_OPTIONS"] = ":".join(
        filter(None, [os.environ.get("LSAN_OPTIONS"), "detect_leaks=0"]))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.ddp_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["ddp-run", "ddp-opt", "ddp-import"], [config.ddp_tools_dir])
