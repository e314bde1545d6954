"""Partitions of tensor programs (:class:`~npusched.workload.tensor.TensorProgram`): every op cut
into μops along its loops, with the dependencies, costs and DRAM operands of the routed machine,
the same :class:`~npusched.problem.scheduling.routed.RoutedInstance` a CNN partition gives.

**Loops.** An op's output ``[b…, M, N]`` is its iteration space: ``B`` each leading (batch,
heads) dimension, ``M`` the rows (tokens), ``N`` the columns (features); ``gemm`` and ``matmul``
add the reduction ``K``. A tiling gives each loop a tile length (:func:`tile_lengths`):

- ``stream`` (Stream's CNs, fused along tokens): ``M`` cut into ``--cn M=R`` rows (default: the
  rows shared out over the compute cores), every op of the program alike, so that row block
  ``i`` of one op feeds row block ``i`` of the next; ``N`` (``--cn N=C``) and ``B`` may be cut
  too, and ``K`` (``--cn K=L``), a ``gemm`` or ``matmul``'s reduction, into chains that carry
  partial sums as the ``klotski`` scheme's do (ours: Stream's CNs cut outer-CN loops only,
  §III-A; the cut search, :mod:`npusched.search.cuts`, tries it). Without ``N``, each op's
  columns are halved until one μop's operands and output take at most :data:`MEMORY_SHARE`
  of the largest core memory (:func:`fitting_cut`:
  a LLaMA MLP's 4 096 × 14 336 weights are cut into column blocks, as Stream's inter-core
  tiling cuts them over the cores) but a ``gemm`` or ``matmul`` not below the PE array's
  width where the cost model prices a narrower CN at :data:`FLOOR_GAIN` times the cycles per
  MAC (:func:`array_wide`), and where the narrowest CN alone exceeds it, that op's heads and
  then its rows first; an op that a reader reads row for row is then cut into at
  most that reader's rows (:func:`_fitting_tiles`), so row blocks still feed row blocks; a
  ``gemm`` numbers its CNs column block first (weight stationary, :class:`_Cut`) where that
  moves fewer bytes off chip (:func:`_weight_stationary`: its weight cannot stay on chip while
  the row blocks pass, and fetching its input again costs less); a ``transpose`` that moves
  the rows elsewhere (the heads merged back, ``[h, g, T, d] → [T, h, g, d]``) is cut along
  the tokens into its readers' row blocks (:func:`token_dim`); a ``gemm`` whose weights are
  too large for that (:func:`too_large`: one input row and one PE array width of its columns
  exceed the share) is cut into row blocks of one array width, and its CNs are *streamed*,
  Stream's ``too_large_operands``: they read their operands as they come, the weights from
  DRAM (Stream §III-E 2, off-chip fetching), and hold none of them;
- ``klotski`` (μtensors): ``--s B,M,K,N`` tiles heads, rows, reduction and columns (the CNN's
  ``h, w, ic, oc`` in that order); the ``K`` chunks of a ``gemm``/``matmul`` form a chain that
  carries partial sums (Klotski §III-B), and the last chunk writes the output.

``softmax``, ``layernorm`` and ``rmsnorm`` reduce over ``N``, which they never cut.

**Dependencies.** A μop reads, of each operand, the box its loops index (broadcast dimensions
read index 0; ``trans_b`` swaps the last two; a ``transpose`` reads its output box permuted
back; a ``slice`` the box shifted by its offset; a ``reshape`` reads the bounding box of its
output box's elements in the input, exact where rows stay whole). Its producers are the μops
whose output boxes overlap it, and an edge carries the overlap, in bytes. Program inputs,
weights and caches are DRAM tensors, one per distinct box read. A view
(:meth:`~npusched.workload.tensor.TensorProgram.is_view`) makes no μops: its readers read
through it.

**Costs.** A μop is the cost models' :class:`~npusched.costmodel.TileShape`: a ``gemm`` or
``matmul`` tile ``(b, m, k, n)`` a ``gemm`` tile of ``n`` outputs over ``k`` inputs at
``b × m`` rows (its MACs exact; a batched ``matmul`` tile over several heads counts one
head's second operand as its weights, an approximation); the other ops an element-wise ``add``
over ``b × m × n`` that reads its inputs :data:`~npusched.workload.tensor.PASSES` times, at
:func:`~npusched.costmodel.shape.cycles_per_op` cycles an element (SiLU, Exp, softmax).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from npusched.arch.model import CoreSpec
from npusched.costmodel import CostModel, TileShape
from npusched.costmodel.shape import cycles_per_op, psum_bytes
from npusched.partition.costs import core_kinds
from npusched.partition.instance import within_uops
from npusched.problem import SchedulingInstance, UopGraph
from npusched.problem.scheduling.machine_view import MachineView
from npusched.problem.scheduling.routed import DramTensor, RoutedInstance
from npusched.workload.tensor import PASSES, TensorOp, TensorProgram

LOOPS = ("B", "M", "K", "N")
MEMORY_SHARE = 0.25
"""Of the largest core memory, what one stream CN's operands and output may take when the
columns are cut automatically (the rest for the copies of its neighbours, double buffering)."""
Box = tuple[tuple[int, int], ...]


def tile_lengths(prog: TensorProgram, view: MachineView, scheme: str,
                 tiles: Mapping[str, int] | None) -> dict[str, int]:  # fmt: skip
    """The tile length of each loop (:data:`LOOPS`; 0: whole) under ``scheme`` (module
    docstring)."""
    tiles = {k.upper(): int(v) for k, v in (tiles or {}).items()}
    bad = set(tiles) - set(LOOPS)
    if bad or any(v < 1 for v in tiles.values()):
        raise ValueError(f"tensor-program tiles name loops {', '.join(LOOPS)} with lengths "
                         f">= 1; got {dict(tiles)}")  # fmt: skip
    if scheme == "stream":
        rows = max(prog.tensors[op.output].shape[-2] if len(prog.tensors[op.output].shape) > 1
                   else 1 for op in prog.ops)  # fmt: skip
        return {"M": -(-rows // view.m), **tiles}
    if scheme == "klotski":
        if set(tiles) != set(LOOPS):
            raise ValueError("the klotski scheme of a tensor program needs --s B,M,K,N")
        return tiles
    raise ValueError(f"tensor programs are cut by the stream or klotski scheme, not {scheme!r}")


def fitting_cut(prog: TensorProgram, op: TensorOp, rows: int, budget: float,
                elem: int, width: int = 1, red: int = 0) -> tuple[int, int, int]:  # fmt: skip
    """Heads, rows and columns of one CN of ``op`` at ``rows`` rows (the heads: the tile length
    of each leading dimension). Where even the narrowest CN exceeds ``budget`` bytes (its
    input rows alone, or a softmax's rows of every head: LLaMA's 32 heads × 4 096 keys), the
    heads are halved (rounded up) first, then the rows, until it does not; then ``N`` is
    halved until the CN's operands and output, ``elem`` bytes each, fit ``budget`` (one head
    and row at the least). Softmax and the norms keep their rows whole along ``N``. A CN that
    fits at its narrowest keeps its heads and rows.

    The narrowest CN is one column wide, and for a ``gemm`` or ``matmul`` ``width`` columns
    (the PE array's width, :func:`tensor_instance` gives the first core's ``K`` unroll) or
    all of them, where a narrower tile leaves PEs idle (:func:`array_wide` asks the cost
    model). The up projection of LLaMA-3-8B's MLP at bf16 on ``tpu_like_quad_core`` (a 32 × 32
    array) was cut into CNs of 43 rows × 14 columns, priced at 20 160 cycles each by the
    analytic model (122 MACs a cycle); 32 wide its rows are halved, and at 22 rows its
    narrowest CN, 28 columns, takes 2 880 (876 a cycle)."""
    shape = prog.tensors[op.output].shape
    n, k = shape[-1], _reduction(prog, op, red)
    lead = shape[:-2]
    rows = _rows(prog, op, rows)
    whole_n = op.kind in ("softmax", "layernorm", "rmsnorm")

    def need(b: int, r: int, c: int) -> int:
        per = r * k + k * c + r * c if op.kind in ("gemm", "matmul") else \
            r * c * (len(op.inputs) + 1)
        return math.prod(min(b, d) for d in lead) * per * elem

    heads = max(lead, default=1)
    one = n if whole_n else min(width, n) if op.kind in ("gemm", "matmul") else 1
    while heads > 1 and need(heads, rows, one) > budget:
        heads = -(-heads // 2)
    while rows > 1 and need(heads, rows, one) > budget:
        rows = -(-rows // 2)
    while n > one and need(heads, rows, n) > budget:
        n = max(one, -(-n // 2))
    return heads, rows, n


FLOOR_GAIN = 2.0
"""How many times the cycles per MAC of a ``gemm`` or ``matmul`` CN cut narrower than the PE
array must exceed those of the CN one array wide (its rows halved to fit) before the wide one
is taken (:func:`array_wide`). Halving a GEMM's rows fetches its weight tiles once more per
row block, at most twice the traffic, so the wide CN is worth it only where it at least halves
the cycles per MAC. LLaMA-3-8B's up projection at bf16 on ``tpu_like_quad_core``: 122 against
923 MACs a cycle by the analytic model (wide); its down projection at fp32 on ``klotski-4x4``:
16 rows × 8 columns against 8 × 16, 18.5 against 20.0 (narrow)."""

Price = Callable[[TensorOp, tuple[int, int, int]], float]
"""Cycles per MAC of a CN of an op, given as :func:`fitting_cut` gives it (heads, rows,
columns)."""


def array_wide(prog: TensorProgram, op: TensorOp, rows: int, budget: float, elem: int,
               width: int, price: Price | None, red: int = 0) -> tuple[int, int, int]:  # fmt: skip
    """:func:`fitting_cut` of ``op`` at ``rows``, no narrower than ``width`` columns where
    ``price`` says so: the array-wide cut where it takes at most :data:`FLOOR_GAIN` times
    fewer cycles per MAC than the cut one column at the least, else that cut (without
    ``price``, the array-wide cut)."""
    narrow = fitting_cut(prog, op, rows, budget, elem, red=red)
    if op.kind not in ("gemm", "matmul") or width <= 1:
        return narrow
    wide = fitting_cut(prog, op, rows, budget, elem, width, red)
    if wide == narrow or price is None or FLOOR_GAIN * price(op, wide) <= price(op, narrow):
        return wide
    return narrow


def too_large(prog: TensorProgram, op: TensorOp, budget: float, elem: int, width: int,
              red: int = 0) -> bool:  # fmt: skip
    """Whether ``op`` is a ``gemm`` whose CN of one input row and ``width`` output columns
    (the first core's PE array width, its ``K`` unroll), ``elem`` bytes an element, exceeds
    ``budget``. Cut to fit, its CNs would be narrower than the array (PEs left idle) and so
    many that the list's time grows with them: LLaMA-3-8B's down projection
    (``K = 14 336``) on ``tpu_like_quad_core`` came to 24 576 CNs of 11 rows × 4 columns, on
    ``simba`` to one row and one column a CN. Such a ``gemm`` is streamed instead (module
    docstring)."""
    if op.kind != "gemm":
        return False
    k, n = _reduction(prog, op, red), prog.tensors[op.output].shape[-1]
    c = min(width, n)
    return (k + k * c + c) * elem > budget


def _reduction(prog: TensorProgram, op: TensorOp, red: int) -> int:
    """The length of one reduction chunk of ``op`` cut into chunks of ``red`` (0: whole): its
    first operand's last dimension (the ``K`` of a ``gemm`` or ``matmul``) or less."""
    k = prog.tensors[op.inputs[0]].shape[-1]
    return min(red, k) if red > 0 else k


def _rows(prog: TensorProgram, op: TensorOp, rows: int) -> int:
    """At most ``rows`` of ``op``'s output rows (1 for a vector)."""
    shape = prog.tensors[op.output].shape
    return min(rows, shape[-2]) if len(shape) > 1 else 1


def _chunks(size: int, length: int) -> list[tuple[int, int]]:
    length = size if length <= 0 else min(length, size)
    return [(a, min(a + length, size)) for a in range(0, size, length)]


class _Cut:
    """One op's μops: the chunks of each loop, and μop ids in loop order ``(b…, m, n, k)``, row
    blocks first (fused along tokens: row block ``i`` of each op is made before row block
    ``i + 1``); with ``stationary``, a ``gemm``'s in ``(b…, n, m, k)``: the row blocks that
    read one weight tile have consecutive ids, so the lists (whose ties go by id) run them
    while the tile is on chip (:func:`tensor_instance` asks for it where that moves fewer
    bytes off chip, :func:`_weight_stationary`). In row order a LLaMA MLP's weights (352 MB
    at bf16) cross the off-chip port once per row block, 24 times on ``tpu_like_quad_core``."""

    def __init__(self, prog: TensorProgram, op: TensorOp, tiles: Mapping[str, int],
                 first: int, stationary: bool = False, tokens: int | None = None
                 ) -> None:  # fmt: skip
        out = prog.tensors[op.output].shape
        self.rank = len(out)
        whole_n = op.kind in ("softmax", "layernorm", "rmsnorm")
        lead = [_chunks(s, tiles.get("B", 0)) for s in out[:-2]]
        m = _chunks(out[-2], tiles.get("M", 0)) if self.rank > 1 else []
        n = _chunks(out[-1], 0 if whole_n else tiles.get("N", tiles.get("auto_n", 0)))
        self.out_chunks = [*lead, *([m] if self.rank > 1 else []), n]
        if tokens is not None and tokens < self.rank - 2:  # a transpose that moves the rows
            self.out_chunks = [_chunks(out[d], tiles.get("M", 0)) if d == tokens else
                               n if d == self.rank - 1 else [(0, out[d])]
                               for d in range(self.rank)]  # fmt: skip
        kdim = prog.tensors[op.inputs[0]].shape[-1] if op.kind in ("gemm", "matmul") else 1
        self.k = _chunks(kdim, tiles.get("K", 0)) if op.kind in ("gemm", "matmul") else [(0, 1)]
        self.grid = tuple(len(c) for c in self.out_chunks)
        self.length = tuple(c[0][1] - c[0][0] for c in self.out_chunks)  # regular chunks
        self.first = first
        self.n = math.prod(self.grid) * len(self.k)
        order = list(range(len(self.grid)))
        if stationary and op.kind == "gemm" and self.rank > 1:
            order[-2], order[-1] = order[-1], order[-2]
        steps, size = [0] * len(self.grid), len(self.k)
        for d in reversed(order):
            steps[d], size = size, size * self.grid[d]
        self.steps = tuple(steps)  # μops per step of each output dimension

    def uop(self, cell: tuple[int, ...], j: int) -> int:
        """The μop of output cell ``cell`` and reduction chunk ``j``."""
        return self.first + sum(c * s for c, s in zip(cell, self.steps, strict=True)) + j

    def cells(self) -> Any:
        return itertools.product(*(range(g) for g in self.grid))

    def box(self, cell: tuple[int, ...]) -> Box:
        return tuple(self.out_chunks[d][c] for d, c in enumerate(cell))


def _operand_box(prog: TensorProgram, op: TensorOp, k: int, out: Box,
                 red: tuple[int, int]) -> Box:  # fmt: skip
    """The box of ``op``'s operand ``k`` that the μop of output box ``out`` and reduction chunk
    ``red`` reads (module docstring)."""
    shape = prog.tensors[op.inputs[k]].shape
    if op.kind in ("gemm", "matmul"):
        lead = out[:-2]
        if k == 0:
            inner: Box = (out[-2], red)
        else:
            inner = (out[-1], red) if op.trans_b else (red, out[-1])
        return (*_aligned(lead, shape[:-2]), *inner)
    if op.kind == "transpose":
        return _unpermuted(op.perm, out)
    return tuple(_aligned(out, shape))


def _unpermuted(perm: tuple[int, ...], box: Box) -> Box:
    """The input box of a transpose's output ``box`` (output dimension ``i`` is input
    dimension ``perm[i]``)."""
    back = [(0, 0)] * len(box)
    for i, p in enumerate(perm):
        back[p] = box[i]
    return tuple(back)


def _aligned(box: Box, shape: tuple[int, ...]) -> list[tuple[int, int]]:
    """``box`` read by an operand of ``shape``, aligned from the right (numpy broadcasting:
    a dimension of size 1 reads index 0)."""
    box = box[len(box) - len(shape):] if len(shape) <= len(box) else box
    return [(0, 1) if s == 1 else r for r, s in zip(box, shape[len(shape) - len(box):],
                                                   strict=True)]  # fmt: skip


def _through_views(prog: TensorProgram, producer: dict[str, TensorOp], name: str,
                   box: Box) -> tuple[str, Box]:  # fmt: skip
    """Follow ``name`` back through views to the tensor that holds the data, its box mapped."""
    while name in producer and prog.is_view(producer[name]):
        op = producer[name]
        src = prog.tensors[op.inputs[0]].shape
        if op.kind == "transpose":
            box = _unpermuted(op.perm, box)
        elif op.kind == "slice":
            box = tuple((a + o, b + o) for (a, b), o in zip(box, op.offset, strict=True))
        else:
            box = _bounding(box, prog.tensors[op.output].shape, src)
        name = op.inputs[0]
    return name, box


def _bounding(box: Box, shape: tuple[int, ...], src: tuple[int, ...]) -> Box:
    """The bounding box in ``src`` of the elements of ``box`` in ``shape`` (row-major)."""
    lo = int(np.ravel_multi_index(tuple(a for a, _ in box), shape))
    hi = int(np.ravel_multi_index(tuple(b - 1 for _, b in box), shape))
    a, b = np.unravel_index(lo, src), np.unravel_index(hi, src)
    out, whole = [], False
    for d, s in enumerate(src):
        if whole:
            out.append((0, s))
        else:
            out.append((int(a[d]), int(b[d]) + 1))
            whole = a[d] != b[d]
    return tuple(out)


def _reads(cut: _Cut, box: Box, elem: int) -> list[tuple[int, int]]:
    """The edges into a reader of ``box`` from ``cut``'s μops: per producer cell whose output
    box overlaps ``box``, its last reduction chunk's μop and the bytes of the overlap. The
    cells are, per dimension, the chunks from the one holding the box's first index to the one
    holding its last (chunks are regular, so by division, whatever their number), and the
    overlap is a product over dimensions, so each dimension is walked once and the cells are
    their combinations, in the order of ``itertools.product``."""
    base, dims = cut.first + len(cut.k) - 1, []
    for (lo, hi), ln, g, chunks, step in zip(box, cut.length, cut.grid, cut.out_chunks,
                                             cut.steps, strict=True):  # fmt: skip
        if hi <= lo:
            return []
        first, last = lo // ln, min(g, -(-hi // ln))
        along = [(c * step, min(hi, chunks[c][1]) - max(lo, chunks[c][0]))
                 for c in range(first, last)]  # fmt: skip
        if len(along) == 1:  # one chunk: a constant of every cell
            base, elem = base + along[0][0], elem * along[0][1]
        else:
            dims.append(along)
    out = [(base, elem)]
    for along in dims:
        out = [(u + du, b * db) for u, b in out for du, db in along]
    return out


def _shape(prog: TensorProgram, op: TensorOp, out: Box, red: tuple[int, int]) -> TileShape:
    b = math.prod(y - x for x, y in out[:-2]) if len(out) > 2 else 1
    m = out[-2][1] - out[-2][0] if len(out) > 1 else 1
    n = out[-1][1] - out[-1][0]
    if op.kind in ("gemm", "matmul"):
        return TileShape("gemm", n, red[1] - red[0], b, m)
    fn = op.fn if op.kind == "eltwise" else op.kind
    return TileShape("add", n, 1, b, m, inputs=len(op.inputs) * PASSES[op.kind],
                     cycles_per_op=cycles_per_op(fn))


def tensor_instance(prog: TensorProgram, view: MachineView, tiles: Mapping[str, int],
                    model: CostModel, name: str, source: dict[str, Any],
                    max_uops: int | None = None) -> RoutedInstance:  # fmt: skip
    """The routed instance of ``prog`` cut by ``tiles`` on the machine ``view`` (module
    docstring); at most ``max_uops`` μops, if given
    (:func:`~npusched.partition.instance.within_uops`)."""
    elem = view.elem_bytes
    psum = psum_bytes(elem)
    producer = {op.output: op for op in prog.ops}
    cuts: dict[str, _Cut] = {}
    n = 0
    budget = MEMORY_SHARE * float(max(view.capacity))
    width = int(view.unroll.get("K", 1))
    core = view.cores[0]

    def price(op: TensorOp, cut: tuple[int, int, int]) -> float:  # one head's CN
        k = _reduction(prog, op, tiles.get("K", 0))
        shape = _shape(prog, op, ((0, cut[1]), (0, cut[2])), (0, k))
        return model.latency(shape, core) / (cut[1] * cut[2] * k)

    auto = {} if "N" in tiles else _fitting_tiles(prog, tiles, budget, elem, width, price)
    for op in prog.ops:
        if not prog.is_view(op):
            mine = {**tiles, **auto.get(op.name, {})}
            cut = _Cut(prog, op, mine, n, tokens=token_dim(prog, producer, op))
            if _weight_stationary(prog, op, cut.grid, elem, budget):
                cut = _Cut(prog, op, mine, n, stationary=True)
            cuts[op.name] = cut
            n += cuts[op.name].n
    within_uops(n, max_uops)
    src: list[int] = []
    dst: list[int] = []
    byt: list[int] = []
    layer = np.zeros(n, dtype=np.int64)
    output = np.zeros(n, dtype=np.int64)
    streamed = np.zeros(n, dtype=bool)
    for name, cut in cuts.items():
        streamed[cut.first:cut.first + cut.n] = bool(auto.get(name, {}).get("streamed"))
    shapes: list[TileShape] = [TileShape("add", 1)] * n
    dram: dict[tuple[str, Box], list[int]] = {}
    for li, op in enumerate(prog.ops):
        if op.name not in cuts:
            continue
        cut = cuts[op.name]
        for cell in cut.cells():
            out = cut.box(cell)
            for j, red in enumerate(cut.k):
                u = cut.uop(cell, j)
                layer[u] = li
                shapes[u] = _shape(prog, op, out, red)
                size = math.prod(b - a for a, b in out)
                output[u] = size * (elem if j == len(cut.k) - 1 else psum)
                if j > 0:  # the partial sums of the chunk before
                    _edge(src, dst, byt, u - 1, u, size * psum)
                for k, x in enumerate(op.inputs):
                    holder, box = _through_views(prog, producer, x,
                                                 _operand_box(prog, op, k, out, red))
                    if holder not in producer:  # an input, weight or cache: in DRAM
                        dram.setdefault((holder, box), []).append(u)
                        continue
                    for pu, data in _reads(cuts[producer[holder].name], box, elem):
                        _edge(src, dst, byt, pu, u, data)
                if op.bias:
                    dram.setdefault((op.bias, (out[-1],)), []).append(u)
                for p in op.inputs[1:] if op.kind in ("layernorm", "rmsnorm") else ():
                    dram.setdefault((p, (out[-1],)), []).append(u)
    latency = _latencies(shapes, view.cores, model)
    graph = UopGraph(latency[:, 0], np.array(src, np.int64), np.array(dst, np.int64),
                     np.array(byt, np.int64))  # fmt: skip
    identical = bool((latency == latency[:, :1]).all())
    base = SchedulingInstance(graph, view.accelerator, None if identical else latency,
                              name, source=source)  # fmt: skip
    tensors = tuple(DramTensor(f"{t}{list(box)}", math.prod(b - a for a, b in box) * elem,
                               np.array(us)) for (t, box), us in dram.items())  # fmt: skip
    return RoutedInstance(base, view.topology, dram=tensors, data_unit="bytes",
                          capacity=view.capacity, layer=layer, output=output,
                          streamed=streamed if streamed.any() else None,
                          forward=view.arch.noc.forwarding)  # fmt: skip


def _weight_stationary(prog: TensorProgram, op: TensorOp, grid: tuple[int, ...], elem: int,
                       budget: float) -> bool:  # fmt: skip
    """Whether a ``gemm`` cut into ``grid`` moves fewer bytes off chip with its column blocks
    first: a first-order count in which a tensor over ``budget`` (a CN's share of the memory)
    does not stay on chip. Row blocks first, the weight ``W`` comes again for every row block
    (``X + W·rows``); column blocks first, the input ``X`` comes again for every column block
    (``W + X·cols``); a tensor within the budget comes once."""
    if op.kind != "gemm" or len(grid) < 2:
        return False
    x, w = (prog.tensors[t].elements * elem for t in op.inputs[:2])
    by_rows = x + (w if w <= budget else w * grid[-2])
    by_cols = w + (x if x <= budget else x * grid[-1])
    return by_cols < by_rows


def _fitting_tiles(prog: TensorProgram, tiles: Mapping[str, int], budget: float,
                   elem: int, width: int = 1, price: Price | None = None
                   ) -> dict[str, dict[str, int]]:  # fmt: skip
    """Each op's automatic tiles (:func:`array_wide`, :func:`_auto_tiles`; for a ``gemm``
    that is :func:`too_large` at ``width`` columns, the program's rows, ``width`` columns and
    ``streamed``), with the rows aligned along the program (fusion along tokens): an op whose
    rows a reader reads row for row (:func:`_reads_rows`) is cut into at most that reader's
    rows, and the keys and values into at most their reader's heads (:func:`_reads_heads`).
    Without it a reader cut finer than its producer (a LLaMA down projection, whose
    ``K = 14 336`` row takes the memory) reads a slice of each of many producers, and the
    copies of those producers on its core hold what all of the core's readers read, whole
    producers
    (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.copy_data`): 2.4 MB of copies
    for one down projection CN of 229 KB on a 1 MB eyeriss core."""
    start, red = tiles.get("M", 0) or 1 << 62, tiles.get("K", 0)
    ops = [op for op in prog.ops if not prog.is_view(op)]
    streamed = {op.name for op in ops if too_large(prog, op, budget, elem, width, red)}
    rows = {op.name: _rows(prog, op, start) if op.name in streamed
            else array_wide(prog, op, start, budget, elem, width, price, red)[1]
            for op in ops}  # fmt: skip
    made = {op.output: op.name for op in ops}
    for op in reversed(ops):  # readers come after their producers
        for k, x in enumerate(op.inputs):
            if x in made and _reads_rows(prog, op, k):
                rows[made[x]] = min(rows[made[x]], rows[op.name])
    out = {op.name: {"M": rows[op.name], "auto_n": width, "streamed": 1}
           if op.name in streamed else
           _auto_tiles(prog, op, tiles,
                       array_wide(prog, op, rows[op.name], budget, elem, width, price, red))
           for op in ops}  # fmt: skip
    for op in reversed(ops):  # the heads aligned the same way (_reads_heads)
        heads = out[op.name].get("B")
        for k, x in enumerate(op.inputs):
            if heads is not None and x in made and _reads_heads(prog, op, k):
                out[made[x]]["B"] = min(out[made[x]].get("B", heads), heads)
    producer = {op.output: op for op in prog.ops}
    for op in ops:  # a transpose that moves the rows: cut into its readers' rows (token_dim)
        t = token_dim(prog, producer, op)
        if t is not None and t < len(op.perm) - 2:
            readers = _row_readers(prog, op.output)
            out[op.name]["M"] = min((rows[r] for r in readers), default=start)
    return out


def _row_readers(prog: TensorProgram, name: str) -> list[str]:
    """The ops that read tensor ``name`` row for row (:func:`_reads_rows`), through views."""
    found = []
    for op in prog.consumers()[name]:
        if prog.is_view(op):
            found += _row_readers(prog, op.output)
        else:
            found += [op.name for k, x in enumerate(op.inputs)
                      if x == name and _reads_rows(prog, op, k)]  # fmt: skip
    return found


def token_dim(prog: TensorProgram, producer: Mapping[str, TensorOp], op: TensorOp
              ) -> int | None:  # fmt: skip
    """The dimension of a ``transpose``'s output that holds the rows (tokens) of the op
    output its input's data comes from (:func:`_row_dim`), ``None`` for other ops or where it
    cannot be told. Where it is not the output's second last (an attention's heads merged
    back, ``[h, g, T, d] → [T, h, g, d]``), :class:`_Cut` cuts the transpose along it: cut by
    its own last two dimensions, every CN would move all the tokens of a few heads, and each
    row block of the reader (the output projection) would read all of them."""
    if op.kind != "transpose":
        return None
    rows = _row_dim(prog, producer, op.inputs[0])
    return None if rows is None else op.perm.index(rows)


def _row_dim(prog: TensorProgram, producer: Mapping[str, TensorOp], name: str) -> int | None:
    """The dimension of tensor ``name`` that holds the rows of the op output its data is
    held in: an op's output (or a graph input) has them second last; a transpose moves them
    (:func:`token_dim`); a slice keeps them; a reshape keeps them where the dimensions
    before them keep their product and they keep their length (row-major), else ``None``."""
    shape = prog.tensors[name].shape
    op = producer.get(name)
    if op is None or op.kind not in ("transpose", "reshape", "slice"):
        return len(shape) - 2 if len(shape) > 1 else None
    if op.kind == "transpose":
        return token_dim(prog, producer, op)
    rows = _row_dim(prog, producer, op.inputs[0])
    if rows is None or op.kind == "slice":
        return rows
    src = prog.tensors[op.inputs[0]].shape
    before = math.prod(src[:rows])
    for d in range(len(shape)):
        if math.prod(shape[:d]) == before and shape[d] == src[rows]:
            return d
    return None


def _reads_rows(prog: TensorProgram, op: TensorOp, k: int) -> bool:
    """Whether ``op`` reads row ``i`` of its operand ``k`` (a tensor of rank 2 or more, not
    broadcast along the rows) only for its own output row ``i``: a ``gemm`` or ``matmul``'s
    first operand, and the operands of element-wise ops, softmax and the norms."""
    if op.kind not in ("gemm", "matmul", "eltwise", "softmax", "layernorm", "rmsnorm"):
        return False
    if op.kind in ("gemm", "matmul") and k != 0:
        return False
    a, out = prog.tensors[op.inputs[k]].shape, prog.tensors[op.output].shape
    return len(a) > 1 and len(out) > 1 and a[-2] == out[-2]


def _reads_heads(prog: TensorProgram, op: TensorOp, k: int) -> bool:
    """Whether ``op`` reads its operand ``k`` head for head and every row of it for each of its
    own rows: a ``matmul``'s second operand (the keys of Q·Kᵀ, the values of P·V), with leading
    (head) dimensions before the last two, each as long as the output's or 1 (a grouped KV
    head, read by each of its query heads). Cut across more heads than its reader, such a
    producer is read a head's slice at a time from each of its row blocks, so the copies on a
    core hold what the core's readers of every head read: all the keys or values. LLaMA-3-8B's
    V at 4 096 tokens was cut 256 tokens of all 8 KV heads a CN, 9.4 MB of copies for one P·V
    CN on a 6 MB core. (Operands read row for row are bounded by one producer CN a row block:
    :func:`_reads_rows`.)"""
    if op.kind != "matmul" or k != 1:
        return False
    a, out = prog.tensors[op.inputs[k]].shape, prog.tensors[op.output].shape
    return len(a) == len(out) > 2 and all(x in (y, 1) for x, y in zip(a[:-2], out[:-2],
                                                                      strict=True))  # fmt: skip


def _auto_tiles(prog: TensorProgram, op: TensorOp, tiles: Mapping[str, int],
                cut: tuple[int, int, int]) -> dict[str, int]:  # fmt: skip
    """The tiles :func:`fitting_cut` chose for ``op``: its rows and columns, and its heads
    where they are cut and not given."""
    heads, rows, cols = cut
    lead = prog.tensors[op.output].shape[:-2]
    out = {"M": rows, "auto_n": cols}
    if "B" not in tiles and heads < max(lead, default=1):
        out["B"] = heads
    return out


def _edge(src: list[int], dst: list[int], byt: list[int], a: int, b: int, data: int) -> None:
    src.append(a)
    dst.append(b)
    byt.append(data)


def _latencies(shapes: list[TileShape], cores: Sequence[CoreSpec], model: CostModel
               ) -> np.ndarray:  # fmt: skip
    """``(n, m)`` cycles: one cost-model call per distinct tile shape and core kind."""
    kinds, of = core_kinds(cores)
    cache: dict[tuple[Any, int], int] = {}
    out = np.empty((len(shapes), len(kinds)), dtype=np.int64)
    for i, s in enumerate(shapes):
        for k, core in enumerate(kinds):
            key = (s.key(), k)
            if key not in cache:
                cache[key] = int(model.latency(s, core))
            out[i, k] = cache[key]
    return out[:, of]


def cut_signature(prog: TensorProgram, tiles: Mapping[str, int]) -> tuple[tuple[int, ...], int]:
    """Each op's chunk counts (its output grid and reduction chunks) under ``tiles``, and the
    μops they make, without building the instance: tilings with one signature cut alike."""
    sig: list[int] = []
    n = 0
    producer = {op.output: op for op in prog.ops}
    for op in prog.ops:
        if not prog.is_view(op):
            cut = _Cut(prog, op, tiles, 0, tokens=token_dim(prog, producer, op))
            sig += [*cut.grid, len(cut.k)]
            n += cut.n
    return tuple(sig), n
