"""Sympy assignments printed as C99 for one floating type: typed literals, integer powers
as products (no pow()), one comment line opening each block of an assignment list (what it
computes and which model function made it).  Shared by every backend dialect."""
from __future__ import annotations

from typing import List

import sympy as sp
from sympy.printing.c import C99CodePrinter

from lbgen.model.assignments import AssignmentList, power_as_product


class RealPrinter(C99CodePrinter):
    """C99 printer for one floating type: typed literals, no pow() for integer powers."""

    def __init__(self, precision: str = "double"):
        super().__init__({"strict": False})
        self.single = precision == "single"

    def _literal(self, value: float) -> str:
        text = repr(float(value))
        if "e" not in text and "." not in text and "inf" not in text:
            text += ".0"
        return text + ("f" if self.single else "")

    def _print_Float(self, expr):
        return self._literal(float(expr))

    def _print_Rational(self, expr):
        return self._literal(float(expr))

    def _print_Integer(self, expr):
        return self._literal(int(expr))

    def _print_Pow(self, expr):
        text = power_as_product(self, expr, one=self._literal(1))
        return text if text is not None else super()._print_Pow(expr)


def print_assignments(asg: AssignmentList, precision: str, declare: str = "const real",
                      suffix_parameters: str = "") -> List[str]:
    """C statements for the temporaries and outputs of an assignment list.

    Parameters are printed with ``suffix_parameters`` appended (the kernels convert the
    double arguments of the API once, to locals of the working precision).
    """
    printer = RealPrinter(precision)
    rename = {p: sp.Symbol(f"{p}{suffix_parameters}", real=True) for p in asg.parameters}
    titles = dict(asg.blocks)
    lines = []
    for i, (sym, expr) in enumerate(asg.assignments):
        if i in titles:     # a comment opening each block: what it computes, which model function made it
            lines.append(f"/* --- {titles[i]} --- */")
        lines.append(f"{declare} {sym} = {printer.doprint(expr.xreplace(rename))};")
    return lines
