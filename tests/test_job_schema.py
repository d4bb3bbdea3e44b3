"""The job schema is declared once (palgym.sim.jobs.JobColumns): the table, the state's
bundle and the trace's columns all follow it."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from palgym.sim.jobs import (
    FLOAT_COLUMNS,
    INITIAL_VALUES,
    INT_COLUMNS,
    TRACE_COLUMNS,
    JobColumns,
    JobTable,
)
from palgym.sim.state import job_columns
from palgym.sim.types import JobStatus
from palgym.sim.workload import Trace


def _trace() -> Trace:
    return Trace.from_columns("t", job_id=[7, 3], submit_time_s=[0.0, 5.0], num_gpus=[1, 4],
                              total_iterations=[10.0, 20.0], iteration_time_s=[1.0, 2.0],
                              model=["resnet50", "bert"])


def test_every_column_is_either_the_traces_or_has_an_initial_value() -> None:
    assert set(TRACE_COLUMNS).isdisjoint(INITIAL_VALUES)
    assert set(TRACE_COLUMNS) | set(INITIAL_VALUES) == set(JobColumns._fields)
    trace_fields = {f.name for f in dataclasses.fields(Trace)}
    assert set(TRACE_COLUMNS) <= trace_fields


def test_a_fresh_table_holds_the_trace_and_the_initial_values() -> None:
    table = JobTable(_trace())
    for name in TRACE_COLUMNS:
        assert np.array_equal(getattr(table, name), getattr(_trace(), name)), name
    for name, value in INITIAL_VALUES.items():
        np.testing.assert_array_equal(getattr(table, name), np.full(2, value), err_msg=name)
    assert table.status.dtype == np.int8 and table.status[0] == JobStatus.PENDING
    for name in FLOAT_COLUMNS:
        assert getattr(table, name).dtype == np.float64, name
    for name in INT_COLUMNS:
        assert getattr(table, name).dtype == np.int64, name


def test_the_columns_are_views_of_the_blocks_and_survive_growth_and_copies() -> None:
    table = JobTable(_trace())
    table.waiting_s[1] = 3.0
    assert table.float_columns[FLOAT_COLUMNS.index("waiting_s"), 1] == 3.0
    for copies in range(20):  # past the first growth (capacity 2 -> 18 -> 36)
        table.append_copy(copies % 2, 100 + copies, 10.0 + copies)
    assert table.size == 22 and table.capacity >= 22
    assert table.waiting_s[1] == 3.0 and table.job_id[21] == 119 and table.num_gpus[21] == 4
    assert table.priority[21] == INITIAL_VALUES["priority"]
    twin = copy.deepcopy(table)
    twin.waiting_s[1] = 4.0
    assert twin.float_columns[FLOAT_COLUMNS.index("waiting_s"), 1] == 4.0
    assert table.waiting_s[1] == 3.0
    bundle = job_columns(table)
    assert all(getattr(bundle, name) is getattr(table, name) for name in JobColumns._fields)
