"""The index of one generation: quantisation, the impact (column) store, the text store, documents."""
