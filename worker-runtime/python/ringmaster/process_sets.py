"""Horovod's process sets, elastic.

Two kinds, as in Horovod: sets given to `init(process_sets=[...])` are *static* — the runtime re-creates
them by rule in every membership generation (the ranks each generation has), so they survive scale-ups,
scale-downs and failures; sets added later with `add_process_set` are *dynamic* and belong to the
generation they were made in: a membership change removes them (using one then raises a ValueError that
says so) and the program adds them again after the reset, on every rank alike.
"""

from ringmaster import _context


class ProcessSet:
    """A subset of the world's ranks that runs its own collectives (`process_set=` on every op)."""

    def __init__(self, ranks):
        self.ranks = sorted(int(r) for r in ranks)
        if len(set(self.ranks)) != len(self.ranks):
            raise ValueError(f"process set ranks {ranks!r} repeat a rank")
        self.process_set_id = None
        self._static_index = None  # position in init(process_sets=...), when static
        self._generation = None  # the generation a dynamic set was made in

    def _check(self, ctx):
        if self.process_set_id is None:
            raise ValueError(f"{self!r} is not registered: pass it to init(process_sets=...) or add_process_set()")
        if self._static_index is None and self._generation != ctx.topology["generation"]:
            raise ValueError(
                f"{self!r} was removed by the membership change to generation "
                f"{ctx.topology['generation']}: add it again after the reset, or declare it in "
                "init(process_sets=...) so it is re-created in every generation"
            )
        return self.process_set_id

    def _recreate(self, ctx):
        if self._static_index is None:
            return
        try:
            self.process_set_id = ctx.session.rule_process_set(f"static:{self._static_index}")
            self.ranks = list(ctx.session.process_set_ranks(self.process_set_id))
        except ValueError:  # none of its ranks exists in this generation
            self.process_set_id = -1
            self.ranks = []

    def size(self):
        return len(self.ranks)

    def included(self):
        return _context.context().topology["rank"] in self.ranks

    def rank(self):
        """This process's rank inside the set (None when it is not a member)."""
        me = _context.context().topology["rank"]
        return self.ranks.index(me) if me in self.ranks else None

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


class _GlobalProcessSet(ProcessSet):
    def __init__(self):
        super().__init__([])
        self.process_set_id = 0

    def _check(self, ctx):
        return 0

    @property
    def ranks(self):
        if not _context.is_initialized():
            return []
        return list(range(_context.context().topology["size"]))

    @ranks.setter
    def ranks(self, value):
        pass

    def __repr__(self):
        return "global_process_set"


global_process_set = _GlobalProcessSet()


def static_sets_variable(process_sets):
    """RINGMASTER_PROCESS_SETS for init(process_sets=[...]): "0,2;1,3"."""
    for i, ps in enumerate(process_sets):
        if not isinstance(ps, ProcessSet) or ps is global_process_set:
            raise ValueError("init(process_sets=...) takes ProcessSet objects (not the global set)")
        if not ps.ranks:
            raise ValueError(f"process set #{i} has no ranks")
        ps._static_index = i
    return ";".join(",".join(str(r) for r in ps.ranks) for ps in process_sets)


def add_process_set(process_set):
    """Adds a dynamic set (a ProcessSet or a list of ranks); every rank must call it, in the same order."""
    ctx = _context.context()
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    size = ctx.topology["size"]
    bad = [r for r in ps.ranks if r < 0 or r >= size]
    if bad or not ps.ranks:
        raise ValueError(f"process set ranks {ps.ranks} must be non-empty and within the world of {size}")
    ps.process_set_id = ctx.session.add_process_set(ps.ranks)
    ps._generation = ctx.topology["generation"]
    return ps


def remove_process_set(process_set):
    """Removes a dynamic set on every rank. Returns True when it was registered."""
    ctx = _context.context()
    if process_set is global_process_set or process_set.process_set_id is None:
        return False
    if process_set._static_index is not None:
        raise ValueError("a set given to init(process_sets=...) lives for the whole job and cannot be removed")
    if process_set._generation == ctx.topology["generation"]:
        ctx.session.remove_process_set(process_set.process_set_id)
    process_set.process_set_id = None
    return True
