"""The tolerances of ktune's kernels/<op>/spec.json, read as ktune's own reader reads them.

Plain Python (no PyTorch), so that `make test` can read every op's spec with it on a machine without
PyTorch or a GPU (tests/examples/pytorch_extension_spec_reader_test.py). The authority on the schema is
include/ktune/spec.hpp (parse_spec) and on the comparison include/ktune/verify.hpp; this mirrors them:

- "tolerance" is an object keyed by dtype name (fp32, fp16, bf16); every dtype in "dtypes" has one;
- each holds "rel_l2", "atol" and "rtol", numbers in [0, 1), and may hold "rms_floor", a finite number
  >= 0 (0 when absent): the reference's root mean square is taken as at least max(atol, rms_floor) in the
  relative L2 error (verify.hpp's Tolerance::l2_floor and relative_l2);
- a field this reader does not know raises ValueError naming it, so a field added to spec.hpp and used by a
  spec fails `make test` at once rather than the PyTorch example on a GPU machine (as rms_floor once did).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

DTYPE_NAMES = ("fp32", "fp16", "bf16")
REQUIRED_FIELDS = ("rel_l2", "atol", "rtol")
OPTIONAL_FIELDS = {"rms_floor": 0.0}


@dataclass(frozen=True)
class Tolerance:
    """One dtype's tolerance (verify.hpp's Tolerance)."""
    rel_l2: float
    atol: float
    rtol: float
    rms_floor: float = 0.0

    def l2_floor(self) -> float:
        """The reference's root mean square is taken as at least this in relative_l2."""
        return max(self.atol, self.rms_floor)


# ktune's default for a dtype a spec does not measure (verify.hpp's default_tolerance).
DEFAULT_TOLERANCE = {
    "fp32": Tolerance(1e-5, 1e-5, 1e-5),
    "fp16": Tolerance(2e-3, 1e-3, 4e-3),
    "bf16": Tolerance(1.6e-2, 8e-3, 3.2e-2),
}


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_tolerance(fields: dict, where: str) -> Tolerance:
    """One dtype's entry of "tolerance", checked as spec.hpp checks it. Raises ValueError."""
    if not isinstance(fields, dict):
        raise ValueError(f"{where}: must be an object of {', '.join(REQUIRED_FIELDS)} (and optionally "
                         f"{', '.join(OPTIONAL_FIELDS)})")
    unknown = sorted(set(fields) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        raise ValueError(f"{where}: unknown field {', '.join(repr(k) for k in unknown)}: this reader "
                         f"(examples/02_pytorch_extension/spec_reader.py) takes {', '.join(REQUIRED_FIELDS)} and "
                         f"{', '.join(OPTIONAL_FIELDS)}; teach it what include/ktune/spec.hpp does with the new one")
    values = {}
    for key in REQUIRED_FIELDS:
        value = fields.get(key)
        if not _number(value):
            raise ValueError(f"{where}: \"{key}\" must be a number")
        if not 0 <= value < 1:
            raise ValueError(f"{where}: \"{key}\" must be in [0, 1)")
        values[key] = float(value)
    for key, default in OPTIONAL_FIELDS.items():
        value = fields.get(key, default)
        if not _number(value) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: \"{key}\" must be a finite number >= 0")
        values[key] = float(value)
    return Tolerance(**values)


def read_tolerances(spec: dict, where: str) -> dict[str, Tolerance]:
    """Every listed dtype's tolerance, by dtype name, from a parsed spec.json. Raises ValueError."""
    dtypes = spec.get("dtypes")
    if not isinstance(dtypes, list) or not dtypes:
        raise ValueError(f"{where}: \"dtypes\" must be a non-empty array")
    tolerance = spec.get("tolerance")
    if not isinstance(tolerance, dict):
        raise ValueError(f"{where}: \"tolerance\" must be an object keyed by dtype")
    result = {}
    for name in dtypes:
        if name not in DTYPE_NAMES:
            raise ValueError(f"{where}: dtypes: {name!r} is not one of {', '.join(DTYPE_NAMES)}")
        if name not in tolerance:
            raise ValueError(f"{where}: tolerance.{name}: missing (every listed dtype needs a tolerance)")
        result[name] = read_tolerance(tolerance[name], f"{where}: tolerance.{name}")
    return result


def spec_path(root: Path, kernel: str) -> Path:
    return Path(root) / "kernels" / kernel / "spec.json"


def spec_tolerances(root: Path, kernel: str) -> dict[str, Tolerance]:
    """The op's tolerances by dtype name: the spec's for the dtypes it lists, ktune's default for the others
    (rotary_embedding's fp32, which sgl_kernel does not dispatch, say): ktune's own correctness gate's."""
    path = spec_path(root, kernel)
    measured = read_tolerances(json.loads(path.read_text()), str(path))
    return {name: measured.get(name, DEFAULT_TOLERANCE[name]) for name in DTYPE_NAMES}


def relative_l2(err2: float, ref2: float, n: int, floor: float) -> float:
    """||out - ref|| / ||ref|| from squared sums over n elements, ||ref|| taken as at least floor * sqrt(n)
    (verify.hpp's relative_l2): an output whose elements are all within atol of zero is judged by its
    absolute error, not by its ratio to a tiny norm."""
    den2 = max(ref2, floor * floor * n)
    return math.sqrt(err2 / den2) if den2 > 0 else math.sqrt(err2)
