#!/usr/bin/env python3
"""Every .py file of the tree passes `ruff check` and `ruff format --check` (the rules of ruff.toml at the root).

    python_lint_check.py SOURCE_DIR --ruff RUFF      (ctest: unit.PythonLint.RuffCheckAndFormat)

RUFF: the pinned ruff that `make deps` installs into build/venv (worker-runtime/python/requirements-dev.txt).
Before the tree, the check runs the same two commands on a made-up folder holding one misformatted file and
one with an unused import, and fails unless ruff names both: a ruff that no longer reports what it finds
cannot make this check pass. It also fails when a .py file of the tree is not among the files ruff checks
(a folder ruff skips by default, such as dist/, or an exclude added to the configuration).

Exit 0: clean; 1: the files that fail, each with what ruff says, and the command that fixes the format;
2: bad use, no ruff, or ruff could not run.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

CONFIG = "ruff.toml"
# `ruff check|format --check --output-format concise`: "path:line:col: CODE message", "path:line:col: unformatted: ...".
DIAGNOSTIC = re.compile(r"^(.+?):\d+:\d+: ")
SKIPPED_DIRS = {".git", "__pycache__", ".cache", ".ruff_cache"}


def run_ruff(ruff, root, *args):
    """(exit status, stdout lines, stderr) of `ruff ARGS .` in root, without ruff's cache in the tree."""
    proc = subprocess.run([ruff, *args, "--no-cache", "."], cwd=root, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


def relative(root, path):
    return os.path.relpath(os.path.join(root, path), root)


def findings(ruff, root):
    """{file: [what ruff says]} for the files under root that fail the lint rules or are not formatted; raises
    RuntimeError when ruff could not run (exit 2, a bad configuration)."""
    failing = {}
    status, lines, stderr = run_ruff(ruff, root, "check", "--output-format", "concise")
    if status not in (0, 1):
        raise RuntimeError(f"`ruff check` failed to run (exit {status}):\n{stderr}")
    for line in lines:
        m = DIAGNOSTIC.match(line)
        if m:
            failing.setdefault(relative(root, m.group(1)), []).append(line[len(m.group(1)) :])
    if status == 1 and not failing:
        raise RuntimeError("`ruff check` failed but named no file:\n" + "\n".join(lines) + stderr)
    status, lines, stderr = run_ruff(ruff, root, "format", "--check", "--output-format", "concise")
    if status not in (0, 1):
        raise RuntimeError(f"`ruff format --check` failed to run (exit {status}):\n{stderr}")
    reformat = sorted({relative(root, m.group(1)) for m in map(DIAGNOSTIC.match, lines) if m})
    if status == 1 and not reformat:
        raise RuntimeError("`ruff format --check` failed but named no file:\n" + "\n".join(lines) + stderr)
    for path in reformat:
        failing.setdefault(path, []).append(": not formatted (ruff format would change it)")
    return failing


def tree_python_files(root):
    """The tree's .py files: git's (tracked, and untracked but not ignored), else every one outside build trees."""
    proc = subprocess.run(
        ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.py"],
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        return {p for p in proc.stdout.split("\0") if p and os.path.isfile(os.path.join(root, p))}
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not (folder == root and d.startswith("build"))]
        found.update(os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".py"))
    return found


def checked_files(ruff, root):
    status, lines, stderr = run_ruff(ruff, root, "check", "--show-files")
    if status != 0:
        raise RuntimeError(f"`ruff check --show-files` failed (exit {status}):\n{stderr}")
    return {relative(root, line.strip()) for line in lines if line.strip().endswith(".py")}


def self_test(ruff, root):
    """ruff on a made-up tree with one file of each fault must name exactly those two."""
    with tempfile.TemporaryDirectory(prefix="python-lint-self-test.") as scratch:
        shutil.copy(os.path.join(root, CONFIG), os.path.join(scratch, CONFIG))
        files = {
            "clean.py": 'import os\n\nprint(os.sep, "clean")\n',
            "misformatted.py": "x = {  'a':1 }\nprint( x )\n",
            "unused_import.py": "import os\n",
        }
        for name, text in files.items():
            with open(os.path.join(scratch, name), "w") as f:
                f.write(text)
        got = findings(ruff, scratch)
    if sorted(got) != ["misformatted.py", "unused_import.py"] or not any("F401" in s for s in got["unused_import.py"]):
        raise RuntimeError(f"self-test: ruff should name misformatted.py and unused_import.py (F401), named {got}")


def main(argv):
    if len(argv) != 4 or argv[2] != "--ruff":
        print(__doc__, file=sys.stderr)
        return 2
    root, ruff = os.path.abspath(argv[1]), os.path.abspath(argv[3])
    if not os.access(ruff, os.X_OK):
        print(f"python lint: {ruff} not found: run `make deps` (it installs the pinned ruff into build/venv)")
        return 2
    try:
        self_test(ruff, root)
        checked = checked_files(ruff, root)
        missed = sorted(tree_python_files(root) - checked)
        failing = findings(ruff, root)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        print(f"python lint: {e}")
        return 2
    for path in missed:
        failing.setdefault(path, []).append(f": not checked by ruff: include it in {CONFIG} (or stop excluding it)")
    version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip()
    if not failing:
        print(f"python lint: {len(checked)} files pass `ruff check` and `ruff format --check` ({version}, {CONFIG})")
        return 0
    for path in sorted(failing):
        for what in failing[path]:
            print(f"{path}{what}")
    names = ", ".join(sorted(failing))
    print(
        f"python lint: {len(failing)} of {len(checked)} files fail ({version}, {CONFIG}): {names}\n"
        f"  fix: {ruff} format . && {ruff} check --fix .   (in {root}; what remains is fixed by hand)"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
