"""The launch gate's native function (machine/launch_gate.py says what it does and why).

    gate(grid, block, args, shared_mem, budget, stats, mode, scheduler,
         block_scheduler, stream, options) -> Launch | None | (code, t0)
    gate() -> bool

A builtin function (METH_FASTCALL) whose self is the gate's state, a
bytearray of int64 words (WORDS, then per kernel argument a kind and an
object). Called with the parts of a launch call, it checks that they are
those of the launch the state was armed for, as launch_cache.launch would
find them (else None: the caller takes the Python path); with counters
calls the state's `before` (LaunchRun.renew_kept); then runs the blocks
(the kept range's native call, the GIL let go). Without counters it places
the launch on the host timeline as streams.place_kernel does for the
default stream and builds its Launch as RawKernel._launch_of does for a
kept launch without counters. With counters, and where a block hands back
a code other than DONE (an event for Python, a fault), the result is
(code, the clock at the start), and the caller finishes the launch.
Called with nothing, it takes the state for the caller if it is armed and
idle (busy 0 -> 2, atomic: the GIL is held from the test to the store),
and says whether it did.

Objects the function compares with or builds from, and the C API functions
it calls, are at their addresses in this process (jit/c_api.py): the module
is built once per process, from `objects` (name -> the object, kept alive by
the caller) and the range's DONE code.
"""
from __future__ import annotations

import ctypes

import llvmlite.ir as ll

from . import c_api

I1, I32, I64, F64, PTR = ll.IntType(1), c_api.I32, c_api.I64, c_api.F64, c_api.PTR
SYMBOL = "gpuemu_launch_gate"

# the state's words: busy (0 armed and idle, 1 launching, 2 not armed), then the armed launch's
# (hits: launches the gate ran, counted for launch_gate.arm)
# counted: a launch with counters, whose run is renewed by `before` (called with nothing)
# and ended by the caller, as a hand-back
WORDS = ("busy", "hits", "target", "argv", "fixed", "kernel", "memory", "grid", "block", "shared_mem",
         "budget", "options", "counted", "before", "nargs")
W = {n: i for i, n in enumerate(WORDS)}
IDLE, LAUNCHING, UNARMED = 0, 1, 2
OPTIONS_NONE, OPTIONS_ONE_WORKER = 0, 1      # the options word: none, or workers=1 alone
KIND_WEAK, KIND_OBJECT = 0, 1               # an argument word pair: (kind, a weakref to it or it)
N_CALL_ARGS = 11
OB_TYPE = 8                                 # PyObject's ob_type (after ob_refcnt)

# the objects the IR names (their addresses are constants of the module)
OBJECTS = ("None", "False", "True", "one", "zero", "zero_float", "functional", "tuple", "float",
           "int", "dict", "list", "workers", "memory_globals", "device_memory_name",
           "runner_globals", "range_function_name", "range_function", "os_globals", "environ_name",
           "environ", "environ_data", "environ_key", "timeline", "streams", "default_ready",
           "engine_free", "host_time", "ops", "max_ops", "compute", "launch_type", "op_type",
           "op_name", "op_engine", "op_stream", "op_start", "op_end", "op_nbytes", "start", "end",
           "seconds", "stream", "timeline_key", "seconds_key", "name_attr", "dict_attr")
PY_EQ = 2


def _k64(v: int) -> ll.Constant:
    return ll.Constant(I64, v)


def _typeof(b: ll.IRBuilder, p):
    """p's type (its ob_type: the PyTypeObject *, as a pointer)."""
    return b.load(b.inttoptr(b.add(b.ptrtoint(p, I64), _k64(OB_TYPE)), PTR.as_pointer()))


def _same(b: ll.IRBuilder, p, q):
    """p is q (the two pointers equal)."""
    return b.icmp_unsigned("==", b.ptrtoint(p, I64), b.ptrtoint(q, I64))


def _ensure(fn: ll.Function, b: ll.IRBuilder, cond, otherwise) -> None:
    """Go on where cond holds, else to the block `otherwise`."""
    on = fn.append_basic_block("on")
    b.cbranch(cond, on, otherwise)
    b.position_at_end(on)


def layout_ok() -> bool:
    """Whether a PyObject's type is at OB_TYPE in this interpreter (the IR reads it there)."""
    return all(ctypes.c_void_p.from_address(id(o) + OB_TYPE).value == id(type(o))
               for o in ((), 1, 1.5, "s", {}, []))


