#!/usr/bin/env python3
"""One table of every benchmark figure against its goal, and plots: `make bench-report` (the end of `make bench`).

    build/venv/bin/python bench/bench_report.py [--dir build/bench] [--out DIR]

Reads the JSONs the benches' --json wrote into --dir (bench/bench_json.h and bench/bench_json.py describe the
shape), prints one Markdown table -- figure, ours, peer, ratio, goal, met / NOT met, the load average it was
measured at -- and writes it to <out>/summary.md, with <out>/recovery_phases.png (the runtime bench's median phases
per rank count, bare Gloo's connect beside them) and <out>/growth.png (the operator's growth rows against the job
count, with a linear reference). A bench whose JSON is missing shows as "not run (make bench-X)" rows; a figure a
bench is known for but did not write, as "not measured". How to read it: bench/README.md. Exit status 0 whatever
the verdicts (a report, not a test); 2 on a bad command line.
"""

import argparse
import json
import os
import sys

# Every bench: its JSON, the make target that writes it, and the figures with goals it is expected to write
# (id, name, goal), so that a bench that did not run, or a figure it left out, still has its row.
CATALOG = [
    (
        "operator.json",
        "make bench-operator",
        [
            # 10,000 jobs x 8 workers, Kubeflow at 1,000 in the same run
            ("operator.failure_generation.p99", "pod failure -> new generation, p99", "p99 <= 100 ms, every job live"),
            ("operator.requests_per_job", "API requests per job", "<= 12 per job"),
            ("operator.peak_rss", "operator peak RSS at 10,000 jobs x 8 workers", "<= 64 MiB at 10,000 jobs"),
            ("operator.request_rate", "API request rate achieved vs its client's limit", "-"),
        ],
    ),
    (
        "runtime.json",
        "make bench-runtime",
        [
            ("runtime.total.8", "worker death -> next allreduce, 8 ranks (median)", "<= 30 ms at 8 ranks"),
            ("runtime.total.32", "worker death -> next allreduce, 32 ranks (median)", "<= 150 ms at 32 ranks"),
            ("runtime.comm_vs_gloo.8", "communicator phase vs bare Gloo connect, 8 ranks (median)", "<= 1.5x Gloo"),
        ],
    ),
    (
        "agreement.json",
        "make bench-runtime",
        [
            (f"agreement.cost.{n}", f"commit agreement's cost per step, {n} ranks, 10 ms step", "<= 1 % of the step")
            for n in (2, 4, 8)
        ],
    ),
    (
        "runtime-nccl-emulated.json",
        "make bench-runtime",
        [
            ("runtime.nccl.total.8", "worker death -> next allreduce, 8 ranks (median) (NCCL, CPU emulation)", "-"),
        ],
    ),
    (
        "checkpoint.json",
        "make bench-checkpoint",
        [
            (f"checkpoint.{mib}MiB.{op}", f"checkpoint {words} vs O_DIRECT dd, {mib} MiB", ">= 0.8x dd")
            for mib in (256, 1024)
            for op, words in (
                ("save", "save"),
                ("restore_into_touched_4k_aligned", "restore into touched, 4K-aligned memory"),
                ("restore_into_touched_unaligned", "restore into touched, unaligned memory"),
                ("restore_into_fresh_memory", "restore into fresh memory"),
            )
        ],
    ),
    (
        "allreduce.json",
        "make bench-allreduce",
        [
            (
                "allreduce.worst",
                "allreduce algbw vs torch Gloo, lowest ratio over 2-8 ranks x 1M-256M (default, bit-identical)",
                ">= 1.2x torch in every cell",
            ),
            ("allreduce.8.256M", "allreduce algbw, 8 ranks, 256M (median)", ">= 1.2x torch"),
            (
                "allreduce.bcube.worst",
                "allreduce algbw vs torch Gloo, lowest ratio over 2-8 ranks x 1M-256M (bcube)",
                "-",
            ),
            (
                "allreduce.bcube-tcp.worst",
                "allreduce algbw vs torch Gloo, lowest ratio over 2-8 ranks x 1M-256M (bcube-tcp)",
                "-",
            ),
            ("allreduce.fusion", "1000 x 4K allreduces fused vs unfused", ">= 10x faster"),
        ],
    ),
    (
        "python-recovery.json",
        "make bench-python",
        [
            ("python.recovery.torchrun", "kill -9 -> next allreduce vs torchrun", "-"),
            ("python.recovery.torchft", "kill -9 -> next allreduce vs torchft", "-"),
            (
                "python.recovery.floor",
                "SIGKILL -> reaped, an idle process that imported torch (the floor of any recovery)",
                "-",
            ),
        ],
    ),
    (
        "python-ddp.json",
        "make bench-python",
        [
            ("python.ddp.2", "DDP step time vs torch Gloo, 4x2048 MLP, 2 ranks", "<= 0.9x Gloo"),
            ("python.ddp.4", "DDP step time vs torch Gloo, 4x2048 MLP, 4 ranks", "<= 0.9x Gloo"),
            ("python.ddp.2.hidden.ringmaster", "DDP over ringmaster: communication hidden, 2 ranks", "-"),
            ("python.ddp.4.hidden.ringmaster", "DDP over ringmaster: communication hidden, 4 ranks", "-"),
            ("python.ddp.2.hidden.gloo", "DDP over torch Gloo: communication hidden, 2 ranks", "-"),
            ("python.ddp.4.hidden.gloo", "DDP over torch Gloo: communication hidden, 4 ranks", "-"),
        ],
    ),
    (
        "python-fsdp.json",
        "make bench-python",
        [
            ("python.fsdp", "FSDP2 step time vs torch Gloo", "<= 1.0x Gloo"),
        ],
    ),
]

