"""Template argument tokens (a template-id's token carries its arguments in
`targs`): as the words they were written in, and whether they name one of
some names (a template's parameters). class_templates and
specialisation_match both read them."""
from __future__ import annotations


def mentions(toks: list, names) -> bool:
    """The tokens name one of `names`, also inside a template-id's arguments."""
    return any(str(t) in names or any(mentions(a, names) for a in getattr(t, "targs", None) or [])
               for t in toks)


def words(toks: list) -> str:
    """Template argument tokens as written (`W<int> *`)."""
    return " ".join(str(t) + (f"<{', '.join(words(a) for a in t.targs)}>" if getattr(t, "targs", None) else "")
                    for t in toks)
