#!/usr/bin/env python3
"""Builds and loads the ktune_torch PyTorch extension (README.md beside this file).

    python3 build.py [--verbose] [--clean]

From Python, with this folder first on sys.path (PyPA's package `build` has the same name):
``from build import load_ktune_torch; ktune = load_ktune_torch()``.

The extension is ktune_torch.cpp (host compiler) plus kernels/<op>/<op>.cu of a ktune checkout (nvcc),
the same sources the CMake target ktune_kernels compiles. The checkout is two folders up from this file
unless KTUNE_SOURCE_DIR names another. The build goes to build/<python, torch, CUDA, archs>/ beside this
file, through torch.utils.cpp_extension.load where ninja is available, else through setuptools (slower:
one source after another). Both rebuild only what changed. The GPU architectures are sm_90 plus those of
the visible GPUs, unless TORCH_CUDA_ARCH_LIST says otherwise.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

EXAMPLE_DIR = Path(__file__).resolve().parent
EXTENSION_NAME = "ktune_torch"
KERNELS = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul", "rmsnorm", "gemma_rmsnorm", "fused_add_rmsnorm",
           "gemma_fused_add_rmsnorm", "merge_attn_states_lse", "rotary_embedding", "rotary_embedding_set_kv")
BASE_ARCH = (9, 0)  # ktune's tuned tables are for Hopper; other GPUs are added when present

# The ktune .cu files are compiled as CMake compiles ktune_kernels. PyTorch adds
# -D__CUDA_NO_HALF_OPERATORS__ and friends for its own headers; the -U flags take them back so that
# cuda_fp16.h / cuda_bf16.h look as they do in ktune's own build.
NVCC_FLAGS = [
    "-std=c++17",
    "--expt-relaxed-constexpr",
    "-O3",
    "-U__CUDA_NO_HALF_OPERATORS__",
    "-U__CUDA_NO_HALF_CONVERSIONS__",
    "-U__CUDA_NO_HALF2_OPERATORS__",
    "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
]

_loaded: ModuleType | None = None


def source_dir() -> Path:
    """The ktune checkout: KTUNE_SOURCE_DIR, else two folders up from this file. Checked, not assumed."""
    env = os.environ.get("KTUNE_SOURCE_DIR")
    root = Path(env).expanduser().resolve() if env else EXAMPLE_DIR.parents[1]
    wanted = [root / "include" / "ktune" / "status.hpp"] + [root / "kernels" / k / f"{k}.cu" for k in KERNELS]
    missing = [str(p) for p in wanted if not p.is_file()]
    if missing:
        origin = "KTUNE_SOURCE_DIR" if env else "the checkout two folders up from build.py"
        raise FileNotFoundError(f"{root} ({origin}) is not a ktune checkout: missing {', '.join(missing)}")
    return root


def sources(root: Path) -> list[Path]:
    return [EXAMPLE_DIR / f"{EXTENSION_NAME}.cpp"] + [root / "kernels" / k / f"{k}.cu" for k in KERNELS]


def headers(root: Path) -> list[Path]:
    """Every header the sources can include, for the setuptools build's out-of-date check (ninja tracks
    the real dependencies itself)."""
    found = [p for p in (root / "include" / "ktune").rglob("*") if p.suffix in (".hpp", ".cuh", ".h")]
    for k in KERNELS:
        found += [p for p in (root / "kernels" / k).iterdir() if p.suffix in (".hpp", ".cuh", ".h")]
    return sorted(found)


def cuda_arch_list() -> str:
    """TORCH_CUDA_ARCH_LIST for the build: the user's, else sm_90 plus every visible GPU's capability."""
    import torch

    user = os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if user:
        return user
    archs = {BASE_ARCH}
    if torch.cuda.is_available():
        archs.update(torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count()))
    return ";".join(f"{major}.{minor}" for major, minor in sorted(archs))


def host_std() -> str:
    """-std for ktune_torch.cpp: C++17 as asked, unless this PyTorch's headers refuse anything below
    C++20 (newer releases do: `#error C++20 or later compatible compiler is required`)."""
    import torch

    include = Path(torch.__file__).resolve().parent / "include"
    for header in (include / "ATen" / "ATen.h", include / "torch" / "csrc" / "api" / "include" / "torch" / "all.h"):
        try:
            if "202002L" in header.read_text(errors="replace"):
                return "-std=c++20"
        except OSError:
            continue  # a header this release does not ship
    return "-std=c++17"


def check_nvcc() -> str:
    """nvcc's release, refused where its major version differs from the CUDA PyTorch was built with
    (the extension would load a second, different CUDA runtime next to PyTorch's)."""
    import torch
    import torch.utils.cpp_extension as cpp_ext

    if torch.version.cuda is None:
        raise RuntimeError(f"this PyTorch ({torch.__version__}) is built without CUDA; ktune_torch needs a CUDA build")
    if cpp_ext.CUDA_HOME is None:
        raise RuntimeError("nvcc not found: set CUDA_HOME to the CUDA toolkit (its bin/nvcc is used) or put nvcc on PATH")
    nvcc = Path(cpp_ext.CUDA_HOME) / "bin" / "nvcc"
    try:
        done = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False)
    except OSError as e:
        raise RuntimeError(f"cannot run {nvcc}: {e}; set CUDA_HOME to the CUDA toolkit") from e
    if done.returncode != 0:
        raise RuntimeError(f"{nvcc} --version failed (exit {done.returncode}): {done.stderr.strip()}")
    match = re.search(r"release (\d+)\.(\d+)", done.stdout)
    if not match:
        raise RuntimeError(f"cannot read the release from {nvcc} --version:\n{done.stdout}")
    release = f"{match.group(1)}.{match.group(2)}"
    if match.group(1) != torch.version.cuda.split(".")[0]:
        raise RuntimeError(f"{nvcc} is CUDA {release} but PyTorch is built with CUDA {torch.version.cuda}; "
                           "point CUDA_HOME at a toolkit of the same major version")
    return release


