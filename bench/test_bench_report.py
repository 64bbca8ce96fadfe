"""The bench report (bench_report.py) on hand-written JSONs (testdata/): the verdicts against the goals, the rows
of benches that did not run or left a figure out, and both plots as real PNGs. ctest: unit.bench_report."""

import os
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_report  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def table_rows(text):
    """{(bench, figure): row cells} of the report's Markdown table."""
    rows = {}
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith("| bench "):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[(cells[0], cells[1])] = cells
    return rows


@pytest.fixture
def report(tmp_path, capsys):
    data = tmp_path / "bench"
    shutil.copytree(os.path.join(HERE, "testdata"), data)
    assert bench_report.main(["--dir", str(data)]) == 0
    printed = capsys.readouterr().out
    summary = (data / "summary.md").read_text()
    return data, summary, printed


def verdict(rows, bench, figure):
    assert (bench, figure) in rows, f"no row {bench!r} / {figure!r} in {sorted(rows)}"
    return rows[(bench, figure)][6]


def test_verdicts_follow_the_goals(report):
    _, summary, _ = report
    rows = table_rows(summary)
    assert verdict(rows, "runtime", "worker death -> next allreduce, 8 ranks (median)") == "met"  # 85 <= 100
    assert verdict(rows, "runtime", "communicator phase vs bare Gloo connect, 8 ranks (median)") == "NOT met"  # 2x
    assert verdict(rows, "runtime", "worker death -> next allreduce, 2 ranks (median)") == "-"  # no goal
    assert verdict(rows, "operator", "pod failure -> new generation, p50") == "met"  # 42 <= 50
    assert verdict(rows, "operator", "pod failure -> new generation, p99") == "NOT met"  # 300 > 250
    assert verdict(rows, "checkpoint", "checkpoint save (write, fsync, commit), 256 MiB (median)") == "met"  # 0.9
    assert verdict(rows, "checkpoint", "checkpoint restore into touched, unaligned, 256 MiB (median)") == "NOT met"


def test_values_ratio_and_load(report):
    _, summary, _ = report
    row = table_rows(summary)[("runtime", "communicator phase vs bare Gloo connect, 8 ranks (median)")]
    assert row[2:6] == ["20.0 ms", "10.0 ms (bare Gloo connect)", "2.00x", "<= 1.5x Gloo"]
    assert row[7] == "4.25"  # the figure's own load, 1 minute
    row = table_rows(summary)[("checkpoint", "checkpoint save (write, fsync, commit), 256 MiB (median)")]
    assert row[7] == "2.00 -> 2.50"  # no load of its own: the bench's start -> end


def test_missing_value_is_not_a_verdict(report):
    _, summary, _ = report
    assert (
        verdict(table_rows(summary), "operator", "apply -> all pods Running, 10 jobs x 8 workers")
        == "n/a: no peer (--no-peer)"
    )


def test_benches_that_did_not_run_have_rows(report):
    _, summary, _ = report
    rows = table_rows(summary)
    for fid, name, _ in bench_report.CATALOG_BY_FILE["allreduce.json"]:
        assert verdict(rows, "allreduce", name) == "not run (make bench-allreduce)", fid
    assert (
        verdict(rows, "python-ddp", "DDP step time vs torch Gloo, 4x2048 MLP, 4 ranks") == "not run (make bench-python)"
    )
    assert verdict(rows, "python-recovery", "kill -9 -> next allreduce vs torchrun") == "not run (make bench-python)"
    # a run that left out a figure it is known for
    assert verdict(rows, "checkpoint", "checkpoint save vs O_DIRECT dd, 1024 MiB").startswith("not measured")
    assert verdict(rows, "operator", "operator peak RSS at 10,000 jobs x 8 workers").startswith("not measured")
    # a JSON that does not parse is named, not skipped
    assert verdict(rows, "python-fsdp", "FSDP2 step time vs torch Gloo").startswith("unreadable: ")


def test_counts_and_printed_copy(report):
    _, summary, printed = report
    assert "3 met, 3 NOT met, " in summary
    assert printed.startswith(summary)  # what it prints is what it writes, then the files' names


@pytest.mark.parametrize("name", ["recovery_phases.png", "growth.png"])
def test_plots_are_pngs(report, name):
    data, _, _ = report
    path = data / name
    assert path.exists(), name
    body = path.read_bytes()
    assert body[:8] == PNG_MAGIC
    assert len(body) > 20000, f"{name}: {len(body)} bytes, too small for a plot with data"


def test_nothing_there_still_writes_everything(tmp_path, capsys):
    assert bench_report.main(["--dir", str(tmp_path / "none")]) == 0
    summary = (tmp_path / "none" / "summary.md").read_text()
    rows = table_rows(summary)
    assert rows and all(r[6].startswith("not run (make bench-") for r in rows.values())
    for name in ("recovery_phases.png", "growth.png"):
        assert (tmp_path / "none" / name).read_bytes()[:8] == PNG_MAGIC
