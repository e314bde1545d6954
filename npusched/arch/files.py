"""Architecture files: the ``npusched/arch/v1`` JSON format (``arch.schema.json``) and the one
entry point every command reads an accelerator through, :func:`load_arch` (a shipped name, our
JSON, or a Stream accelerator YAML, :mod:`npusched.arch.stream_yaml`)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from npusched.arch.model import (
    FORMAT,
    Arch,
    ArchError,
    Bus,
    CoreSpec,
    DramSpec,
    NocSpec,
    Register,
    Source,
)
from npusched.common.errors import InputError
from npusched.common.jsonio import read_json, validate, write_json

SCHEMA = "arch.schema.json"

def _num(x: float | None) -> float | int | None:
    """Integral floats as ints, so files read ``1000000000`` rather than ``1000000000.0``."""
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != "" and v != {}}


def _links_to_list(noc: NocSpec) -> list[list[Any]]:
    """``[sender, receiver]`` per link, with its bandwidth third where links have their own."""
    if noc.bandwidths:
        return [[a, b, _num(bw)] for (a, b), bw in zip(noc.links, noc.bandwidths, strict=True)]
    return [list(ln) for ln in noc.links]


def _bandwidths(links: Any) -> tuple[float, ...]:
    """The links' own bandwidths (their third items); none where no link gives one."""
    if not any(len(ln) == 3 for ln in links):
        return ()
    if not all(len(ln) == 3 for ln in links):
        raise ArchError("noc/links", "give every link a bandwidth, or none")
    return tuple(float(ln[2]) for ln in links)


def arch_to_dict(arch: Arch) -> dict[str, Any]:
    """The ``npusched/arch/v1`` JSON object of ``arch``."""
    src = _drop_none(
        {
            "paper": arch.source.paper,
            "where": arch.source.where,
            "seed": arch.source.seed,
            "fields": dict(arch.source.fields),
        }
    )
    cores = []
    for c in arch.cores:
        core: dict[str, Any] = {
            "id": c.id,
            "name": c.name,
            "kind": c.kind,
            "pe_unroll": dict(c.pe_unroll),
            "memory_bytes": c.memory_bytes,
        }
        if c.buffers:
            core["buffers"] = dict(c.buffers)
        if c.coord is not None:
            core["coord"] = list(c.coord)
        if c.cluster is not None:
            core["cluster"] = c.cluster
        if c.registers:
            core["registers"] = {
                op: _drop_none(
                    {
                        "bytes": r.bytes,
                        "bandwidth_bytes_per_cycle": _num(r.bandwidth_bytes_per_cycle),
                        "shared_over": list(r.shared_over) or None,
                    }
                )
                for op, r in c.registers.items()
            }
        for key in ("sram_read_bytes_per_cycle", "sram_write_bytes_per_cycle"):
            if getattr(c, key) is not None:
                core[key] = _num(getattr(c, key))
        if c.unrolling != "fixed":
            core["unrolling"] = c.unrolling
        if c.zigzag is not None:
            core["zigzag"] = c.zigzag
        cores.append(core)
    noc = _drop_none(
        {
            "topology": arch.noc.topology,
            "bandwidth_bytes_per_cycle": _num(arch.noc.bandwidth_bytes_per_cycle),
            "hop_latency_cycles": arch.noc.hop_latency_cycles,
            "routing": arch.noc.routing,
            "flit_bits": arch.noc.flit_bits,
            "packet_bytes": arch.noc.packet_bytes,
            "packet_header_bits": arch.noc.packet_header_bits,
            "links": _links_to_list(arch.noc) or None,
            "buses": [{"cores": list(b.cores),
                       "bandwidth_bytes_per_cycle": _num(b.bandwidth_bytes_per_cycle)}
                      for b in arch.noc.buses] or None,
            "routers": list(arch.noc.routers) or None,
            "forwarding": arch.noc.forwarding or None,
            "description": arch.noc.description,
        }
    )
    out: dict[str, Any] = {
        "format": FORMAT,
        "name": arch.name,
        "description": arch.description,
        "source": src,
        "frequency_hz": _num(arch.frequency_hz),
        "precision_bits": arch.precision_bits,
        "cores": cores,
    }
    if arch.mesh is not None:
        out["mesh"] = {"rows": arch.mesh[0], "cols": arch.mesh[1]}
    out["noc"] = noc
    if arch.shared_buffer_bytes is not None:
        out["shared_buffer_bytes"] = arch.shared_buffer_bytes
    if arch.dram is not None:
        d = arch.dram
        out["dram"] = _drop_none(
            {
                "kind": d.kind,
                "bandwidth_bytes_per_s": _num(d.bandwidth_bytes_per_s),
                "bandwidth_bytes_per_cycle": _num(d.bandwidth_bytes_per_cycle),
                "burst_bytes": d.burst_bytes,
                "cas_latency_ns": _num(d.cas_latency_ns),
                "cas_latency_cycles": d.cas_latency_cycles,
                "clock_hz": _num(d.clock_hz),
                "controllers": list(d.controllers) or None,
                "node": d.node,
            }
        )
    if arch.assumptions:
        out["assumptions"] = list(arch.assumptions)
    return out


