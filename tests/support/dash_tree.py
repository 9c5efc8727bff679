"""Reading a Dash component tree as a browser would show its text."""

from __future__ import annotations

__all__ = ["component_texts"]


def component_texts(component: object) -> list[str]:
    """Every string child of a Dash component tree, in document order — components, or their
    JSON form (``{"props": {"children": …}}``) as a callback returns it."""
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, list | tuple):
            for child in node:
                walk(child)
        elif isinstance(node, dict):
            if "props" in node:
                walk(node["props"].get("children"))
        elif hasattr(node, "children"):
            walk(node.children)

    walk(component)
    return out
