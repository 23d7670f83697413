"""Two servers in one file: ``mcpkit serve cli_two.py:b`` picks one (and a factory, ``build``)."""

from mcpkit import Server

a = Server("server-a", "1.0.0")
b = Server("server-b", "1.0.0")


@b.tool()
def which() -> str:
    """Says which server this is."""
    return "b"


def build() -> Server:
    c = Server("server-c", "1.0.0")

    @c.tool()
    def which() -> str:
        """Says which server this is."""
        return "c"

    return c
