"""Batch bakes and parameter sweeps spread over worker processes with Dask (docs/farm.md).

One module a job: cluster.py (the only import of dask, lazy: where tasks run), progress.py (the progress
bar on stderr), batch.py (`bake A.blend B.blend --out-dir DIR`), address.py (what a sweep key names in a
file), toml_write.py (documents back to TOML text), variants.py (the variations and their product),
solve.py (one variant solved on a worker), sweep.py (`sweep FILE --vary ...`: tasks, .npz files, CSV),
plot.py (the sweep's PNG). Nothing here is imported when the extension registers, so Blender needs no Dask.
"""
