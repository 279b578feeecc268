"""mlbridge.limits: the one size budget every peer-declared size meets."""

from __future__ import annotations

import threading

import pytest

from mlbridge.errors import CodecError
from mlbridge.limits import MAX_TENSORS, BudgetError, MemoryBudget, check_schema
from mlbridge.tensor_spec import TensorSpec


def test_check_schema_sums_and_names_the_offender():
    specs = [TensorSpec("a", "float", (3,)), TensorSpec("b", "uint64_t", (2,))]
    assert check_schema(specs, 28, "x") == 28
    assert check_schema(specs, 29, "x", extra=1) == 29
    with pytest.raises(BudgetError, match="tensor 'b' declares 16 bytes"):
        check_schema(specs, 15, "handshake")
    with pytest.raises(BudgetError, match="together"):
        check_schema(specs, 27, "handshake")
    assert issubclass(BudgetError, CodecError)


def test_check_schema_bounds_the_tensor_count():
    specs = [TensorSpec(f"t{i}", "uint8_t", (0,)) for i in range(MAX_TENSORS + 1)]
    with pytest.raises(BudgetError, match="tensors declared"):
        check_schema(specs, 1 << 20, "header")


def test_memory_budget_reserves_atomically():
    budget = MemoryBudget(100)
    budget.reserve(60, "s1")
    with pytest.raises(BudgetError, match="s2: needs 50 bytes.*40 of 100"):
        budget.reserve(50, "s2")
    assert budget.used == 60
    budget.release(60)
    threads = [threading.Thread(target=budget.reserve, args=(1, "t")) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.used == 100
    with pytest.raises(ValueError):
        MemoryBudget(-1)
