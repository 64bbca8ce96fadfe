"""In one process (a world of one, no launcher): what the native boundary accepts and refuses. Nothing is
copied behind the caller's back: an in-place call on a non-contiguous tensor, an unsupported dtype and
mixed dtypes are ValueErrors that say what to do; an out-of-place call on a non-contiguous tensor is
correct."""

import numpy as np
import pytest
import torch

import ringmaster.torch as hvd
from ringmaster import _native


@pytest.fixture(scope="module", autouse=True)
def world_of_one():
    hvd.init()
    yield
    hvd.shutdown()


def test_a_script_started_by_hand_is_a_world_of_one():
    assert (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(), hvd.cross_rank(), hvd.cross_size()) == (
        0,
        1,
        0,
        1,
        0,
        1,
    )


def test_the_device_of_a_cpu_world_is_the_cpu():
    assert hvd.device() == torch.device("cpu")
    assert hvd.gloo_enabled()


def test_in_place_on_a_non_contiguous_tensor_is_refused():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    before = t.clone()
    with pytest.raises(ValueError, match="not contiguous.*contiguous\\(\\)"):
        hvd.allreduce_(t)
    with pytest.raises(ValueError, match="not contiguous"):
        hvd.broadcast_(t, 0)
    assert torch.equal(t, before)


def test_out_of_place_on_a_non_contiguous_tensor_is_correct():
    t = torch.arange(12, dtype=torch.float64).reshape(3, 4).t()
    np.testing.assert_array_equal(hvd.allreduce(t, op=hvd.Sum).numpy(), t.numpy())
    np.testing.assert_array_equal(hvd.broadcast(t, 0).numpy(), t.numpy())


@pytest.mark.parametrize("dtype", [torch.bool, torch.complex64, torch.int16, torch.int8])
def test_unsupported_dtypes_are_refused_by_name(dtype):
    with pytest.raises(ValueError, match="unsupported dtype.*float32, float64"):
        hvd.allreduce(torch.ones(4, dtype=dtype))


def test_mixed_dtypes_are_refused():
    ctx = hvd._context.context()
    with pytest.raises(ValueError, match="mixed dtypes: the input is float32 and the output float64"):
        ctx.session.allreduce("mixed", torch.ones(3), torch.ones(3, dtype=torch.float64), hvd.Sum, 0, 0)


def test_in_place_really_is_in_place():
    t = torch.arange(6, dtype=torch.float32)
    ptr = t.data_ptr()
    out = hvd.allreduce_(t, op=hvd.Sum, prescale_factor=2.0)
    assert out is t and t.data_ptr() == ptr
    np.testing.assert_array_equal(t.numpy(), np.arange(6) * 2.0)


def test_a_numpy_array_goes_through_dlpack_too():
    a = np.arange(5, dtype=np.int64)
    ctx = hvd._context.context()
    out = np.zeros_like(a)
    ctx.session.allreduce("numpy", a, out, hvd.Sum, 0, 0).wait()
    np.testing.assert_array_equal(out, a)


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="unknown reduce op"):
        hvd.allreduce(torch.ones(2), op=42)
    with pytest.raises(ValueError, match="Adasum"):
        hvd.allreduce(torch.ones(2), op=hvd.Adasum)
    with pytest.raises(ValueError, match="root_rank 3 is not a member"):
        hvd.broadcast(torch.ones(2), 3)
    with pytest.raises(ValueError, match="unknown or already synchronized handle"):
        hvd.synchronize(12345)
    with pytest.raises(ValueError, match="splits"):
        hvd.alltoall(torch.ones(4), splits=[1, 1])


def test_requires_grad_tensors_work():
    w = torch.ones(3, requires_grad=True)
    np.testing.assert_array_equal(hvd.allreduce(w, op=hvd.Sum).numpy(), np.ones(3))


def test_collective_aborted_is_horovods_internal_error():
    assert hvd.HorovodInternalError is _native.CollectiveAborted
    assert issubclass(hvd.HorovodInternalError, RuntimeError)


def test_a_global_batch_given_where_horovod_has_shuffle_says_what_to_do():
    # ElasticSampler(dataset, shuffle=True, seed=0) is Horovod's form; the global batch is batch_size=
    with pytest.raises(TypeError, match="batch_size=<the global batch> by keyword"):
        hvd.elastic.ElasticSampler(list(range(10)), 64)
