#!/usr/bin/env python3
"""Every C++ file of the tree is formatted as .clang-format at the root says.

    cpp_format_check.py SOURCE_DIR --clang-format CLANG_FORMAT      (ctest: unit.CppFormat.ClangFormat)

CLANG_FORMAT: the pinned clang-format that `make deps` installs into build/venv
(worker-runtime/python/requirements-dev.txt). Before the tree, the check formats a made-up folder holding one
misformatted file and one clean file, and fails unless clang-format names the misformatted one alone: a
clang-format that no longer reports what it finds cannot make this check pass.

Exit 0: clean; 1: the files that are not formatted, with the command that formats them;
2: bad use, no clang-format, or clang-format could not run.
"""

import os
import shutil
import subprocess
import sys
import tempfile

CONFIG = ".clang-format"
SUFFIXES = (".h", ".cc", ".cpp", ".hpp", ".cu")
SKIPPED_DIRS = {".git", "__pycache__", ".cache"}
BATCH = 100  # files per clang-format call


def tree_cpp_files(root):
    """The tree's C++ files: git's (tracked, and untracked but not ignored), else every one outside build trees."""
    patterns = ["*" + s for s in SUFFIXES]
    proc = subprocess.run(
        ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *patterns],
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        return sorted(p for p in proc.stdout.split("\0") if p and os.path.isfile(os.path.join(root, p)))
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not (folder == root and d.startswith("build"))]
        found.extend(os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(SUFFIXES))
    return sorted(found)


def unformatted(clang_format, root, files):
    """The files among `files` (relative to root) that clang-format would change; raises RuntimeError when
    clang-format could not run."""
    style = "--style=file:" + os.path.join(root, CONFIG)
    failing = set()
    for i in range(0, len(files), BATCH):
        batch = files[i : i + BATCH]
        proc = subprocess.run(
            [clang_format, style, "--dry-run", "--Werror", *batch],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode == 0:
            continue
        named = {f for f in batch if f + ":" in proc.stderr}
        if not named:
            tail = proc.stderr[-2000:]
            raise RuntimeError(f"clang-format failed (exit {proc.returncode}) and named no file:\n{tail}")
        failing |= named
    return sorted(failing)


def self_test(clang_format, root):
    """clang-format on a made-up tree must name the misformatted file and only it."""
    with tempfile.TemporaryDirectory(prefix="cpp-format-self-test.") as scratch:
        shutil.copy(os.path.join(root, CONFIG), os.path.join(scratch, CONFIG))
        files = {
            "clean.cc": "int Answer() { return 42; }\n",
            "misformatted.cc": "int   Answer( ) {return 42 ;}\n",
        }
        for name, text in files.items():
            with open(os.path.join(scratch, name), "w") as f:
                f.write(text)
        got = unformatted(clang_format, scratch, sorted(files))
    if got != ["misformatted.cc"]:
        raise RuntimeError(f"self-test: clang-format should name misformatted.cc alone, named {got}")


def main(argv):
    if len(argv) != 4 or argv[2] != "--clang-format":
        print(__doc__, file=sys.stderr)
        return 2
    root, clang_format = os.path.abspath(argv[1]), os.path.abspath(argv[3])
    if not os.access(clang_format, os.X_OK):
        print(f"C++ format: {clang_format} not found: run `make deps` (it installs the pinned clang-format)")
        return 2
    try:
        self_test(clang_format, root)
        files = tree_cpp_files(root)
        failing = unformatted(clang_format, root, files)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"C++ format: {e}")
        return 2
    version = subprocess.run([clang_format, "--version"], capture_output=True, text=True).stdout.strip()
    if not failing:
        print(f"C++ format: {len(files)} files are formatted ({version}, {CONFIG})")
        return 0
    for path in failing:
        print(f"{path}: not formatted (clang-format would change it)")
    named = " ".join(failing) if len(failing) <= 10 else "$(git ls-files '*.h' '*.cc')"
    print(
        f"C++ format: {len(failing)} of {len(files)} files are not formatted ({version}, {CONFIG})\n"
        f"  fix: {clang_format} -i {named}   (in {root})"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
