"""The machinery every derivation of lbgen.model shares: assignments built in named blocks, the
Hermite projections of the populations (pair sums and differences), the macroscopic fields, and
the reconstruction of populations from Hermite coefficients (even and odd parts shared between
symmetric pairs), then common-subexpression elimination in scheduled order.  What the collision
operators do with it: lbgen.model.collision (its module doc explains the method).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Dict, List, Tuple

import sympy as sp

from lbgen.model.assignments import schedule
from lbgen.model.hermite import Component, components, hermite, multiplicity
from lbgen.model.catalog import AXES
from lbgen.model.velocity_set import VelocitySet

#: significant digits of the numeric constants written into the generated code
CONSTANT_DIGITS = 20



def const(x) -> sp.Float:
    return sp.Float(sp.N(x, CONSTANT_DIGITS + 10), CONSTANT_DIGITS)


def population_symbols(Q: int, prefix: str = "f") -> Tuple[sp.Symbol, ...]:
    return tuple(sp.Symbol(f"{prefix}{i}", real=True) for i in range(Q))


def opposite_pairs(vs: VelocitySet):
    """(i, opp(i)) for i < opp(i), and the rest population (its own opposite)."""
    pairs = [(i, o) for i, o in enumerate(vs.opposite) if i < o]
    rest = [i for i, o in enumerate(vs.opposite) if i == o]
    return pairs, rest


def component_tag(c: Component) -> str:
    """The digits of a component in symbol names: A20 (2D), A200 (3D)."""
    return "".join(map(str, c))


def unit_component(D: int, k: int, n: int = 1) -> Component:
    """The component n along axis k: (1, 0) for x in 2D, (0, 0, 2) for zz in 3D."""
    return tuple(n if j == k else 0 for j in range(D))


def hermite_values(vs: VelocitySet, order: int) -> Dict[Component, List[sp.Float]]:
    """H[c](xi_i) as floats of CONSTANT_DIGITS + 10 digits, for every component up to order."""
    r = vs.r_float()
    out = {}
    for n in range(order + 1):
        for c in components(n, vs.D):
            out[c] = [sp.Float(hermite(c, tuple(r * a for a in v)), CONSTANT_DIGITS + 10) for v in vs.velocities]
    return out


def grouped_sum(terms, builder=None) -> sp.Expr:
    """sum c_k x_k with equal constants factored: c (x_1 + x_2 + ...).

    sympy distributes a number over a sum (2.0*(x + y) -> 2.0*x + 2.0*y), so with a
    builder each multi-term group becomes its own assignment, which keeps the factoring.
    """
    groups: "OrderedDict[sp.Float, list]" = OrderedDict()
    for c, x in terms:
        c = const(c)
        if c == 0:
            continue
        key = None
        for k in groups:
            if k == c or k == -c:
                key = k
                break
        if key is None:
            groups[c] = [x]
        else:
            groups[key].append(x if key == c else -x)
    total = 0
    for c, xs in groups.items():
        group = sp.Add(*xs)
        if builder is not None and len(xs) > 1 and abs(float(c)) != 1.0:
            group = builder.let(builder.fresh("g"), group)
        if float(c) == 1.0:
            total += group
        elif float(c) == -1.0:
            total -= group
        else:
            total += c * group
    return total


class Builder:
    """Accumulates ordered assignments with fresh symbol names, each tagged with the block
    (moments, equilibrium, relaxation, reconstruction, ...) that produced it."""

    def __init__(self):
        self.assignments: List[Tuple[sp.Symbol, sp.Expr]] = []
        self._counter = 0
        self.blocks: List[str] = []              # block titles in order of appearance
        self.block_of: Dict[sp.Symbol, int] = {}  # symbol -> index into blocks

    def block(self, title: str) -> None:
        """Tag the assignments that follow: ``title`` names the block and the model function."""
        self.blocks.append(title)

    def fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def let(self, name: str, expr) -> sp.Symbol:
        sym = sp.Symbol(name, real=True)
        self.assignments.append((sym, sp.sympify(expr)))
        self.block_of[sym] = max(len(self.blocks) - 1, 0)
        return sym


def hermite_moments(b: Builder, vs: VelocitySet, f, H) -> Dict[Component, sp.Symbol]:
    """Hermite projections A[c] = sum_i f_i H[c](xi_i) for all components up to the set's order."""
    pairs, rest = opposite_pairs(vs)
    b.block("moments: pair sums s_i and differences d_i, Hermite projections A_n, n <= 4 "
            "(lbgen.model.derivation.hermite_moments)")
    s = {i: b.let(f"s{i}", f[i] + f[o]) for i, o in pairs}
    d = {i: b.let(f"d{i}", f[i] - f[o]) for i, o in pairs}
    A = {}
    for n in range(vs.hermite_order + 1):
        for c in components(n, vs.D):
            if n % 2 == 0:
                terms = [(H[c][i], s[i]) for i, _ in pairs] + [(H[c][i], f[i]) for i in rest]
            else:
                terms = [(H[c][i], d[i]) for i, _ in pairs]
            A[c] = b.let(f"A{component_tag(c)}", grouped_sum(terms, b))
    return A


