"""TF1's SessionRunHook that broadcasts the initial state: BroadcastGlobalVariablesHook."""

import tensorflow as tf

from .functions import broadcast_global_variables


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """Broadcasts every global variable from `root_rank` once the session is created (after the
    variables are initialized or restored from a checkpoint), so every rank starts from the same state.
    For tf.compat.v1.train.MonitoredTrainingSession(hooks=[...])."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.bcast_op = None

    def begin(self):
        if self.bcast_op is None or self.bcast_op.graph != tf.compat.v1.get_default_graph():
            with tf.device(self.device):
                self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)
