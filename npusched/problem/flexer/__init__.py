"""Flexer's decisions on one tiled layer: the layer problem, its schedule and spill request
(:mod:`.layer`), and the offline residency problem (:mod:`.residency`)."""