def fields_of_moments(b: Builder, A, vs: VelocitySet):
    """rho, u (a tuple of D symbols) and T from the projections (T = 1 for isothermal sets)."""
    D = vs.D
    b.block("macroscopic fields rho, u, T from A_0, A_1, A_2 (lbgen.model.derivation.fields_of_moments)")
    rho = b.let("rho", A[(0,) * D])
    inv_rho = b.let("inv_rho", 1 / rho)
    u = tuple(b.let(f"u{AXES[k]}", A[unit_component(D, k)] * inv_rho) for k in range(D))
    if vs.isothermal:
        return rho, u, sp.Integer(1)
    # D rho T = sum |xi - u|^2 f = tr A2 + D rho - rho |u|^2
    T = b.let("T", sp.Add(*(A[unit_component(D, k, 2)] for k in range(D))) * inv_rho * sp.Rational(1, D) + 1
              - sp.Add(*(uk ** 2 for uk in u)) / D)
    return rho, u, T


#: symmetries shared between pairs (velocities taken modulo xi -> -xi), by dimension and
#: parity.  2D: reflecting y and swapping x and y; modulo inversion they commute, so the even
#: parts of the pairs of one orbit are a Walsh-Hadamard transform of one sum per character;
#: the odd parts change sign under inversion, so only the reflection (which commutes with
#: it) is used for them.  3D: reflecting y and reflecting z (diagonal, so they commute with
#: each other and with inversion) for both parities.  (The transform is exact for any
#: generators; commuting ones make most coefficients of a character cancel.)
_REFLECT_Y = lambda v: (v[0], -v[1]) + tuple(v[2:])      # noqa: E731
_REFLECT_Z = lambda v: (v[0], v[1], -v[2])               # noqa: E731
_SWAP = lambda v: (v[1], v[0])                           # noqa: E731
_GENERATORS = {2: {0: (_REFLECT_Y, _SWAP), 1: (_REFLECT_Y,)},
               3: {0: (_REFLECT_Y, _REFLECT_Z), 1: (_REFLECT_Y, _REFLECT_Z)}}


def _part_form(vs: VelocitySet, H, w, j: int, parity: int) -> Dict[Component, sp.Float]:
    """{c: w_j H_c(xi_j) mult(c)/n!} over the components of even (0) or odd (1) order n."""
    return {c: w[j] * H[c][j] * multiplicity(c) / sp.factorial(n)
            for n in range(parity, vs.hermite_order + 1, 2) for c in components(n, vs.D)}


def _symmetric_parts(b: Builder, vs: VelocitySet, H, B, parity: int) -> Dict[int, sp.Expr]:
    """The even (parity 0) or odd (1) part of every pair i < opp(i), as expressions in B.

    Orbits of pairs under the group generated by ``_GENERATORS[parity]`` (a product of
    k two-element groups) share their work: the linear form of the image xi_g of the
    orbit's first velocity under g = (g_1^b_1 ... g_k^b_k) is P_g = sum_c K_g,c B_c.
    Per character eps (a sign per generator) V_eps = 2^-k sum_g eps^b P_g is a sum over
    the few components of that symmetry class (most coefficients cancel exactly), and
    P_g = sum_eps eps^b V_eps is a fast Walsh-Hadamard transform: k stages of + and -.
    """
    pairs, _ = opposite_pairs(vs)
    w = vs.weights_float(CONSTANT_DIGITS + 10)
    index = {v: i for i, v in enumerate(vs.velocities)}
    opp = vs.opposite
    gens = _GENERATORS[vs.D][parity]
    k = len(gens)
    parts: Dict[int, sp.Expr] = {}
    for i, _ in pairs:
        if i in parts:
            continue
        images = []                               # velocity index of xi_g, g in bit order
        for g in range(2 ** k):
            v = vs.velocities[i]
            for j, gen in enumerate(gens):
                if g >> j & 1:
                    v = gen(v)
            images.append(index.get(v))
        # sets are built from whole shells (all signed permutations): closed under both
        assert None not in images, f"{vs.name} is not closed under reflection and swap"
        forms = [_part_form(vs, H, w, j, parity) for j in images]
        scale = max(abs(float(cf)) for f in forms for cf in f.values()) or 1.0
        values = []
        for eps in range(2 ** k):                 # character: bit j set = sign -1 on generator j
            terms = []
            for c in forms[0]:
                coef = sum((-1) ** bin(eps & g).count("1") * forms[g][c] for g in range(2 ** k)) / 2 ** k
                if abs(float(coef)) > 1e-24 * scale:
                    terms.append((coef, B[c]))
            total = grouped_sum(terms, b)
            values.append(b.let(b.fresh("V"), total) if total != 0 else sp.Integer(0))
        for j in range(k):                        # Walsh-Hadamard stages
            for g in range(2 ** k):
                if not g >> j & 1:
                    lo, hi = values[g], values[g | 1 << j]
                    s_, d_ = lo + hi, lo - hi
                    values[g] = s_ if not isinstance(s_, sp.Add) or j == k - 1 else b.let(b.fresh("W"), s_)
                    values[g | 1 << j] = d_ if not isinstance(d_, sp.Add) or j == k - 1 else b.let(b.fresh("W"), d_)
        for j, value in zip(images, values):
            p, sign = (j, 1) if j < opp[j] else (opp[j], -1 if parity else 1)
            if p not in parts:
                parts[p] = sign * value
    return parts


