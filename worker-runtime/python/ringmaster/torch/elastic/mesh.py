"""Elastic training on a DeviceMesh: the mesh is declared once, as a rule, and rebuilt in every generation.

    rule = hvd.elastic.MeshRule(tp=2)                 # dims ("dp", "tp"): tp fixed, dp = the rest

    def parallelize(mesh):                            # every generation, on a fresh model
        net = make_model()
        parallelize_module(net, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
        fully_shard(net, mesh=mesh["dp"])
        return net, torch.optim.SGD(net.parameters(), lr=0.05)

    state = hvd.elastic.MeshState(sampler=sampler, epoch=0)

    @hvd.elastic.run_mesh(rule, parallelize)
    def train(state):                                 # state.model, state.optimizer, state.mesh
        for state.epoch in range(state.epoch, epochs):
            state.sampler.set_epoch(state.epoch)
            for x, y in loader:
                ...; state.optimizer.step(); state.commit()
        return result                                 # what every worker's train(state) returns (rank 0's)

The rule, for a world of W workers and MeshRule(tp=T):
* The mesh is (dp = W // T, tp = T) over the worker ranks 0 .. dp*T-1, tp innermost (ranks 2k and 2k+1 are a
  tp group when T = 2), over the "ringmaster" backend. `ElasticSampler` cuts the steps for the dp replicas
  (`shard`): the workers of one tp group get the same share and one of them journals it.
* The W mod T workers above it are *standbys*: members of the job that take no part in torch.distributed.
  They receive every commit's replicated state from rank 0 (one broadcast per commit, only in generations
  that have standbys), so they hold the committed step, and take a place in the mesh when a later
  generation has room for them (a worker lost, another added).
* Under the operator, a job's `spec.replicas.multipleOf` (RINGMASTER_REPLICAS_MULTIPLE_OF) makes every world a
  multiple of it; set it to T (or a multiple of T) and no worker ever stands by. Rank 0 warns once when T
  does not divide it.
* A world below T has no mesh: the worker tells its runtime that generations below T pause
  (`require_min_size(T)`; with RINGMASTER_MIN_WORKERS below T the job would otherwise start or carry on
  there), and waits for the next generation. A world of one without a launcher (no membership source) can
  never grow: run_mesh refuses it when T > 1.

State in every generation: `parallelize(mesh)` makes a fresh model and optimizer on the new mesh; the newest
committed step is loaded into them with torch.distributed.checkpoint (DCP), which reshards on load (the dp
size that saved it may differ). Every commit saves the sharded model and optimizer state with DCP under
`<RINGMASTER_CHECKPOINT_DIR>/mesh/step-<N>-g<generation>/` before it commits the replicated part (the
sampler's cursor, epoch, other attributes) through the runtime like TorchState (peers hand that part over
after a change; the newest complete runtime checkpoint brings it back when every worker was lost), so a
committed step always has a complete DCP directory. Rank 0 keeps the newest `keep` such directories. The
checkpoint directory must be shared by the workers (a TrainingJob's spec.checkpoint volume, ringmaster-run
--checkpoint-dir). A standalone world of one without a checkpoint directory saves nothing (nothing can
ever restore it).

On rank 0, the first commit after a membership change prints how long the change took:
    FIGURE mesh-rebuild generation G: ... failure->first step T s = runtime rebuild A s (...) + mesh and
    parallelize B s + resharded restore C s + first step D s
"""

import functools
import io
import math
import os
import pickle
import re
import shutil
import sys
import time

import torch

# torch.distributed's checkpoint (DCP), DeviceMesh and DTensor modules (about a second to import) and
# ringmaster.distributed (it registers the "ringmaster" backend of torch.distributed) are imported in the
# functions that use them: only a mesh job pays for them, not every `import ringmaster.torch`.
from ringmaster import _context
from ringmaster._membership import rejoin as _rejoin
from ringmaster.exceptions import HostsUpdatedInterrupt

from ..functions import broadcast_object
from ..ops import HorovodInternalError
from .state import State

_STEP_DIR = re.compile(r"^step-(\d+)-g(\d+)$")


class MeshRule:
    """A (dp, tp) DeviceMesh for any world: tp = `tp` workers, dp = as many tp groups as the world holds.
    `names`: the mesh's dimension names. `device_type`: the DeviceMesh's ("cpu" or "cuda"; default: "cuda"
    when the runtime runs NCCL, else "cpu")."""

    def __init__(self, tp=1, names=("dp", "tp"), device_type=None):
        if int(tp) < 1:
            raise ValueError(f"MeshRule: tp must be >= 1, got {tp}")
        if len(names) != 2 or names[0] == names[1]:
            raise ValueError(f"MeshRule: names are two distinct dimension names (dp, tp), got {names}")
        self.tp = int(tp)
        self.names = tuple(names)
        self.device_type = device_type

    @property
    def min_workers(self):
        """The smallest world with a mesh."""
        return self.tp

    def layout(self, world_size):
        """(dp, tp, workers in the mesh) for a world of `world_size`; dp is 0 when it has no mesh."""
        dp = int(world_size) // self.tp
        return dp, self.tp, dp * self.tp

    def __repr__(self):
        return f"MeshRule(tp={self.tp})"


