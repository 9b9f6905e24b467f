"""How results are shown: one theme, Altair charts, Markdown tables and prose, the HTML index page."""
