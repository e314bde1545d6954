"""Calling ZigZag (for :class:`~npusched.costmodel.zigzag.ZigZagCost`): one evaluation of a
tile's layer on an accelerator description, as Stream 2.1.1 runs it (:func:`attempt`), its
failures as data, and a forked process stopped at a time limit (:func:`run_within`)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

from npusched.common.terminate import die_with_parent

FIELDS = (
    "latency_total2",
    "latency_total1",
    "ideal_cycle",
    "ideal_temporal_cycle",
    "stall_slack_comb",
    "data_onloading_cycle",
    "data_offloading_cycle",
    "mac_spatial_utilization",
)
"""The numbers of ZigZag's cost model evaluation kept (and cached) per tile."""

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _quiet_zigzag() -> Iterator[list[str]]:
    """ZigZag's loggers silenced (it logs per operator and mapping); the accelerator validator's
    CRITICAL messages (the reasons it rejects a description) collected in the list."""
    root = logging.getLogger("zigzag")
    check = logging.getLogger("zigzag.parser.accelerator_validator")
    saved = (root.level, root.propagate, check.level, check.propagate)
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler = Collect(logging.CRITICAL)
    root.setLevel(logging.CRITICAL + 1)
    root.propagate = False
    check.setLevel(logging.CRITICAL)
    check.propagate = False
    check.addHandler(handler)
    try:
        yield messages
    finally:
        check.removeHandler(handler)
        root.level, root.propagate, check.level, check.propagate = saved


_MODULES = (
    "zigzag.cost_model.cost_model",
    "zigzag.mapping.temporal_mapping",
    "zigzag.parser.accelerator_factory",
    "zigzag.parser.accelerator_validator",
    "zigzag.parser.workload_factory",
    "zigzag.stages.evaluation.cost_model_evaluation",
    "zigzag.stages.main",
    "zigzag.stages.mapping.salsa",
    "zigzag.stages.mapping.spatial_mapping_generation",
    "zigzag.stages.mapping.temporal_mapping_generator_stage",
    "zigzag.stages.results.reduce_stages",
)
"""ZigZag's modules :func:`evaluate` uses."""


def preload() -> None:
    """Import ZigZag's modules in this process (~1 s, once), so that forked calls do not each
    import them again."""
    import importlib

    for name in _MODULES:
        importlib.import_module(name)


def evaluate(
    acc: dict[str, Any], layer: dict[str, Any], mapping: dict[str, Any], engine: str, lpf_limit: int
) -> dict[str, Any]:
    """One ZigZag evaluation: the fields :data:`FIELDS` of its best (least ``latency_total2``)
    cost model evaluation, and its mappings as text. Raises what ZigZag raises; a description
    its validator rejects raises ``_Rejected``."""
    import random

    from zigzag.cost_model.cost_model import CostModelEvaluation
    from zigzag.mapping.temporal_mapping import TemporalMappingType
    from zigzag.parser.accelerator_factory import AcceleratorFactory
    from zigzag.parser.accelerator_validator import AcceleratorValidator
    from zigzag.parser.workload_factory import LayerNodeFactory
    from zigzag.stages.evaluation.cost_model_evaluation import CostModelStage
    from zigzag.stages.main import MainStage
    from zigzag.stages.mapping.salsa import SalsaStage
    from zigzag.stages.mapping.spatial_mapping_generation import SpatialMappingGeneratorStage
    from zigzag.stages.mapping.temporal_mapping_generator_stage import (
        TemporalMappingGeneratorStage,
    )
    from zigzag.stages.results.reduce_stages import MinimalLatencyStage

    with _quiet_zigzag() as critical:
        validator = AcceleratorValidator(json.loads(json.dumps(acc)))
        if not validator.validate():
            raise _Rejected("; ".join(critical) or "invalid accelerator")
        accelerator = AcceleratorFactory(validator.normalized_data).create()
        temporal = SalsaStage if engine == "salsa" else TemporalMappingGeneratorStage
        random.seed(0)  # SALSA's annealing
        stages: list[Any] = [
            MinimalLatencyStage,
            SpatialMappingGeneratorStage,
            MinimalLatencyStage,
            temporal,
            CostModelStage,
        ]

        plain = {k: v for k, v in layer.items() if k != "cycles_per_op"}

        def node() -> Any:
            return LayerNodeFactory(json.loads(json.dumps(plain)), [mapping]).create()

        def fill(mix: bool) -> int:
            after: list[Any] = [CostModelStage]
            gen = SpatialMappingGeneratorStage(after, accelerator=accelerator, layer=node(),
                                               nb_mappings_generated=1,
                                               enable_mix_spatial_mapping_generation=mix)
            return int(next(gen.generate_spatial_mappings()).hw_utilization)

        cmes: list[Any] = []
        failure: Exception | None = None
        for mix in (False, True) if not mapping["spatial_mapping"] else (False,):
            if mix and cmes and fill(True) <= fill(False):
                break  # a mixed mapping fills no more of the array (Stream's test)
            try:
                (cme, _), *_ = MainStage(
                    stages,
                    layer=node(),
                    accelerator=accelerator,
                    loma_lpf_limit=lpf_limit,
                    loma_show_progress_bar=False,
                    nb_mappings_generated=1,
                    enable_mix_spatial_mapping_generation=mix,
                    temporal_mapping_type=TemporalMappingType.UNEVEN,  # ZigZag's api default
                    access_same_data_considered_as_no_access=True,  # as ZigZag's api sets it
                    salsa_opt_criterion="latency",
                    salsa_iteration_number=1000,
                    salsa_number_of_core=1,
                ).run()
            except Exception as err:  # noqa: BLE001 - the other kind may still cost it
                failure = err
                continue
            cmes.append(cme)
        if not cmes:
            assert failure is not None
            raise failure
        cme = min(cmes, key=_steady)
        if layer.get("cycles_per_op", 1) > 1:  # Stream's increase_cc_per_op
            cme = CostModelEvaluation(
                accelerator=cme.accelerator, layer=cme.layer, spatial_mapping=cme.spatial_mapping,
                spatial_mapping_int=cme.spatial_mapping_int,
                temporal_mapping=cme.temporal_mapping,
                access_same_data_considered_as_no_access=True,
                cycles_per_op=layer["cycles_per_op"])  # fmt: skip
    out: dict[str, Any] = {f: float(getattr(cme, f)) for f in FIELDS}
    out["systolic_drain_cycle"] = float(getattr(cme, "systolic_drain_cycle", 0.0) or 0.0)
    out["spatial_mapping"] = str(cme.layer.spatial_mapping)
    out["temporal_mapping"] = str(cme.temporal_mapping)
    return out