def multiple_of_warning(rule, environ):
    """The warning for a job whose world-size granularity (RINGMASTER_REPLICAS_MULTIPLE_OF, the operator's
    spec.replicas.multipleOf) is not a whole number of the rule's tp groups, else None (also when unset:
    no operator)."""
    value = environ.get("RINGMASTER_REPLICAS_MULTIPLE_OF", "")
    try:
        multiple_of = int(value)
    except ValueError:
        return None if value == "" else f"RINGMASTER_REPLICAS_MULTIPLE_OF={value!r} is not an integer; ignored"
    if multiple_of < 1 or multiple_of % rule.tp == 0:
        return None
    want = multiple_of * rule.tp // math.gcd(multiple_of, rule.tp)
    return (
        f"{rule} needs worlds in whole tp groups of {rule.tp}, but the job's spec.replicas.multipleOf is "
        f"{multiple_of} (RINGMASTER_REPLICAS_MULTIPLE_OF), so the operator may publish worlds that leave "
        f"workers standing by: set spec.replicas.multipleOf to {want} (min, max and desired multiples of it)"
    )


class MeshState(State):
    """What a mesh job keeps across membership changes: the replicated attributes given here (a sampler,
    the epoch, ...), committed through the runtime, and the model and optimizer that `run_mesh` makes in
    every generation (`model`, `optimizer`, `mesh`; None on a standby), saved sharded with DCP. `keep`:
    how many DCP step directories rank 0 keeps."""

    def __init__(self, keep=8, **kwargs):
        super().__init__(**kwargs)
        self.model = None
        self.optimizer = None
        self.mesh = None
        self._keep = max(2, int(keep))
        self._dir = None  # the DCP root (None: nothing is saved)
        self._standbys = 0  # standbys in this generation: commits are broadcast to them
        self._on_commit = None  # run_mesh's hook for its recovery figure

    # -- DCP ------------------------------------------------------------------------------------------
    def _sharded(self):
        from torch.distributed.checkpoint.state_dict import get_state_dict  # heavy: only when a mesh job saves

        model_sd, optim_sd = get_state_dict(self.model, self.optimizer)
        return {"model": model_sd, "optim": optim_sd}

    def _save_sharded(self, name):
        import torch.distributed.checkpoint as dcp  # heavy: only when a mesh job saves

        dcp.save(self._sharded(), checkpoint_id=os.path.join(self._dir, name))

    def _load_sharded(self, name):
        # Heavy: only when a mesh job restores.
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict

        path = os.path.join(self._dir, name)
        if not os.path.exists(os.path.join(path, ".metadata")):
            raise RuntimeError(
                f"the committed step's sharded state {path} is missing or incomplete (is the "
                f"checkpoint directory shared by every worker?)"
            )
        sd = self._sharded()
        dcp.load(sd, checkpoint_id=path)
        set_state_dict(self.model, self.optimizer, model_state_dict=sd["model"], optim_state_dict=sd["optim"])

    def _prune(self, newest_step):
        """Rank 0: removes DCP directories more than `keep` steps older than the newest."""
        for entry in os.listdir(self._dir):
            m = _STEP_DIR.match(entry)
            if m and int(m.group(1)) <= newest_step - self._keep:
                shutil.rmtree(os.path.join(self._dir, entry), ignore_errors=True)

    # -- Horovod's API --------------------------------------------------------------------------------
    def save(self):
        """Commits a step: the sharded state into DCP first (a mesh worker), then the replicated attributes
        through the runtime, then to the standbys."""
        ctx = _context.context()
        self._committing()
        step = ctx.session.committed_step() + 1
        dcp_name = None
        if self.model is not None and self._dir is not None:
            dcp_name = f"step-{step}-g{ctx.topology['generation']}"
            self._save_sharded(dcp_name)
        buf = io.BytesIO()
        torch.save(
            {"attrs": State._state(self)["attrs"], "dcp": dcp_name}, buf, pickle_protocol=pickle.HIGHEST_PROTOCOL
        )
        epoch, committed = self._cursor()
        data = buf.getvalue()
        ctx.session.commit(data, epoch, committed)
        if self._standbys:
            broadcast_object(("commit", data, epoch, committed), root_rank=0, name=f"mesh.commit.{step}")
        if dcp_name is not None and ctx.topology["rank"] == 0:
            self._prune(step)
        if self._on_commit is not None:
            self._on_commit()

    def restore(self):
        """Loads the newest committed step: the attributes, and on a mesh worker the sharded state (DCP,
        resharded onto this generation's mesh). False when nothing was committed yet."""
        _, _, _, data = _context.context().session.committed()
        if not data:
            return False
        saved = torch.load(io.BytesIO(data), weights_only=False)
        State._load(self, {"attrs": saved["attrs"]})
        if self.model is not None and saved.get("dcp") is not None:
            self._load_sharded(saved["dcp"])
        elif self.model is not None and self._dir is not None:
            raise RuntimeError(
                "the committed step has no sharded state (it was committed without a checkpoint "
                "directory): a mesh job needs RINGMASTER_CHECKPOINT_DIR from its start"
            )
        return True

    def sync(self):
        raise NotImplementedError(
            "a MeshState is restored from DCP, not broadcast: run_mesh saves the initial state instead"
        )

    def _stand_by(self):
        """A standby's generation: take each commit rank 0 broadcasts, until the mesh finishes (rank 0's
        result), the generation ends (the broadcast fails: HorovodInternalError), or an orderly change
        reaches its step boundary (HostsUpdatedInterrupt, as the mesh workers' commit raises it: rank 0
        broadcasts no commit past the boundary, so a standby that waited for one would stall until the
        runtime gave up waiting for the boundary)."""
        ctx = _context.context()
        while True:
            message = broadcast_object(None, root_rank=0, name=f"mesh.commit.{ctx.session.committed_step() + 1}")
            if message[0] == "done":
                return message[1]
            _, data, epoch, committed = message
            ctx.session.commit(data, epoch, committed)
            State._load(self, {"attrs": torch.load(io.BytesIO(data), weights_only=False)["attrs"]})
            self.check_host_updates()