CATALOG_BY_FILE = {name: expected for name, _, expected in CATALOG}

MET, NOT_MET = "met", "NOT met"


def fmt_number(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def fmt_value(v, unit):
    return "-" if v is None else f"{fmt_number(v)} {unit}".strip()


def verdict(figure):
    """MET, NOT_MET, "-" (no goal) or "n/a" (the value the goal is about is missing)."""
    goal = figure.get("goal")
    if not goal:
        return "-"
    value = figure.get(goal["of"])
    if value is None:
        return "n/a"
    ok = value <= goal["bound"] if goal["op"] == "<=" else value >= goal["bound"]
    return MET if ok else NOT_MET


def one_minute(load):
    """The 1-minute load average of a "1.0 2.0 3.0" string or a [1.0, 2.0, 3.0] list; None if unknown."""
    if isinstance(load, str):
        load = load.split()
    try:
        return float(load[0])
    except (TypeError, ValueError, IndexError):
        return None


def bench_load(doc):
    start, end = one_minute(doc.get("load_start")), one_minute(doc.get("load_end"))
    if start is None and end is None:
        return "?"
    return f"{fmt_number(start)} -> {fmt_number(end)}"


def rows_for(name, target, expected, doc, error):
    """The table's rows of one bench: [bench, figure, ours, peer, ratio, goal, verdict, load]."""
    bench = os.path.splitext(name)[0]
    if doc is None:
        why = f"not run ({target})" if error is None else f"unreadable: {error}"
        return [[bench, fig, "-", "-", "-", goal, why, "-"] for _, fig, goal in expected]
    rows, seen = [], set()
    for f in doc.get("figures", []):
        seen.add(f.get("id"))
        unit = f.get("unit", "")
        peer = fmt_value(f.get("peer"), unit)
        if f.get("peer") is not None and f.get("peer_name"):
            peer += f" ({f['peer_name']})"
        ratio = "-" if f.get("ratio") is None else f"{f['ratio']:.2f}x"
        goal = (f.get("goal") or {}).get("text", "-")
        v = verdict(f)
        if f.get("note"):
            v = f["note"] if v == "-" else f"{v}: {f['note']}"
        load = one_minute(f.get("load"))
        rows.append(
            [
                bench,
                f.get("name", f.get("id", "?")),
                fmt_value(f.get("ours"), unit),
                peer,
                ratio,
                goal,
                v,
                bench_load(doc) if load is None else fmt_number(load),
            ]
        )
    for fid, fig, goal in expected:
        if fid not in seen:
            rows.append(
                [bench, fig, "-", "-", "-", goal, f"not measured (this run of {target} left it out)", bench_load(doc)]
            )
    return rows


def load_docs(directory):
    """{json name: (doc or None, error or None)} for every bench in the catalog."""
    docs = {}
    for name, _, _ in CATALOG:
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            docs[name] = (None, None)
            continue
        try:
            with open(path) as f:
                doc = json.load(f)
            if not isinstance(doc, dict) or not isinstance(doc.get("figures", []), list):
                raise ValueError("not a bench's JSON (no figures list)")
            docs[name] = (doc, None)
        except (OSError, ValueError) as e:
            docs[name] = (None, str(e).splitlines()[0])
    return docs


def markdown_table(rows):
    header = ["bench", "figure", "ours", "peer", "ratio", "goal", "verdict", "load (1 min)"]
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def summary(docs):
    rows = []
    for name, target, expected in CATALOG:
        doc, error = docs[name]
        rows += rows_for(name, target, expected, doc, error)
    counts = {k: sum(1 for r in rows if r[6].startswith(k)) for k in (MET, NOT_MET, "not run", "not measured")}
    runs = []
    for name, _, _ in CATALOG:
        doc = docs[name][0]
        if doc is not None:
            runs.append(
                f"- {os.path.splitext(name)[0]}: {doc.get('started', '?')} to {doc.get('finished', '?')}, "
                f"{doc.get('cores', '?')} cores, load {bench_load(doc)}; `{doc.get('command', '?')}`"
            )
    text = [
        "# Benchmark report",
        "",
        "Every figure against its goal (how to read it: bench/README.md). On a shared 2-core machine a "
        "figure swings +-50% with the load, so read each verdict with its load column.",
        "",
        markdown_table(rows),
        "",
        f"{counts[MET]} met, {counts[NOT_MET]} NOT met, {counts['not run']} not run, "
        f"{counts['not measured']} not measured.",
        "",
        "Runs:",
    ] + (runs or ["- none"])
    return "\n".join(text) + "\n"


def _placeholder(plt, path, title, why):
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.axis("off")
    ax.text(0.5, 0.6, title, ha="center", va="center", fontsize=12, weight="bold")
    ax.text(0.5, 0.35, why, ha="center", va="center", fontsize=10)
    fig.savefig(path, dpi=100)
    plt.close(fig)


PHASES = [
    ("notice", "notice (kill -> record)"),
    ("detect", "detect"),
    ("rendezvous", "rendezvous"),
    ("communicator", "communicator"),
    ("restore", "restore"),
    ("first_allreduce", "1st allreduce"),
]


def plot_recovery(plt, doc, path):
    rows = ((doc or {}).get("series") or {}).get("recovery_phases") or []
    if not rows:
        _placeholder(
            plt,
            path,
            "worker death -> next allreduce, by phase",
            "not run (make bench-runtime)" if doc is None else "no phase rows in runtime.json",
        )
        return
    rows = sorted(rows, key=lambda r: r["ranks"])
    x = list(range(len(rows)))
    fig, ax = plt.subplots(figsize=(11, 5))
    bottom = [0.0] * len(rows)
    for key, label in PHASES:
        h = [r["median_ms"].get(key, 0) or 0 for r in rows]
        ax.bar([i - 0.17 for i in x], h, 0.32, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, h)]
    ax.plot(
        [i - 0.17 for i in x],
        [r["median_ms"].get("total", 0) for r in rows],
        "k_",
        markersize=22,
        mew=2,
        label="median total (each column is its own median)",
    )
    gloo = [(r.get("gloo_connect_ms") or {}).get("median") for r in rows]
    ax.bar(
        [i + 0.17 for i in x],
        [g or 0 for g in gloo],
        0.32,
        color="white",
        edgecolor="black",
        hatch="//",
        label="bare Gloo connect (ranks - 1), median",
    )
    comm = [r["median_ms"].get("comm_rank") for r in rows]
    ax.plot([i + 0.17 for i in x], comm, "rv", label="our communicator phase (slowest rank), median")
    ax.axhline(30, color="grey", linestyle=":", label="goal at 8 ranks: total <= 30 ms")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{r['ranks']} ranks\n({r.get('trials', '?')} trials)" for r in rows])
    ax.set_ylabel("ms")
    ax.set_title(f"worker death -> next allreduce, median phases (load {bench_load(doc)})")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