def build_ir(objects: dict, done: int, clock: int, clock_id: int) -> str:
    """The module defining SYMBOL. `objects`: OBJECTS' name -> object;
    `clock`: clock_gettime's address, `clock_id` the clock perf_counter reads."""
    missing = set(OBJECTS) - objects.keys()
    if missing:
        raise KeyError(f"the gate's objects lack {sorted(missing)}")
    m = ll.Module(name=SYMBOL)
    fn = ll.Function(m, ll.FunctionType(PTR, [PTR, PTR.as_pointer(), I64]), SYMBOL)
    part_ok = _part_ok(m, objects)
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    c = c_api.Caller(b)
    self_, argv, nargs = fn.args

    k64 = _k64

    def obj(name):
        return b.inttoptr(k64(id(objects[name])), PTR)

    def typeof(p):
        return _typeof(b, p)

    def word(i):
        return b.gep(st, [i if isinstance(i, ll.Value) else k64(i)])

    def word_ptr(i):
        return b.inttoptr(b.load(word(i)), PTR)

    def block(name):
        return fn.append_basic_block(name)

    def ensure(cond, otherwise):
        _ensure(fn, b, cond, otherwise)

    def is_(p, q):
        return _same(b, p, q)

    def returned(p):                    # return a new reference to the constant p
        c("Py_IncRef", p)
        b.ret(p)

    st = b.bitcast(c("PyByteArray_AsString", self_), I64.as_pointer())
    miss, take, launch = block("miss"), block("take"), block("launch")
    b.cbranch(b.icmp_signed("==", nargs, k64(0)), take, launch)

    b.position_at_end(miss)             # not the armed launch: the caller takes the Python path
    returned(obj("None"))

    b.position_at_end(take)
    took, busy = block("took"), block("busy")
    b.cbranch(b.icmp_signed("==", b.load(word(W["busy"])), k64(IDLE)), took, busy)
    b.position_at_end(took)
    b.store(k64(UNARMED), word(W["busy"]))
    returned(obj("True"))
    b.position_at_end(busy)
    returned(obj("False"))

    b.position_at_end(launch)
    ensure(b.icmp_signed("==", nargs, k64(N_CALL_ARGS)), miss)
    ensure(b.icmp_signed("==", b.load(word(W["busy"])), k64(IDLE)), miss)
    a = [b.load(b.gep(argv, [k64(i)])) for i in range(N_CALL_ARGS)]
    grid, blk, args, shared, budget, stats, mode, sched, bsched, stream, options = a
    counted = b.icmp_signed("!=", b.load(word(W["counted"])), k64(0))
    ensure(is_(stats, b.select(counted, obj("True"), obj("False"))), miss)
    for p in (sched, bsched, stream):
        ensure(is_(p, obj("None")), miss)
    # options: none, or workers=1 alone (as the armed key's)
    ensure(is_(typeof(options), obj("dict")), miss)
    nopt = c("PyDict_Size", options)
    one_worker = b.icmp_signed("==", b.load(word(W["options"])), k64(OPTIONS_ONE_WORKER))
    no_opts, one_opt, opts_ok = block("no_options"), block("one_option"), block("options_ok")
    b.cbranch(one_worker, one_opt, no_opts)
    b.position_at_end(no_opts)
    b.cbranch(b.icmp_signed("==", nopt, k64(0)), opts_ok, miss)
    b.position_at_end(one_opt)
    ensure(b.icmp_signed("==", nopt, k64(1)), miss)
    ensure(is_(c("PyDict_GetItem", options, obj("workers")), obj("one")), miss)
    b.branch(opts_ok)
    b.position_at_end(opts_ok)
    for p, w in ((grid, "grid"), (blk, "block"), (shared, "shared_mem"), (budget, "budget")):
        ensure(b.call(part_ok, [p, word_ptr(W[w])]), miss)
    ensure(b.call(part_ok, [mode, obj("functional")]), miss)

    # the arguments: each the very object the run's parameter buffer holds
    ensure(is_(typeof(args), obj("tuple")), miss)
    n = b.load(word(W["nargs"]))
    ensure(b.icmp_signed("==", c("PyTuple_Size", args), n), miss)
    i_v = b.alloca(I64)
    b.store(k64(0), i_v)
    head, body, args_ok = block("arg"), block("arg_body"), block("args_ok")
    b.branch(head)
    b.position_at_end(head)
    i = b.load(i_v)
    b.cbranch(b.icmp_signed("<", i, n), body, args_ok)
    b.position_at_end(body)
    item = c("PyTuple_GetItem", args, i)
    slot = b.add(k64(len(WORDS)), b.mul(i, k64(2)))
    kind = b.load(word(slot))
    held = b.inttoptr(b.load(word(b.add(slot, k64(1)))), PTR)
    weak, strong, compare = block("weak"), block("strong"), block("compare")
    b.cbranch(b.icmp_signed("==", kind, k64(KIND_WEAK)), weak, strong)
    b.position_at_end(weak)
    referent = c("PyWeakref_GetObject", held)
    b.branch(compare)
    b.position_at_end(strong)
    b.branch(compare)
    b.position_at_end(compare)
    got = b.phi(PTR)
    got.add_incoming(referent, weak)
    got.add_incoming(held, strong)
    ensure(is_(got, item), miss)
    ensure(b.not_(is_(item, obj("None"))), miss)
    b.store(b.add(i, k64(1)), i_v)
    b.branch(head)

    b.position_at_end(args_ok)
    # the machine as the run was made for: the device memory, the range function as loaded
    ensure(is_(c("PyDict_GetItem", obj("memory_globals"), obj("device_memory_name")),
               word_ptr(W["memory"])), miss)
    ensure(is_(c("PyDict_GetItem", obj("runner_globals"), obj("range_function_name")),
               obj("range_function")), miss)
    # one block worker: the option's, else GPUEMU_WORKERS unset (block_workers.default_workers)
    env_ok, env = block("workers_ok"), block("environment")
    b.cbranch(one_worker, env_ok, env)
    b.position_at_end(env)
    ensure(is_(c("PyDict_GetItem", obj("os_globals"), obj("environ_name")), obj("environ")), miss)
    ensure(b.icmp_signed("==", c("PyDict_Contains", obj("environ_data"), obj("environ_key")),
                         ll.Constant(I32, 0)), miss)
    b.branch(env_ok)
    b.position_at_end(env_ok)
    # the default stream with no other stream seen (streams.place_kernel's own rule)
    streams = c("PyObject_GetAttr", obj("timeline"), obj("streams"))
    no_attr, has_attr = block("no_streams_attr"), block("streams_attr")
    b.cbranch(is_(streams, ll.Constant(PTR, None)), no_attr, has_attr)
    b.position_at_end(no_attr)
    c("PyErr_Clear")
    b.branch(miss)
    b.position_at_end(has_attr)
    plain = b.and_(is_(typeof(streams), obj("dict")),
                   b.icmp_signed("==", c("PyDict_Size", streams), k64(0)))
    c("Py_DecRef", streams)
    ensure(plain, miss)

    null = ll.Constant(PTR, None)
    # the new references made from here on, each in its own slot (NULL until made, NULL again
    # once released): an error releases what is held and returns NULL with its exception set;
    # the gate is then left LAUNCHING, dead (its run, perhaps mid-block, is never used again)
    owned = {}

    def own(name, value):
        if name not in owned:
            with b.goto_entry_block():
                owned[name] = b.alloca(PTR, name=name)
                b.store(null, owned[name])
        b.store(value, owned[name])
        return value

    def release(name):
        c("Py_DecRef", b.load(owned[name]))
        b.store(null, owned[name])

    fail = block("fail")

    def nonnull(p, otherwise=fail):
        ensure(b.not_(is_(p, null)), otherwise)
        return p

    # run every block, the GIL let go
    b.store(k64(LAUNCHING), word(W["busy"]))
    ts = b.alloca(ll.ArrayType(I64, 2))
    ts_p = b.bitcast(ts, PTR)
    clock_t = ll.FunctionType(I32, [I32, PTR])

    def now():
        c.at(clock, clock_t, ll.Constant(I32, clock_id), ts_p)
        secs = b.load(b.gep(ts, [ll.Constant(I32, 0), ll.Constant(I32, 0)]))
        nsecs = b.load(b.gep(ts, [ll.Constant(I32, 0), ll.Constant(I32, 1)]))
        return b.fadd(b.sitofp(secs, F64), b.fdiv(b.sitofp(nsecs, F64), ll.Constant(F64, 1e9)))
    # with counters: the run renewed first, as launch_cache.launch renews it (LaunchRun.renew_kept)
    renew, renewed = block("renew"), block("renewed")
    b.cbranch(counted, renew, renewed)
    b.position_at_end(renew)
    c("Py_DecRef", nonnull(c("PyObject_CallNoArgs", word_ptr(W["before"]))))
    b.branch(renewed)
    b.position_at_end(renewed)
    t0 = now()
    saved = c("PyEval_SaveThread")
    range_t = ll.FunctionType(I32, [I64])
    code = b.call(b.inttoptr(b.load(word(W["target"])), range_t.as_pointer()), [b.load(word(W["argv"]))])
    c("PyEval_RestoreThread", saved)
    t1 = now()
    b.store(b.add(b.load(word(W["hits"])), k64(1)), word(W["hits"]))
    ran = b.block

    handed = block("handed")            # (code, t0): the caller finishes the launch
    odd = block("timeline_odd")

    def zero_status(v):
        ensure(b.icmp_signed("==", v, ll.Constant(I32, 0)), fail)

    b.position_at_end(handed)
    code_at = b.phi(I64)
    py_code = nonnull(own("code", c("PyLong_FromLongLong", code_at)))
    py_t0 = nonnull(own("t0", c("PyFloat_FromDouble", t0)))
    pair = nonnull(c("PyTuple_Pack", k64(2), py_code, py_t0))
    release("code")
    release("t0")
    b.ret(pair)

    def hand_over(code_value):          # branch to `handed` with the code
        code_at.add_incoming(code_value, b.block)
        b.branch(handed)

    b.position_at_end(ran)
    done_bb, event = block("done"), block("event")
    b.cbranch(b.and_(b.icmp_signed("==", code, ll.Constant(I32, done)), b.not_(counted)), done_bb, event)
    b.position_at_end(event)
    hand_over(b.sext(code, I64))

    # the timeline as streams.place_kernel reads it; anything else (an attribute gone, a time
    # not a float): the caller places the launch in Python
    b.position_at_end(done_bb)
    tl = obj("timeline")
    names = ("default_ready", "engine_free", "host_time", "ops", "max_ops", "kernel_name")
    types = ("float", "dict", "float", "list", "int", None)
    reads = []
    for nm, t in zip(names, types):
        got = own(nm, c("PyObject_GetAttr", word_ptr(W["kernel"]) if nm == "kernel_name" else tl,
                        obj("name_attr") if nm == "kernel_name" else obj(nm)))
        nonnull(got, odd)
        if t is not None:
            ensure(is_(typeof(got), obj(t)), odd)
        reads.append(got)
    ready, free, host, ops, max_ops, name = reads
    busy_until = c("PyDict_GetItem", free, obj("compute"))
    ensure(b.not_(is_(busy_until, null)), odd)
    ensure(is_(typeof(busy_until), obj("float")), odd)
    limit = c("PyLong_AsLongLong", max_ops)
    ensure(b.icmp_signed("!=", limit, k64(-1)), odd)

    # start = max(stream ready, engine free, host time) in place_kernel's order; no seconds
    start = c("PyFloat_AsDouble", ready)
    busy_t = c("PyFloat_AsDouble", busy_until)
    start = b.select(b.fcmp_ordered(">", busy_t, start), busy_t, start)
    host_t = c("PyFloat_AsDouble", host)
    start = b.select(b.fcmp_ordered(">", host_t, start), host_t, start)
    end = b.fadd(start, ll.Constant(F64, 0.0))
    py_start = nonnull(own("start", c("PyFloat_FromDouble", start)))
    py_end = nonnull(own("end", c("PyFloat_FromDouble", end)))
    zero_status(c("PyDict_SetItem", free, obj("compute"), py_end))
    zero_status(c("PyObject_SetAttr", tl, obj("default_ready"), py_end))
    later, placed = block("host_later"), block("placed")
    b.cbranch(b.fcmp_ordered(">", end, host_t), later, placed)
    b.position_at_end(later)
    zero_status(c("PyObject_SetAttr", tl, obj("host_time"), py_end))
    b.branch(placed)
    b.position_at_end(placed)
    room, recorded = block("room"), block("recorded")
    b.cbranch(b.icmp_signed("<", c("PyList_Size", ops), limit), room, recorded)
    b.position_at_end(room)            # Op(name, COMPUTE, 0, start, end, 0) on the timeline
    op = nonnull(own("op", c("PyType_GenericNew", obj("op_type"), null, null)))
    for field, value in (("op_name", name), ("op_engine", obj("compute")),
                         ("op_stream", obj("zero")), ("op_start", py_start), ("op_end", py_end),
                         ("op_nbytes", obj("zero"))):
        zero_status(c("PyObject_SetAttr", op, obj(field), value))
    zero_status(c("PyList_Append", ops, op))
    release("op")
    b.branch(recorded)
    b.position_at_end(recorded)
    placed_at = nonnull(own("placed", c("PyDict_New")))
    for key, value in (("start", py_start), ("end", py_end), ("seconds", obj("zero_float")),
                       ("stream", obj("zero"))):
        zero_status(c("PyDict_SetItem", placed_at, obj(key), value))
    # the Launch: the run's fixed fields, its timeline and seconds
    out = nonnull(own("out", c("PyDict_Copy", word_ptr(W["fixed"]))))
    zero_status(c("PyDict_SetItem", out, obj("timeline_key"), placed_at))
    seconds = nonnull(own("seconds", c("PyFloat_FromDouble", b.fsub(t1, t0))))
    zero_status(c("PyDict_SetItem", out, obj("seconds_key"), seconds))
    result = nonnull(own("result", c("PyType_GenericNew", obj("launch_type"), null, null)))
    # launch.__dict__ = out, as _launch_of sets it (PyObject_GenericSetDict would leave 3.13.0-3
    # reading a managed dict's inline values: CPython gh-133912)
    zero_status(c("PyObject_SetAttr", result, obj("dict_attr"), out))
    for r in ("placed", "out", "seconds", "start", "end") + names:
        release(r)
    b.store(k64(IDLE), word(W["busy"]))
    b.ret(result)

    b.position_at_end(odd)
    for r in names:
        release(r)
    c("PyErr_Clear")
    hand_over(k64(done))

    b.position_at_end(fail)
    for r in owned:
        c("Py_DecRef", b.load(owned[r]))
    b.ret(null)
    return str(m)


