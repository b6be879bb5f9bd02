"""Questions in, answers out: query syntax, scoring, fusion, grouping per document."""
