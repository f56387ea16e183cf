#!/usr/bin/env python3
"""Assembles the scripted LLM answers of the generator tests from readable sources.

Each answer is a folder <name>/ with the family as the LLM writes it (space.hpp, family.cuh) and meta.json
(reasoning, summary, kind). This script writes <name>.json next to the folder, the JSON object the agent
receives from the LLM: {"reasoning", "summary", "kind", "space_hpp", "family_cuh"}. Edit the folder, then run

    python3 tests/generator/data/gelu_tanh_and_mul/answers/assemble.py           # rewrite the .json files
    python3 tests/generator/data/gelu_tanh_and_mul/answers/assemble.py --check   # exit 1 if one is stale

tests/generator/derive_test.cpp checks the same (that every .json holds its folder's files).
"""
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def assemble(folder: pathlib.Path) -> str:
    meta = json.loads((folder / "meta.json").read_text())
    answer = {
        "reasoning": meta["reasoning"],
        "summary": meta["summary"],
        "kind": meta["kind"],
        "space_hpp": (folder / "space.hpp").read_text(),
        "family_cuh": (folder / "family.cuh").read_text(),
    }
    return json.dumps(answer, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = 0
    for folder in sorted(p for p in HERE.iterdir() if (p / "meta.json").is_file()):
        target = HERE / (folder.name + ".json")
        text = assemble(folder)
        if check:
            if not target.is_file() or target.read_text() != text:
                print(f"{target} is stale: run {pathlib.Path(__file__).name}", file=sys.stderr)
                stale += 1
        elif not target.is_file() or target.read_text() != text:
            target.write_text(text)
            print(f"{target} written")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
