"""The stdio framing both ends share (mcpkit.protocol.lines): lines across chunks, oversized ones."""

from mcpkit.protocol.lines import LineSplitter


def test_lines_split_across_chunks_and_the_last_one_without_newline():
    s = LineSplitter(10)
    assert s.feed(b"ab\ncd") == [b"ab"]
    assert s.feed(b"e\n\nf") == [b"cde", b""]
    assert s.end() == b"f"


def test_an_oversized_line_stands_as_none_in_its_place():
    s = LineSplitter(4)
    assert s.feed(b"ok\ntoolong\nok2\n") == [b"ok", None, b"ok2"]
    assert s.feed(b"waytoolong") == []  # skipping, until its newline
    assert s.feed(b"more") == []
    assert s.feed(b"\nfine\n") == [None, b"fine"]
    assert s.feed(b"tail-too-long") == [] and s.end() is None
    assert LineSplitter(4).feed(b"four\nfive5\n") == [b"four", None]  # at the limit, and one over


def test_a_head_carried_over_is_the_start_of_the_first_line():
    assert LineSplitter(10, b"he").feed(b"llo\n") == [b"hello"]
    big = LineSplitter(3, b"abcdef")
    assert big.feed(b"g\nx\n") == [None, b"x"]
