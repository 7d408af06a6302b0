"""The memory model: what each warp-level access costs, by the preset's rules.

One module per hardware unit, each with a plain-Python reference rule and
a numpy batch path that agree (tests/test_<module>.py):

- trace.py          the contract: AccessBatch / MemInstr from the machine
- bank_arbiter.py   shared memory: wavefronts, conflicts, n-way degree
- coalescer.py      global/local: sectors and transactions per request
- cache.py          set-associative, LRU, sectored cache (L1 per SM, L2)
- constant_cache.py constant memory: serialised by distinct addresses
- memory_system.py  MemorySystem: wires the units from a preset, charges
                    batches into Stats, accumulates cycles
- synthetic.py      hand-built AccessBatches for tests and benchmarks
"""
