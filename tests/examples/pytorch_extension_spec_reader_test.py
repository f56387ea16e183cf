#!/usr/bin/env python3
"""examples/02_pytorch_extension's reader of the specs, in plain Python (no PyTorch, no GPU): it reads every
op's kernels/<op>/spec.json as include/ktune/spec.hpp does, through the module test_ktune_torch.py itself
uses, so a tolerance field the example does not know fails here, in `make test`, not on the GPU machine.

    python3 pytorch_extension_spec_reader_test.py [KTUNE_SOURCE_DIR]
"""
from __future__ import annotations

import importlib.util
import json
import math
import sys
import unittest
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "02_pytorch_extension"


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


reader = load("spec_reader_under_test", EXAMPLE / "spec_reader.py")


def every_spec() -> list[Path]:
    """kernels/*/spec.json of the checkout, and the kernel folders of the examples (03's add_bias)."""
    return sorted(ROOT.glob("kernels/*/spec.json")) + sorted(ROOT.glob("examples/*/kernels/*/spec.json"))


class EverySpec(unittest.TestCase):
    def test_there_are_specs(self):
        self.assertGreaterEqual(len(list(ROOT.glob("kernels/*/spec.json"))), 9, f"no kernels/*/spec.json under {ROOT}")

    def test_every_spec_reads_with_every_field(self):
        for path in every_spec():
            with self.subTest(spec=str(path.relative_to(ROOT))):
                spec = json.loads(path.read_text())
                tolerances = reader.read_tolerances(spec, str(path))
                self.assertEqual(sorted(tolerances), sorted(spec["dtypes"]))
                for name, tol in tolerances.items():
                    fields = spec["tolerance"][name]
                    self.assertEqual((tol.rel_l2, tol.atol, tol.rtol), (fields["rel_l2"], fields["atol"], fields["rtol"]))
                    self.assertEqual(tol.rms_floor, fields.get("rms_floor", 0.0))
                    self.assertEqual(tol.l2_floor(), max(tol.atol, tol.rms_floor))

    def test_the_example_reads_every_op_through_this_reader(self):
        # test_ktune_torch.py imports without PyTorch (it only says why it skips) and reads the specs with
        # spec_reader.py: every op, every dtype (ktune's default for one the spec does not measure).
        example = load("test_ktune_torch_under_test", EXAMPLE / "test_ktune_torch.py")
        self.assertEqual(Path(example.spec_reader.__file__).resolve(), (EXAMPLE / "spec_reader.py").resolve())
        for path in sorted(ROOT.glob("kernels/*/spec.json")):
            with self.subTest(op=path.parent.name):
                by_name = example.spec_reader.spec_tolerances(ROOT, path.parent.name)
                self.assertEqual(sorted(by_name), sorted(reader.DTYPE_NAMES))

    def test_gelu_and_mul_keeps_its_rms_floor(self):
        # The field that stopped the example after its first op (issue 43).
        tol = reader.spec_tolerances(ROOT, "gelu_and_mul")["fp32"]
        self.assertGreater(tol.rms_floor, 0)
        self.assertEqual(tol.l2_floor(), tol.rms_floor)


class Reader(unittest.TestCase):
    good = {"rel_l2": 1e-5, "atol": 1e-5, "rtol": 1e-5}

    def refuses(self, fields: dict, words: str):
        with self.assertRaises(ValueError) as caught:
            reader.read_tolerance(fields, "spec.json: tolerance.fp32")
        self.assertIn(words, str(caught.exception))

    def test_fields_as_spec_hpp_checks_them(self):
        self.assertEqual(reader.read_tolerance(self.good, "w"), reader.Tolerance(1e-5, 1e-5, 1e-5, 0.0))
        self.assertEqual(reader.read_tolerance({**self.good, "rms_floor": 1}, "w").rms_floor, 1.0)
        self.refuses({"rel_l2": 1e-5, "atol": 1e-5}, '"rtol" must be a number')
        self.refuses({**self.good, "atol": 1.0}, '"atol" must be in [0, 1)')
        self.refuses({**self.good, "rtol": -1e-3}, '"rtol" must be in [0, 1)')
        self.refuses({**self.good, "rel_l2": True}, '"rel_l2" must be a number')
        self.refuses({**self.good, "rms_floor": -1}, '"rms_floor" must be a finite number >= 0')
        self.refuses({**self.good, "rms_floor": math.inf}, '"rms_floor" must be a finite number >= 0')
        self.refuses([1, 2, 3], "must be an object")

    def test_an_unknown_field_is_named(self):
        self.refuses({**self.good, "abs_floor": 1e-3}, "unknown field 'abs_floor'")

    def test_every_listed_dtype_needs_a_tolerance(self):
        spec = {"dtypes": ["fp32", "bf16"], "tolerance": {"fp32": self.good}}
        with self.assertRaises(ValueError) as caught:
            reader.read_tolerances(spec, "spec.json")
        self.assertIn("tolerance.bf16: missing", str(caught.exception))
        with self.assertRaises(ValueError):
            reader.read_tolerances({"dtypes": ["fp8"], "tolerance": {"fp8": self.good}}, "spec.json")

    def test_relative_l2_takes_the_floor_as_verify_hpp_does(self):
        # One element of a saturated gelu tail: reference -1e-9, output 0, atol 1e-5: judged by the absolute
        # error (1e-9 / 1e-5), not by its ratio to the reference (1).
        self.assertAlmostEqual(reader.relative_l2(1e-18, 1e-18, 1, 1e-5), 1e-4)
        self.assertAlmostEqual(reader.relative_l2(4.0, 100.0, 4, 1e-5), 0.2)  # a large reference: the plain ratio
        self.assertAlmostEqual(reader.relative_l2(4.0, 0.0, 4, 0.0), 2.0)      # no reference, no floor
        self.assertAlmostEqual(reader.relative_l2(1.0, 1.0, 100, 1.0), 0.1)    # rms_floor 1 over 100 elements


if __name__ == "__main__":
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