def _steady(cme: Any) -> float:
    """Cycles a tile keeps its core busy: on a systolic array the next tile enters behind it,
    so its results draining out overlap that tile (Stream 2.1.1's ``steady_latency``)."""
    return float(cme.latency_total2) - float(getattr(cme, "systolic_drain_cycle", 0.0) or 0.0)


class _Rejected(Exception):
    """ZigZag's validator rejects the accelerator description."""


def attempt(
    acc: dict[str, Any], layer: dict[str, Any], mapping: dict[str, Any], engine: str, lpf_limit: int
) -> tuple[str, Any]:
    """:func:`evaluate` with its failures as data (they cross a process boundary):
    ``("ok", fields)`` or ``("error", (kind, message))``; kind ``no_loop_ordering``,
    ``invalid`` (the validator), ``AssertionError``, ``KeyError`` (a description ZigZag
    rejects) or ``failed`` (anything else)."""
    try:
        return "ok", evaluate(acc, layer, mapping, engine, lpf_limit)
    except _Rejected as err:
        return "error", ("invalid", str(err))
    except (AssertionError, KeyError) as err:
        return "error", (type(err).__name__, str(err) or repr(err))
    except Exception as err:  # noqa: BLE001 - reported to the caller as data
        if type(err).__name__ == "NoValidLoopOrderingFoundException":
            return "error", ("no_loop_ordering", str(err).split(". ")[0])
        return "error", ("failed", f"{type(err).__name__}: {err}")


def _send(conn: Any, fn: Callable[[], Any]) -> None:
    die_with_parent()
    try:
        conn.send(fn())
    except BaseException as err:  # noqa: BLE001 - the parent sees a dead process
        logger.debug("ZigZag process failed: %r", err)
    finally:
        conn.close()


def run_within(fn: Callable[[], Any], time_limit: float) -> tuple[str, Any]:
    """``fn()`` in a forked process stopped at ``time_limit`` seconds: ``("done", value)``,
    ``("time", None)`` or ``("died", None)``. (``npusched.solvers.common.run_within`` does the
    same for solvers; the cost models sit below the solvers and may not import it.) In a
    daemonic process (a Dask worker), which may not start processes, ``fn`` runs in place."""
    import multiprocessing as mp

    if mp.current_process().daemon:
        return "done", fn()
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_send, args=(child, fn))  # not daemonic: SALSA starts workers
    proc.start()
    child.close()
    try:
        if not parent.poll(time_limit):
            return "time", None
        return "done", parent.recv()
    except EOFError:
        return "died", None
    finally:
        proc.terminate()
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        parent.close()
