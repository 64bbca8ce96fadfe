"""Horovod's process sets (shared by every framework's API: ringmaster/process_sets.py)."""

from ringmaster.process_sets import (
    ProcessSet,
    add_process_set,
    global_process_set,
    remove_process_set,
    static_sets_variable,
)

__all__ = ["ProcessSet", "add_process_set", "global_process_set", "remove_process_set", "static_sets_variable"]
