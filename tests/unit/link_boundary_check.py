#!/usr/bin/env python3
"""No product target links a testing library: checked on the link lines Ninja runs (BUILD_DIR/build.ninja).

    link_boundary_check.py BUILD_DIR [--programs a,b,...]     (ctest: unit.LinkBoundary.*)
    link_boundary_check.py --self-test

A testing library is a library target of this build with a source under a folder named testing/ or tests/
(or a name containing "testing"), or GoogleTest/GoogleMock. A product target is an executable in bin/
that is not a test (a *_test binary) and not test tooling (a program whose own sources live under a
testing/, tests/, fuzz/ or bench/ folder: the fuzz targets, the benches), or a loadable
module (the Python extension). A product links what its link line names: every static library of the
link closure (CMake lists them all), and what each shared library on it links in turn.
--programs: the programs the build installs into bin/ (RINGMASTER_PROGRAMS); each must be found in
build.ninja, so a change in how the link lines read cannot make this check pass by seeing nothing.

Exit 0: none does; 1: the offending product targets and libraries, one line each; 2: bad use or a
build.ninja this script cannot read.
"""

import os
import re
import sys

LINK_RULE = re.compile(
    r"^(?:C|CXX)_(EXECUTABLE_LINKER|STATIC_LIBRARY_LINKER|SHARED_LIBRARY_LINKER|"
    r"MODULE_LIBRARY_LINKER|SHARED_MODULE_LINKER)__"
)
TEST_FOLDERS = {"testing", "tests"}
TOOLING_FOLDERS = TEST_FOLDERS | {"fuzz", "bench"}
TEST_FRAMEWORKS = re.compile(r"(^|/)lib(gtest|gtest_main|gmock|gmock_main)(d)?\.(a|so)(\.[0-9.]+)?$")


class Target:
    def __init__(self, name, kind, output, objects, links):
        self.name, self.kind, self.output, self.objects, self.links = name, kind, output, objects, links

    def source_paths(self):
        """Each object's source as a path in the tree ("worker-runtime/testing/multiprocess.cc")."""
        out = []
        for obj in self.objects:
            marker = "CMakeFiles/" + self.name + ".dir/"
            if marker not in obj:
                continue
            binary_dir, rel = obj.split(marker, 1)
            rel = "/".join(".." if part == "__" else part for part in rel.split("/"))
            out.append(os.path.normpath(os.path.join(binary_dir, rel[:-2] if rel.endswith(".o") else rel)))
        return out

    def lives_under(self, folders):
        return any(folders & set(path.split(os.sep)[:-1]) for path in self.source_paths())


def parse_ninja(text):
    """The link steps of a build.ninja: {output path: Target}."""
    text = re.sub(r"\$\n\s*", "", text)  # continuation lines
    targets = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("build "):
            continue
        head, _, rest = line[len("build ") :].partition(": ")
        rule, _, inputs = rest.partition(" ")
        m = LINK_RULE.match(rule)
        if not m:
            continue
        variables = {}
        for var in lines[i + 1 :]:
            if not var.startswith("  "):
                break
            key, _, value = var.strip().partition(" = ")
            variables[key] = value
        object_dir = variables.get("OBJECT_DIR", "")
        name = object_dir.rsplit("/", 1)[-1][: -len(".dir")] if object_dir.endswith(".dir") else ""
        if not name:
            continue
        explicit = inputs.split(" | ")[0].split(" || ")[0].split()
        output = variables.get("TARGET_FILE") or head.split()[0]
        kind = {"EXECUTABLE_LINKER": "executable", "STATIC_LIBRARY_LINKER": "static"}.get(m.group(1), "shared")
        if m.group(1) in ("MODULE_LIBRARY_LINKER", "SHARED_MODULE_LINKER"):
            kind = "module"
        links = [t for t in variables.get("LINK_LIBRARIES", "").split() if not t.startswith("-")]
        targets[output] = Target(name, kind, output, [o for o in explicit if o.endswith(".o")], links)
    return targets


def is_testing_library(target):
    return "testing" in target.name or target.lives_under(TEST_FOLDERS)


def is_product(target):
    if target.kind == "module":
        return not target.lives_under(TOOLING_FOLDERS)
    return (
        target.kind == "executable"
        and target.output.startswith("bin/")
        and not target.name.endswith("_test")
        and not target.lives_under(TOOLING_FOLDERS)
    )


def closure(target, targets):
    """Every file the target's link pulls in: its link line, and the link lines of the shared libraries on it."""
    seen, todo = [], list(target.links)
    while todo:
        item = todo.pop(0)
        if item in seen:
            continue
        seen.append(item)
        linked = targets.get(item)
        if linked is not None and linked.kind in ("shared", "module"):
            todo.extend(linked.links)
    return seen


def violations(targets):
    """(product name, library name, why) for each testing library a product links; the products checked."""
    found, products = [], sorted((t for t in targets.values() if is_product(t)), key=lambda t: t.name)
    for product in products:
        for item in closure(product, targets):
            library = targets.get(item)
            if library is not None and is_testing_library(library):
                found.append((product.name, library.name, ", ".join(library.source_paths()) or "named *testing*"))
            elif library is None and TEST_FRAMEWORKS.search(item):
                found.append((product.name, os.path.basename(item), "the test framework"))
    return found, products


