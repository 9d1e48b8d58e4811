"""Ordered lists of sympy assignments: the model's hand-off to code generation."""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Callable, Dict, Sequence, Tuple

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

#: the compiled NumPy function of each live AssignmentList, by identity (an entry leaves
#: with its list); printing one takes about 0.1 s, so it is done once per list
_NUMPY_FUNCTIONS: Dict[int, Callable] = {}


@dataclass(frozen=True)
class AssignmentList:
    """``inputs`` and ``parameters`` -> ``outputs`` through ordered ``assignments``.

    Each assignment is (symbol, expression); an expression uses only inputs, parameters
    and symbols assigned before it.  The symbols named in ``outputs`` are the results
    (for collide: the post-collision populations, in population order).
    """

    name: str
    inputs: Tuple[sp.Symbol, ...]
    parameters: Tuple[sp.Symbol, ...]
    assignments: Tuple[Tuple[sp.Symbol, sp.Expr], ...]
    outputs: Tuple[sp.Symbol, ...]
    description: str = ""
    #: (index of the first assignment, title) of each block -- moments, equilibrium, ... --
    #: in order; the title names the model function that produced the block
    blocks: Tuple[Tuple[int, str], ...] = ()
    #: (name, value) of the parameters ``evaluate`` may be called without (the collision's
    #: wall relaxation time: 1)
    defaults: Tuple[Tuple[str, float], ...] = ()

    @property
    def temporaries(self) -> Tuple[Tuple[sp.Symbol, sp.Expr], ...]:
        out = set(self.outputs)
        return tuple(a for a in self.assignments if a[0] not in out)

    def op_count(self) -> Dict[str, int]:
        """Floating-point operations of the assignments, counted the way they are printed.

        Walks each expression: an Add of n terms is n - 1 add/sub; a Mul of n factors is
        n - 1 multiply/divide (a -1 coefficient is folded into a subtraction, free); an
        integer power x**n is |n| - 1 multiplies, plus one division when n < 0 and the
        power stands alone (inside a Mul the division replaces a multiply).
        """
        flops = sum(_flops(expr) for _, expr in self.assignments)
        return {"flops": flops, "assignments": len(self.assignments),
                "temporaries": len(self.assignments) - len(self.outputs)}

    @property
    def flops(self) -> int:
        return self.op_count()["flops"]

    def numpy_source(self) -> str:
        printer = _ProductPrinter({"fully_qualified_modules": True})
        args = [str(s) for s in self.inputs + self.parameters]
        lines = [f"def {self.name}({', '.join(args)}):"]
        for sym, expr in self.assignments:
            lines.append(f"    {sym} = {printer.doprint(expr)}")
        lines.append(f"    return ({', '.join(str(s) for s in self.outputs)},)")
        return "\n".join(lines) + "\n"

    def numpy_function(self):
        """A Python function of (inputs..., parameters...) evaluating with numpy (broadcasting);
        printed and compiled once per list (memoised by identity for the list's lifetime)."""
        fn = _NUMPY_FUNCTIONS.get(id(self))
        if fn is None:
            namespace: dict = {"numpy": np}
            exec(compile(self.numpy_source(), f"<lbgen {self.name}>", "exec"), namespace)
            fn = _NUMPY_FUNCTIONS[id(self)] = namespace[self.name]
            weakref.finalize(self, _NUMPY_FUNCTIONS.pop, id(self), None)
        return fn

    def evaluate(self, inputs: Sequence, **parameters) -> np.ndarray:
        """Evaluate on arrays: ``inputs`` has len(self.inputs) entries (e.g. f of shape (Q, ...))."""
        parameters = {**dict(self.defaults), **parameters}
        missing = [str(p) for p in self.parameters if str(p) not in parameters]
        if missing:
            raise TypeError(f"{self.name}: missing parameters {missing}; expected {[str(p) for p in self.parameters]}")
        fn = self.numpy_function()
        values = [parameters[str(p)] for p in self.parameters]
        out = fn(*list(inputs), *values)
        shape = np.broadcast_shapes(*[np.shape(x) for x in out])   # any count (np.broadcast takes 64 at most)
        return np.array([np.broadcast_to(np.asarray(o, dtype=float), shape) for o in out])


