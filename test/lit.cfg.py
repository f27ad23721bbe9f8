# -*- Python -*-
# lit configuration of Hector's IR tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "HECTOR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.hector_obj_root, "test")
# Python tests, GPU scripts and their helpers, and the fuzzer's seed corpus
# (test/fuzz/corpus) are not lit tests.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "python",
                   "gpu", "reference", "corpus"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%hector_src_root", config.hector_src_root))
config.substitutions.append(("%hector_obj_root", config.hector_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# %python runs the repository's scripts that import hector (examples/generate.py):
# the checkout's venv, where the package is installed (scripts/python-env.sh,
# which scripts/test.sh runs before lit), else lit's own Python with the
# source tree's python/ on PYTHONPATH.
venv = os.environ.get("HECTOR_VENV") or os.path.join(config.hector_src_root, ".venv")
venv_python = os.path.join(venv, "bin", "python")
if os.access(venv_python, os.X_OK):
    config.substitutions = [(k, '"%s"' % venv_python if k == "%python" else v)
                            for k, v in config.substitutions]
else:
    llvm_config.with_environment("PYTHONPATH", os.path.join(config.hector_src_root, "python"),
                                 append_path=True)
# `not` and `count` come from the LLVM tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Tests that build cubins need ptxas from the CUDA toolkit (REQUIRES: ptxas).
cuda_root = os.environ.get("CUDA_ROOT", "/usr/local/cuda")
if os.access(os.path.join(cuda_root, "bin", "ptxas"), os.X_OK):
    config.available_features.add("ptxas")
    llvm_config.with_environment("PATH", os.path.join(cuda_root, "bin"), append_path=True)

tool_dirs = [config.hector_tools_dir, config.llvm_tools_dir]
tools = ["hector-opt", "hectorc"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