def check(build_dir, programs):
    path = os.path.join(build_dir, "build.ninja")
    try:
        with open(path) as f:
            targets = parse_ninja(f.read())
    except OSError as e:
        print(f"link boundary: cannot read {path}: {e}", file=sys.stderr)
        return 2
    names = {t.name for t in targets.values()}
    missing = [p for p in programs if p not in names]
    if missing or not targets:
        print(
            f"link boundary: no link step found in {path} for: {', '.join(missing) or 'any target'} "
            "(has the Ninja generator's format changed? see tests/unit/link_boundary_check.py)",
            file=sys.stderr,
        )
        return 2
    found, products = violations(targets)
    testing = sorted(t.name for t in targets.values() if t.kind != "executable" and is_testing_library(t))
    if found:
        for product, library, why in found:
            print(f"link boundary: product target {product} links testing library {library} ({why})")
        print(
            "link boundary: a shipped program must not link test support; move what it needs into a product "
            "library with a product name (see worker-runtime/runtime/local_ranks.h)"
        )
        return 1
    print(
        f"link boundary: {len(products)} product targets ({', '.join(t.name for t in products)}) link none of "
        f"the {len(testing)} testing libraries ({', '.join(testing)})"
    )
    return 0


SELF_TEST_NINJA = """
build lib/libringmaster_store.a: CXX_STATIC_LIBRARY_LINKER__ringmaster_store_RelWithDebInfo w/CMakeFiles/ringmaster_store.dir/store/store.cc.o
  OBJECT_DIR = w/CMakeFiles/ringmaster_store.dir
build lib/libringmaster_ranks_testing.a: CXX_STATIC_LIBRARY_LINKER__ringmaster_ranks_testing_RelWithDebInfo w/CMakeFiles/ringmaster_ranks_testing.dir/testing/ranks.cc.o
  OBJECT_DIR = w/CMakeFiles/ringmaster_ranks_testing.dir
build lib/libringmaster_pods.a: CXX_STATIC_LIBRARY_LINKER__ringmaster_pods_RelWithDebInfo tests/CMakeFiles/ringmaster_pods.dir/pods/pods.cc.o
  OBJECT_DIR = tests/CMakeFiles/ringmaster_pods.dir
build bin/ringmaster-perf: CXX_EXECUTABLE_LINKER__ringmaster-perf_RelWithDebInfo w/tools/CMakeFiles/ringmaster-perf.dir/perf.cc.o | lib/libringmaster_store.a
  LINK_LIBRARIES = lib/libringmaster_store.a  -ldl
  OBJECT_DIR = w/tools/CMakeFiles/ringmaster-perf.dir
  TARGET_FILE = bin/ringmaster-perf
build bin/store_test: CXX_EXECUTABLE_LINKER__store_test_RelWithDebInfo w/CMakeFiles/store_test.dir/store/store_test.cc.o
  LINK_LIBRARIES = lib/libringmaster_ranks_testing.a  lib/libringmaster_store.a  /usr/lib/libgtest.a
  OBJECT_DIR = w/CMakeFiles/store_test.dir
  TARGET_FILE = bin/store_test
build bin/ringmaster-pod-runner: CXX_EXECUTABLE_LINKER__ringmaster-pod-runner_RelWithDebInfo tests/CMakeFiles/ringmaster-pod-runner.dir/pods/main.cc.o
  LINK_LIBRARIES = lib/libringmaster_pods.a
  OBJECT_DIR = tests/CMakeFiles/ringmaster-pod-runner.dir
  TARGET_FILE = bin/ringmaster-pod-runner
build python/_native.so: CXX_MODULE_LIBRARY_LINKER___native_RelWithDebInfo w/python/CMakeFiles/_native.dir/native/module.cc.o
  LINK_LIBRARIES = lib/libringmaster_store.a
  OBJECT_DIR = w/python/CMakeFiles/_native.dir
  TARGET_FILE = python/_native.so
"""  # noqa: E501  (ninja's lines as CMake writes them)


def self_test():
    """The check on a made-up build: clean as written; each bad link added is named."""
    clean = parse_ninja(SELF_TEST_NINJA)
    found, products = violations(clean)
    assert not found, found
    assert [t.name for t in products] == ["_native", "ringmaster-perf"], [t.name for t in products]
    bad = SELF_TEST_NINJA.replace(
        "LINK_LIBRARIES = lib/libringmaster_store.a  -ldl",
        "LINK_LIBRARIES = lib/libringmaster_ranks_testing.a  lib/libringmaster_store.a  -ldl",
    )
    bad = bad.replace(
        "  LINK_LIBRARIES = lib/libringmaster_store.a\n  OBJECT_DIR = w/python",
        "  LINK_LIBRARIES = lib/libringmaster_store.a  /usr/lib/x86_64-linux-gnu/libgmock.a\n  OBJECT_DIR = w/python",
    )
    found, _ = violations(parse_ninja(bad))
    assert [(program, lib) for program, lib, _ in found] == [
        ("_native", "libgmock.a"),
        ("ringmaster-perf", "ringmaster_ranks_testing"),
    ], found
    print(
        "link boundary self-test: a clean build passes; ringmaster-perf linking ringmaster_ranks_testing and "
        "_native linking libgmock.a are both named"
    )
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--programs"):
        print(__doc__, file=sys.stderr)
        return 2
    programs = [p for p in argv[3].split(",") if p] if len(argv) == 4 else []
    return check(argv[1], programs)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
