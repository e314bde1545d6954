"""Each μop's latency on each core: the third step of a partition (scheme → tilings →
dependencies → **costs** → instance; :mod:`npusched.partition.api`).

A layer cut by a product tiling has at most two tile lengths per dimension, so at most 16 tile
shapes (Klotski Fig. 5); the cost model (:func:`npusched.costmodel.cost_model`: the analytic
roofline, ZigZag, or the PE array's compute steps alone) is asked once per layer, distinct shape
and distinct core, and the answers are broadcast to the μops.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from npusched.arch.model import CoreSpec
from npusched.costmodel import CostModel, TileShape
from npusched.partition.build import Layout
from npusched.partition.grid import IntArray, Tiling
from npusched.workload.layers import Layer


def core_kinds(cores: Sequence[CoreSpec]) -> tuple[list[CoreSpec], IntArray]:
    """The distinct ``cores`` (equal up to id, name and place) and each core's kind."""
    kinds: list[CoreSpec] = []
    of = []
    for c in cores:
        for k, other in enumerate(kinds):
            if _same(c, other):
                of.append(k)
                break
        else:
            of.append(len(kinds))
            kinds.append(c)
    return kinds, np.array(of, dtype=np.int64)


def _same(a: CoreSpec, b: CoreSpec) -> bool:
    from dataclasses import replace

    return replace(a, id=0, name="", coord=None, cluster=None) == replace(
        b, id=0, name="", coord=None, cluster=None
    )


def layer_latencies(
    layer: Layer, t: Tiling, kinds: Sequence[CoreSpec], model: CostModel
) -> IntArray:
    """``(t.size, len(kinds))`` cycles of each tile of ``layer`` (in :meth:`Tiling.index` order)
    on each core kind under ``model``: one cost-model call per distinct tile shape and kind."""
    lengths = [np.unique(t.lengths(d), return_inverse=True) for d in range(4)]
    shape = tuple(v.size for v, _ in lengths)
    out = np.empty((t.size, len(kinds)), dtype=np.int64)
    for kind, core in enumerate(kinds):
        per = np.empty(shape, dtype=np.int64)
        for idx in np.ndindex(*shape):
            lk, ly, lx, lc = (int(lengths[d][0][i]) for d, i in enumerate(idx))
            per[idx] = model.latency(TileShape.of(layer, lk, ly, lx, lc), core)
        out[:, kind] = per[np.ix_(*(inv for _, inv in lengths))].reshape(-1)
    return out


def latency_table(layout: Layout, cores: Sequence[CoreSpec], model: CostModel) -> IntArray:
    """``(n, m)`` cycles of every μop on each of ``cores`` under ``model``."""
    kinds, of = core_kinds(cores)
    table = np.empty((layout.n, len(kinds)), dtype=np.int64)
    for layer in layout.net.layers:
        table[layout.uops(layer.name)] = layer_latencies(
            layer, layout.tilings[layer.name], kinds, model
        )
    return table[:, of]