def power_as_product(printer, expr, one: str = "1.0"):
    """An integer power base**n printed as a product (1/(...) for n < 0), or None for other
    powers: the one rule by which the C printer (lbgen.codegen.cprint) and the NumPy evaluation here
    do the same IEEE operations (no pow())."""
    base, exp = expr.args
    if not (exp.is_Integer and exp != 0):
        return None
    n = abs(int(exp))
    b = printer.parenthesize(base, sp.printing.precedence.PRECEDENCE["Mul"] + 1)
    prod = "*".join([b] * n)
    if int(exp) < 0:
        return f"({one}/({prod}))"
    return f"({prod})" if n > 1 else prod


class _ProductPrinter(NumPyPrinter):
    """NumPy printer writing integer powers as products, like the C printer of codegen: the
    NumPy evaluation then does the same IEEE operations as a strict build of the kernels
    (bit for bit; numpy.power would call pow())."""

    def _print_Pow(self, expr):
        text = power_as_product(self, expr)
        return text if text is not None else super()._print_Pow(expr)


def _flops(expr: sp.Expr, in_mul: bool = False) -> int:
    if expr.is_Atom:
        return 0
    if isinstance(expr, sp.Add):
        return len(expr.args) - 1 + sum(_flops(a) for a in expr.args)
    if isinstance(expr, sp.Mul):
        factors = [a for a in expr.args if a not in (sp.S.NegativeOne, sp.S.One)]
        return max(len(factors) - 1, 0) + sum(_flops(a, in_mul=True) for a in factors)
    if isinstance(expr, sp.Pow) and expr.exp.is_Integer:
        n = int(expr.exp)
        return abs(n) - 1 + (1 if n < 0 and not in_mul else 0) + _flops(expr.base)
    # anything else (functions, non-integer powers) counts as one operation
    return 1 + sum(_flops(a) for a in expr.args)


def schedule(assignments, outputs) -> Tuple[Tuple[sp.Symbol, sp.Expr], ...]:
    """The same assignments in an order that keeps few values live (a list scheduler).

    Only the order changes, never an expression, so the values are bit-identical.  Model
    of the generated code: an input is live from the start until its last use; a
    temporary from its assignment to its last use; an output from its assignment to the
    end (the site function's caller stores the outputs after it).  Greedy over the ready
    assignments (all operands assigned): take the one that frees the most live values
    (operands it uses for the last time) less the one it defines.  Ties go to the
    assignment whose result the given list uses first, then to the earlier position in the
    given list, which keeps the given structure where the pressure does not decide.

    ``assignments``: (symbol, expression) pairs without a cycle; an operand that no
    assignment defines is free (an input or a parameter).  ValueError for a cycle.
    """
    assignments = tuple(assignments)
    index = {s: i for i, (s, _) in enumerate(assignments)}
    operands = [sorted(e.free_symbols, key=str) for _, e in assignments]
    deps = [[d for d in ops if d in index] for ops in operands]
    users: Dict[sp.Symbol, list] = {}
    for i, ops in enumerate(operands):
        for d in ops:
            users.setdefault(d, []).append(i)
    remaining = {s: len(u) for s, u in users.items()}
    waiting = [len(d) for d in deps]
    ready = {i for i, w in enumerate(waiting) if w == 0}
    order = []
    while ready:
        def key(i):
            freed = sum(1 for d in set(operands[i]) if remaining[d] == 1)
            first_user = min(users.get(assignments[i][0], [len(assignments)]))
            return (1 - freed, first_user, i)
        i = min(ready, key=key)
        ready.discard(i)
        order.append(assignments[i])
        for d in set(operands[i]):
            remaining[d] -= 1
        for u in users.get(assignments[i][0], []):
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.add(u)
    if len(order) != len(assignments):
        stuck = sorted(str(assignments[i][0]) for i, w in enumerate(waiting) if w > 0)
        raise ValueError(f"schedule: the assignments of {stuck} depend on each other in a cycle; "
                         "allowed: an acyclic list")
    return tuple(order)


def peak_live(assignments, outputs, inputs=()) -> int:
    """The most values live at once in an ordered list, in the model of ``schedule``."""
    last = {}
    for i, (_, e) in enumerate(assignments):
        for d in e.free_symbols:
            last[d] = i
    outs = set(outputs)
    live = {s for s in inputs if s in last}
    peak = len(live)
    for i, (s, e) in enumerate(assignments):
        # operands used for the last time free their registers for the result
        for d in e.free_symbols:
            if last.get(d) == i and d not in outs:
                live.discard(d)
        live.add(s)
        peak = max(peak, len(live))
        if s not in outs and s not in last:
            live.discard(s)
    return peak
