"""template_tokens: template argument tokens as written, and whether they
name a template parameter (also inside a template-id's arguments)."""
from __future__ import annotations

from isa.template_tokens import mentions, words


class Tok(str):
    """A token; a template-id's carries its arguments' tokens in `targs`."""

    def __new__(cls, text: str, targs=None):
        t = super().__new__(cls, text)
        t.targs = targs
        return t


def test_plain_tokens_are_their_words():
    assert words([Tok("const"), Tok("int"), Tok("*")]) == "const int *"


def test_a_template_id_is_written_with_its_arguments():
    w = Tok("W", targs=[[Tok("int")], [Tok("3")]])
    assert words([w, Tok("*")]) == "W<int, 3> *"


def test_a_parameter_named_inside_a_template_id_is_mentioned():
    w = Tok("W", targs=[[Tok("const"), Tok("T"), Tok("*")]])
    assert mentions([w], {"T"})
    assert not mentions([w], {"U"})