def cxx_runtime() -> list[str]:
    """The C++ runtime (libstdc++.so.6) this process loaded with PyTorch, as a linker input.

    Linked explicitly because a toolchain whose library path holds only libstdc++.a (a relocated GCC,
    say) would otherwise copy the C++ runtime into the extension: two runtimes in one process, and the
    extension's own iostreams crash (seen: a segfault formatting an integer into an error message).
    Where g++ links libstdc++.so anyway, this names the same library once more and changes nothing."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []  # not Linux: leave it to the toolchain
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) >= 6 and re.search(r"/libstdc\+\+\.so\.6(\.[0-9.]+)?$", fields[-1]):
            return [fields[-1]]
    return []


def build_directory(arch_list: str) -> Path:
    """One folder per Python, PyTorch, CUDA and architecture list, so a build is never reused across them."""
    import torch

    def tag(s: str) -> str:
        return re.sub(r"[^A-Za-z0-9.]+", "_", s).strip("_")

    name = (f"py{sys.version_info.major}{sys.version_info.minor}_torch{tag(torch.__version__.split('+')[0])}"
            f"_cu{tag(torch.version.cuda or 'none')}_sm{tag(arch_list.replace('.', ''))}")
    return EXAMPLE_DIR / "build" / name


@contextlib.contextmanager
def _environment(name: str, value: str):
    """Sets an environment variable for the duration of a build, then restores it."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _import_from(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(EXTENSION_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_with_setuptools(root: Path, cflags: list[str], ldflags: list[str], build_dir: Path,
                           verbose: bool) -> ModuleType:
    """The same build without ninja: setuptools' build_ext with PyTorch's BuildExtension, which compiles
    the sources one after another and skips the build when no source or header is newer than the module."""
    from setuptools import Distribution
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    extension = CUDAExtension(
        name=EXTENSION_NAME,
        sources=[str(s) for s in sources(root)],
        include_dirs=[str(root / "include"), str(root)],
        extra_compile_args={"cxx": cflags, "nvcc": NVCC_FLAGS},
        extra_link_args=ldflags,
        depends=[str(h) for h in headers(root)],
    )
    dist = Distribution({
        "name": EXTENSION_NAME,
        "ext_modules": [extension],
        "cmdclass": {"build_ext": BuildExtension.with_options(use_ninja=False)},
    })
    dist.verbose = 1 if verbose else 0
    command = dist.get_command_obj("build_ext")
    command.build_lib = str(build_dir / "lib")
    command.build_temp = str(build_dir / "temp")
    command.inplace = False
    dist.run_command("build_ext")  # raises (CompileError, LinkError, ...) on failure
    path = Path(command.get_ext_fullpath(EXTENSION_NAME))
    if not path.is_file():
        raise RuntimeError(f"setuptools reported success but {path} does not exist")
    return _import_from(path)


