"""The book's rendered result tables."""

import pytest

from blindspots import plotting


def test_html_table_escapes_cells_and_aligns_columns():
    html = plotting.html_table(["arm", "gain"], [["<b>SPT</b>", "+0.018"]], caption="a & b").data
    assert "&lt;b&gt;SPT&lt;/b&gt;" in html and "<caption>a &amp; b</caption>" in html
    assert '<th style="text-align:left">arm</th><th style="text-align:right">gain</th>' in html
    assert html.count("<tr>") == 2


def test_html_table_names_the_bad_parameter():
    with pytest.raises(ValueError, match=r"rows\[0\] has 1 cells; header has 2"):
        plotting.html_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="align must be 2 letters"):
        plotting.html_table(["a", "b"], [["x", "y"]], align="lc")
    with pytest.raises(ValueError, match="header must name"):
        plotting.html_table([], [])
