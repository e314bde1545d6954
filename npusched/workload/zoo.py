"""A zoo of real networks (``npusched/network/v1`` JSON files shipped with the package) and
transformer layers (``npusched/tensor-program/v1``, :mod:`npusched.workload.transformers`).

Each file in :data:`ZOO_DIR` holds one network at batch 1 with its published layer shapes; its
``source`` cites the paper and the layout followed, the published MAC and parameter figures the
tests check, and every deviation from the original (e.g. BatchNorm folded into the convolutions).
The files are written by ``tools/make_zoo.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npusched.common.errors import InputError
from npusched.common.jsonio import read_json, validate, write_json
from npusched.workload.layers import INPUT, Layer, Shape
from npusched.workload.network import Network
from npusched.workload.tensor import FORMAT as TENSOR_FORMAT
from npusched.workload.tensor import TensorProgram

ZOO_DIR = Path(__file__).resolve().with_name("zoo")
SCHEMA = "network.schema.json"


def list_networks() -> list[str]:
    """Names (file stems) of the networks in :data:`ZOO_DIR`, sorted.

    Returns
    -------
    list of str
        E.g. ``["fsrcnn", "inceptionv3", "lenet", ...]``.
    """
    return sorted(p.stem for p in ZOO_DIR.glob("*.json"))


def _zoo_path(name_or_path: str | Path) -> Path:
    path = Path(name_or_path)
    if path.suffix or len(path.parts) != 1:
        return path
    zoo = ZOO_DIR / f"{path}.json"
    if not zoo.is_file():
        raise InputError(
            path, "(name)", f"no such zoo network; choose from {', '.join(list_networks())}"
        )
    return zoo


def load_network(name_or_path: str | Path) -> Network:
    """Read a network: a zoo name (``"resnet50"``) or the path of an ``npusched/network/v1`` file.

    Parameters
    ----------
    name_or_path
        A name from :func:`list_networks`, or a path (anything with a suffix or a directory part).

    Returns
    -------
    Network
        The network, its shapes inferred and checked.

    Raises
    ------
    InputError
        The file is missing, not JSON, fails the schema, or describes an inconsistent network
        (unknown or later input, duplicate name, shapes that do not fit); it names the file,
        the field (e.g. ``layers/3/inputs/0``) and the reason.
    """
    path = _zoo_path(name_or_path)
    data = read_json(path)
    if isinstance(data, dict) and data.get("format") == TENSOR_FORMAT:
        return program_from_dict(data, path)  # type: ignore[return-value]
    return network_from_dict(data, path)


def program_from_dict(data: Any, path: str | Path = "<memory>") -> TensorProgram:
    """Validate an ``npusched/tensor-program/v1`` object (its schema, then its consistency)
    and build the :class:`~npusched.workload.tensor.TensorProgram`."""
    validate(data, "tensor_program.schema.json", path)
    try:
        return TensorProgram.from_dict(data)
    except (ValueError, TypeError) as err:
        raise InputError(path, "ops", str(err)) from None


def network_from_dict(data: Any, path: str | Path = "<memory>") -> Network:
    """Validate ``data`` (schema ``network.schema.json``, then the layers' consistency) and build
    the network.

    Parameters
    ----------
    data
        Parsed JSON in :meth:`Network.to_dict`'s form.
    path
        Where ``data`` came from, for error messages.

    Returns
    -------
    Network

    Raises
    ------
    InputError
        Names the first offending field.
    """
    validate(data, SCHEMA, path)
    shapes: dict[str, Shape] = {INPUT: tuple(data["input_shape"])}
    layers: list[Layer] = []
    for k, d in enumerate(data["layers"]):
        field = f"layers/{k}"
        if d["name"] in shapes:
            raise InputError(path, f"{field}/name", f"duplicate layer name {d['name']!r}")
        for j, p in enumerate(d["inputs"]):
            if p not in shapes:
                raise InputError(
                    path, f"{field}/inputs/{j}", f"{p!r} is not an earlier layer or 'input'"
                )
        kw: dict[str, Any] = {key: tuple(v) if isinstance(v, list) else v for key, v in d.items()}
        try:
            layer = Layer(**kw)
            shapes[layer.name] = layer.output_shape([shapes[p] for p in layer.inputs])
        except ValueError as err:
            raise InputError(path, field, str(err)) from None
        layers.append(layer)
    try:
        return Network.from_dict(data)
    except ValueError as err:  # pragma: no cover - the checks above mirror Network's
        raise InputError(path, "layers", str(err)) from None


def write_network(net: Network | TensorProgram, path: str | Path) -> None:
    """Write ``net`` as ``npusched/network/v1`` JSON, atomically.

    Parameters
    ----------
    net
        The network.
    path
        Destination file (its directory is created).
    """
    write_json(path, net.to_dict())
