"""MeshRule against the operator's world-size granularity (spec.replicas.multipleOf, given to workers as
RINGMASTER_REPLICAS_MULTIPLE_OF): one warning, naming both values and what to set, when tp does not divide it."""

from ringmaster.torch.elastic.mesh import MeshRule, multiple_of_warning


def test_no_warning_when_tp_divides_the_multiple_or_without_an_operator():
    assert multiple_of_warning(MeshRule(tp=2), {"RINGMASTER_REPLICAS_MULTIPLE_OF": "2"}) is None
    assert multiple_of_warning(MeshRule(tp=2), {"RINGMASTER_REPLICAS_MULTIPLE_OF": "4"}) is None
    assert multiple_of_warning(MeshRule(tp=1), {"RINGMASTER_REPLICAS_MULTIPLE_OF": "1"}) is None
    assert multiple_of_warning(MeshRule(tp=2), {}) is None  # ringmaster-run: no operator, nothing to check


def test_warning_names_both_values_and_the_value_to_set():
    got = multiple_of_warning(MeshRule(tp=2), {"RINGMASTER_REPLICAS_MULTIPLE_OF": "1"})
    assert got is not None
    assert "MeshRule(tp=2)" in got and "spec.replicas.multipleOf is 1" in got, got
    assert "set spec.replicas.multipleOf to 2" in got, got
    got = multiple_of_warning(MeshRule(tp=4), {"RINGMASTER_REPLICAS_MULTIPLE_OF": "6"})
    assert "set spec.replicas.multipleOf to 12" in got, got  # the least multiple of both


def test_an_unreadable_value_is_named():
    got = multiple_of_warning(MeshRule(tp=2), {"RINGMASTER_REPLICAS_MULTIPLE_OF": "two"})
    assert got == "RINGMASTER_REPLICAS_MULTIPLE_OF='two' is not an integer; ignored"
