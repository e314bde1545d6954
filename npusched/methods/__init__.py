"""The registry: every method of every decision behind one ``solve()`` and one ``Result``."""

from npusched.methods.registry import METHODS, Method, solve

__all__ = ["METHODS", "Method", "solve"]