def load_ktune_torch(verbose: bool = False, clean: bool = False) -> ModuleType:
    """Builds the extension where needed and returns it (once per process). Prints where and how long."""
    global _loaded
    if _loaded is not None and not clean:
        return _loaded
    import torch  # noqa: F401  (the extension's libraries come from torch: import it first)
    import torch.utils.cpp_extension as cpp_ext

    root = source_dir()
    nvcc_release = check_nvcc()
    arch_list = cuda_arch_list()
    cflags = [host_std(), "-O3"]
    ldflags = cxx_runtime()
    build_dir = build_directory(arch_list)
    if clean and build_dir.exists():
        shutil.rmtree(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    if (build_dir / "lock").exists():  # PyTorch's build lock: load() waits for it to go away
        print(f"ktune_torch: warning: {build_dir / 'lock'} exists; if no other build is running it is left from an "
              "interrupted one and the build will wait forever: delete it, or run build.py --clean", flush=True)
    ninja = cpp_ext.is_ninja_available()
    how = "ninja" if ninja else "setuptools (no ninja: one source at a time)"
    print(f"ktune_torch: building/loading from {root} with nvcc {nvcc_release}, TORCH_CUDA_ARCH_LIST={arch_list}, "
          f"C++ runtime {ldflags[0] if ldflags else 'the toolchain default'}, {how}, in {build_dir} "
          "(a first build takes a minute or more)", flush=True)

    start = time.perf_counter()
    # TORCH_CUDA_ARCH_LIST is PyTorch's one switch for -gencode in both build paths (load() adds its
    # arch flags whatever extra_cuda_cflags hold), so the architectures are chosen through it.
    with _environment("TORCH_CUDA_ARCH_LIST", arch_list):
        try:
            if ninja:
                module = cpp_ext.load(
                    name=EXTENSION_NAME,
                    sources=[str(s) for s in sources(root)],
                    extra_include_paths=[str(root / "include"), str(root)],
                    extra_cflags=cflags,
                    extra_cuda_cflags=NVCC_FLAGS,
                    extra_ldflags=ldflags,
                    build_directory=str(build_dir),
                    verbose=verbose,
                    with_cuda=True,
                )
            else:
                module = _build_with_setuptools(root, cflags, ldflags, build_dir, verbose)
        except ValueError as e:
            if "arch" in str(e).lower():
                raise RuntimeError(f"PyTorch refused TORCH_CUDA_ARCH_LIST={arch_list} ({e}); set TORCH_CUDA_ARCH_LIST "
                                   "to architectures this PyTorch knows, e.g. 9.0") from e
            raise
    elapsed = time.perf_counter() - start
    print(f"ktune_torch: ready in {elapsed:.1f} s ({module.__file__})", flush=True)
    _loaded = module
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="show the compiler commands and output")
    parser.add_argument("--clean", action="store_true", help="delete this configuration's build folder first")
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"error: PyTorch is not importable ({e}); ktune_torch needs PyTorch with CUDA", file=sys.stderr)
        return 1
    try:
        module = load_ktune_torch(verbose=args.verbose, clean=args.clean)
    except Exception as e:  # every build failure ends here with its message and a non-zero exit
        print(f"error: building ktune_torch failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    names = ("silu_and_mul", "gelu_and_mul", "gelu_tanh_and_mul", "rmsnorm", "gemma_rmsnorm", "fused_add_rmsnorm",
             "gemma_fused_add_rmsnorm", "merge_state_v2", "apply_rope_with_cos_sin_cache_inplace", "variant")
    functions = sorted(n for n in names if hasattr(module, n))
    print(f"ktune_torch: functions {', '.join(functions)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
