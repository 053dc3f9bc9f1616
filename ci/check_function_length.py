#!/usr/bin/env python3
"""Function length, the house guide: a function should fit on a screen (about 80 lines); past 120 it fails.

Reads the C++ and CUDA sources of engine/, results/, analysis/, experiments/ and suites/ (tests are exempt: a test
case may list its cases at length) and measures every function defined at namespace scope, from its opening line
to the closing brace in the first column (the clang-format layout the sources keep). Prints the functions over
80 lines as a guide and those over 120 as failures; exits 1 when there is one.

Usage: ci/check_function_length.py SOURCE_ROOT
"""
import os
import re
import sys

FOLDERS = ("engine", "results", "analysis", "experiments", "suites")
GUIDE, LIMIT = 80, 120
SKIP_DIRS = {"build", "__pycache__", "node_modules"}
NOT_FUNCTIONS = re.compile(r"^(namespace|struct|class|enum|union|extern|template\s*<[^>]*>\s*(struct|class)|#)")


def functions(path):
    """(first line, length, signature) of each function defined at namespace scope in the file: a line in the
    first column that opens a parameter list, whose signature (on it or the lines after, before any ';') ends in
    '{', up to the closing brace in the first column."""
    with open(path, errors="replace") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or line[0].isspace() or "(" not in line or NOT_FUNCTIONS.match(line) or line.startswith("//") \
                or "=" in line.split("(")[0]:
            i += 1
            continue
        j = i
        while j < len(lines) and j < i + 8 and not lines[j].rstrip().endswith("{") and ";" not in lines[j]:
            j += 1
        if j >= len(lines) or not lines[j].rstrip().endswith("{") or ";" in lines[j].split("//")[0]:
            i += 1
            continue
        k = j + 1
        while k < len(lines) and lines[k] != "}":
            k += 1
        yield i + 1, k - i + 1, line.strip()
        i = k + 1


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    root = sys.argv[1]
    found = []
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            for name in filenames:
                if name.endswith((".cpp", ".cu", ".h")):
                    path = os.path.join(dirpath, name)
                    for first, length, signature in functions(path):
                        if length > GUIDE:
                            found.append((length, os.path.relpath(path, root), first, signature[:100]))
    found.sort(reverse=True)
    over = [f for f in found if f[0] > LIMIT]
    for length, path, first, signature in found:
        print(f"{'FAIL' if length > LIMIT else 'long'} {length:4d} lines  {path}:{first}  {signature}")
    print(f"{len(found)} function(s) over the {GUIDE}-line guide, {len(over)} over the {LIMIT}-line limit")
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