def reconstruct(b: Builder, vs: VelocitySet, H, B: Dict[Component, sp.Expr], f_scale=None, f=None, shifts=None,
                extra=None):
    """Outputs fout_i = [f_scale * f_i +] w_i sum_c B[c] H[c](xi_i) mult(c)/n!  (even/odd split).

    ``shifts`` = (even, odd): {pair index i: expression} added to the even part E_i and the odd
    part O_i of each pair (even only for a rest population), with f_i added to each output: what
    TRT subtracts from f (its symmetric and antisymmetric parts times their rates) rides on the
    parts the pair shares, f'_i = f_i + E_i + O_i, f'_ibar = f_ibar + E_i - O_i.  ``extra`` = (even, odd):
    the same, without f_i (the MRT's higher moments, lbgen.model.mrt)."""
    pairs, rest = opposite_pairs(vs)
    w = vs.weights_float(CONSTANT_DIGITS + 10)
    outs = {}
    plus = " plus (1 - 1/tau) f_i" if f_scale is not None else ""
    if shifts is not None:
        plus = " with the parts of f the rates remove, plus f_i"
    b.block("reconstruction: f'_i = w_i sum_n B_n:H_n(xi_i)/n!, even part E_i and odd part O_i"
            " shared between symmetric pairs" + plus + " (lbgen.model.derivation.reconstruct)")
    even = _symmetric_parts(b, vs, H, B, 0)
    odd = _symmetric_parts(b, vs, H, B, 1)
    even_shift, odd_shift = shifts if shifts is not None else ({}, {})
    even_extra, odd_extra = extra if extra is not None else ({}, {})
    for i, o in pairs:
        E = b.let(f"E{i}", even[i] + even_shift.get(i, 0) + even_extra.get(i, 0))
        O = b.let(f"O{i}", odd[i] + odd_shift.get(i, 0) + odd_extra.get(i, 0))
        outs[i] = E + O
        outs[o] = E - O
    for i in rest:
        outs[i] = (grouped_sum([(cf, B[c]) for c, cf in _part_form(vs, H, w, i, 0).items()], b) + even_shift.get(i, 0)
                   + even_extra.get(i, 0))
    result = []
    for i in range(vs.Q):
        expr = outs[i]
        if f_scale is not None:
            expr = f_scale * f[i] + expr
        elif shifts is not None:
            expr = f[i] + expr
        result.append(b.let(f"fout{i}", expr))
    return tuple(result)


def cse_assignments(assignments, outputs):
    """Common-subexpression elimination over the whole ordered list (outputs keep their names),
    in the order of ``lbgen.model.assignments.schedule`` (few live values)."""
    syms = [s for s, _ in assignments]
    exprs = [e for _, e in assignments]
    # substitute intermediate symbols so CSE sees through them, then let it re-extract
    replacements, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("t", real=True), order="none",
                                   optimizations="basic")
    out = list(replacements)
    out += list(zip(syms, reduced))
    return schedule(_drop_unused(_topological(out), outputs), outputs)


def in_blocks(assignments, b: Builder):
    """Stable-sort the assignments by block, and the (start index, title) of each block.

    A named symbol belongs to the block it was built in; a CSE temporary to the earliest
    block that uses it.  Every dependency then sits in the same or an earlier block, so
    the stable sort keeps the list in definition-before-use order, and each block in the
    order of ``cse_assignments`` (the schedule).
    """
    block = {s: b.block_of[s] for s, _ in assignments if s in b.block_of}
    temporaries = {s for s, _ in assignments if s not in b.block_of}
    for s, e in reversed(assignments):      # consumers come after their temporaries
        for dep in e.free_symbols:
            if dep in temporaries:
                block[dep] = min(block.get(dep, len(b.blocks)), block[s])
    ordered = sorted(assignments, key=lambda a: block[a[0]])   # sorted() is stable
    starts, seen = [], set()
    for i, (s, _) in enumerate(ordered):
        if block[s] not in seen:
            seen.add(block[s])
            starts.append((i, b.blocks[block[s]]))
    return tuple(ordered), tuple(starts)


def _drop_unused(assignments, outputs):
    needed = set(outputs)
    kept = []
    for sym, expr in reversed(assignments):
        if sym in needed:
            kept.append((sym, expr))
            needed |= expr.free_symbols
    return tuple(reversed(kept))


def _topological(assignments):
    """Order assignments so each symbol is defined before use (sp.cse output may interleave)."""
    defined = {}
    for s, e in assignments:
        defined[s] = e
    order, seen = [], set()

    def visit(s):
        if s in seen or s not in defined:
            return
        seen.add(s)
        for dep in sorted(defined[s].free_symbols, key=str):
            visit(dep)
        order.append((s, defined[s]))

    for s, _ in assignments:
        visit(s)
    return tuple(order)