def _build_mesh(rule, ctx):
    """This generation's torch world and DeviceMesh from the rule: (mesh, dp_rank, dp, standbys), mesh None
    on a standby."""
    # Only when a mesh job builds its mesh: DeviceMesh is heavy, and ringmaster.distributed registers the
    # "ringmaster" backend with torch.distributed (and imports ringmaster.torch, which imports this module).
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    import ringmaster.distributed as rd

    size, rank = ctx.topology["size"], ctx.topology["rank"]
    dp, tp, in_mesh = rule.layout(size)
    if dist.is_initialized():
        dist.destroy_process_group()
    _forget_dtensor_caches()
    if rank >= in_mesh:
        return None, None, dp, size - in_mesh
    rd.init_process_group(ranks=None if in_mesh == size else list(range(in_mesh)))
    device = rule.device_type or ("cuda" if ctx.session.backend() == "nccl" else "cpu")
    mesh = init_device_mesh(device, (dp, tp), mesh_dim_names=rule.names)
    return mesh, rank // tp, dp, size - in_mesh


def _forget_dtensor_caches():
    """DTensor caches its sharding decisions (output specs, which hold their DeviceMesh) and redistribute plans
    by mesh, and a DeviceMesh equals any other of the same shape: its process groups are no part of that.
    A worker whose rank moved (ranks 2 -> 1 when rank 1 is lost and a replacement brings the (2 x 2) mesh
    back) would find the earlier generation's mesh, and its tp group's name, which this generation's torch
    world does not have ("Could not resolve the process group registered under the name 4"). Forgotten at
    every rebuild."""
    # DTensor's modules are heavy: imported at a mesh job's rebuild only.
    from torch.distributed.tensor import _redistribute, debug
    from torch.distributed.tensor._sharding_prop import ShardingPropagator

    debug._clear_sharding_prop_cache()  # the Python propagation cache and the C++ fast path's
    ShardingPropagator._propagate_tensor_meta_cached.cache_clear()
    _redistribute._gen_transform_infos.cache_clear()
    _redistribute.clear_redistribute_planner_cache()


def _log(ctx, line):
    print(f"[{ctx.session.worker_id()}] {line}", file=sys.stderr, flush=True)


