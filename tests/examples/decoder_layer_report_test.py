#!/usr/bin/env python3
"""examples/04_decoder_layer without PyTorch or a GPU: the model shapes, the figures derived from the
measurements (memory-bound time by difference, share, savings, the decode target, the accuracy rule), the
markdown tables and the summary; decoder_layer.py imports and parses its arguments without PyTorch, and
says why it skips.

    python3 decoder_layer_report_test.py [KTUNE_SOURCE_DIR]
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
import unittest
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "04_decoder_layer"


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


report = load("layer_report_under_test", EXAMPLE / "layer_report.py")


def row(model="llama3-8b", tokens=1, ktune=100.0, eager=130.0, compile_=110.0, skeleton=90.0, alone=(5.0, 25.0, 9.0),
        rel=(4e-3, 5e-3, 5e-3)):
    return {"model": model, "phase": report.phase_of(tokens), "tokens": tokens, "skeleton_us": skeleton,
            "layer_us": {"ktune": ktune, "eager": eager, "compile": compile_},
            "ops_alone_us": dict(zip(report.VARIANTS, alone)), "rel_l2": dict(zip(report.VARIANTS, rel))}


class Models(unittest.TestCase):
    def test_shapes_of_the_configs(self):
        llama, gemma = report.MODELS["llama3-8b"], report.MODELS["gemma2-2b"]
        self.assertEqual((llama.hidden, llama.heads, llama.kv_heads, llama.head_dim, llama.intermediate), (4096, 32, 8, 128, 14336))
        self.assertEqual((gemma.hidden, gemma.heads, gemma.kv_heads, gemma.head_dim, gemma.intermediate), (2304, 8, 4, 256, 9216))
        self.assertEqual(llama.weight_bytes(), 2 * 4096 * (6144 + 4096 + 3 * 14336))  # 436 MB a layer
        self.assertFalse(llama.gemma)
        self.assertTrue(gemma.gemma)

    def test_every_memory_bound_op_is_a_function_of_the_binding(self):
        binding = (ROOT / "examples" / "02_pytorch_extension" / "ktune_torch.cpp").read_text()
        defined = set(re.findall(r'm\.def\("(\w+)"', binding))
        for model in report.MODELS.values():
            for op in model.memory_bound_ops():
                self.assertIn(op, defined, f"{model.name}: {op} is not a ktune_torch function")
        self.assertIn("gemma_rmsnorm", report.MODELS["gemma2-2b"].memory_bound_ops())
        self.assertIn("gelu_tanh_and_mul", report.MODELS["gemma2-2b"].memory_bound_ops())

    def test_phases_and_lists(self):
        self.assertEqual([report.phase_of(t) for t in report.TOKENS], ["decode"] * 3 + ["prefill"] * 2)
        self.assertEqual(report.parse_list("1, 16,64", None, int), [1, 16, 64])
        with self.assertRaises(ValueError):
            report.parse_list("llama3-8b,mistral", report.MODELS)
        with self.assertRaises(ValueError):
            report.parse_list(" , ", None, int)


class Derive(unittest.TestCase):
    def test_figures_of_a_decode_row(self):
        r = report.derive(row())
        self.assertEqual(r["memory_bound_us"], {"ktune": 10.0, "eager": 40.0, "compile": 20.0})
        self.assertAlmostEqual(r["share"]["ktune"], 0.1)
        self.assertAlmostEqual(r["share"]["eager"], 40 / 130)
        self.assertEqual(r["saving_us"], {"eager": 30.0, "compile": 10.0})
        self.assertAlmostEqual(r["saving_pct"]["compile"], 100 * 10 / 110)
        self.assertAlmostEqual(r["memory_bound_ratio"]["compile"], 0.5)
        self.assertAlmostEqual(r["ops_alone_ratio"]["compile"], 5 / 9)
        self.assertIs(r["meets_target"], True)
        self.assertIs(r["accurate"], True)

    def test_the_target_needs_both_measures_and_a_decode_step(self):
        self.assertIs(report.derive(row(alone=(8.0, 25.0, 9.0)))["meets_target"], False)  # alone: 0.89x
        self.assertIs(report.derive(row(ktune=108.0))["meets_target"], False)             # in the layer: 0.9x
        self.assertIsNone(report.derive(row(tokens=2048))["meets_target"])                # prefill: no target
        self.assertIsNone(report.derive(row(compile_=None, alone=(5.0, 25.0, None)))["meets_target"])

    def test_missing_measurements_stay_missing(self):
        r = report.derive(row(compile_=None, skeleton=None))
        self.assertIsNone(r["memory_bound_us"]["ktune"])
        self.assertIsNone(r["saving_us"]["compile"])
        self.assertEqual(r["saving_us"]["eager"], 30.0)
        text = report.markdown([r])
        self.assertIn("n/a", text)

    def test_accuracy_rule(self):
        self.assertTrue(report.accuracy_ok(4e-3, 5e-3))
        self.assertTrue(report.accuracy_ok(7e-3, 5e-3))        # within 1.5x of eager's own error
        self.assertFalse(report.accuracy_ok(8e-3, 5e-3))
        self.assertFalse(report.accuracy_ok(6e-2, None))        # above the limit whatever eager did
        self.assertFalse(report.accuracy_ok(None, 5e-3))        # ktune's call failed
        self.assertFalse(report.accuracy_ok(float("nan"), 5e-3))
        self.assertTrue(report.accuracy_ok(1e-2, None))          # eager failed: the limit alone
        self.assertFalse(report.derive(row(rel=(2e-2, 5e-3, 5e-3)))["accurate"])


class Tables(unittest.TestCase):
    def test_markdown_and_summary(self):
        rows = [report.derive(row(tokens=t)) for t in (1, 16, 64)] + \
               [report.derive(row(tokens=8192, ktune=5000.0, eager=5600.0, compile_=5100.0, skeleton=4900.0,
                                  alone=(60.0, 700.0, 90.0)))]
        text = report.markdown(rows)
        self.assertEqual(sum(line.startswith("| --- |") for line in text.splitlines()), 3)
        self.assertIn("| llama3-8b | decode | 1 | 100.0 | 130.0 | 110.0 | 30.00 us (+23.1%) | 10.00 us (+9.1%) |", text)
        self.assertIn("| llama3-8b | prefill | 8192 | 5000.0 | 5600.0 | 5100.0 | 600.0 us (+10.7%) | 100.0 us (+2.0%) |", text)
        self.assertIn("| 0.50x |", text)
        self.assertIn("| met |", text)
        self.assertIn("| llama3-8b | 1 | 4.00e-03 | 5.00e-03 | 5.00e-03 | pass |", text)
        self.assertIn("| 5.00 | 25.00 | 9.00 |", text)  # no kernel counts in these rows
        counted = dict(row(), ops_alone_kernels={"ktune": 4, "eager": 23, "compile": None})
        self.assertIn("| 5.00 (4 kernels) | 25.00 (23 kernels) | 9.00 |", report.markdown([report.derive(counted)]))
        s = report.summary(rows)["llama3-8b"]
        self.assertIs(s["decode_meets_target"], True)
        self.assertTrue(s["accurate"])
        self.assertAlmostEqual(s["saving_pct_vs_compile"][8192], 100 * 100 / 5100)


class Script(unittest.TestCase):
    def test_imports_and_skips_without_pytorch(self):
        script = load("decoder_layer_under_test", EXAMPLE / "decoder_layer.py")
        args = script.parse_args(["--models", "gemma2-2b", "--tokens", "1,2048", "--context", "512"])
        self.assertEqual((args.model_names, args.token_counts, args.context), (["gemma2-2b"], [1, 2048], 512))
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            script.parse_args(["--models", "mistral"])
        if script.torch is not None:
            self.skipTest("PyTorch is installed here: the skip path is not taken")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(script.main(["--tokens", "1"]), 0)
        self.assertTrue(out.getvalue().startswith("SKIPPED: PyTorch is not importable"), out.getvalue())


if __name__ == "__main__":
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
