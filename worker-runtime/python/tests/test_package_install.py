"""Installing the ringmaster package into a venv with torch leaves every file of torch's NVIDIA wheels
byte-identical: the package depends on no nvidia-* (or cuda-*) wheel -- its module links neither NCCL nor the
CUDA runtime and loads torch's at run time -- so pip, resolving against the venv (build/venv, torch 2.15 cu13),
would install nothing but ringmaster, and the installed files hold no nvidia/ tree and no link to one.

The wheel is build/ringmaster-*.whl (`make wheel`; building it is a Release build of the native module, too
slow for a test). The declared dependencies of pyproject.toml are checked on their own too."""

import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import sysconfig
import tomllib
import zipfile

import pytest

from conftest import BIN, HERE

SITE = pathlib.Path(sysconfig.get_paths()["purelib"])
PYPROJECT = HERE.parent / "pyproject.toml"
NVIDIA = re.compile(r"^(nvidia|cuda)[-_.]", re.IGNORECASE)


def requirement_name(req):
    return re.split(r"[\s<>=!~;\[(@]", req.strip(), maxsplit=1)[0]


def torchs_nvidia_files():
    """sha256 of every file under site-packages/nvidia and of every file of an nvidia-*/cuda-* dist-info
    (their RECORDs name what pip would uninstall)."""
    roots = [SITE / "nvidia"] + sorted(p for p in SITE.glob("*.dist-info") if NVIDIA.match(p.name))
    hashes = {}
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                path = pathlib.Path(dirpath, f)
                with open(path, "rb") as fh:
                    hashes[str(path.relative_to(SITE))] = hashlib.file_digest(fh, "sha256").hexdigest()
    return hashes


@pytest.fixture(scope="module")
def torch_files():
    hashes = torchs_nvidia_files()
    assert any(p.startswith("nvidia/nccl/lib/libnccl.so") for p in hashes), (
        f"{SITE} holds no torch NCCL wheel: this test needs build/venv (make deps)"
    )
    return hashes


@pytest.fixture(scope="module")
def wheel():
    build = BIN.parent  # make wheel writes into the build tree
    wheels = sorted(build.glob("ringmaster-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.fail(f"no {build}/ringmaster-*.whl: run `make wheel` first", pytrace=False)
    return wheels[-1]


def pip(*args, timeout=300):
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def dry_run(tmp_path, *requirements):
    """What `pip install` of `requirements` into this venv would install (pip's --report), resolved offline
    against what the venv has: a requirement the venv cannot satisfy fails the resolution."""
    report = tmp_path / "report.json"
    pip("install", "--dry-run", "--no-index", "--report", str(report), *requirements)
    return {item["metadata"]["name"]: item["metadata"]["version"] for item in json.loads(report.read_text())["install"]}


def test_pyproject_declares_no_nvidia_wheel_and_its_dependencies_are_satisfied_by_torchs_venv(tmp_path, torch_files):
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert [d for d in deps if NVIDIA.match(requirement_name(d))] == [], deps
    assert dry_run(tmp_path, *deps) == {}, "the venv with torch already has everything the package needs"
    assert torchs_nvidia_files() == torch_files


def test_the_wheel_requires_no_nvidia_wheel(wheel):
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert [r for r in requires if NVIDIA.match(requirement_name(r))] == [], requires


def test_installing_the_wheel_into_torchs_venv_would_install_only_ringmaster(tmp_path, wheel, torch_files):
    would_install = dry_run(tmp_path, str(wheel))
    assert list(would_install) == ["ringmaster"], would_install
    assert torchs_nvidia_files() == torch_files


def test_the_installed_package_holds_no_nvidia_file_and_links_no_nccl_or_cudart(tmp_path, wheel, torch_files):
    target = tmp_path / "target"
    pip("install", "--no-deps", "--no-index", "--target", str(target), str(wheel))
    installed = [p.relative_to(target) for p in target.rglob("*") if p.is_file()]
    assert [p for p in installed if "nvidia" in str(p).lower()] == [], installed
    modules = [target / p for p in installed if p.parts[0] == "ringmaster" and p.name.startswith("_native")]
    assert len(modules) == 1, installed
    dynamic = subprocess.run(["readelf", "-d", str(modules[0])], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", dynamic)
    assert [n for n in needed if n.startswith(("libnccl", "libcudart", "libcuda."))] == [], needed
    assert "nvidia" not in "".join(re.findall(r"\((?:RPATH|RUNPATH)\).*\[(.*)\]", dynamic)), dynamic
    assert torchs_nvidia_files() == torch_files
