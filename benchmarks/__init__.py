"""Benchmarks beside peer solvers (repository only: not part of the extension).

Every solver here, ours and the peers, is timed single-threaded by CPU (process) time. Importing this package sets
the BLAS and OpenMP thread counts to 1 before any of those libraries loads (each reads them once, when it loads):
a threaded BLAS's idle workers spin for a while after each call, and that spinning would be charged to whatever
solve the process times next (CasADi's OpenBLAS, loaded with IPOPT, doubled the next crane solve's CPU time)."""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"
