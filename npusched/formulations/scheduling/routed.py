"""Scheduling, allocation and link-contended transfers in one CP-SAT model (the joint model of the
NoC issue with a transfer interval on the links of its route, Stream's hardware model).

Notation: ``x_ik`` μop ``i`` on core ``k`` (fixed when the allocation is given); ``K_i`` its
allowed cores; ``D(p)`` consumers of data from ``p`` (edges with data > 0); ``τ_pac`` the
transfer of ``p``'s output from core ``a`` to core ``c``, present iff ``p`` is on ``a`` and some
consumer on ``c ≠ a``; ``ω_kc`` DRAM tensor ``k`` sent to core ``c``. A transfer carries the copy
of :meth:`~npusched.problem.scheduling.routed.RoutedInstance.copy_data`:
``b_pc = min(o_p, Σ_{q ∈ D(p)} r_pq x_qc)`` (``o_p`` the output, ``r_pq`` what ``q`` reads of it),
a constant where the consumers that may run on ``c`` fix it (a fixed allocation; Stream's
exports, where every edge carries the whole output), else a variable. Every transfer interval
lasts ``hops · hop latency + ⌈b / B⌉`` (``B`` the least bandwidth on its route; with a variable
copy ``B = num/den`` exactly, as ``num · (len − hops · hop latency) ≥ den · b_pc``) and joins the
NoOverlap of every link (bus) on its route. With memory capacities every lifetime of
:func:`~npusched.verify.scheduling.routed.residency` is an interval ``[α, ω)`` in a cumulative of
the core's capacity ``M_c`` (Stream §III-F as constraints), optional where the allocation is
free (present with its copy). The model has no eviction. With ``units`` (one allocation unit per
μop, Stream's layers) the μops of a unit share one allocation literal ``y_uk`` per core: the
exact allocation model of :mod:`npusched.search.allocation_lns`.

**The relay relaxation** (``relay=True``, without memory): a schedule that evicts may deliver a
copy to core ``c`` by a write-back to DRAM and a re-fetch (the verifier accepts a re-fetch in
place of the required transfer). The relaxation lets each copy arrive either by its transfer
``τ_pac`` or by a relay ``ρ_pc``: a re-fetch interval on the route from DRAM to ``c`` that starts
no earlier than ``e_p`` plus the shortest write-back of the whole output from any core. Every
schedule of the instance, evicting or not and whatever its memories, maps to a solution of this
model with the same μop times (take each copy's earliest delivery), so the model's optimum
bounds every schedule from below; a solution that uses no relay and fits the memories is a
schedule of the instance.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from npusched.formulations.scheduling.rates import exact_rate, largest_carried
from npusched.problem.scheduling.routed import RoutedInstance, RoutedSchedule, required_transfers


class RoutedModel:
    """CP-SAT model of a :class:`RoutedInstance`; minimises the makespan.

    Parameters
    ----------
    inst
        The instance (fixed or free allocation).
    horizon
        Makespan of a known schedule: an upper bound for every time variable.
    units
        Optional allocation unit of each μop: μops of one unit with a choice of core share their
        literals (they must allow the same cores).
    relay
        Let a copy arrive through DRAM instead of its transfer (the relay relaxation of the module
        docstring); needs an instance without memory capacities whose cores can write back.
    room
        Memory capacities kept in the relaxation's weaker, eviction-proof form
        (:meth:`_room`): what a core receives and what its running μop holds.
    lanes
        Resource index → transfers it carries at once (default one: a NoOverlap); the DRAM
        link of the interchangeable-core relaxation
        (:mod:`~npusched.problem.scheduling.routed_relax`).
    classes
        Classes of interchangeable cores (core indices, ascending) whose symmetry
        :meth:`_symmetry` breaks; only for an instance that permuting them leaves as it is.
    floor
        A lower bound of the makespan (default: the instance's
        :meth:`~npusched.problem.scheduling.routed.RoutedInstance.lower_bound`; a relaxed
        instance takes the bound of the instance it relaxes).
    """

    def __init__(
        self, inst: RoutedInstance, horizon: int, units: Any = None, relay: bool = False,
        room: Any = None, lanes: dict[int, int] | None = None, classes: Any = (),
        floor: int | None = None,
    ) -> None:  # fmt: skip
        if relay and (inst.capacity is not None or not inst.can_write_back):
            raise ValueError("the relay relaxation needs no capacities and a route to DRAM")
        self.inst, self.H = inst, int(horizon)
        self.room = None if room is None else np.asarray(room, dtype=np.int64)
        self.arriving: dict[int, list[tuple[Any, int]]] = defaultdict(list)  # core -> (iv, size)
        self.running: dict[int, list[tuple[Any, int]]] = defaultdict(list)
        self.relays: dict[tuple[int, int], Any] = {}  # (producer, core) -> relay literal
        self._relay_on = relay
        self.lanes = {r: k for r, k in enumerate(inst.topology.lanes.tolist()) if k > 1}
        self.lanes.update(lanes or {})  # (a relaxation's own, over its links)
        self.classes = tuple(tuple(c) for c in classes)
        self.floor = inst.lower_bound() if floor is None else int(floor)
        self.units = None if units is None else np.asarray(units, dtype=np.int64)
        self.model = cp_model.CpModel()
        self.life: dict[tuple[int, int, int], Any] = {}
        self.present: dict[tuple[int, int, int], Any] = {}  # transfer literal (or True)
        self._cycles: dict[tuple[int, int, int], Any] = {}  # an int, or a length variable
        self._data: dict[tuple[int, int, int], Any] = {}  # the copy: an int, or a variable
        self._users: dict[tuple[int, int, int], Any] = {}
        self.res_intervals: dict[int, list[Any]] = defaultdict(list)
        self.core_intervals: dict[int, list[Any]] = defaultdict(list)
        for add in (
            self._operations,
            self._precedence,
            self._output_transfers,
            self._dram_transfers,
            self._links,
            self._cores,
            self._symmetry,
            self._memory,
            self._room,
            self._objective,
        ):
            add()

    def _lit(self, i: int, k: int) -> Any:
        return self.x[i].get(k, False)

    def _operations(self) -> None:
        """Each μop runs once, on one allowed core, for that core's latency.

        .. math:: \\sum_{k \\in K_i} x_{ik} = 1, \\qquad
                  x_{ik} \\Rightarrow e_i = s_i + d_{ik}
        """
        inst, m = self.inst, self.model
        d = inst.duration
        self.s, self.e, self.x = [], [], []
        shared: dict[int, dict[int, Any]] = {}
        for i in range(inst.n):
            ks = np.flatnonzero(inst.mask[i]).tolist()
            s = m.new_int_var(0, self.H, f"s{i}")
            e = m.new_int_var(0, self.H, f"e{i}")
            x: dict[int, Any] = {}
            if len(ks) == 1:
                x[ks[0]] = True
                iv = m.new_interval_var(s, int(d[i, ks[0]]), e, "")
                self.core_intervals[ks[0]].append(iv)
                self.running[ks[0]].append((iv, i))
            else:
                u = None if self.units is None else int(self.units[i])
                if u is not None and u in shared:
                    if sorted(shared[u]) != ks:
                        raise ValueError(f"the μops of allocation unit {u} allow different cores")
                    x = shared[u]
                else:
                    x = {k: m.new_bool_var(f"x{i},{k}") for k in ks}
                    m.add_exactly_one(x.values())
                    if u is not None:
                        shared[u] = x
                for k in ks:  # each its own end: CP-SAT 9.15 wrongly proves infeasibility
                    # when optional intervals of different sizes share one end variable
                    dk = int(d[i, k])
                    iv = m.new_optional_interval_var(s, dk, s + dk, x[k], "")
                    self.core_intervals[k].append(iv)
                    self.running[k].append((iv, i))
                    m.add(e == s + dk).only_enforce_if(x[k])
            self.s.append(s)
            self.e.append(e)
            self.x.append(x)

    def _precedence(self) -> None:
        """Every edge orders its μops; transfers add more below.

        .. math:: e_p \\le s_q \\quad \\forall (p, q) \\in E
        """
        g = self.inst.graph
        for p, q in zip(g.src.tolist(), g.dst.tolist(), strict=True):
            self.model.add(self.e[p] <= self.s[q])

    def _transfer(
        self, key: tuple[int, int, int], data: Any, route: tuple[int, ...], lit: Any, users: Any
    ) -> tuple[Any, Any]:
        """An interval on ``route`` for ``data`` (an int, or ``(variable, largest)``: a copy
        that depends on the allocation) present when ``lit``, for the μops ``users`` (those that
        may wait for it); its start and length (an int, or a variable)."""
        m = self.model
        t = m.new_int_var(0, self.H, f"t{key}")
        if isinstance(data, tuple):
            var, most = data
            cyc: Any = self._length(key, var, most, route)
            end = m.new_int_var(0, self.H + int(list(cyc.proto.domain)[-1]), "")  # ([-1]: 0)
            m.add(end == t + cyc)
            iv = m.new_optional_interval_var(t, cyc, end, lit, "")
            self._data[key] = var
        else:
            cyc = self.inst.topology.cycles(data, route)
            iv = (
                m.new_fixed_size_interval_var(t, cyc, "")
                if lit is True
                else m.new_optional_fixed_size_interval_var(t, cyc, lit, "")
            )
            self._data[key] = data
        for x in route:
            self.res_intervals[int(self.inst.topology.resource_of[x])].append(iv)
        if not self.inst.is_streamed[np.asarray(users, dtype=np.int64)].all():  # (:meth:`_room`)
            self.arriving[key[2]].append((iv, data if isinstance(data, int) else 0))
        self.tstart[key] = t
        self.present[key], self._cycles[key] = lit, cyc
        self._users[key] = np.asarray(users, dtype=np.int64)
        return t, cyc

    def _length(self, key: tuple[int, int, int], var: Any, most: int, route: tuple[int, ...]
                ) -> Any:  # fmt: skip
        """A length variable of at least ``hops · hop latency + ⌈var / B⌉`` cycles, exactly the
        :meth:`~npusched.problem.scheduling.routed.Topology.cycles` of the copy ``var`` for
        every copy up to ``most``: ``B`` is the route's least bandwidth as a fraction ``p / q``
        (:func:`exact_rate`) for which ``⌈v q / p⌉`` equals the cycles of every ``v ≤ most``.
        Where no such fraction fits the solver's integers, ``var ≤ V[len − hops]`` with the
        table ``V[k]`` of the largest copy that ``k`` cycles carry."""
        topo = self.inst.topology
        bw = min(topo.links[x].bandwidth for x in route)
        hops = len(route) * topo.hop_latency
        most_cyc = topo.cycles(most, route)
        length = self.model.new_int_var(hops, max(hops, most_cyc), f"len{key}")
        rate = exact_rate(bw, most)
        if rate is not None:
            self.model.add(rate.numerator * (length - hops) >= rate.denominator * var)
            return length
        ks = np.arange(most_cyc - hops + 1)
        table = [int(v) for v in largest_carried(bw, ks)]
        room = self.model.new_int_var(0, max(table), "")
        self.model.add_element(length - hops, table, room)
        self.model.add(var <= room)
        return length

    def _output_transfers(self) -> None:
        """A producer's output goes once to every other core hosting one of its data consumers,
        after the producer ends and before each of those consumers starts; it carries what the
        consumers there read (``b_pc``, a variable where the allocation decides it). In the
        relay relaxation the copy may come by the relay ``ρ_pc`` instead (:meth:`_relay`),
        never by both.

        .. math:: \\tau_{pac} \\vee \\rho_{pc} \\Leftarrow x_{pa} \\wedge x_{qc}
                  \\ (q \\in D(p),\\ a \\ne c), \\quad \\rho_{pc} \\Rightarrow \\neg\\tau_{pac},
                  \\qquad t_{pac} \\ge e_p, \\qquad
                  x_{pa} \\wedge x_{qc} \\Rightarrow s_q \\ge t_{pac} + \\ell_{pac}, \\qquad
                  \\ell_{pac} \\ge \\lceil b_{pc} / B \\rceil,
                  \\quad b_{pc} = \\min(o_p, \\textstyle\\sum_{q} r_{pq} x_{qc})
        """
        inst, m = self.inst, self.model
        g = inst.graph
        self.tstart: dict[tuple[int, int, int], Any] = {}
        data_edge = np.flatnonzero(g.bytes > 0)
        read = inst.read_data
        consumers: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for e in data_edge.tolist():
            consumers[int(g.src[e])][int(g.dst[e])] += int(read[e])
        for p, reads in consumers.items():
            cons = sorted(reads)
            for c in sorted({k for q in cons for k in self.x[q]}):
                users = [q for q in cons if c in self.x[q]]
                data = self._copy(p, c, {q: reads[q] for q in users})
                relay = self._relay(p, c, users, reads) if self._relay_on else None
                for a in self.x[p]:
                    if a == c:
                        continue
                    pa = self._lit(p, a)
                    direct = relay is None and pa is True
                    if direct and all(self._lit(q, c) is True for q in users):
                        lit: Any = True
                    else:
                        lit = m.new_bool_var(f"z{p},{a},{c}")
                        other = [] if relay is None else [relay]
                        for q in users:
                            both = [v for v in (pa, self._lit(q, c)) if v is not True]
                            m.add_bool_or([lit, *other, *[v.Not() for v in both]])
                    if relay is not None:  # a copy arrives once: the earlier of the two
                        m.add_implication(relay, lit.Not())
                    t, cyc = self._transfer((p, a, c), data, inst.route(a, c), lit, users)
                    m.add(t >= self.e[p]).only_enforce_if([] if lit is True else [lit])
                    for q in users:
                        cond = [v for v in (pa, self._lit(q, c), lit) if v is not True]
                        m.add(self.s[q] >= t + cyc).only_enforce_if(cond)

    def _relay(self, p: int, c: int, users: list[int], reads: dict[int, int]) -> Any:
        """The relay of ``p``'s copy into core ``c`` (relaxation; module docstring): a literal
        and, when it holds, a re-fetch interval on the route from DRAM to ``c`` carrying the
        copy (its least size where the allocation decides it), after ``p`` ends and the whole
        output's shortest write-back, and before every consumer of ``p`` it serves there.
        ``None`` where no relay can end before the horizon: ``p``'s earliest start and
        latency, the write-back, the re-fetch and the longest tail of a consumer there reach
        it (:attr:`~npusched.problem.scheduling.routed.RoutedInstance.heads_tails`). Every
        schedule shorter than the horizon still maps to a solution, so a bound the model
        proves below the horizon holds, and infeasibility proves the horizon optimal.

        .. math:: \\rho_{pc} \\wedge x_{pa} \\Rightarrow r_{pc} \\ge e_p + w_{pa}, \\quad
                  \\rho_{pc} \\wedge x_{qc} \\Rightarrow s_q \\ge r_{pc} +
                  \\lceil b_{pc} / B_{D,c} \\rceil
        """
        inst, m = self.inst, self.model
        least = self._copy_range(p, c, {q: reads[q] for q in users})[0]
        route = inst.route(-1, c)
        head, tail = inst.heads_tails
        soonest = int(head[p] + inst.min_duration[p]) + min(
            self._write_back(p, a) for a in self.x[p]) + inst.topology.cycles(least, route)
        if soonest + int(tail[users].max()) >= self.H:
            return None  # no schedule shorter than the horizon relays p's copy to c
        lit = m.new_bool_var(f"relay{p},{c}")
        key = (p, -2, c)  # a re-fetch: not one of the required transfers
        t, cyc = self._transfer(key, least, route, lit, users)
        del self.tstart[key]  # (decode and hints read the required transfers only)
        for a, pa in self.x[p].items():
            cond = [v for v in (lit, pa) if v is not True]
            m.add(t >= self.e[p] + self._write_back(p, a)).only_enforce_if(cond)
        for q in users:
            cond = [v for v in (self._lit(q, c),) if v is not True]
            m.add(self.s[q] >= t + cyc).only_enforce_if([lit, *cond])
        here = [self._lit(q, c) for q in users]
        if not any(v is True for v in here):  # a relay serves a consumer on c
            m.add_bool_or([lit.Not(), *here])
        home = self._lit(p, c)  # and comes to a core other than the producer's
        if home is True:
            m.add(lit == 0)
        elif home is not False:
            m.add_implication(lit, home.Not())
        self.relays[(p, c)] = lit
        return lit

    def _write_back(self, p: int, a: int) -> int:
        """``w_pa``: the shortest time from ``p``'s end on core ``a`` until its whole output is
        in DRAM, written back from ``a`` or from a core ``x`` that first received it whole.

        .. math:: w_{pa} = \\min\\big(\\ell(o_p, a \\to D),\\ \\min_{x \\ne a}
                  \\ell(o_p, a \\to x) + \\ell(o_p, x \\to D)\\big)
        """
        inst, out = self.inst, int(self.inst.output_data[p])
        cyc = inst.topology.cycles
        return min([cyc(out, inst.route(a, -1))]
                   + [cyc(out, inst.route(a, x)) + cyc(out, inst.route(x, -1))
                      for x in range(inst.m) if x != a])  # fmt: skip

    def _copy_range(self, p: int, c: int, reads: dict[int, int]) -> tuple[int, int]:
        """The least and the largest copy of ``p``'s output that core ``c`` can receive from
        the consumers ``reads`` (μop → what it reads) that may run there."""
        fixed = sum(r for q, r in reads.items() if self._lit(q, c) is True)
        free = [r for q, r in reads.items() if self._lit(q, c) is not True]
        most = int(self.inst.copy_data(p, fixed + sum(free)))
        return int(self.inst.copy_data(p, fixed if fixed else min(free))), most

    def _copy(self, p: int, c: int, reads: dict[int, int]) -> Any:
        """The copy of ``p``'s output core ``c`` receives from the consumers ``reads`` (μop →
        what it reads) that may run there: an int when the allocation cannot change it, else
        ``(variable, largest)`` with the variable ``min(o_p, Σ r_q x_qc)``."""
        inst = self.inst
        least, most = self._copy_range(p, c, reads)
        if least == most:  # every copy the allocation can make is the same
            return most
        fixed = sum(r for q, r in reads.items() if self._lit(q, c) is True)
        free = {q: r for q, r in reads.items() if self._lit(q, c) is not True}
        var = self.model.new_int_var(0, most, f"b{p},{c}")
        total = fixed + sum(r * self._lit(q, c) for q, r in free.items())
        self.model.add_min_equality(var, [int(inst.output_data[p]), total])
        return (var, most)

    def _dram_transfers(self) -> None:
        """A DRAM tensor goes once to every core hosting one of its consumers, before they start.

        .. math:: \\omega_{kc} \\Leftarrow x_{qc} \\ (q \\in \\text{cons}(k)), \\qquad
                  x_{qc} \\Rightarrow s_q \\ge t_{kc} + \\lceil b_k / B \\rceil
        """
        inst, m = self.inst, self.model
        for k, tensor in enumerate(inst.dram):
            if tensor.data <= 0:
                continue
            cons = tensor.consumers.tolist()
            for c in sorted({a for q in cons for a in self.x[q]}):
                users = [q for q in cons if c in self.x[q]]
                if all(self._lit(q, c) is True for q in users):
                    lit: Any = True
                else:
                    lit = m.new_bool_var(f"w{k},{c}")
                    for q in users:
                        m.add_implication(self._lit(q, c), lit)
                key = (-1 - k, -1, c)
                t, cyc = self._transfer(key, int(tensor.data), inst.route(-1, c), lit, users)
                for q in users:
                    cond = [v for v in (self._lit(q, c),) if v is not True]
                    m.add(self.s[q] >= t + cyc).only_enforce_if(cond)

    def _links(self) -> None:
        """One transfer at a time on each link (each bus); ``P_ℓ`` at a time on a link with
        ``lanes``.

        .. math:: \\text{Cumulative}(\\{\\tau : \\ell \\in \\text{route}(\\tau)\\},
                  1, P_\\ell) \\quad \\forall \\ell \\qquad (P_\\ell = 1:
                  \\text{NoOverlap})
        """
        for res, ivs in self.res_intervals.items():
            lanes = self.lanes.get(res, 1)
            if len(ivs) > lanes > 1:
                self.model.add_cumulative(ivs, [1] * len(ivs), lanes)
            elif len(ivs) > 1 and lanes == 1:
                self.model.add_no_overlap(ivs)

    def _symmetry(self) -> None:
        """Cores of a class are used in order: μop ``i`` runs on the class's ``j``-th core only
        if an earlier μop runs on its ``(j-1)``-th. Relabelling a class's cores by the first
        μop on each maps every solution to one that meets this, where the instance does not
        tell them apart (:func:`~npusched.problem.scheduling.routed_relax.core_classes` on a
        topology that treats them alike).

        .. math:: x_{i k_j} \\Rightarrow \\textstyle\\bigvee_{i' < i} x_{i' k_{j-1}}
                  \\quad \\forall i,\\ j \\ge 1
        """
        m = self.model
        pairs = [(p, k) for c in self.classes for p, k in zip(c, c[1:], strict=False)]
        used: dict[int, Any] = {}  # core p -> u_p: a μop before i runs on p (a prefix OR)
        for i in range(self.inst.n):  # (in a class the literals are variables: same masks)
            for p, k in pairs:
                if k in self.x[i]:
                    m.add_implication(self.x[i][k], used[p]) if p in used else m.add(
                        self.x[i][k] == 0)
            for p in {p for p, _ in pairs} & set(self.x[i]):
                u = m.new_bool_var(f"u{i},{p}")
                m.add_bool_or([self.x[i][p], *([used[p]] if p in used else [])]
                              ).only_enforce_if(u)  # fmt: skip
                m.add_implication(self.x[i][p], u)
                if p in used:
                    m.add_implication(used[p], u)
                used[p] = u

    def _cores(self) -> None:
        """One μop at a time on each core.

        .. math:: \\text{NoOverlap}(\\{[s_i, e_i) : x_{ik}\\}) \\quad \\forall k
        """
        for ivs in self.core_intervals.values():
            if len(ivs) > 1:
                self.model.add_no_overlap(ivs)

    def _memory(self) -> None:
        r"""Each core holds at most its capacity at every instant. A producer's output lives on
        its core ``a`` from its start until its last local data consumer and its last send end;
        data received on core ``c`` from its transfer's start until the last μop it serves there
        ends; data of streamed μops takes no room. Each lifetime is present with its copy
        (``x_pa``, ``τ_pac``, ``ω_kc``) and holds its size: ``o_p`` on the producer's core, the
        copy ``b_pc`` its transfer carries elsewhere.

        .. math:: \omega_{pa} \ge e_q \Leftarrow x_{qa} \ (q \in D(p)), \quad
                  \omega_{pa} \ge t_{pac} + \lceil b_p / B \rceil \Leftarrow \tau_{pac},
                  \quad \omega_{\tau} \ge e_q \Leftarrow x_{qc} \ (q \text{ served by }
                  \tau), \quad \text{Cumulative}(\{[\alpha, \omega)\}, b, M_c) \ \forall c
        """
        inst = self.inst
        if inst.capacity is None:
            return
        g, streamed = inst.graph, inst.is_streamed
        output = inst.output_data
        # lifetime (tensor, from, on) -> (start, bits, presence, [(end term, condition)])
        life: dict[tuple[int, int, int], tuple[Any, Any, Any, list[tuple[Any, list[Any]]]]] = {}
        for p in np.flatnonzero((output > 0) & ~streamed).tolist():
            for a, lit in self.x[p].items():
                life[(p, a, a)] = (self.s[p], int(output[p]), lit, [(self.e[p], [])])
        for e in np.flatnonzero(g.bytes > 0).tolist():
            p, q = int(g.src[e]), int(g.dst[e])
            for a in self.x[q]:
                if (p, a, a) in life:
                    life[(p, a, a)][3].append((self.e[q], [self._lit(q, a)]))
        for key, t in self.tstart.items():
            src, a, c = key
            lit, cyc = self.present[key], self._cycles[key]
            if src >= 0 and (src, a, a) in life:
                life[(src, a, a)][3].append((t + cyc, [lit]))
            users = self._users[key]
            if not streamed[users].all():
                ends = [(self.e[q], [self._lit(q, c)]) for q in users.tolist()]
                life[key] = (t, self._data[key], lit, ends)
        m = self.model
        per_core: dict[int, tuple[list[Any], list[Any]]] = defaultdict(lambda: ([], []))
        for key, (start, bits, lit, ends) in life.items():
            end = m.new_int_var(0, self.H, f"life{key}")
            for term, cond in ends:
                if not any(v is False for v in cond):
                    m.add(end >= term).only_enforce_if([v for v in cond if v is not True])
            self.life[key] = end
            ivs, demands = per_core[key[2]]
            size = m.new_int_var(0, self.H, "")
            ivs.append(
                m.new_interval_var(start, size, end, "")
                if lit is True
                else m.new_optional_interval_var(start, size, end, lit, "")
            )
            demands.append(bits)
        for c, (ivs, demands) in per_core.items():
            m.add_cumulative(ivs, demands, int(inst.capacity[c]))

    def _room(self) -> None:
        """With ``room`` (the relaxation's memories): a copy takes its space on the receiving
        core from its transfer's start, and a μop's operands and output are resident while it
        runs, whatever is evicted around them, so on each core what arrives and what runs at
        one instant fit together (a copy in flight never serves the μop running there: it
        ends before the μops it serves start). Sizes: a μop's operand set alone
        (:meth:`~npusched.problem.scheduling.routed.RoutedInstance.operand_data`), a copy's
        size (0 where the allocation decides it).

        .. math:: \\text{Cumulative}(\\{[s_i, e_i) : x_{ic}\\} \\cup \\{[t_\\tau, t_\\tau +
                  \\ell_\\tau) : \\tau \\to c\\},\\ (\\mathit{need}_i, b_\\tau),\\ M_c)
                  \\quad \\forall c
        """
        if self.room is None:
            return
        need = self.inst.operand_data()
        for c in range(self.inst.m):
            ivs = [iv for iv, _ in self.running[c]] + [iv for iv, _ in self.arriving[c]]
            sizes = [int(need[i]) for _, i in self.running[c]] + [b for _, b in self.arriving[c]]
            if len(ivs) > 1:
                self.model.add_cumulative(ivs, sizes, int(self.room[c]))

    def _objective(self) -> None:
        """Makespan, bounded below by :meth:`RoutedInstance.lower_bound`.

        .. math:: \\min T, \\qquad T \\ge e_i \\ \\forall i, \\qquad T \\ge LB
        """
        m = self.model
        self.T = m.new_int_var(min(self.floor, self.H), self.H, "T")
        sinks = np.flatnonzero(np.diff(self.inst.graph.succ_ptr) == 0).tolist()
        m.add_max_equality(self.T, [self.e[i] for i in sinks])
        m.minimize(self.T)

    def hint(self, sched: RoutedSchedule) -> None:
        """Warm start from a feasible schedule (all decision variables)."""
        m = self.model
        m.clear_hints()
        end = sched.end(self.inst)
        chosen: dict[Any, bool] = {}  # a unit's literals are shared by its μops: hint once
        for i in range(self.inst.n):
            m.add_hint(self.s[i], int(sched.start[i]))
            m.add_hint(self.e[i], int(end[i]))
            for k, v in self.x[i].items():
                if v is not True:
                    chosen[v] = bool(k == sched.core[i])
        for v, on in chosen.items():
            m.add_hint(v, on)
        for v in self.relays.values():  # the relaxation's points include every schedule's
            m.add_hint(v, False)
        tr = required_transfers(self.inst, sched.core)
        for t in range(tr.size):
            src, c = tr.key(t)
            a = -1 if src < 0 else int(sched.core[src])
            if sched.tstart[t] >= 0:  # (a schedule that evicts may replace it by a re-fetch)
                m.add_hint(self.tstart[(src, a, c)], int(sched.tstart[t]))
            var = self._data.get((src, a, c))
            if var is not None and not isinstance(var, int):  # a copy the allocation decides
                m.add_hint(var, int(tr.data[t]))
                m.add_hint(self._cycles[(src, a, c)], int(tr.cycles[t]))
        if self.life and not sched.evicts:  # a schedule that evicts is no solution here
            from npusched.verify.scheduling.routed import residency

            res = residency(self.inst, sched)
            for tensor, c, free in zip(res.tensor.tolist(), res.core.tolist(),
                                       res.free.tolist(), strict=True):  # fmt: skip
                a = -1 if tensor < 0 else int(sched.core[tensor])
                key = (tensor, a, c)
                if key in self.life:
                    m.add_hint(self.life[key], free)
        m.add_hint(self.T, sched.makespan(self.inst))

    def neighbourhood(self, sched: RoutedSchedule, free: Any, tail: str = "order") -> Any:
        """A copy of the model, hinted from ``sched``, where only the μops ``free`` (a boolean
        mask, a block of consecutive starts) and the transfers timed among them may move
        freely; μops and transfers that start before the block keep their times. Those after
        it, with ``tail="order"``, keep their order on their core and on each link (bus) of
        their route, their times free, so the rest of the schedule can close up; with
        ``tail="shift"`` they move together by one shift ``δ ≤ 0``. ``sched`` itself is a
        solution either way (LNS).

        .. math:: s_i = \\bar s_i \\ (\\bar s_i < a), \\qquad
                  s_j \\ge e_i \\ (i, j \\text{ consecutive after } a \\text{ on a core or link})
                  \\ \\text{or}\\ s_i = \\bar s_i + \\delta,\\ \\delta \\le 0
        """
        if tail not in ("order", "shift"):
            raise ValueError(f"tail is 'order' or 'shift', not {tail!r}")
        inst = self.inst
        self.hint(sched)
        m = self.model.clone()
        free = np.asarray(free, dtype=bool)
        a, b = int(sched.start[free].min()), int(sched.start[free].max())
        delta = m.new_int_var(-self.H, 0, "delta") if tail == "shift" else None
        after: list[tuple[int, Any, Any, int]] = []  # (core or -1 - resource, start, end, time)
        for i in np.flatnonzero(~free).tolist():
            v = int(sched.start[i])
            if v < a:
                m.add(self.s[i] == v)
            elif delta is not None:
                m.add(self.s[i] == v + delta)
            else:
                after.append((int(sched.core[i]), self.s[i], self.e[i], v))
        tr = required_transfers(inst, sched.core)
        for t in range(tr.size):
            src, c = tr.key(t)
            key = (src, -1 if src < 0 else int(sched.core[src]), c)
            var, v = self.tstart[key], int(sched.tstart[t])
            if v < 0:
                continue  # replaced by a re-fetch in a schedule that evicts: left free
            if v < a:
                m.add(var == v)
            elif v > b and delta is not None:
                m.add(var == v + delta)
            elif v > b:
                for r in {int(inst.topology.resource_of[x]) for x in tr.route[t]}:
                    after.append((-1 - r, var, var + self._cycles[key], v))
        after.sort(key=lambda x: (x[0], x[3]))
        for (w, _, end, _), (w2, start, _, _) in zip(after, after[1:], strict=False):
            if w == w2:
                m.add(start >= end)
        return m

    def relayed(self, solver: Any) -> bool:
        """Whether the solution in ``solver`` delivers a copy by a relay (then it is a point of
        the relay relaxation only, not a schedule of the instance)."""
        return any(solver.boolean_value(v) for v in self.relays.values())

    def decode(self, solver: Any) -> RoutedSchedule:
        """The schedule in a solved ``CpSolver`` (or anything with ``value``/``boolean_value``)."""
        inst = self.inst
        start = np.array([solver.value(v) for v in self.s], dtype=np.int64)
        core = np.array(
            [next(k for k, v in x.items() if v is True or solver.boolean_value(v)) for x in self.x],
            dtype=np.int64,
        )
        tr = required_transfers(inst, core)
        ts = np.array(
            [
                solver.value(self.tstart[(s, -1 if s < 0 else int(core[s]), c)])
                for s, c in (tr.key(t) for t in range(tr.size))
            ],
            dtype=np.int64,
        )
        return RoutedSchedule(start, core, ts, ts + tr.cycles)