def _part_ok(m: ll.Module, objects: dict) -> ll.Function:
    """part_ok(x, s): x is s, or of s's very type and equal to it; a tuple
    item by item so (its items ints: a call key's grid or block, where True
    is not 1)."""
    fn = ll.Function(m, ll.FunctionType(I1, [PTR, PTR]), "gpuemu_gate_part_ok")
    fn.linkage = "internal"
    x, s = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    c = c_api.Caller(b)
    k64 = _k64
    yes, no = fn.append_basic_block("yes"), fn.append_basic_block("no")
    b.position_at_end(yes)
    b.ret(ll.Constant(I1, 1))
    b.position_at_end(no)
    b.ret(ll.Constant(I1, 0))
    b.position_at_end(fn.entry_basic_block)

    def typeof(p):
        return _typeof(b, p)

    def same(p, q):
        return _same(b, p, q)

    def ensure(cond, otherwise=no):
        _ensure(fn, b, cond, otherwise)

    def equal(p, q):                    # p == q, an error (none for these types) as False
        r = c("PyObject_RichCompareBool", p, q, ll.Constant(I32, PY_EQ))
        err = fn.append_basic_block("compare_error")
        ok = fn.append_basic_block("compared")
        b.cbranch(b.icmp_signed("<", r, ll.Constant(I32, 0)), err, ok)
        b.position_at_end(err)
        c("PyErr_Clear")
        b.branch(no)
        b.position_at_end(ok)
        return b.icmp_signed("==", r, ll.Constant(I32, 1))

    not_same = fn.append_basic_block("not_same")
    b.cbranch(same(x, s), yes, not_same)
    b.position_at_end(not_same)
    ensure(same(typeof(x), typeof(s)))
    is_tuple, scalar = fn.append_basic_block("tuple"), fn.append_basic_block("scalar")
    b.cbranch(same(typeof(x), b.inttoptr(k64(id(objects["tuple"])), PTR)), is_tuple, scalar)
    b.position_at_end(scalar)
    ensure(equal(x, s))
    b.branch(yes)
    b.position_at_end(is_tuple)
    n = c("PyTuple_Size", x)
    ensure(b.icmp_signed("==", n, c("PyTuple_Size", s)))
    i_v = b.alloca(I64)
    b.store(k64(0), i_v)
    head, body = fn.append_basic_block("item"), fn.append_basic_block("item_body")
    b.branch(head)
    b.position_at_end(head)
    i = b.load(i_v)
    b.cbranch(b.icmp_signed("<", i, n), body, yes)
    b.position_at_end(body)
    xi, si = c("PyTuple_GetItem", x, i), c("PyTuple_GetItem", s, i)
    ensure(same(typeof(xi), typeof(si)))
    differ, next_ = fn.append_basic_block("item_differs"), fn.append_basic_block("item_next")
    b.cbranch(same(xi, si), next_, differ)
    b.position_at_end(differ)
    ensure(equal(xi, si))
    b.branch(next_)
    b.position_at_end(next_)
    b.store(b.add(i, k64(1)), i_v)
    b.branch(head)
    return fn
