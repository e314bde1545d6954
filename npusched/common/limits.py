"""The domain of the numbers npusched reads.

Latencies, bytes, hop latencies, transfer amounts and bandwidths are at most :data:`MAX_VALUE`
= 2^40 (about 10^12: cycles of a 1 GHz accelerator over 18 minutes, or a terabyte), and graphs
are taken to have at most 2^22 μops or edges per instance file read in row form (columnar files:
2^24). No constant names that size and no reader checks it; the generator refuses more than
:data:`~npusched.bench.generate.MAX_EDGES` = 2^24 edges. Every sum or product the code forms from
them (a makespan: at most n · max latency + n · max delay; a delay: bytes × hops; a NoC cost:
bytes × hops summed over edges) then stays below 2^63, so int64 arithmetic cannot overflow.
Schedule times read back from files are at most :data:`MAX_TIME` = 2^62 − 1 − 2^40, so that
``start + latency`` is still an int64.
"""

from __future__ import annotations

MAX_VALUE = 2**40
MAX_TIME = 2**62 - 1 - MAX_VALUE
MAX_BETA = 1e6
"""Largest weight β of the NoC cost in ``joint``'s ``T + β·C``: with C ≤ 2^40 hops·bytes it keeps
the scaled objective inside int64."""
