"""The machine-readable side of a Python bench: what `--json PATH` writes, read by `make bench-report`
(bench/bench_report.py; bench/README.md says how to read the report). The same shape as the C++ benches'
(bench/bench_json.h):

    {"bench": "allreduce", "command": "...", "started": "...Z", "finished": "...Z", "cores": 2,
     "load_start": [1.5, 1.2, 1.1], "load_end": [...],
     "figures": [{"id": "...", "name": "...", "unit": "GB/s", "ours": 1.2, "peer": 1.0, "peer_name": "torch Gloo",
                  "ratio": 1.2, "load": "...", "note": "",
                  "goal": {"of": "ratio", "op": ">=", "bound": 1.0, "text": ">= 1.0x torch"}}, ...],
     "series": {...}}
"""

import json
import os
import shlex
import sys
import time


def _utc_now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _load():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def goal(of, op, bound, text):
    """of: "ours" or "ratio"; op: "<=" or ">="."""
    assert of in ("ours", "ratio") and op in ("<=", ">=")
    return {"of": of, "op": op, "bound": bound, "text": text}


class Report:
    def __init__(self, bench, argv=None):
        """Notes the start: time, load average, cores and the command line (sys.argv by default)."""
        argv = sys.argv if argv is None else argv
        self.doc = {
            "bench": bench,
            "command": " ".join(shlex.quote(a) for a in [sys.executable] + list(argv)),
            "started": _utc_now(),
            "cores": os.cpu_count(),
            "load_start": _load(),
            "figures": [],
            "series": {},
        }

    def figure(self, id, name, unit, ours, peer=None, peer_name="", goal=None, ratio=None, load=None, note=""):
        """One figure; ratio defaults to ours / peer when both are there. Returns it."""
        if ratio is None and ours is not None and peer:
            ratio = ours / peer
        f = {
            "id": id,
            "name": name,
            "unit": unit,
            "ours": ours,
            "peer": peer,
            "peer_name": peer_name,
            "ratio": ratio,
            "goal": goal,
        }
        if load is not None:
            f["load"] = load
        if note:
            f["note"] = note
        self.doc["figures"].append(f)
        return f

    def series(self, name):
        return self.doc["series"].setdefault(name, [])

    def write(self, path, **extra):
        """Adds the end (time, load average) and any extra top-level keys, and writes `path` (folder created;
        written whole, then renamed). None: nothing written."""
        if not path:
            return
        self.doc.update(extra)
        self.doc["finished"] = _utc_now()
        self.doc["load_end"] = _load()
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1, default=str)
            f.write("\n")
        os.replace(tmp, path)
