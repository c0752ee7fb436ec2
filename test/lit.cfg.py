# -*- Python -*-
# lit configuration of commopt's tests: FileCheck tests of the dialect, the
# passes and the translations, and integration tests that run lowered modules
# on several MPI ranks.

import os
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "COMMOPT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.commopt_obj_root, "test")

llvm_config.with_system_environment(["HOME", "TMPDIR", "USER"])
llvm_config.use_default_substitutions()
# `not`, `count` and FileCheck anywhere in a RUN line.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.commopt_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["commopt-opt", "commopt-translate", "mlir-runner",
     "commrt-rank-failure-drill"], tool_dirs)

# Test helpers written in Python use the standard library only, run by
# Debian's own interpreter (the one with Debian's python3-torch).
config.substitutions.append(("%python", "/usr/bin/python3"))
# Runs a command that must fail, and fails itself if the command hangs.
config.substitutions.append(
    ("%expect_failure",
     "/usr/bin/python3 " + os.path.join(config.commopt_src_root, "test",
                                        "Inputs", "expect_failure.py")))
# The build folder, for scripts that take one (bench/plan_quality/run.py).
config.substitutions.append(("%commopt_build", config.commopt_obj_root))
# The source tree, for checks of the whole repository (test/Docs).
config.substitutions.append(("%commopt_src_root", config.commopt_src_root))

# Multi-rank runs. OpenMPI must be allowed to run as root (CI does) and to
# place more ranks than cores; vader's single-copy mechanism needs ptrace
# rights that containers often lack.
config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
config.environment["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
config.environment["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
config.substitutions.append(("%mpirun", config.mpiexec))
config.substitutions.append(
    ("%commrt_lib", os.path.join(config.commopt_lib_dir, "libcommrt.so")))
for library in ["mlir_c_runner_utils", "mlir_runner_utils"]:
    config.substitutions.append(
        ("%" + library, os.path.join(config.llvm_lib_dir, f"lib{library}.so")))

# Real model profiles live beside the checkout (or where
# `--param pipedream_profiles=DIR` says, e.g. from a git worktree); tests
# that read them need the folder.
profiles = lit_config.params.get(
    "pipedream_profiles",
    os.path.join(config.commopt_src_root, "..", "shared", "profiles",
                 "pipedream"))
if os.path.isdir(profiles):
    config.available_features.add("pipedream-profiles")
    config.substitutions.append(("%pipedream", os.path.realpath(profiles)))
else:
    lit_config.note(f"{profiles} not found: tests that need the pipedream "
                    "profiles are skipped (--param pipedream_profiles=DIR)")

# The PyTorch exporter needs Debian's python3-torch and python3-torchvision.
config.substitutions.append(
    ("%commopt_export",
     os.path.join(config.commopt_src_root, "tools", "commopt-export",
                  "commopt-export.py")))
if subprocess.run(["/usr/bin/python3", "-c", "import torch, torchvision"],
                  capture_output=True).returncode == 0:
    config.available_features.add("torch")
else:
    lit_config.note("python3-torch or python3-torchvision is missing: the "
                    "exporter's tests are skipped")
