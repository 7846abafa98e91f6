"""The lab (docs/lab.md): a PySpark pipeline measuring what each rebalance protocol costs.

``lab/`` drives ``sim/`` (docs/design.md "Layers"): a sweep spec (``spec``) expands into runs, each
run is one call of the real simulator on a Spark executor (``runs``, ``sweep``), the results
become Parquet tables aggregated with Spark SQL (``aggregate``) and a report (``report``).
``audit`` reads a real coordinator's record log the same way. ``cli`` is ``groupcoord lab``;
``docs/lab.md`` is the guide. Only ``session``, ``sweep``, ``schema`` and ``audit``'s job need
pyspark; ``spec`` and ``runs`` are plain Python.
"""