def run_mesh(rule, parallelize):
    """Decorates `func(state, ...)` for a MeshState: in every generation builds the mesh from `rule`, calls
    `parallelize(mesh) -> (model, optimizer)`, restores the newest committed step into them and runs func,
    again after every membership change, until it returns. Every worker returns rank 0's result."""
    if not isinstance(rule, MeshRule):
        raise TypeError(f"run_mesh takes a MeshRule, got {type(rule).__name__}")

    def decorate(func):
        @functools.wraps(func)
        def wrapper(state, *args, **kwargs):
            if not isinstance(state, MeshState):
                raise TypeError(f"run_mesh needs a MeshState, got {type(state).__name__}")
            ctx = _context.init()
            ctx.session.require_min_size(rule.min_workers)
            if ctx.session.standalone() and ctx.topology["size"] < rule.min_workers:
                raise ValueError(
                    f"{rule} needs at least {rule.min_workers} workers; this is a world of one without a "
                    f"launcher or operator (run it under ringmaster-run --np {rule.min_workers} or more)"
                )
            root = ctx.session.checkpoint_dir()
            if not root and not ctx.session.standalone():
                raise ValueError(
                    f"{rule}: elastic training on a mesh restores sharded state from DCP checkpoints and "
                    f"needs RINGMASTER_CHECKPOINT_DIR, shared by the workers (ringmaster-run "
                    f"--checkpoint-dir DIR; a TrainingJob's spec.checkpoint)"
                )
            state._dir = os.path.join(root, "mesh") if root else None
            if ctx.topology["rank"] == 0 and int(os.environ.get("RINGMASTER_MIN_WORKERS", "1")) < rule.min_workers:
                _log(
                    ctx,
                    f"{rule} needs {rule.min_workers} workers but the job's minimum (RINGMASTER_MIN_WORKERS, "
                    f"spec.replicas.min) is lower: generations below {rule.min_workers} workers pause",
                )
            warning = multiple_of_warning(rule, os.environ)
            if ctx.topology["rank"] == 0 and warning:
                _log(ctx, "warning: " + warning)
            failed_at = None
            reset = False
            while True:
                try:
                    if ctx.topology["size"] < rule.min_workers:
                        _rejoin(ctx, f"a world of {ctx.topology['size']} has no {rule} mesh")
                        continue
                    joined_at = time.perf_counter()
                    mesh, dp_rank, dp, standbys = _build_mesh(rule, ctx)
                    state.mesh, state._standbys = mesh, standbys
                    state.model, state.optimizer = parallelize(mesh) if mesh is not None else (None, None)
                    built_at = time.perf_counter()
                    for name in state._attrs:
                        value = getattr(state, name)
                        if hasattr(value, "shard"):
                            if mesh is not None:
                                value.shard(dp_rank, dp, journal=ctx.topology["rank"] % rule.tp == 0)
                            else:
                                value.shard(0, 1, journal=False)
                    if not state.restore() and mesh is not None:
                        state.save()  # nothing committed anywhere yet: the initial state is step 1 (a
                        # standby takes it from rank 0's broadcast)
                    restored_at = time.perf_counter()
                    if ctx.topology["rank"] == 0:
                        _log(
                            ctx,
                            f"generation {ctx.topology['generation']}: mesh dp={dp} x tp={rule.tp} over "
                            f"{dp * rule.tp} of {ctx.topology['size']} workers ({standbys} standing by)",
                        )
                    state._on_commit = _figure(ctx, state, failed_at, joined_at, built_at, restored_at)
                    if reset:
                        state.on_reset()
                    if mesh is None:
                        result = state._stand_by()
                    else:
                        result = func(state, *args, **kwargs)
                        if standbys:
                            # the standbys' next message: named as a commit would be
                            broadcast_object(
                                ("done", result), root_rank=0, name=f"mesh.commit.{ctx.session.committed_step() + 1}"
                            )
                    ctx.session.agree()  # the last step counts once every member (standbys too) confirmed it
                    ctx.session.finish()  # the last checkpoint is on disk before the job reports success
                    return result
                except HorovodInternalError as e:
                    failed_at = time.perf_counter()
                    _rejoin(ctx, f"collective failed: {e}")
                except HostsUpdatedInterrupt:
                    failed_at = time.perf_counter()
                    _rejoin(ctx, "membership changed")
                reset = True

        return wrapper

    return decorate


def _figure(ctx, state, failed_at, joined_at, built_at, restored_at):
    """The hook that prints the recovery figure on rank 0 at the first commit of a generation entered
    after a failure (None when there is nothing to print)."""
    if failed_at is None or ctx.topology["rank"] != 0:
        return None

    def first_commit():
        state._on_commit = None
        now = time.perf_counter()
        rb = ctx.session.last_rebuild()
        print(
            f"FIGURE mesh-rebuild generation {ctx.topology['generation']} world {ctx.topology['size']}: "
            f"failure->first step {now - failed_at:.3f} s = runtime rebuild {joined_at - failed_at:.3f} s "
            f"(detect {rb['detect']:.3f} rendezvous {rb['rendezvous']:.3f} communicator {rb['communicator']:.3f} "
            f"state {rb['restore']:.3f}) + mesh and parallelize {built_at - joined_at:.3f} s + resharded "
            f"restore {restored_at - built_at:.3f} s + first step {now - restored_at:.3f} s",
            flush=True,
        )

    return first_commit
