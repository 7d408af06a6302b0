"""Partial specialisation matching and ordering over argument terms
(isa/specialisation_match.py): [temp.class.spec.match], [temp.class.order]."""
from __future__ import annotations

from isa import ir
from isa.declarations import QType
from isa.specialisation_match import Param, Ty, from_term, matches, more_specialised, to_term


def T(name: str = "T", const: bool = False) -> Ty:
    return Ty(const, False, ("param", name))


def ptr(t: Ty, const: bool = False) -> Ty:
    return Ty(const, False, ("ptr", t))


def arr(t: Ty, n) -> Ty:
    return Ty(False, False, ("array", t, n))


def leaf(t: ir.Type, const: bool = False) -> Ty:
    return Ty(const, False, ("leaf", t))


def q(decl: str) -> QType:
    """A few argument types as the declarator rules (typecheck.apply_declarator) make them."""
    i, ci = QType(ir.I32), QType(ir.I32, const=True)
    i2 = QType(ir.ArrayType(ir.I32, 2), deep=((False, False),))
    return {
        "int": i,
        "const int *": ci.pointer_to(set()),
        "int *const *": i.pointer_to({"const"}).pointer_to(set()),
        "const int **": ci.pointer_to(set()).pointer_to(set()),
        "int[3][2]": QType(ir.ArrayType(i2.type, 3), deep=((False, False),) + i2.deep),
    }[decl]


def test_const_t_pointer_takes_a_pointer_to_const_with_t_unqualified():
    bound = matches([ptr(T(const=True))], [to_term(q("const int *"), {})])
    assert from_term(bound["T"]) == QType(ir.I32)


def test_const_t_pointer_does_not_take_a_pointer_to_a_pointer_to_const():
    assert matches([ptr(T(const=True))], [to_term(q("const int **"), {})]) is None


def test_t_pointer_keeps_the_pointees_qualifiers_in_t():
    bound = matches([ptr(T())], [to_term(q("int *const *"), {})])
    assert from_term(bound["T"]) == QType(ir.I32).pointer_to({"const"})


def test_an_array_pattern_deduces_the_outer_bound_and_the_element_type():
    bound = matches([arr(T(), Param("N"))], [to_term(q("int[3][2]"), {})])
    assert bound["N"] == 3 and from_term(bound["T"]).type == ir.ArrayType(ir.I32, 2)


def test_one_parameter_binds_one_type_throughout():
    pats = [ptr(T()), T()]
    assert matches(pats, [to_term(q("const int *"), {}), to_term(q("int"), {})]) is None


def test_const_t_pointer_is_more_specialised_than_t_pointer():
    assert more_specialised([ptr(T(const=True))], [ptr(T())])
    assert not more_specialised([ptr(T())], [ptr(T(const=True))])


def test_a_fixed_bound_is_more_specialised_than_a_deduced_one():
    assert more_specialised([arr(T(), 4)], [arr(T(), Param("N"))])


def test_an_instance_of_a_fixed_type_is_more_specialised_than_one_of_a_parameter():
    w_int = Ty(False, False, ("inst", "W", (leaf(ir.I32),), None))
    w_t = Ty(False, False, ("inst", "W", (T(),), None))
    assert more_specialised([w_int, T("U")], [w_t, T("U")])
    assert not more_specialised([w_t, T("U")], [w_int, T("U")])


def test_patterns_fixing_different_arguments_are_unordered():
    w_int = Ty(False, False, ("inst", "W", (leaf(ir.I32),), None))
    w_t = Ty(False, False, ("inst", "W", (T(),), None))
    a, b = [w_int, T("U")], [w_t, leaf(ir.I32)]
    assert not more_specialised(a, b) and not more_specialised(b, a)
