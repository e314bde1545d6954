"""A DNN as a DAG of layers at batch 1, with inferred shapes and JSON round trip
(``npusched/network/v1``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npusched.workload.layers import INPUT, Layer, Shape

FORMAT = "npusched/network/v1"


@dataclass(frozen=True, eq=False)
class Network:
    """Layers in topological order (each names only earlier layers or :data:`INPUT`).

    Parameters
    ----------
    name
        Network name.
    input_shape
        ``(C, H, W)`` of the input at batch 1.
    layers
        The layers; validated and shaped on construction.
    source
        Provenance (paper, figures the tests check).
    """

    name: str
    input_shape: Shape
    layers: tuple[Layer, ...]
    source: dict[str, Any] = field(default_factory=dict)
    shapes: dict[str, Shape] = field(init=False, repr=False)
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        shapes: dict[str, Shape] = {INPUT: tuple(self.input_shape)}  # type: ignore[dict-item]
        index: dict[str, int] = {}
        for k, layer in enumerate(self.layers):
            if layer.name in shapes:
                raise ValueError(f"duplicate layer name {layer.name!r}")
            missing = [p for p in layer.inputs if p not in shapes]
            if missing:
                raise ValueError(
                    f"layer {layer.name}: input {missing[0]!r} is not an earlier layer"
                )
            shapes[layer.name] = layer.output_shape([shapes[p] for p in layer.inputs])
            index[layer.name] = k
        object.__setattr__(self, "shapes", shapes)
        object.__setattr__(self, "index", index)

    def in_shapes(self, layer: Layer) -> list[Shape]:
        """The ``(C, H, W)`` shape of each input of ``layer``, in the order of ``layer.inputs``
        (:data:`INPUT`'s is :attr:`input_shape`)."""
        return [self.shapes[p] for p in layer.inputs]

    def macs(self) -> int:
        """Total multiply-accumulates (conv and fc) at batch 1."""
        return sum(layer.macs(self.in_shapes(layer)) for layer in self.layers)

    def params(self) -> int:
        """Total weights and biases."""
        return sum(layer.params(self.in_shapes(layer)) for layer in self.layers)

    def layer(self, name: str) -> Layer:
        """The layer called ``name``.

        Raises
        ------
        KeyError
            No layer has that name (:data:`INPUT` is not a layer).
        """
        return self.layers[self.index[name]]

    def consumers(self) -> dict[str, list[str]]:
        """Layer name → names of the layers that read it."""
        out: dict[str, list[str]] = {layer.name: [] for layer in self.layers}
        for layer in self.layers:
            for p in layer.inputs:
                if p != INPUT:
                    out[p].append(layer.name)
        return out

    # ---- JSON ---------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The network as a JSON document of format :data:`FORMAT` (``npusched/network/v1``): name,
        ``source``, ``input_shape`` and the layers in order, each with its name, op and inputs, its
        ``out_channels`` for conv and fc, and only the other fields that differ from
        :class:`~npusched.workload.layers.Layer`'s defaults. :meth:`from_dict` reads it back."""
        defaults = Layer("_", "conv", (INPUT,), 1)
        layers = []
        for layer in self.layers:
            d: dict[str, Any] = {"name": layer.name, "op": layer.op, "inputs": list(layer.inputs)}
            for key in (
                "out_channels",
                "kernel",
                "stride",
                "pad",
                "dilation",
                "groups",
                "bias",
                "global_pool",
            ):
                value = getattr(layer, key)
                if key == "out_channels":
                    if layer.op in ("conv", "fc"):
                        d[key] = value
                elif value != getattr(defaults, key):
                    d[key] = list(value) if isinstance(value, tuple) else value
            layers.append(d)
        return {
            "format": FORMAT,
            "name": self.name,
            "source": self.source,
            "input_shape": list(self.input_shape),
            "layers": layers,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Network:
        """Build from :meth:`to_dict`'s form (validate with the schema first)."""
        layers = []
        for d in data["layers"]:
            kw: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
            kw["inputs"] = tuple(d["inputs"])
            layers.append(Layer(**kw))
        return cls(data["name"], tuple(data["input_shape"]), tuple(layers), data.get("source", {}))
