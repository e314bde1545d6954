"""Workloads: DNN layers and networks at batch 1 (shapes, MACs, parameters, receptive fields)."""

from npusched.workload.layers import INPUT, OPS, Layer
from npusched.workload.network import Network

__all__ = ["INPUT", "OPS", "Layer", "Network"]
