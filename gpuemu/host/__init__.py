"""The host side: PCIe transfers, pinned and mapped host memory, managed
memory, streams and events (CUDA C Programming Guide, "Page-Locked Host
Memory", "Unified Memory Programming", "Asynchronous Concurrent Execution").

- pcie.py      the link model per preset (bandwidth, latency, staging copy)
- buffers.py   pinned / mapped (zero-copy) / managed buffers
- streams.py   streams, events and the modelled timeline
"""
