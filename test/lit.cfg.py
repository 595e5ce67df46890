# -*- Python -*-
# Configuration of the ddp lit suite.

import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "DDP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".json", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ddp_obj_root, "test")

config.substitutions.append(("%examples", os.path.join(config.ddp_src_root, "examples")))
config.substitutions.append(("%ddp_src_root", config.ddp_src_root))
config.substitutions.append(("%ddp_obj_root", config.ddp_obj_root))
# MLIR's .td files (mlir/Pass/PassBase.td), beside its tools.
config.substitutions.append(
    ("%mlir_include", os.path.join(config.llvm_tools_dir, "..", "include")))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.ddp_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(["ddp-opt"], [config.ddp_tools_dir])
llvm_config.add_tool_substitutions(["ddp-import"], [config.ddp_tools_dir])
llvm_config.add_tool_substitutions(["ddp-plan"], [config.ddp_tools_dir])
llvm_config.add_tool_substitutions(["ddp-tblgen"], [config.ddp_tools_dir])

# `torch`: a Python that can import torch.distributed (Debian's python3-torch;
# DDP_TORCH_PYTHON picks another), to compare with PyTorch's own code.
import subprocess
torch_python = os.environ.get("DDP_TORCH_PYTHON", "/usr/bin/python3")
try:
    has_torch = subprocess.run([torch_python, "-c", "import torch.distributed"],
                               capture_output=True).returncode == 0
except OSError:
    has_torch = False
if has_torch:
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", torch_python))

# `mlir-opt-plugins`: Debian's mlir-opt-22 (mlir-22-tools) and ddp's plugins
# for it, which sanitizer builds do not build (tools/ddp-plugins).
import shutil
stock_mlir_opt = shutil.which("mlir-opt-22") or shutil.which(
    "mlir-opt", path=config.llvm_tools_dir)
plugins = [os.path.join(config.ddp_libs_dir, "lib%s.so" % name)
           for name in ("DDPDialectPlugin", "DDPPassPlugin")]
if stock_mlir_opt and all(os.path.exists(plugin) for plugin in plugins):
    config.available_features.add("mlir-opt-plugins")
    config.substitutions.append(("%mlir_opt_with_ddp_plugins",
        "%s --load-dialect-plugin=%s --load-pass-plugin=%s"
        % (stock_mlir_opt, plugins[0], plugins[1])))

# The ABI version of the runtime's entry points, which the lowering embeds.
import re
with open(os.path.join(config.ddp_src_root, "include", "ddp", "Runtime", "RuntimeFunctions.def")) as header:
    config.substitutions.append(("%ddprt_abi_version", re.search(r"#define DDPRT_ABI_VERSION (\d+)", header.read()).group(1)))

# `rsvg-convert`: Debian's librsvg2-bin, which renders the timeline SVGs so
# that a test can count what a reader sees (test/Sim/timeline-svg.test).
if shutil.which("rsvg-convert"):
    config.available_features.add("rsvg-convert")
config.substitutions.append(("%python", sys.executable))