GROWTH = [
    ("memberships_s", "apply -> all memberships (s)", "linear"),
    ("requests_per_job", "API requests per job", "constant"),
    ("peak_rss_mib", "peak RSS (MiB)", "linear"),
    ("reconcile_p99_ms", "reconcile p99 (ms)", "linear"),
]


def plot_growth(plt, doc, path):
    rows = ((doc or {}).get("series") or {}).get("growth") or []
    if not rows:
        _placeholder(
            plt,
            path,
            "operator growth with the job count",
            "not run (make bench-operator)" if doc is None else "no growth rows in operator.json",
        )
        return
    rows = sorted(rows, key=lambda r: r["jobs"])
    jobs = [r["jobs"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, (key, label, ref) in zip(axes.flat, GROWTH):
        pts = [(j, r.get(key)) for j, r in zip(jobs, rows) if r.get(key) is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="ringmaster-operator")
        if pts:
            j0, y0 = pts[0]
            if ref == "linear":
                ys = [y0 * j / j0 for j in jobs]
                what = "linear from the smallest run"
            else:
                ys = [y0 for _ in jobs]
                what = "constant per job (linear total)"
            ax.plot(jobs, ys, "--", color="grey", label=what)
        ax.set_xlabel("jobs")
        ax.set_title(label, fontsize=10)
        top = max([p[1] for p in pts] + (ys if pts else []) + [0])
        ax.set_ylim(0, top * 1.3 if top > 0 else 1)  # room for the legend above the lines
        ax.legend(fontsize=7)
    workers = rows[0].get("workers", "?")
    fig.suptitle(
        f"ringmaster-operator growth, {workers} workers per job (load {bench_load(doc)});\n"
        "at or below the dashed reference: linear or better"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=os.path.join("build", "bench"), help="where the benches' JSONs are")
    p.add_argument("--out", default=None, help="where summary.md and the PNGs go (default: --dir)")
    args = p.parse_args(argv)
    out = args.out or args.dir
    os.makedirs(out, exist_ok=True)
    docs = load_docs(args.dir)
    text = summary(docs)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot_recovery(plt, docs["runtime.json"][0], os.path.join(out, "recovery_phases.png"))
    plot_growth(plt, docs["operator.json"][0], os.path.join(out, "growth.png"))
    print(
        f"\nwritten: {os.path.join(out, 'summary.md')}, {os.path.join(out, 'recovery_phases.png')}, "
        f"{os.path.join(out, 'growth.png')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
