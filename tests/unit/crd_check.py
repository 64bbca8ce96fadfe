#!/usr/bin/env python3
"""The TrainingJob CRD is what its generator makes of its input, every property described, bounds and CEL agreeing.

    crd_check.py SOURCE_DIR      (ctest: unit.Crd.GeneratedAndDescribed)

1. hack/crd/gen_crd.py regenerates the CRD from hack/crd/trainingjob.crd.in.yaml into a temporary file, which must
   equal crds/ringmaster.io_trainingjobs.yaml (else: run `make crd`). The generator needs the Kubernetes OpenAPI
   document that `make deps` puts in the Go module cache; without it the check fails naming `make deps`.
2. Every property of the checked-in CRD's schema has a description (the root's metadata aside: the apiserver
   allows nothing but its type there); the failure names each one.
3. Where a CEL rule bounds an integer field (`self.x >= N`, `self.x <= N`, also `self >= N` on the field), the
   field's minimum/maximum say the same.
Before that, the same functions run on made-up inputs that each must fail (a stale copy, an undescribed
property, a misspelled field beside the generator's marker, a bound CEL and schema disagree on, a missing
OpenAPI document), so that a check that stopped finding anything cannot pass.

Runs with a Python that has PyYAML (Debian's python3-yaml, which make deps installs). Exit 0: all hold; 1: what
fails, named; 2: a missing prerequisite (PyYAML, the OpenAPI document), named with what installs it.
"""

import difflib
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CRD = "crds/ringmaster.io_trainingjobs.yaml"
GENERATOR = "hack/crd/gen_crd.py"
# A CEL rule that is one integer comparison of a field (or of the field the rule sits on) with a constant.
BOUND_RULE = re.compile(r"^\s*self(?:\.(\w+))?\s*(>=|<=|>|<)\s*(-?\d+)\s*$")


def load_generator(root):
    spec = importlib.util.spec_from_file_location("gen_crd", root / GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stale_diff(checked_in, generated):
    """The unified diff (at most 60 lines) from the checked-in CRD to the generated one; empty when equal."""
    if checked_in == generated:
        return []
    diff = difflib.unified_diff(checked_in.splitlines(), generated.splitlines(), CRD, "generated", lineterm="", n=1)
    return list(diff)[:60]


def bound_disagreements(schema, path="", out=None):
    """'path: ...' for every integer bound a CEL rule states that the schema's minimum/maximum do not."""
    out = [] if out is None else out
    props = schema.get("properties", {})
    for v in schema.get("x-kubernetes-validations", []):
        m = BOUND_RULE.match(v.get("rule", ""))
        if not m:
            continue
        field, op, n = m.group(1), m.group(2), int(m.group(3))
        target = props.get(field) if field else schema
        where = f"{path}.{field}" if field else path
        if target is None:
            out.append(f"{where}: the rule `{v['rule']}` names a field the schema lacks")
            continue
        key, want = {">=": ("minimum", n), ">": ("minimum", n + 1), "<=": ("maximum", n), "<": ("maximum", n - 1)}[op]
        if target.get(key) != want:
            out.append(f"{where}: the rule `{v['rule']}` says {key} {want}, the schema {key} {target.get(key)}")
    for name, sub in props.items():
        bound_disagreements(sub, f"{path}.{name}" if path else name, out)
    for key, suffix in (("items", "[]"), ("additionalProperties", "{}")):
        if isinstance(schema.get(key), dict):
            bound_disagreements(schema[key], path + suffix, out)
    return out


def self_test(gen, root, openapi, version, yaml):
    """Messages for each made-up bad input the checks fail to catch; empty when all are caught."""
    missed = []
    crd_text = (root / CRD).read_text()
    if not stale_diff(crd_text, crd_text + "# an edit made by hand\n"):
        missed.append("a CRD edited by hand was not found stale")
    made_up = {"properties": {"a": {"description": "x", "properties": {"b": {"type": "string"}}}, "metadata": {}}}
    if gen.undescribed_properties(made_up) != ["a.b"]:
        missed.append(f"undescribed properties of a made-up schema: {gen.undescribed_properties(made_up)} != ['a.b']")
    bad_bounds = {
        "properties": {"n": {"type": "integer", "minimum": 0, "description": "x"}},
        "x-kubernetes-validations": [{"rule": "self.n >= 1"}],
    }
    if len(bound_disagreements(bad_bounds)) != 1:
        missed.append("a CEL bound (self.n >= 1) beside minimum 0 was not found")
    input_text = (root / "hack/crd/trainingjob.crd.in.yaml").read_text()
    for what, edit, wanted in (
        (
            "an undescribed property",
            ("        properties:\n", "        properties:\n          undocumented: {type: string}\n"),
            "undocumented",
        ),
        (
            "a misspelled template field",
            ("                      restartPolicy:\n", "                      restartPolicyy:\n"),
            "restartPolicyy",
        ),
    ):
        bad = input_text.replace(*edit, 1)
        if bad == input_text:
            missed.append(f"self-test: could not make {what} in the input (its layout changed?)")
            continue
        try:
            gen.generate(bad, openapi, version)
            missed.append(f"the generator accepted {what}")
        except gen.GenError as e:
            if wanted not in str(e):
                missed.append(f"the generator refused {what} without naming {wanted}: {e}")
    proc = subprocess.run(
        [
            sys.executable,
            str(root / GENERATOR),
            "--openapi",
            "/nonexistent/api__v1_openapi.json",
            "--output",
            "/dev/null",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 2 or "make deps" not in proc.stderr:
        missed.append(f"a missing OpenAPI document: exit {proc.returncode}, not 2 naming make deps: {proc.stderr}")
    return missed


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = Path(argv[0]).resolve()
    gen = load_generator(root)
    try:
        yaml = gen.load_yaml_module()
    except gen.MissingPrerequisite as e:
        print(f"crd_check: error: {e}", file=sys.stderr)
        return 2
    version = gen.kubernetes_version()
    openapi = gen.default_openapi_path(version)
    if not openapi.is_file():
        print(
            f"crd_check: error: the Kubernetes {version} OpenAPI document is missing ({openapi}) -- run make deps",
            file=sys.stderr,
        )
        return 2

    failures = [f"self-test: {m}" for m in self_test(gen, root, openapi, version, yaml)]

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ringmaster.io_trainingjobs.yaml"
        proc = subprocess.run(
            [sys.executable, str(root / GENERATOR), "--output", str(out)], capture_output=True, text=True, timeout=120
        )
        if proc.returncode == 2:
            print(f"crd_check: error: {proc.stderr.strip()}", file=sys.stderr)
            return 2
        if proc.returncode != 0:
            failures.append(f"{GENERATOR} failed (exit {proc.returncode}):\n{proc.stderr.strip()}")
        else:
            diff = stale_diff((root / CRD).read_text(), out.read_text())
            if diff:
                failures.append(
                    f"{CRD} is not what {GENERATOR} makes of hack/crd/trainingjob.crd.in.yaml -- run make crd "
                    "(an edit made to the CRD itself belongs in the input):\n" + "\n".join(diff)
                )

    doc = yaml.safe_load((root / CRD).read_text())
    for name, schema in gen.crd_schemas(doc):
        missing = gen.undescribed_properties(schema)
        if missing:
            failures.append(f"{CRD} {name}: {len(missing)} properties without a description: " + ", ".join(missing))
        for d in bound_disagreements(schema):
            failures.append(f"{CRD} {name}: {d}")

    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"{CRD}: generated from its input, every property described, CEL bounds and schema agreeing")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
