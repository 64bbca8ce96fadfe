"""Rejoining the job after a membership change: the step `run` and `run_mesh` share.

A leaf of the elastic package (it imports only the package's exceptions), so both runners import it at the top.
"""

import sys

from .exceptions import WorkerRemoved


def rejoin(ctx, why):
    """Reports why this generation ended, joins the newest one (new communicators, names and process sets),
    or leaves the job with WorkerRemoved when this worker is no longer a member."""
    ctx.session.interrupted(why)
    if not ctx.session.join():
        print(f"[{ctx.session.worker_id()}] not in the newest membership: leaving the job", file=sys.stderr)
        raise WorkerRemoved()
    ctx.after_join()
