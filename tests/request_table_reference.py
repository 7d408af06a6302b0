"""The readable rule of request_table's counters, row by row: what the numpy
path (MemorySystem._charge_shared / _prepare_global / _apply_global) adds
for a table's rows. request_table.CounterPlan (and launch_sums' native
settle) must give the same (tests/test_request_table.py, test_launch_sums.py)."""
import numpy as np

from gpuemu.memory.request_table import COL, MAX_WAYS, NAMES, NSP, OPS


def used_rows(table: np.ndarray) -> list:
    """The rows that counted a request: (row, its sums as a list)."""
    rows = np.flatnonzero(table[:, 0])
    return list(zip(rows.tolist(), table[rows].tolist()))


def shared_counters(used: list, op: np.ndarray, line: np.ndarray, shared: int) -> list:
    """(counter, line, value) of the shared rows among `used`, as
    MemorySystem._charge_shared adds them (a counter is added, maybe with 0,
    when a request of its kind was made; conflict degrees only where seen)."""
    out = []
    for row, v in used:
        if row % NSP != shared:
            continue
        i = row // NSP
        ln, code = int(line[i]), int(op[i])
        if code >= 2:
            out.append(("shared_atomic_requests", ln, v[0]))
            continue
        name = OPS[code].replace("ld", "load").replace("st", "store")
        conflicts = v[COL["conflicts"]]
        out += [(f"shared_{name}_requests", ln, v[0]), (f"shared_{name}_wavefronts", ln, v[COL["cost"]]),
                (f"shared_{name}_bank_conflicts", ln, conflicts), ("shared_bank_conflicts", ln, conflicts)]
        w0 = COL["ways_0"]
        out += [(f"shared_conflict_ways_{w}", ln, v[w0 + w]) for w in range(2, MAX_WAYS + 1) if v[w0 + w]]
    return out


def global_counters(used: list, t: dict, spaces: tuple, ro_on: bool, l1_present: bool) -> list:
    """(counter, line, value) of the global and local rows among `used`, as
    MemorySystem._prepare_global adds them: requests and sectors by kind,
    transactions (= sectors under the 'sectors' rule), writes at L2, the
    read-only, texture and spill counts. t: per MemInstr id op, size, line,
    ro, spill, tex arrays; spaces: the (global, local) space codes; ro_on:
    the read-only path is in use."""
    glob, local = spaces
    out = []
    for row, v in used:
        sp = row % NSP
        if sp != glob and sp != local:
            continue
        i = row // NSP
        code, ln = int(t["op"][i]), int(t["line"][i])
        name, prefix = NAMES[code], "global" if sp == glob else "local"
        req, sectors = v[0], v[COL["cost"]]
        if sp == glob and ro_on and code == 0 and t["ro"][i]:
            out += [("readonly_load_requests", ln, req), ("readonly_load_sectors", ln, sectors)]
            if t["tex"][i]:
                out += [("texture_requests", ln, req), ("texture_sectors", ln, sectors)]
        if sp == local and t["spill"][i]:
            out += [(f"spill_{name}_requests", ln, req), ("spill_bytes", ln, v[COL["lanes"]] * int(t["size"][i]))]
        out += [(f"{prefix}_{name}_requests", ln, req), (f"{prefix}_{name}_sectors", ln, sectors)]
        if code <= 1:
            out.append((f"{prefix}_{name}_transactions", ln, sectors))
        if code == 1 and not (sp == local and l1_present):
            out.append(("l2_write_sectors", ln, sectors))
    return out


def cache_counters(used: list, t: dict, spaces: tuple, kind: np.ndarray, readonly_path: str) -> list:
    """(counter, line, value) of the caches for the global and local loads
    among `used`, as MemorySystem._apply_global adds them (l1_hits and
    l1_misses only when some request of the batch went through L1)."""
    glob, local = spaces
    rows = [(row, v) for row, v in used if row % NSP in (glob, local)]
    via_l1 = any(v[COL["cost"]] and kind[row] in (0, 3) for row, v in rows)
    out = []
    for row, v in rows:
        i = row // NSP
        if t["op"][i] != 0:
            continue
        ln = int(t["line"][i])
        hits, dram = v[COL["l1_hits"]], v[COL["dram"]]
        if via_l1:
            out += [("l1_hits", ln, hits), ("l1_misses", ln, v[COL["l1_misses"]])]
        out += [("l2_read_sectors", ln, v[COL["l2_read"]]), ("l2_hits", ln, v[COL["l2_hits"]]),
                ("l2_misses", ln, dram), ("dram_read_sectors", ln, dram)]
        if row % NSP == glob and readonly_path != "none" and t["ro"][i]:
            ro_hit = hits if readonly_path == "l1" else 0
            out += [("readonly_hits", ln, ro_hit), ("readonly_misses", ln, v[COL["cost"]] - ro_hit)]
            if t["tex"][i]:
                out += [("texture_hits", ln, ro_hit), ("texture_misses", ln, v[COL["cost"]] - ro_hit)]
    return out


def cycle_counters(table: np.ndarray, line: np.ndarray) -> list:
    """("memory_cycles", line, cycles) of every row a request of the batch
    fell in (MemorySystem.apply adds it for every line of the batch)."""
    rows = np.flatnonzero(table[:, COL["seen"]])
    return [("memory_cycles", int(line[r // NSP]), v)
            for r, v in zip(rows.tolist(), table[rows, COL["cycles"]].tolist())]