def arch_from_dict(data: Any, path: str | Path = "<memory>") -> Arch:
    """Validate an ``npusched/arch/v1`` object and build the :class:`Arch`; a bad value raises
    :class:`~npusched.io.InputError` naming its field."""
    validate(data, SCHEMA, path)
    src = data["source"]
    cores = tuple(
        CoreSpec(
            id=c["id"],
            name=c["name"],
            pe_unroll=dict(c["pe_unroll"]),
            memory_bytes=c.get("memory_bytes"),
            buffers=dict(c.get("buffers", {})),
            kind=c.get("kind", "pe_array"),
            coord=(c["coord"][0], c["coord"][1]) if "coord" in c else None,
            cluster=c.get("cluster"),
            registers={
                op: Register(
                    r["bytes"], r.get("bandwidth_bytes_per_cycle"), tuple(r.get("shared_over", ()))
                )  # fmt: skip
                for op, r in c.get("registers", {}).items()
            },
            sram_read_bytes_per_cycle=c.get("sram_read_bytes_per_cycle"),
            sram_write_bytes_per_cycle=c.get("sram_write_bytes_per_cycle"),
            unrolling=c.get("unrolling", "fixed"),
            zigzag=c.get("zigzag"),
        )
        for c in data["cores"]
    )
    n = data["noc"]
    d = data.get("dram")
    dram = None if d is None else DramSpec(**{**d, "controllers": tuple(d.get("controllers", ()))})
    try:
        return Arch(
            name=data["name"],
            source=Source(src["paper"], src["where"], src.get("seed", ""), src.get("fields", {})),
            frequency_hz=data["frequency_hz"],
            precision_bits=data["precision_bits"],
            cores=cores,
            noc=NocSpec(
                topology=n["topology"],
                bandwidth_bytes_per_cycle=n.get("bandwidth_bytes_per_cycle"),
                hop_latency_cycles=n.get("hop_latency_cycles"),
                routing=n.get("routing"),
                flit_bits=n.get("flit_bits"),
                packet_bytes=n.get("packet_bytes"),
                packet_header_bits=n.get("packet_header_bits"),
                links=tuple((int(ln[0]), int(ln[1])) for ln in n.get("links", ())),
                bandwidths=_bandwidths(n.get("links", ())),
                buses=tuple(Bus(tuple(b["cores"]), b["bandwidth_bytes_per_cycle"])
                            for b in n.get("buses", ())),
                routers=tuple(n.get("routers", ())),
                forwarding=bool(n.get("forwarding", False)),
                description=n.get("description", ""),
            ),
            mesh=(data["mesh"]["rows"], data["mesh"]["cols"]) if "mesh" in data else None,
            shared_buffer_bytes=data.get("shared_buffer_bytes"),
            dram=dram,
            description=data.get("description", ""),
            assumptions=tuple(data.get("assumptions", ())),
        )
    except ArchError as err:
        raise InputError(path, err.field, err.reason) from None


def read_arch(path: str | Path) -> Arch:
    """Read an architecture file."""
    return arch_from_dict(read_json(path), path)


def write_arch(arch: Arch, path: str | Path) -> None:
    """Write ``arch`` as ``npusched/arch/v1`` JSON (atomically)."""
    write_json(path, arch_to_dict(arch))


def list_archs() -> list[str]:
    """Names of the shipped architectures (``npusched/arch/data/*.json``)."""
    data = resources.files("npusched.arch").joinpath("data")
    return sorted(p.name[: -len(".json")] for p in data.iterdir() if p.name.endswith(".json"))


def flexer_arch_name(name: str) -> str:
    """``arch5`` → ``flexer-arch5`` (Flexer's Table 1 names); anything else as given."""
    return f"flexer-{name}" if name.startswith("arch") and name[4:].isdigit() else name


def load_arch(name_or_path: str | Path) -> Arch:
    """A shipped architecture by name (see :func:`list_archs`) or an architecture file by path:
    ``npusched/arch/v1`` JSON, or a Stream accelerator YAML (``.yaml``/``.yml``,
    :func:`~npusched.arch.stream_yaml.read_stream_accelerator`).

    Raises
    ------
    ValueError
        For a name that is neither a shipped architecture nor an existing file
        (:class:`~npusched.io.InputError`, a ``ValueError``, for a bad file).
    """
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml"):
        from npusched.arch.stream_yaml import read_stream_accelerator

        return read_stream_accelerator(p)
    if p.suffix == ".json" or p.exists():
        return read_arch(p)
    name = str(name_or_path)
    res = resources.files("npusched.arch").joinpath(f"data/{name}.json")
    if not res.is_file():
        raise ValueError(f"unknown architecture {name!r}; shipped: {', '.join(list_archs())}")
    with resources.as_file(res) as f:
        return read_arch(f)
